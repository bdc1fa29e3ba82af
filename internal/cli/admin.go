package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/guard/safetext"
	"github.com/scalegate/scalegate/internal/reference/admin"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

const adminUsage = `usage: scalegate admin SOCKET COMMAND [ARG]

Sends one command to a running reference server's admin socket ([admin]
socket in its config; the gate puts one in each leg's directory as
admin.sock) and prints the answer. docs/admin.md describes the protocol.

commands:
  status           one line: peers, entities, tick-Hz, load_factor, governor
                   on/off, and [DEGRADED] while the overrun governor sheds
  tickstats        the per-phase tick table (min/mean/p95/p99/max, ms)
  reload           re-read the server's config file; applies the live keys
                   (world.overrun_governor, network.congestion_control) and
                   lists what needs a restart
  trace-start DIR  record every peer's accepted Input to DIR (FLIT files;
                   DIR is made absolute here, relative to this directory)
  trace-stop       stop recording: flush, close, print the totals

DIR may contain spaces: every word after trace-start is the directory
(trace-start my traces = "my traces").

Exit 0: the server answered; 1: it answered an error (command refused or
failed); 2: usage; 5: no server answers on SOCKET, or it took the
connection and gave no answer within 30 s (it answers 8 connections at
once: others may be holding them); 130: interrupted.
`

// adminTimeout bounds one exchange: the server answers between two ticks.
const adminTimeout = 30 * time.Second

func init() {
	register("admin", "send a command to a running server's admin socket", runAdmin)
}

func runAdmin(ctx context.Context, env *Env, args []string) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), adminUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() < 2 {
		fmt.Fprint(env.Stderr, adminUsage)
		return exitcode.Errorf(exitcode.Usage, "admin: need SOCKET and COMMAND")
	}
	line, err := adminLine(fs.Args()[1:])
	if err != nil {
		return err
	}
	return sendAdmin(ctx, env, fs.Arg(0), line)
}

// adminLine makes the command words into the one line the server reads.
func adminLine(words []string) (string, error) {
	// A directory is meant relative to where the user typed it, not to the
	// server's working directory.
	// The server takes the rest of the line as DIR, so the words after
	// trace-start are one directory, spaces included.
	if len(words) >= 2 && words[0] == "trace-start" {
		dir := strings.Join(words[1:], " ")
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", exitcode.Errorf(exitcode.Usage, "admin: trace-start %s: %v", dir, err)
		}
		words = []string{words[0], abs}
	}
	line := strings.Join(words, " ")
	// The server is the authority on its commands (an older client can
	// reach a newer server); only what cannot travel as one line is
	// refused here.
	if strings.ContainsAny(line, "\r\n") {
		return "", exitcode.Errorf(exitcode.Usage, "admin: the command must be one line")
	}
	return line, nil
}

// sendAdmin runs one exchange and maps its outcome to the exit codes
// adminUsage promises, telling an interrupt apart from the exchange's own
// timeout.
func sendAdmin(ctx context.Context, env *Env, sock, line string) error {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	lines, err := admin.Do(ctx, sock, line)
	var dead *admin.NotAnsweringError
	var refused *admin.AnsweredError
	switch {
	case err != nil && parent.Err() != nil && !errors.Is(parent.Err(), context.DeadlineExceeded):
		return exitcode.With(exitcode.Interrupted, fmt.Errorf("admin: %w", parent.Err()))
	case errors.As(err, &dead):
		return exitcode.With(exitcode.LaunchFailure, fmt.Errorf("admin: %w", err))
	case errors.As(err, &refused):
		for _, l := range lines[1:] {
			fmt.Fprintln(env.Stderr, safetext.Terminal(l))
		}
		return exitcode.With(exitcode.GateFailed, fmt.Errorf("admin %s: %w", line, err))
	case err != nil:
		return exitcode.With(exitcode.Internal, fmt.Errorf("admin: %w", err))
	}
	// The answer is the server's text: shown, never interpreted by the
	// terminal.
	for _, l := range lines {
		fmt.Fprintln(env.Stdout, safetext.Terminal(l))
	}
	return nil
}
