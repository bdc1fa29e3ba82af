// Command cpugaps measures the CPU time a machine takes from a thread that never yields.
//
// One thread per allowed CPU, pinned there (and under SCHED_FIFO when permitted, so no ordinary
// thread can preempt it), reads the clock in a tight loop and counts every gap between two reads
// longer than -min. What is left at real-time priority is interrupts, kernel work that outranks
// it, and on a VM the hypervisor running something else on the vCPU's core: time no priority or
// pinning in the server can win back. docs/server.md, "What the machine takes", has the
// recorded runs.
//
//	go run ./tools/cpugaps -duration 30s          # every allowed CPU, FIFO 50 if permitted
//	go run ./tools/cpugaps -duration 30s -prio 0  # at normal priority: what ordinary threads take too
//
// Each thread spins 800 ms of every second and sleeps the rest, so the kernel's real-time
// throttling (95 % of a second by default) never cuts in and the machine stays usable. Linux only.
// Run it on an otherwise idle machine: it takes every allowed CPU for most of each second.
package main

/*
#include <stdint.h>
#include <time.h>

#define NBOUNDS 5

struct gaps {
	int64_t spun, lost, max, max_at;
	int64_t over[NBOUNDS];
};

static int64_t mono_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

// spin reads the clock for dur ns, adding every gap over min_gap to g (max_at: ns into the spin).
static void spin(int64_t dur, int64_t min_gap, const int64_t *bounds, struct gaps *g) {
	int64_t began = mono_ns(), prev = began, stop = began + dur;
	while (prev < stop) {
		int64_t now = mono_ns(), d = now - prev;
		if (d > min_gap) {
			g->lost += d;
			for (int i = 0; i < NBOUNDS; i++)
				if (d > bounds[i])
					g->over[i]++;
			if (d > g->max) {
				g->max = d;
				g->max_at = now - began;
			}
		}
		prev = now;
	}
	g->spun += prev - began;
}
*/
import "C"

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// spinPerSecond is how much of each second a thread spins; the rest it sleeps.
const spinPerSecond = 800 * time.Millisecond

// bounds are the gap sizes counted apart, in increasing order (C's NBOUNDS of them).
var bounds = [C.NBOUNDS]time.Duration{50 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond, 4 * time.Millisecond}

// result is one CPU's count.
type result struct {
	cpu      int
	fifo     bool
	spun     time.Duration // wall time spent spinning
	lost     time.Duration // the sum of gaps over -min
	over     []int         // gaps over each of bounds
	max      time.Duration
	maxAt    time.Duration // since the start
	errorMsg string
}

func main() {
	dur := flag.Duration("duration", 30*time.Second, "how long to measure")
	prio := flag.Int("prio", 50, "SCHED_FIFO priority of the spinning threads (0: normal priority)")
	minGap := flag.Duration("min", 20*time.Microsecond, "the shortest gap counted as lost")
	flag.Parse()
	cpus, err := allowedCPUs()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cpugaps:", err)
		os.Exit(1)
	}
	start := time.Now()
	res := make([]result, len(cpus))
	var wg sync.WaitGroup
	for i, c := range cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i] = spin(c, *prio, *minGap, start, *dur)
		}()
	}
	wg.Wait()
	report(os.Stdout, res, *minGap, *dur)
}

// allowedCPUs lists the CPUs this process may run on.
func allowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("reading the affinity mask: %w", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64; c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// spin pins the calling goroutine's thread to cpu, raises it to prio when it can, and counts
// the gaps between clock reads until dur has passed since start.
func spin(cpu, prio int, minGap time.Duration, start time.Time, dur time.Duration) result {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	r := result{cpu: cpu, over: make([]int, len(bounds))}
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		r.errorMsg = fmt.Sprintf("pinning to CPU %d: %v", cpu, err)
		return r
	}
	if prio > 0 {
		attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
		if err := unix.SchedSetAttr(0, &attr, 0); err == nil {
			r.fifo = true
			// The thread returns to the Go runtime's pool after this goroutine: put it back.
			defer func() {
				normal := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_NORMAL}
				_ = unix.SchedSetAttr(0, &normal, 0)
			}()
		}
	}
	end := start.Add(dur)
	for burst := start; burst.Before(end); burst = burst.Add(time.Second) {
		time.Sleep(time.Until(burst))
		stop := burst.Add(spinPerSecond)
		if stop.After(end) {
			stop = end
		}
		r.spinBurst(stop, minGap, start)
	}
	return r
}

// spinBurst spins until stop, counting gaps over minGap. The loop is C: a Go loop is preempted
// by the runtime itself every 10 ms (sysmon), and each preemption of a goroutine locked to its
// thread is a gap of its own, the Go scheduler's rather than the machine's. A cgo call is not
// preempted.
func (r *result) spinBurst(stop time.Time, minGap time.Duration, start time.Time) {
	var cb [C.NBOUNDS]C.int64_t
	for i, b := range bounds {
		cb[i] = C.int64_t(b)
	}
	began := time.Now()
	var g C.struct_gaps
	C.spin(C.int64_t(stop.Sub(began)), C.int64_t(minGap), &cb[0], &g)
	r.spun += time.Duration(g.spun)
	r.lost += time.Duration(g.lost)
	for i := range r.over {
		r.over[i] += int(g.over[i])
	}
	if m := time.Duration(g.max); m > r.max {
		r.max, r.maxAt = m, began.Sub(start)+time.Duration(g.max_at)
	}
}

func report(w io.Writer, res []result, minGap, dur time.Duration) {
	sort.Slice(res, func(i, j int) bool { return res[i].cpu < res[j].cpu })
	fmt.Fprintf(w, "cpugaps: %s, each thread spinning %s of every second; gaps over %s counted as lost\n", dur, spinPerSecond, minGap)
	fmt.Fprintf(w, "%-4s %-6s %8s %7s", "cpu", "policy", "spun s", "lost %")
	for _, b := range bounds {
		fmt.Fprintf(w, " %8s", ">"+b.String())
	}
	fmt.Fprintf(w, " %9s %8s\n", "max ms", "at s")
	for _, r := range res {
		if r.errorMsg != "" {
			fmt.Fprintf(w, "%-4d %s\n", r.cpu, r.errorMsg)
			continue
		}
		pol := "normal"
		if r.fifo {
			pol = "fifo"
		}
		pct := 0.0
		if r.spun > 0 {
			pct = 100 * float64(r.lost) / float64(r.spun)
		}
		fmt.Fprintf(w, "%-4d %-6s %8.1f %7.3f", r.cpu, pol, r.spun.Seconds(), pct)
		for _, n := range r.over {
			fmt.Fprintf(w, " %8d", n)
		}
		fmt.Fprintf(w, " %9.3f %8.1f\n", float64(r.max)/1e6, r.maxAt.Seconds())
	}
}
