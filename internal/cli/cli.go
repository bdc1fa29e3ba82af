// Package cli wires scalegate's command line: the gate and its subcommands.
// The gate is `scalegate --profile NAME`; the subcommands are ab, admin,
// calibrate, compare, history, init, k8s, merge, profiles, report, schema,
// serve, swarm, trace, version and vet (TestPackageDocNamesEveryCommand
// keeps this list whole). Each subcommand lives in its own file and
// registers itself; the packages that do the work (runner, launcher,
// swarm, server) know nothing of flags.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/scalegate/scalegate/internal/guard/safetext"
	"github.com/scalegate/scalegate/internal/load/swarmcli"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/run/launcher"
)

// Env is the process state a command may touch. Tests replace it to run the
// CLI in-process with buffers.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Kill is closed on the second SIGINT/SIGTERM (the first cancels the
	// context): stop every child at once. Nil: never.
	Kill <-chan struct{}
}

// command is one subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, env *Env, args []string) error
}

var commands = map[string]command{}

// register adds a subcommand; called from init in each subcommand's file.
func register(name, summary string, run func(ctx context.Context, env *Env, args []string) error) {
	if _, dup := commands[name]; dup {
		panic("cli: command registered twice: " + name)
	}
	commands[name] = command{summary: summary, run: run}
}

// Main runs scalegate with args (without the program name) and returns the
// exit code. The first SIGINT/SIGTERM cancels the command's context (a
// staged stop); the second closes Env.Kill (no more grace).
func Main(args []string) int {
	if len(args) > 0 && args[0] == launcher.GuardianCommand {
		return launcher.RunGuardian(args[1:])
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	kill := make(chan struct{})
	env := &Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Kill: kill}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	done := make(chan struct{})
	defer close(done)
	go watchSignals(sigs, done, cancel, kill)
	return Run(ctx, env, args)
}

// watchSignals turns the first signal into cancel and the second into
// close(kill); it ends then, or when done closes (the command returned).
func watchSignals(sigs <-chan os.Signal, done <-chan struct{}, cancel context.CancelFunc, kill chan<- struct{}) {
	for _, act := range []func(){cancel, func() { close(kill) }} {
		select {
		case <-sigs:
			act()
		case <-done:
			return
		}
	}
}

// Run dispatches args and maps the returned error to an exit code.
func Run(ctx context.Context, env *Env, args []string) int {
	err := dispatch(ctx, env, args)
	code := exitcode.Of(err)
	if err != nil && !errors.Is(err, errPrinted) {
		// Errors quote outside text (file names, a server's answers):
		// escaped, so none of it can act on the terminal.
		fmt.Fprintf(env.Stderr, "scalegate: %s\n", safetext.TerminalLines(err.Error()))
	}
	return int(code)
}

// parseFlags parses args with fs by the rule every scalegate command line
// shares (swarmcli.ParseFlags: help to stdout and exit 0, any other parse
// error a usage error).
func parseFlags(env *Env, fs *flag.FlagSet, args []string) error {
	return swarmcli.ParseFlags(env.Stdout, env.Stderr, fs, args)
}

// errPrinted marks an error already reported to the user in full.
var errPrinted = exitcode.ErrPrinted

// printed wraps err so Run does not print it again but keeps its code.
func printed(code exitcode.Code) error { return exitcode.Printed(code) }

func dispatch(ctx context.Context, env *Env, args []string) error {
	if len(args) > 0 {
		if c, ok := commands[args[0]]; ok {
			return c.run(ctx, env, args[1:])
		}
		if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
			usage(env.Stdout)
			return nil
		}
	}
	gate, ok := commands["gate"]
	if !ok {
		return exitcode.Errorf(exitcode.Usage, "the gate runner is not part of this build")
	}
	return gate.run(ctx, env, args)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: scalegate --profile NAME [--strict] [--update-baseline] [flags]")
	fmt.Fprintln(w, "       scalegate COMMAND [flags]")
	fmt.Fprintln(w, "\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	// The gate is the default command: its exit codes are this help's too.
	fmt.Fprint(w, exitCodesHelp())
}
