package livetest

import (
	"fmt"
	"testing"
)

// Recorder is a testing.TB that records failures instead of ending the
// test, so a test helper's own failures can be checked: pass it where the
// helper takes a testing.TB, then read Failures. Cleanups registered on it
// run when End is called, last registered first, as testing runs them.
type Recorder struct {
	testing.TB
	Failures []string
	cleanups []func()
}

// Helper does nothing: a Recorder reports no lines.
func (r *Recorder) Helper() {}

// Fatal records args as a failure; it does not stop the goroutine.
func (r *Recorder) Fatal(args ...any) { r.Failures = append(r.Failures, fmt.Sprint(args...)) }

// Fatalf records a formatted failure; it does not stop the goroutine.
func (r *Recorder) Fatalf(format string, args ...any) {
	r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
}

// Error records args as a failure.
func (r *Recorder) Error(args ...any) { r.Failures = append(r.Failures, fmt.Sprint(args...)) }

// Cleanup registers f for End.
func (r *Recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }

// End runs the registered cleanups, last registered first.
func (r *Recorder) End() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
	r.cleanups = nil
}
