// Package exitcode is scalegate's typed exit-code taxonomy. Errors carry
// their code by wrapping (With); the CLI reads it back with errors.As, so the
// chain of causes survives to the message the user sees.
package exitcode

import (
	"errors"
	"fmt"
)

// Code is a process exit status with a documented meaning.
type Code int

// Exit codes. They are a contract for CI scripts: keep the numbers stable.
const (
	// OK: everything that must hold held.
	OK Code = 0
	// GateFailed: a hard gate (or a swarm --assert-*) failed.
	GateFailed Code = 1
	// Usage: bad command line, or a transport this build cannot speak.
	Usage Code = 2
	// Inconclusive: no hard gate failed, but a leg could not be judged
	// (harness-bound swarm): neither pass nor fail may be claimed.
	Inconclusive Code = 3
	// InvalidProfile: a profile, schema or config file is invalid.
	InvalidProfile Code = 4
	// LaunchFailure: a server or swarm could not be started or became
	// ready, or died before producing its output.
	LaunchFailure Code = 5
	// Internal: a bug or an I/O failure of scalegate itself.
	Internal Code = 6
	// Interrupted: stopped by SIGINT/SIGTERM before finishing.
	Interrupted Code = 130
)

// String names the code as the docs do.
func (c Code) String() string {
	switch c {
	case OK:
		return "passed"
	case GateFailed:
		return "gate failed"
	case Usage:
		return "usage"
	case Inconclusive:
		return "inconclusive"
	case InvalidProfile:
		return "invalid profile"
	case LaunchFailure:
		return "launch failure"
	case Internal:
		return "internal error"
	case Interrupted:
		return "interrupted"
	}
	return fmt.Sprintf("exit %d", int(c))
}

// All returns every code, in numeric order (a new slice each call): the
// list the gate's help prints. TestAllIsEveryConstant keeps it whole.
func All() []Code {
	return []Code{OK, GateFailed, Usage, Inconclusive, InvalidProfile, LaunchFailure, Internal, Interrupted}
}

// Meaning is the code's meaning in one short line (the gate's help;
// docs/exit-codes.md says it in full).
func (c Code) Meaning() string {
	switch c {
	case OK:
		return "every hard gate of every leg held"
	case GateFailed:
		return "a hard gate failed or could not be evaluated"
	case Usage:
		return "bad command line, or a transport this build cannot speak"
	case Inconclusive:
		return "no hard gate failed, but a leg could not be judged (harness, host, shards)"
	case InvalidProfile:
		return "the profile, a --set or the baseline file is invalid, or no such profile"
	case LaunchFailure:
		return "a server or swarm did not start, report, or live to the end"
	case Internal:
		return "a bug or an I/O failure of scalegate itself"
	case Interrupted:
		return "stopped by SIGINT/SIGTERM; partial artifacts kept and marked"
	}
	return ""
}

// Error is an error with an exit code attached.
type Error struct {
	Code Code
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped cause.
func (e *Error) Unwrap() error { return e.Err }

// With attaches code to err unless err already carries one. A nil err
// stays nil.
func With(code Code, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	return &Error{Code: code, Err: err}
}

// Errorf formats an error carrying code.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// Of returns the code carried by err: OK for nil, Internal for an error that
// carries none.
func Of(err error) Code {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Internal
}

// ErrPrinted marks an error already reported to the user in full: the
// command's runner exits with its code and prints nothing more.
var ErrPrinted = errors.New("already reported")

// Printed is an error carrying code whose message was already printed.
func Printed(code Code) error {
	return &Error{Code: code, Err: ErrPrinted}
}
