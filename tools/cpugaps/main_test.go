package main

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSpinCountsAThreadSharingItsCPU: a spinner that shares its CPU with a
// busy thread at the same (normal) priority gets about half of it, so the
// tool must count a large share lost and gaps of the kernel's time slices,
// and its counts per bound must not grow with the bound. A tool that counts
// nothing here would call any machine quiet.
func TestSpinCountsAThreadSharingItsCPU(t *testing.T) {
	cpus, err := allowedCPUs()
	if err != nil || len(cpus) == 0 {
		t.Fatalf("allowed CPUs %v: %v", cpus, err)
	}
	cpu := cpus[0]
	var stop atomic.Bool // the hog spins until it is set
	hogging := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		var set unix.CPUSet
		set.Set(cpu)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			t.Error(err)
			close(hogging)
			return
		}
		close(hogging)
		for !stop.Load() {
		}
	}()
	<-hogging
	const dur = 300 * time.Millisecond
	r := spin(cpu, 0, 20*time.Microsecond, time.Now(), dur)
	stop.Store(true)
	if r.errorMsg != "" {
		t.Fatal(r.errorMsg)
	}
	if r.spun < dur*9/10 || r.spun > dur*2 {
		t.Fatalf("spun %v, want about %v", r.spun, dur)
	}
	if share := float64(r.lost) / float64(r.spun); share < 0.2 {
		t.Fatalf("lost %.1f %% of the spin to a thread sharing its CPU, want well over 20 %%", 100*share)
	}
	if r.over[1] == 0 {
		t.Fatalf("no gap over %v while sharing a CPU: %+v", bounds[1], r)
	}
	for i := 1; i < len(r.over); i++ {
		if r.over[i] > r.over[i-1] {
			t.Fatalf("more gaps over %v than over %v: %v", bounds[i], bounds[i-1], r.over)
		}
	}
	var sb strings.Builder
	report(&sb, []result{r}, 20*time.Microsecond, dur)
	if out := sb.String(); !strings.Contains(out, "normal") || !strings.Contains(out, ">500µs") {
		t.Fatalf("report:\n%s", out)
	}
}
