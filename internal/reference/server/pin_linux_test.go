package server

import (
	"context"
	"os"
	"runtime"
	"slices"
	"strconv"
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

// fifoThreads lists the process's threads under SCHED_FIFO at prio, with
// their affinity masks. It reports a failure with t.Error, not t.Fatal:
// the test also calls it from a goroutine of its own.
func fifoThreads(t *testing.T, prio int) map[int]unix.CPUSet {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Error(err)
		return nil
	}
	got := map[int]unix.CPUSet{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		attr, err := unix.SchedGetAttr(tid, 0)
		if err != nil || attr.Policy != unix.SCHED_FIFO || int(attr.Priority) != prio {
			continue // gone meanwhile, or not raised
		}
		var set unix.CPUSet
		if unix.SchedGetaffinity(tid, &set) == nil {
			got[tid] = set
		}
	}
	return got
}

// TestRunRealtimeWorkers: with realtime_priority the pinned workers'
// threads, and no other, run under SCHED_FIFO at it while the server runs,
// each bound to one CPU; when Run returns the loop's thread has its policy
// back, and once the server is closed no thread of the process is left
// raised. While the workers run the Go runtime has a processor more than
// the workers (spareProc), and its own count back after Run. With fewer
// than two allowed CPUs nothing is pinned, so nothing is raised either.
func TestRunRealtimeWorkers(t *testing.T) {
	const prio = 7
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	ts := newTestServer(t, func(c *Config) {
		c.World.SimWorkerThreads = 2
		c.World.PinSimWorkers = true
		c.World.RealtimePriority = prio
		c.World.TestSpawnAICount = 64
	})
	want := 2
	if len(allowedCPUs()) < 2 {
		want = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	procs := runtime.GOMAXPROCS(0)
	wantProcs := procs // unpinned: no spare processor either
	if want > 0 {
		wantProcs = max(procs, 3)
	}
	seen := make(chan map[int]unix.CPUSet, 1)
	procsDuring := make(chan int, 1)
	go func() {
		// Watch until both workers are up (the helper raises itself on
		// its own goroutine), then end the run.
		var last map[int]unix.CPUSet
		for ctx.Err() == nil {
			if last = fifoThreads(t, prio); len(last) >= want && want > 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		procsDuring <- runtime.GOMAXPROCS(0)
		seen <- last
		cancel()
	}()
	if err := ts.Run(ctx); err != nil {
		t.Fatal(err)
	}
	raised := <-seen
	if got := <-procsDuring; got != wantProcs {
		t.Errorf("GOMAXPROCS %d while the pinned workers ran, want %d (a spare processor, spareProc)", got, wantProcs)
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after Run, want %d back", got, procs)
	}
	if len(raised) != want {
		t.Fatalf("%d threads under SCHED_FIFO %d during the run, want %d (the pinned workers): %v", len(raised), prio, want, raised)
	}
	for tid, set := range raised {
		if set.Count() != 1 {
			t.Errorf("raised thread %d may run on %d CPUs, want its worker's one", tid, set.Count())
		}
	}
	attr, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if attr.Policy != unix.SCHED_NORMAL {
		t.Fatalf("the loop's thread kept policy %d after Run", attr.Policy)
	}
	ts.sim.Close()
	deadline := time.Now().Add(2 * time.Second)
	for left := fifoThreads(t, prio); len(left) > 0; left = fifoThreads(t, prio) {
		if time.Now().After(deadline) {
			t.Fatalf("threads still under SCHED_FIFO %d after Close: %v", prio, left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
