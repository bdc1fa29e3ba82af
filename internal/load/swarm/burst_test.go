package swarm

import (
	"context"
	"testing"
	"time"
)

// waitRecorder is a pacer that waits for nothing and records the times
// until was asked to wait for.
type waitRecorder struct {
	at     []time.Time
	cancel bool // until reports a cancelled run
}

func (p *waitRecorder) wait(context.Context) bool { return true }
func (p *waitRecorder) stop()                     {}
func (p *waitRecorder) until(_ context.Context, t time.Time) bool {
	p.at = append(p.at, t)
	return !p.cancel
}

// TestIterationSpreadsItsBursts: a worker's iteration serves its clients
// in bursts of at most burstClients, burst b of n waited for at b/n of an
// interval after the first; a worker of at most burstClients clients serves
// them in one burst and never waits.
func TestIterationSpreadsItsBursts(t *testing.T) {
	const interval = 60 * time.Millisecond
	for _, tc := range []struct{ clients, bursts int }{{0, 1}, {1, 1}, {16, 1}, {17, 2}, {64, 4}, {100, 7}} {
		w := newWorker(0, &Config{}, nil, interval)
		far := time.Now().Add(time.Hour) // every client still waits for its ramp slot
		for i := range tc.clients {
			w.add(testClient(i, "weave", patterns["weave"](i, tc.clients), far))
		}
		p := &waitRecorder{}
		first := time.Now()
		_, allTerminal, ok := w.iterateSpread(context.Background(), p, first)
		if !ok {
			t.Fatalf("%d clients: the iteration reported a cancelled run", tc.clients)
		}
		if allTerminal != (tc.clients == 0) {
			t.Errorf("%d clients, none started: allTerminal %v", tc.clients, allTerminal)
		}
		if len(p.at) != tc.bursts-1 {
			t.Fatalf("%d clients: %d waits, want %d (bursts of at most %d)", tc.clients, len(p.at), tc.bursts-1, burstClients)
		}
		for b, at := range p.at {
			if want := first.Add(interval * time.Duration(b+1) / time.Duration(tc.bursts)); !at.Equal(want) {
				t.Errorf("%d clients: burst %d at +%v, want +%v", tc.clients, b+1, at.Sub(first), want.Sub(first))
			}
		}
	}
}

// TestIterationStopsWhenCancelledBetweenBursts: a run cancelled while the
// worker waits for its next burst ends the iteration there.
func TestIterationStopsWhenCancelledBetweenBursts(t *testing.T) {
	w := newWorker(0, &Config{}, nil, 60*time.Millisecond)
	far := time.Now().Add(time.Hour)
	for i := range 40 {
		w.add(testClient(i, "weave", patterns["weave"](i, 40), far))
	}
	p := &waitRecorder{cancel: true}
	if _, _, ok := w.iterateSpread(context.Background(), p, time.Now()); ok {
		t.Fatal("the iteration went on after a cancelled wait")
	}
	if len(p.at) != 1 {
		t.Fatalf("%d waits after the cancelled one, want it to stop at the first", len(p.at)-1)
	}
}
