package exitcode

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestWithOf(t *testing.T) {
	base := fs.ErrNotExist
	cases := []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, OK},
		{"plain error", base, Internal},
		{"With", With(InvalidProfile, base), InvalidProfile},
		{"wrapped With", fmt.Errorf("load profile pr: %w", With(InvalidProfile, base)), InvalidProfile},
		// The innermost code wins: a later With does not relabel a cause
		// that already carries one.
		{"With over With", With(Internal, fmt.Errorf("ctx: %w", With(LaunchFailure, base))), LaunchFailure},
		{"Errorf", Errorf(GateFailed, "gate %s failed", "tick_ms_p99"), GateFailed},
		{"Errorf wrapping", Errorf(Inconclusive, "leg weave: %w", base), Inconclusive},
		{"joined", errors.Join(errors.New("first"), With(Usage, base)), Usage},
		{"interrupted", With(Interrupted, errors.New("signal")), Interrupted},
	}
	for _, c := range cases {
		if got := Of(c.err); got != c.want {
			t.Errorf("%s: Of = %v, want %v", c.name, got, c.want)
		}
	}
	if With(GateFailed, nil) != nil {
		t.Fatal("With(code, nil) must stay nil")
	}
}

func TestChainSurvives(t *testing.T) {
	err := fmt.Errorf("run: %w", With(LaunchFailure, fmt.Errorf("start server: %w", fs.ErrPermission)))
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatal("the cause is lost through With")
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != LaunchFailure {
		t.Fatalf("errors.As: %v", e)
	}
	if err.Error() != "run: start server: permission denied" {
		t.Fatalf("message %q: With must not change the text", err.Error())
	}
	if e.Unwrap() == nil || !errors.Is(e.Unwrap(), fs.ErrPermission) {
		t.Fatal("Unwrap")
	}
	e2 := Errorf(GateFailed, "wrap: %w", fs.ErrClosed)
	if !errors.Is(e2, fs.ErrClosed) || e2.Error() != "wrap: file already closed" {
		t.Fatalf("Errorf chain: %v", e2)
	}
}

func TestCodes(t *testing.T) {
	// The numbers are a contract for CI scripts.
	want := map[Code]struct {
		n    int
		name string
	}{
		OK: {0, "passed"}, GateFailed: {1, "gate failed"}, Usage: {2, "usage"},
		Inconclusive: {3, "inconclusive"}, InvalidProfile: {4, "invalid profile"},
		LaunchFailure: {5, "launch failure"}, Internal: {6, "internal error"}, Interrupted: {130, "interrupted"},
	}
	for c, w := range want {
		if int(c) != w.n || c.String() != w.name {
			t.Errorf("%d %q, want %d %q", int(c), c.String(), w.n, w.name)
		}
	}
	if Code(42).String() != "exit 42" {
		t.Errorf("unknown code: %q", Code(42).String())
	}
}
