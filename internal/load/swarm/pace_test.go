package swarm

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

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
		{"inline transport, own process", hold, inlineBackend{inline: true}, false, 1, holdSupported},
		{"one worker per P", hold, inlineBackend{inline: true}, false, procs, holdSupported},
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

// (Where holdSupported is false, sleepHeld is time.Sleep: the pacer's own
// logic is still what these two tests check.)

// A held pacer never returns before its slot, keeps every slot on the grid
// start + k·interval, and after an overrun goes at once on the last slot
// already past (dropping the ones it missed) instead of catching up.
func TestHeldPacerGrid(t *testing.T) {
	const interval = 4 * time.Millisecond
	p := newPacer(true, interval).(*heldPacer)
	start := p.next // the grid's origin
	onGrid := func(at time.Time) bool { return at.Sub(start)%interval == 0 }
	ctx := context.Background()
	for k := 1; k <= 10; k++ {
		if !p.wait(ctx) {
			t.Fatal("wait returned false with a live context")
		}
		now := time.Now()
		if now.Before(p.next) || !onGrid(p.next) || p.next.Before(start.Add(time.Duration(k)*interval)) {
			t.Fatalf("wait %d: returned at +%v for slot +%v (interval %v)", k, now.Sub(start), p.next.Sub(start), interval)
		}
	}
	before := p.next
	time.Sleep(7 * interval / 2) // an iteration that overran three slots
	if !p.wait(ctx) {
		t.Fatal("wait returned false with a live context")
	}
	now := time.Now()
	if !onGrid(p.next) || p.next.After(now) || p.next.Before(before.Add(3*interval)) {
		t.Errorf("after an overrun: slot +%v, now +%v, previous slot +%v; want the last slot already past", p.next.Sub(start), now.Sub(start), before.Sub(start))
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
	p := newPacer(true, time.Hour)
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
