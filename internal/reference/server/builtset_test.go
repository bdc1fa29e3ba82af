package server

import (
	"sync/atomic"
	"testing"
)

// TestBuiltSetHandsEachItemOnceAfterItIsBuilt: over passes of many sizes on
// two workers, Ready is called once for every item, only after the item was
// built, and only on the calling goroutine (Ready appends to a slice
// without a lock: a call from a helper is a data race -race reports).
func TestBuiltSetHandsEachItemOnceAfterItIsBuilt(t *testing.T) {
	p := newPool(2, nil, 0)
	defer p.stop()
	var b builtSet
	for round := range 60 {
		n := 1 + round*7%130
		built := make([]atomic.Bool, n)
		var got []int
		b.reset(n, func(i int) {
			if !built[i].Load() {
				t.Errorf("round %d: item %d handed over before it was built", round, i)
			}
			got = append(got, i)
		})
		p.run(n, 1, func(wk, i int) {
			built[i].Store(true)
			b.done(wk, i)
		})
		b.finish()
		seen := make([]int, n)
		for _, i := range got {
			seen[i]++
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("round %d: item %d handed over %d times", round, i, c)
			}
		}
	}
}

// TestBuiltSetHandsOverDuringThePass: on one worker every item is handed
// over as soon as it is built, before the pass ends, which is what lets the
// server's sends overlap the builds.
func TestBuiltSetHandsOverDuringThePass(t *testing.T) {
	p := newPool(1, nil, 0)
	defer p.stop()
	var b builtSet
	const n = 20
	during, last := 0, -1
	passing := false
	b.reset(n, func(i int) {
		if passing {
			during++
		}
		if i != last+1 {
			t.Errorf("item %d handed over after %d", i, last)
		}
		last = i
	})
	passing = true
	p.run(n, 1, func(wk, i int) { b.done(wk, i) })
	passing = false
	b.finish()
	if during != n {
		t.Fatalf("%d of %d items handed over during the pass", during, n)
	}
}

// TestBuiltSetWithoutReadyDoesNothing: a build without Ready (tests,
// benchmarks) hands nothing over.
func TestBuiltSetWithoutReadyDoesNothing(t *testing.T) {
	var b builtSet
	b.reset(5, nil)
	b.done(0, 3)
	b.finish()
	if len(b.flags) != 0 {
		t.Fatalf("flags kept without Ready: %d", len(b.flags))
	}
}
