package cli

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// The gate starts waiting scripts in rank order whatever order their
// goroutines arrive in, never more than its limit at once, and an
// aloneScripts script with nothing beside it.
func TestScriptGateOrdersAndCaps(t *testing.T) {
	names := []string{"a", "bite_host_contention", "b", "c", "d", "e"}
	for _, tc := range []struct {
		name  string
		limit int
	}{{"one at a time", 1}, {"two at a time", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			g := &scriptGate{rank: map[string]int{}, limit: tc.limit, goParallel: 100, waiting: map[string]bool{}}
			g.cond = sync.NewCond(&g.mu)
			for i, n := range names {
				g.rank[n] = i
				g.waiting[n] = true
			}
			g.seal()
			if !g.ordered {
				t.Fatal("a gate Go lets every script reach does not order them")
			}
			var (
				mu          sync.Mutex
				started     []string
				running     = map[string]bool{} // entered and not yet left
				maxRunning  int
				besideAlone bool
				wg          sync.WaitGroup
			)
			// Arrive in reverse, the order Go was seen to release them in.
			for _, n := range slices.Backward(names) {
				wg.Add(1)
				go func() {
					defer wg.Done()
					g.enter(n)
					mu.Lock()
					started = append(started, n)
					if running["bite_host_contention"] || (aloneScripts[n] && len(running) > 0) {
						besideAlone = true
					}
					running[n] = true
					maxRunning = max(maxRunning, len(running))
					mu.Unlock()
					// Hold the slot a while, so that a gate that let another
					// script in beside this one would be seen to. A correct
					// gate passes however short the hold.
					time.Sleep(10 * time.Millisecond)
					mu.Lock()
					delete(running, n) // before leave: the set never misses a running script
					mu.Unlock()
					g.leave()
				}()
			}
			wg.Wait()
			if tc.limit == 1 && !slices.Equal(started, names) {
				t.Errorf("started %v, want rank order %v", started, names)
			}
			if started[0] != "a" {
				t.Errorf("started %v: the first in rank did not start first", started)
			}
			if maxRunning > tc.limit {
				t.Errorf("%d ran at once, limit %d", maxRunning, tc.limit)
			}
			if besideAlone {
				t.Error("a script started beside bite_host_contention")
			}
		})
	}
}
