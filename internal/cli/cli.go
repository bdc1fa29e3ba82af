// Package cli wires scalegate's command line: `scalegate --profile NAME`
// (the gate), and the subcommands serve, swarm, profiles, vet and version.
// Each subcommand lives in its own file and registers itself; the packages
// that do the work (gate, launcher, swarm, server) know nothing of flags.
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

	"github.com/scalegate/scalegate/internal/exitcode"
	_ "github.com/scalegate/scalegate/internal/transport/quic" // registers the "quic" backend
)

// Env is the process state a command may touch. Tests replace it to run the
// CLI in-process with buffers.
type Env struct {
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
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
// exit code.
func Main(args []string) int {
	env := &Env{Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, env, args)
}

// Run dispatches args and maps the returned error to an exit code.
func Run(ctx context.Context, env *Env, args []string) int {
	err := dispatch(ctx, env, args)
	code := exitcode.Of(err)
	if err != nil && !errors.Is(err, errPrinted) {
		fmt.Fprintf(env.Stderr, "scalegate: %v\n", err)
	}
	if errors.Is(err, flag.ErrHelp) {
		return int(exitcode.OK)
	}
	return int(code)
}

// errPrinted marks an error already reported to the user in full.
var errPrinted = errors.New("already reported")

// printed wraps err so Run does not print it again but keeps its code.
func printed(code exitcode.Code) error {
	return &exitcode.Error{Code: code, Err: errPrinted}
}

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
}
