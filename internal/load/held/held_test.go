package held_test

import (
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/held"
)

// TestSleepSleepsAtLeastItsTime: a held sleep that is not cut short by a
// signal lasts at least d; one cut short returns early, and the callers
// loop on the clock, as this test does.
func TestSleepSleepsAtLeastItsTime(t *testing.T) {
	const d = 3 * time.Millisecond
	start := time.Now()
	for end := start.Add(d); time.Now().Before(end); {
		held.Sleep(time.Until(end))
	}
	if got := time.Since(start); got < d {
		t.Fatalf("slept %v, want at least %v", got, d)
	}
}

// ExampleSleep paces a loop at 1 kHz for 5 iterations, the last stretch
// of each wait held.
func ExampleSleep() {
	next := time.Now()
	for range 5 {
		next = next.Add(time.Millisecond)
		for d := time.Until(next); d > 0; d = time.Until(next) {
			held.Sleep(d)
		}
	}
	// Output:
}
