package server

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRunPinnedWorkers: with pin_sim_workers a server's sim workers take
// the first allowed CPUs (none with fewer allowed CPUs than workers), the
// loop ticks through its hot spans, and when Run returns the goroutine
// that ran it has its thread's affinity back.
func TestRunPinnedWorkers(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	ts := newTestServer(t, func(c *Config) {
		c.World.SimWorkerThreads = 2
		c.World.PinSimWorkers = true
		c.World.TestSpawnAICount = 512
	})
	want := allowedCPUs()
	if len(want) >= 2 {
		want = want[:2]
	} else {
		want = nil // one CPU: two workers cannot each have their own
	}
	if got := ts.sim.PinnedCPUs(); !slices.Equal(got, want) {
		t.Fatalf("workers pinned to %v, want %v (allowed %v)", got, want, allowedCPUs())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := ts.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if ts.met.ticksTotal == 0 {
		t.Fatal("the pinned loop ran no tick in a second")
	}
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("the loop's thread kept affinity %v after Run, had %v", after, before)
	}
}
