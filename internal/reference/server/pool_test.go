package server

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// pinnedTo returns n copies of the first CPU this process may use: a
// pinned pool whose workers share one CPU still runs its passes right, and
// it exists on every Linux machine (elsewhere pinning fails and the pool
// keeps its spans without it).
func pinnedTo(t *testing.T, n int) []int {
	t.Helper()
	cpu := 0
	if cpus := allowedCPUs(); len(cpus) > 0 {
		cpu = cpus[0]
	}
	out := make([]int, n)
	for i := range out {
		out[i] = cpu
	}
	return out
}

// TestPoolRunsEveryItemOnce: every pass calls fn once per item, whatever
// the worker count, chunk, pinning, and whether the pass runs in a hot span
// (helpers spinning, sleeping until a due time) or cold (parked helpers
// woken per pass); several ticks in a row, a span left to its due time
// between them, cold passes after the last.
func TestPoolRunsEveryItemOnce(t *testing.T) {
	for _, tc := range []struct {
		workers int
		pinned  bool
	}{{1, false}, {2, false}, {4, false}, {2, true}, {4, true}} {
		t.Run(fmt.Sprintf("workers=%d/pinned=%v", tc.workers, tc.pinned), func(t *testing.T) {
			var cpus []int
			if tc.pinned {
				cpus = pinnedTo(t, tc.workers)
			}
			p := newPool(tc.workers, cpus, 0)
			defer p.stop()
			unpin, _, err := p.pinCaller()
			if err != nil {
				t.Fatal(err)
			}
			defer unpin()
			if got := p.cpus != nil; got != tc.pinned {
				t.Fatalf("pinned = %v, want %v", got, tc.pinned)
			}
			for tick := range 20 {
				p.warm()
				for _, pass := range []struct{ count, chunk int }{{512, 64}, {640, 64}, {21, 4}, {3, 1}, {1, 1}, {128, 1}, {7, 64}} {
					checkPass(t, p, pass.count, pass.chunk, fmt.Sprintf("tick %d", tick))
				}
				p.coolUntil(time.Now().Add(time.Duration(tick%3) * time.Millisecond))
			}
			for range 5 {
				checkPass(t, p, 300, 8, "cold")
			}
		})
	}
}

// checkPass runs one pass of count items and fails t unless each ran once
// on a worker the pool has.
func checkPass(t *testing.T, p *pool, count, chunk int, what string) {
	t.Helper()
	hits := make([]atomic.Int32, count)
	var badWorker atomic.Int32
	p.run(count, chunk, func(w, i int) {
		if w < 0 || w >= p.n {
			badWorker.Store(int32(w) + 1)
		}
		hits[i].Add(1)
	})
	for i := range hits {
		if n := hits[i].Load(); n != 1 {
			t.Fatalf("%s, pass of %d (chunk %d): item %d ran %d times", what, count, chunk, i, n)
		}
	}
	if w := badWorker.Load(); w != 0 {
		t.Fatalf("%s: worker %d is not one of the pool's %d", what, w-1, p.n)
	}
}

// TestPoolSpinIsBounded: a hot span nobody cools (a tick that panicked)
// costs a helper at most maxHotSpin of spinning: it gives up and parks by
// itself, and the next warm wakes it to serve again.
func TestPoolSpinIsBounded(t *testing.T) {
	p := newPool(2, pinnedTo(t, 2), 0)
	defer p.stop()
	p.warm()
	livetest.Eventually(t, livetest.Wait, func() (bool, string) {
		return p.spinOuts.Load() >= 1 && p.parks.Load() >= 1,
			fmt.Sprintf("helper spun out %d times, parked %d times", p.spinOuts.Load(), p.parks.Load())
	})
	parks := p.parks.Load()
	p.warm()
	checkPass(t, p, 256, 1, "after the spin-out")
	livetest.Eventually(t, livetest.Wait, func() (bool, string) {
		return p.parks.Load() > parks, "the helper did not park again after its second span ran out"
	})
}

// TestPoolStopEndsHelpers: stop returns (its helpers gone) whatever they
// are doing: spinning in a span never cooled, asleep until a due time an
// hour away, or parked.
func TestPoolStopEndsHelpers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(p *pool)
	}{
		{"spinning", func(p *pool) { p.warm() }},
		{"sleeping until due", func(p *pool) { p.warm(); p.coolUntil(time.Now().Add(time.Hour)) }},
		{"parked", func(*pool) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(3, pinnedTo(t, 3), 0)
			tc.setup(p)
			checkPass(t, p, 64, 1, tc.name)
			done := make(chan struct{})
			go func() { p.stop(); close(done) }()
			select {
			case <-done:
			case <-time.After(livetest.Wait):
				t.Fatalf("stop did not return within %v", livetest.Wait)
			}
			p.stop() // idempotent
		})
	}
}
