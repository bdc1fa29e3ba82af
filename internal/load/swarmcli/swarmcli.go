// Package swarmcli is the command line of a swarm binary.
//
// It covers the binary's flags, the run, the printed summary, the JSON
// report and the exit status. Both `scalegate swarm` (load protocol v1) and
// every bot a team builds with the public bot package (its own protocol)
// are a Command, so the two cannot drift: the gate passes either one the
// same arguments and reads the same report (docs/swarm-contract.md).
//
// It links no transport: a binary speaks the backends whose packages it
// imports (each registers itself with package transport), so a bot that
// speaks raw UDP does not carry cgo ENet, QUIC or WebSocket.
package swarmcli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mattn/go-isatty"

	"github.com/scalegate/scalegate/internal/guard/safetext"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/swarm"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

// Env is the process state a command touches; tests use buffers.
type Env struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
}

// Command is one swarm binary.
type Command struct {
	// Name is how the usage names the command ("scalegate swarm").
	Name string
	// About is the usage's paragraph on what the binary does; empty: the
	// built-in swarm's.
	About string
	// Protocol is what the clients speak; nil: load protocol v1.
	Protocol swarm.Protocol
	// Transport is --transport's default; empty: swarm.DefaultTransport.
	Transport string
	// Missing, when set, says what the binary lacks to speak a transport
	// it does not link (for a bot: the package to import); it follows the
	// --transport error. "" or nil: nothing to add.
	Missing func(name string) string
}

// Scalegate is `scalegate swarm`.
var Scalegate = Command{Name: "scalegate swarm"}

func (cmd Command) name() string {
	if cmd.Name == "" {
		return "swarm"
	}
	return cmd.Name
}

func (cmd Command) about() string {
	if cmd.About != "" {
		return cmd.About
	}
	return `Runs N synthetic 60 Hz clients against a server speaking the scalegate load
protocol and reports what a real client observes.`
}

func (cmd Command) transport() string {
	if cmd.Transport != "" {
		return cmd.Transport
	}
	return swarm.DefaultTransport
}

// ParseFlags parses args with fs, the one rule for every scalegate command
// line (the gate's commands and every swarm binary). Help that was asked
// for (-h, -help, --help) is the command's output, not an error: the usage
// goes to stdout and the command ends with exit 0 and nothing else printed.
// Any other parse error prints the usage to stderr and is a usage error
// (exit 2). fs's Usage must write to fs.Output(), which ParseFlags
// redirects.
func ParseFlags(stdout, stderr io.Writer, fs *flag.FlagSet, args []string) error {
	var usage bytes.Buffer
	fs.SetOutput(&usage)
	defer fs.SetOutput(stderr)
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		if _, werr := stdout.Write(usage.Bytes()); werr != nil {
			return exitcode.With(exitcode.Internal, werr)
		}
		return exitcode.Printed(exitcode.OK)
	}
	_, _ = stderr.Write(usage.Bytes())
	return exitcode.With(exitcode.Usage, err)
}

// isTerminal reports whether w is a terminal. Asking the tty driver (not
// the file mode) matters: /dev/null is a character device too, and a CI
// job that sends stderr there must get plain progress lines, not
// carriage-return redraws.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

// Run runs the command with args (without the program name): it parses
// them, runs the swarm, prints the summary on env.Stdout and every failed
// assert on env.Stderr, writes the --json report, and returns the error
// whose exitcode is the binary's exit status (nil: passed).
func (cmd Command) Run(ctx context.Context, env *Env, args []string) error {
	f, err := cmd.Parse(env, args)
	if err != nil {
		return err
	}
	if _, err := transport.Lookup(f.Cfg.Transport); err != nil {
		return exitcode.With(exitcode.Usage, cmd.transportError(f.Cfg.Transport, err))
	}
	switch f.progress {
	case "auto":
		f.Cfg.Progress, f.Cfg.ProgressTTY = env.Stderr, isTerminal(env.Stderr)
	case "tty", "plain":
		f.Cfg.Progress, f.Cfg.ProgressTTY = env.Stderr, f.progress == "tty"
	}
	warnFileLimit(env.Stderr, swarm.CheckFileLimit(&f.Cfg))
	stopProf, err := startProfiles(f.cpuProf, f.memProf)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("swarm: %w", err))
	}
	res, err := swarm.Run(ctx, f.Cfg)
	if perr := stopProf(); perr != nil {
		fmt.Fprintf(env.Stderr, "swarm: %v\n", perr)
	}
	if err != nil {
		var ub *transport.UnknownBackendError
		var te *swarm.TraceError
		if errors.As(err, &te) {
			return exitcode.With(exitcode.InvalidProfile, fmt.Errorf("swarm: --pattern: %w", err))
		}
		if errors.As(err, &ub) {
			return exitcode.With(exitcode.Usage, cmd.transportError(ub.Name, err))
		}
		return exitcode.With(exitcode.Usage, fmt.Errorf("swarm: %w", err))
	}
	failed := swarm.Evaluate(f.Asserts, res)
	// The summary carries what the server said (refuse and loss reasons,
	// its metrics errors), phase and file names: escaped for the terminal.
	WriteSummary(env.Stdout, res)
	for _, ar := range failed {
		fmt.Fprintf(env.Stderr, "swarm: %s\n", safetext.Terminal(swarm.FailureLine(ar)))
	}
	if f.JSONPath != "" {
		if err := report.WriteReportAtomic(f.JSONPath, res.Report); err != nil {
			return exitcode.With(exitcode.Internal, fmt.Errorf("swarm: %w", err))
		}
	}
	return outcome(res, len(failed))
}

// transportError is the usage error for a transport this binary does not
// link, with what Missing says it needs.
func (cmd Command) transportError(name string, err error) error {
	if cmd.Missing != nil {
		if need := cmd.Missing(name); need != "" {
			return fmt.Errorf("swarm: --transport: %w: %s", err, need)
		}
	}
	return fmt.Errorf("swarm: --transport: %w", err)
}

// warnFileLimit says, before the run, that the descriptor limit is below
// what the run needs and what to raise, or that the swarm raised it.
func warnFileLimit(w io.Writer, l *report.FDLimit) {
	switch {
	case l.Short():
		fmt.Fprintf(w, "swarm: %s\n", swarm.FileLimitAdvice(l))
	case l != nil && l.Soft > l.SoftBefore:
		fmt.Fprintf(w, "swarm: raised the descriptor soft limit from %d to %d (hard %d) for %d clients\n", l.SoftBefore, l.Soft, l.Hard, l.Clients)
	}
}

// outcome maps a finished run to its exit status: interrupted, then the
// harness falling short on its own (the gate's rule,
// gatetable.HarnessShort: inconclusive), then an early end on a breach,
// then the load not happening (the gate's own rules, gatetable.LoadHappened
// and gatetable.Delivered), then a failed assert.
func outcome(res *swarm.Result, failed int) error {
	r := res.Report
	if r.Aborted != "" {
		return exitcode.Errorf(exitcode.Interrupted, "swarm: interrupted after %.1fs; report marked aborted", r.DurationS)
	}
	if why, excused := gatetable.HarnessShort(r); excused {
		return exitcode.Errorf(exitcode.Inconclusive, "swarm: inconclusive: %s: the load was not driven as declared, which says nothing about the server", why)
	}
	if r.AbortedAtS != nil && r.AbortGate != report.AbortLoad {
		return exitcode.Errorf(exitcode.GateFailed, "swarm: ended early at %.1fs: %s", *r.AbortedAtS, r.AbortReason)
	}
	if why := gatetable.LoadHappened(r); len(why) > 0 {
		msg := "swarm: " + strings.Join(why, "; ")
		if r.ClientsConnected == 0 && res.DialError != nil {
			msg += fmt.Sprintf("; first error: %v", res.DialError)
		}
		if r.AbortedAtS != nil {
			msg += "; " + r.AbortReason
		}
		return exitcode.Errorf(exitcode.GateFailed, "%s", msg)
	}
	if d := gatetable.Delivered(r, res.Delivery); !d.OK() {
		return exitcode.Errorf(exitcode.GateFailed, "swarm: delivery: %s", d.Why())
	}
	if failed > 0 {
		return exitcode.Printed(exitcode.GateFailed)
	}
	return nil
}
