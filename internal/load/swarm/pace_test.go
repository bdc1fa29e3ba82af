package swarm

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/held"
	"github.com/scalegate/scalegate/internal/load/transport"
	_ "github.com/scalegate/scalegate/internal/load/transport/quic"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// plainBackend is a Backend that says nothing about where its I/O runs;
// inlineBackend one that answers InlineIO.
type plainBackend struct{ transport.Backend }

type inlineBackend struct {
	transport.Backend
	inline bool
}

func (b inlineBackend) InlineIO() bool { return b.inline }

func TestPacing(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	hold := &Config{HoldThreads: true}
	cases := []struct {
		name    string
		cfg     *Config
		b       transport.Backend
		relayed bool
		workers int
		want    bool
	}{
		{"inline transport, own process", hold, inlineBackend{inline: true}, false, 1, held.Supported},
		{"one worker per P", hold, inlineBackend{inline: true}, false, procs, held.Supported},
		{"library caller", &Config{}, inlineBackend{inline: true}, false, 1, false},
		{"transport with goroutines", hold, plainBackend{}, false, 1, false},
		{"transport says not inline", hold, inlineBackend{inline: false}, false, 1, false},
		{"impairment relay", hold, inlineBackend{inline: true}, true, 1, false},
		{"more workers than Ps", hold, inlineBackend{inline: true}, false, procs + 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := pacing(tc.cfg, tc.b, tc.relayed, tc.workers); got != tc.want {
				t.Errorf("pacing = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestEnetAndQUICInline(t *testing.T) {
	for name, want := range map[string]bool{"enet": true, "quic": false} {
		b, err := transport.Lookup(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		in, ok := b.(transport.Inline)
		if got := ok && in.InlineIO(); got != want {
			t.Errorf("%s: inline I/O %v, want %v", name, got, want)
		}
	}
}

// (Where held.Supported is false, held.Sleep is time.Sleep: the pacer's own
// logic is still what these two tests check.)

// The grid sweeps the send phase: every gap between slots is within
// interval·(1 ± 1/sweepSteps), and over one cycle (2·sweepSteps slots)
// each of sweepSteps evenly spaced phases of the interval is used exactly
// twice, whatever the worker's origin.
func TestGridSweep(t *testing.T) {
	const interval = 16_666_667 * time.Nanosecond
	step := interval / sweepSteps
	for worker := range 4 {
		g := newGrid(time.Unix(1000, 0), interval, worker)
		seen := map[time.Duration]int{}
		prev := g.at(0)
		for k := int64(1); k <= 2*sweepSteps; k++ {
			s := g.at(k)
			if gap := s.Sub(prev); gap < interval-step-1 || gap > interval+step+1 {
				t.Fatalf("worker %d, slot %d: gap %v, want %v ± %v", worker, k, gap, interval, step)
			}
			prev = s
			phase := s.Sub(g.start) % interval
			seen[(phase+step/2)/step%sweepSteps]++ // the step it is nearest to
		}
		for i := range time.Duration(sweepSteps) {
			if seen[i] != 2 {
				t.Fatalf("worker %d: phase step %d used %d times in a cycle, want 2 (all: %v)", worker, i, seen[i], seen)
			}
		}
	}
}

// After an overrun the grid moves to the last slot not after now (the
// worker goes at once), never to one still ahead, and never backwards.
func TestGridOverrun(t *testing.T) {
	const interval = 10 * time.Millisecond
	for _, late := range []time.Duration{0, interval / 3, 3 * interval / 2, 7 * interval, 1000*interval + 3} {
		g := newGrid(time.Unix(1000, 0), interval, 1)
		g.next(g.at(1).Add(-1)) // at slot 1
		now := g.at(2).Add(late)
		s := g.next(now)
		if s.After(now) || !g.at(g.k+1).After(now) || g.k < 2 {
			t.Errorf("late %v: slot %d at +%v, now +%v, next slot +%v: want the last slot not after now",
				late, g.k, s.Sub(g.start), now.Sub(g.start), g.at(g.k+1).Sub(g.start))
		}
	}
}

// A held pacer never returns before its slot, keeps every slot on its
// grid, and after an overrun goes at once on the last slot already past
// (dropping the ones it missed) instead of catching up.
func TestHeldPacerGrid(t *testing.T) {
	const interval = 4 * time.Millisecond
	p := newPacer(true, interval, 0).(*heldPacer)
	ctx := context.Background()
	for k := int64(1); k <= 10; k++ {
		if !p.wait(ctx) {
			t.Fatal("wait returned false with a live context")
		}
		now := time.Now()
		if now.Before(p.next) || p.next != p.g.at(p.g.k) || p.g.k < k {
			t.Fatalf("wait %d: returned at +%v for slot %d at +%v", k, now.Sub(p.g.start), p.g.k, p.next.Sub(p.g.start))
		}
	}
	before := p.g.k
	time.Sleep(7 * interval / 2) // an iteration that overran three slots
	if !p.wait(ctx) {
		t.Fatal("wait returned false with a live context")
	}
	now := time.Now()
	if p.next != p.g.at(p.g.k) || p.next.After(now) || p.g.k < before+2 {
		t.Errorf("after an overrun: slot %d at +%v, now +%v, previous slot %d; want the last slot already past", p.g.k, p.next.Sub(p.g.start), now.Sub(p.g.start), before)
	}
}

// A timer pacer waits for its slots the same way, and ends with the context.
func TestTimerPacer(t *testing.T) {
	const interval = 4 * time.Millisecond
	p := newPacer(false, interval, 0).(*timerPacer)
	defer p.stop()
	ctx, cancel := context.WithCancel(context.Background())
	for k := 1; k <= 5; k++ {
		if !p.wait(ctx) {
			t.Fatal("wait returned false with a live context")
		}
		if now, slot := time.Now(), p.g.at(p.g.k); now.Before(slot) {
			t.Fatalf("wait %d: returned at +%v, before its slot +%v", k, now.Sub(p.g.start), slot.Sub(p.g.start))
		}
	}
	cancel()
	p.g.start = p.g.start.Add(time.Hour) // the next slot is an hour away
	if p.wait(ctx) {
		t.Error("wait returned true after cancel")
	}
}

// liveOnce is a context that is live the first time it is asked and
// cancelled from then on: a held wait's first look sends it into a held
// sleep, and the run is cancelled while it sleeps.
type liveOnce struct {
	context.Context
	looks atomic.Int32
}

func (c *liveOnce) Err() error {
	if c.looks.Add(1) == 1 {
		return nil
	}
	return context.Canceled
}

// A cancelled run ends a held wait although its slot is an hour away (each
// sleep is at most holdChunk, and the context is read between sleeps).
func TestHeldPacerCancel(t *testing.T) {
	ctx := &liveOnce{Context: context.Background()}
	p := newPacer(true, time.Hour, 0)
	if livetest.Within(t, livetest.Wait, "a held wait cancelled in its sleep", func() bool { return p.wait(ctx) }) {
		t.Error("wait returned true after cancel")
	}
	if n := ctx.looks.Load(); n < 2 {
		t.Fatalf("the context was read %d times: the wait never slept and looked again", n)
	}
}

// TestAutoThreadsFollowsGOMAXPROCS: the default worker count never exceeds
// the Ps the runtime has (a CPU-limited container gets fewer than NumCPU),
// so auto-sized workers can always be held.
func TestAutoThreadsFollowsGOMAXPROCS(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	cases := []struct{ procs, clients, want int }{
		{1, 1, 1},
		{1, 1000, 1},
		{2, 32, 1},
		{2, 33, 2},
		{2, 1000, 2},
		{4, 96, 3},
		{4, 1000, 4},
	}
	for _, c := range cases {
		runtime.GOMAXPROCS(c.procs)
		if got := AutoThreads(c.clients); got != c.want {
			t.Errorf("GOMAXPROCS=%d: AutoThreads(%d) = %d, want %d", c.procs, c.clients, got, c.want)
		}
	}
}
