// Package livetest holds what tests of live servers, clients and child
// processes share.
//
// Tests that talk to them share one polling helper that waits on a
// condition with a deadline and fails naming the last reason the condition
// gave, and goroutines the test owns (started, cancelled and awaited with a
// bound).
//
// Tests wait on events, never on the clock: a condition is re-checked until
// it holds, and only a broken test spends the deadline. The deadline is
// generous because the tests share loaded 2-core machines, where a loopback
// exchange can stall for seconds.
package livetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Wait is the deadline for an event on loopback or between local
// processes: far beyond what a healthy exchange takes even on a loaded
// 2-core machine, so reaching it means the event is not coming.
const Wait = 30 * time.Second

// Pauses between checks of a condition. A wait re-checks after firstPause,
// then twice as long each time up to maxPause: a condition that holds at
// once costs a millisecond, one that takes seconds is not polled hot. A
// round whose pump delivered something is re-checked at once (the exchange
// is moving). The pauses pace polling only; nothing here sleeps in place of
// an event.
const (
	firstPause = time.Millisecond
	maxPause   = 10 * time.Millisecond
)

// Cond is a condition a test waits for: ok when it holds, otherwise why
// not ("3 of 4 clients connected"), which is what a timeout reports.
type Cond func() (ok bool, why string)

// Holds makes a Cond of a bool condition; while it does not hold its
// reason is "not yet: " + what.
func Holds(what string, ok func() bool) Cond {
	return func() (bool, string) {
		if ok() {
			return true, ""
		}
		return false, "not yet: " + what
	}
}

// Closed is a Cond that holds once ch is closed (a process reaped, a
// goroutine finished); while it is open its reason is "not yet: " + what.
func Closed[T any](what string, ch <-chan T) Cond {
	return Holds(what, func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	})
}

// Eventually checks cond until it holds, for at most within; then it fails
// t with cond's last reason. Call it from the test's goroutine; others use
// Poll.
func Eventually(t testing.TB, within time.Duration, cond Cond) {
	t.Helper()
	if err := Poll(context.Background(), within, nil, cond); err != nil {
		t.Fatal(err)
	}
}

// EventuallyPumping is Eventually for conditions that only change when the
// test services something (a transport host's Service, which never
// blocks): pump runs before every check and returns how many events it
// delivered.
func EventuallyPumping(t testing.TB, within time.Duration, pump func() int, cond Cond) {
	t.Helper()
	if err := Poll(context.Background(), within, pump, cond); err != nil {
		t.Fatal(err)
	}
}

// TimeoutError is Poll's error when the deadline passed: it names how long
// was waited and the condition's last reason.
type TimeoutError struct {
	Within time.Duration
	Why    string
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("timed out after %v: %s", e.Within, e.Why)
}

// Poll runs pump (when not nil) and checks cond, round after round, until
// cond holds (nil), within passes (a *TimeoutError with the last reason) or
// ctx ends (its cause, with the last reason). It never fails a test, so
// goroutines other than the test's may use it; it also serves a test whose
// assertion is that something does not happen within a bound.
func Poll(ctx context.Context, within time.Duration, pump func() int, cond Cond) error {
	deadline := time.Now().Add(within)
	timer := time.NewTimer(maxPause) // Reset before every use (Go 1.23 timers: no stale tick)
	defer timer.Stop()
	pause := firstPause
	for {
		delivered := 0
		if pump != nil {
			delivered = pump()
		}
		ok, why := cond()
		if ok {
			return nil
		}
		if why == "" {
			why = "the condition did not hold"
		}
		left := time.Until(deadline)
		if left <= 0 {
			return &TimeoutError{Within: within, Why: why}
		}
		if delivered > 0 {
			pause = firstPause
			if ctx.Err() != nil {
				return fmt.Errorf("%w (last: %s)", context.Cause(ctx), why)
			}
			continue
		}
		timer.Reset(min(pause, left))
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %s)", context.Cause(ctx), why)
		case <-timer.C:
		}
		pause = min(2*pause, maxPause)
	}
}

// Task is a goroutine the test owns, started by Go.
type Task struct {
	what   string
	cancel context.CancelFunc
	done   chan struct{}
	err    error // fn's result, set before done closes
	// stopWithin bounds Stop's wait: Wait, shortened only by this package's
	// own test of a task that never stops.
	stopWithin time.Duration

	stopOnce sync.Once
	stopErr  error
	stopped  atomic.Bool // Stop was called by the test: the cleanup does not report again
}

// Go runs fn on a goroutine owned by t. fn gets a context that Stop, or the
// end of the test, cancels; the cleanup then waits for fn (at most Wait)
// and fails t if fn returned an error other than the context's own or did
// not return. what names the task in failures ("reference server").
func Go(t testing.TB, what string, fn func(ctx context.Context) error) *Task {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	k := &Task{what: what, cancel: cancel, done: make(chan struct{}), stopWithin: Wait}
	go func() {
		defer close(k.done)
		k.err = fn(ctx)
	}()
	t.Cleanup(func() {
		if k.stopped.Load() {
			return
		}
		if err := k.stop(); err != nil {
			t.Error(err)
		}
	})
	return k
}

// Done is closed when the task's function has returned.
func (k *Task) Done() <-chan struct{} { return k.done }

// Err is what the task's function returned; valid once Done is closed.
func (k *Task) Err() error { return k.err }

// Cancel cancels the task's context without waiting: the function is
// asked to stop (a server starts its shutdown) while the test carries on;
// Stop, or the test's end, then waits for it.
func (k *Task) Cancel() { k.cancel() }

// Stop cancels the task's context and waits for its function, at most
// Wait. It returns the function's error (a context cancellation counts as
// a clean stop), or an error saying the task did not stop. Only the first
// call waits; later ones return the same result. What Stop returns is the
// caller's to judge: the test's cleanup no longer reports it.
func (k *Task) Stop() error {
	k.stopped.Store(true)
	return k.stop()
}

func (k *Task) stop() error {
	k.stopOnce.Do(func() {
		k.cancel()
		timer := time.NewTimer(k.stopWithin)
		defer timer.Stop()
		select {
		case <-k.done:
		case <-timer.C:
			k.stopErr = fmt.Errorf("%s did not stop within %v of its cancellation", k.what, k.stopWithin)
			return
		}
		if k.err != nil && !errors.Is(k.err, context.Canceled) {
			k.stopErr = fmt.Errorf("%s: %w", k.what, k.err)
		}
	})
	return k.stopErr
}

// Within runs fn on its own goroutine and returns its result, failing t
// when fn has not returned within d: for calls whose hang is the failure
// under test (a swarm that never ends, a Close that blocks). After such a
// failure fn's goroutine is left to the test binary's exit; it is already
// the bug being reported.
func Within[T any](t testing.TB, d time.Duration, what string, fn func() T) T {
	t.Helper()
	ch := make(chan T, 1)
	go func() { ch <- fn() }()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("%s did not return within %v", what, d)
	}
	var zero T
	return zero
}
