package eventq

import (
	"sync"
	"testing"
)

// TestQueueDeliversInOrderAndReuses: Take returns exactly what was pushed
// since the last Take, in order, and after Recycle the next round reuses
// the buffer instead of allocating.
func TestQueueDeliversInOrderAndReuses(t *testing.T) {
	var q Queue[*int]
	for round := 0; round < 3; round++ {
		vals := []int{round, round + 10, round + 20}
		for i := range vals {
			q.Push(&vals[i])
		}
		evs := q.Take()
		if len(evs) != len(vals) {
			t.Fatalf("round %d: took %d events, want %d", round, len(evs), len(vals))
		}
		for i, e := range evs {
			if *e != vals[i] {
				t.Fatalf("round %d: event %d = %d, want %d", round, i, *e, vals[i])
			}
		}
		q.Recycle(evs)
		if evs[0] != nil {
			t.Fatal("Recycle left a reference to a delivered event")
		}
		if got := q.Take(); len(got) != 0 {
			t.Fatalf("round %d: a second Take returned %d events", round, len(got))
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		v := 1
		q.Push(&v)
		q.Recycle(q.Take())
	})
	// One for &v escaping; none for the queue in steady state.
	if allocs > 1 {
		t.Fatalf("%.0f allocations per push/take round, want at most 1 (the event itself)", allocs)
	}
}

// TestQueueConcurrentPush: pushes from many goroutines all arrive once.
func TestQueueConcurrentPush(t *testing.T) {
	var q Queue[int]
	const goroutines, each = 8, 1000
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				q.Push(1)
			}
		}()
	}
	got := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		evs := q.Take()
		got += len(evs)
		q.Recycle(evs)
	}
	if got != goroutines*each {
		t.Fatalf("took %d events, want %d", got, goroutines*each)
	}
}
