package swarm

import (
	"context"
	"runtime"
	"time"

	"github.com/scalegate/scalegate/internal/load/held"
	"github.com/scalegate/scalegate/internal/load/transport"
)

// A pacer makes a worker wait for its next iteration, the next slot of its
// grid. An iteration that ends past its successor's slot is followed at
// once, and the slots it overran are dropped (a time.Ticker's behaviour),
// so a slow iteration never causes a burst.
type pacer interface {
	// wait blocks until the next slot; false when ctx ended first.
	wait(ctx context.Context) bool
	// until blocks until t, as wait does for a slot (a burst within an
	// iteration); false when ctx ended first.
	until(ctx context.Context, t time.Time) bool
	stop()
}

// sweepSteps is how many iterations the grid's phase takes to sweep one
// interval up, and then back down (see grid).
const sweepSteps = 30

// A grid is a worker's iteration slots: start + k·interval + φ(k), where
// the phase φ walks from 0 to one interval in sweepSteps steps and back
// (a triangle: 2·sweepSteps iterations, one second at 60 Hz).
//
// Why: a server applies Inputs and answers pings on its own tick, so a
// client's input latency and round trip depend on when in the server's
// tick its messages arrive. A swarm sending on a fixed grid at the server's
// rate hits one moment of that tick for the whole run, a moment set by
// chance at start: five identical pr runs read input latency p95 between
// 4.2 and 19.4 ms. Players' inputs arrive at every moment of the tick; the
// sweep sends at 30 evenly spaced phases, each twice a cycle, so the
// figures are what players see on average, and the same from run to run.
// A triangle, not a sawtooth, keeps every gap within interval·(1 ± 1/30):
// no two sends a step apart, no snapshot left for two turns.
type grid struct {
	start    time.Time
	interval time.Duration
	origin   int64 // the sweep step of slot 0
	k        int64 // the slot wait returned last
}

// newGrid starts a grid at start. Workers start their sweeps at different
// steps (origin), so that at any moment they send at different phases.
func newGrid(start time.Time, interval time.Duration, worker int) grid {
	return grid{start: start, interval: interval, origin: int64(worker) * 37 % (2 * sweepSteps)}
}

// at is slot k's time.
func (g *grid) at(k int64) time.Time {
	m := (k + g.origin) % (2 * sweepSteps)
	if m > sweepSteps {
		m = 2*sweepSteps - m
	}
	return g.start.Add(time.Duration(k)*g.interval + g.interval*time.Duration(m)/sweepSteps)
}

// next moves to the slot after the current one and returns its time; when
// that has passed already (the iteration overran it), to the last slot
// not after now, which the worker takes at once.
func (g *grid) next(now time.Time) time.Time {
	g.k++
	if s := g.at(g.k); s.After(now) {
		return s
	}
	// Slots j apart are between (j-1) and (j+1) intervals apart, so this
	// jump stays at or before now; the loop takes the last steps.
	if n := int64(now.Sub(g.at(g.k)) / g.interval); n > 1 {
		g.k += n - 1
	}
	for !g.at(g.k + 1).After(now) {
		g.k++
	}
	return g.at(g.k)
}

// timerPacer waits on a timer set to each slot: the worker's goroutine
// parks between iterations and the Go scheduler wakes it.
type timerPacer struct {
	g grid
	t *time.Timer
}

func (p *timerPacer) wait(ctx context.Context) bool {
	return p.until(ctx, p.g.next(time.Now()))
}

func (p *timerPacer) until(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	p.t.Reset(d)
	select {
	case <-ctx.Done():
		return false
	case <-p.t.C:
		return true
	}
}

func (p *timerPacer) stop() { p.t.Stop() }

// holdChunk is the longest single sleep of a held pacer: it bounds how late
// a cancelled run is noticed at low input rates. At 60 Hz a whole gap
// between iterations is one sleep. The runtime's monitor thread (sysmon)
// preempts, with a signal that cuts the sleep short, a goroutine that has
// not passed through the scheduler for 10 ms, so about two gaps in three
// are cut once (the pacer yields and sleeps the rest); that is still
// cheaper than always sleeping in two pieces under 10 ms: one client, 15 s,
// 3,081–3,087 context switches and 178–182 µs of CPU per tick in one piece
// (584–586 signals) against 4,286–4,307 and 215–228 µs in 8 ms pieces; 128
// clients, three alternating pairs: 11.84–12.28 against 11.84–13.67 µs
// per client-tick.
const holdChunk = 20 * time.Millisecond

// heldPacer sleeps in a system call the Go scheduler does not see, so the
// worker keeps its OS thread and its processor (P) between iterations.
//
// Why: parked on a ticker, a worker that makes one long cgo call per
// iteration costs the Go runtime about 15 thread switches per iteration on
// one core. The runtime takes the P away from a goroutine in a long
// foreign call (sysmon's retake), starts a spinning thread to look for
// work, and that thread becomes the network poller that later wakes the
// worker on a different thread. Measured on one core, 128 ENet clients,
// 15 s: 13.5–14.2 K context switches on the ticker, 3.1–3.5 K held, 0.9 K
// for the bare C loop; CPU per client-tick (medians of 5 rounds, one run)
// 11.76 µs on the ticker and 10.98 held at 128 clients, 12.36 and 10.40 at
// 256 (docs/swarm.md, "Held pacing").
//
// The price: while a held worker sleeps, no other goroutine can use its P.
// Every sleep is preceded by a yield, and sysmon's preemption cuts a long
// one, so the monitor, signal handling and the GC wait at most about
// 10–20 ms; the pacer is used only when nothing else in the process needs
// the CPU sooner (see pacing).
type heldPacer struct {
	g    grid
	next time.Time // the slot wait returned for last
}

func (p *heldPacer) wait(ctx context.Context) bool {
	p.next = p.g.next(time.Now())
	return p.until(ctx, p.next)
}

func (p *heldPacer) until(ctx context.Context, t time.Time) bool {
	for {
		runtime.Gosched()
		if ctx.Err() != nil {
			return false
		}
		d := time.Until(t)
		if d <= 0 {
			return true
		}
		held.Sleep(min(d, holdChunk))
	}
}

func (p *heldPacer) stop() {}

// pacing says whether a run's workers may hold their threads: the process
// must be the swarm's own (cfg.HoldThreads, set by `scalegate swarm`; a
// library caller may run other goroutines that need the CPU on time), the
// platform must have the held sleep, the transport must do its I/O in the
// worker's calls (QUIC's goroutines would starve), there must be no
// impairment relay (its goroutines forward every datagram), and every
// worker must have a P of its own.
func pacing(cfg *Config, b transport.Backend, relayed bool, workers int) (hold bool) {
	in, ok := b.(transport.Inline)
	return cfg.HoldThreads && held.Supported && ok && in.InlineIO() && !relayed &&
		workers <= runtime.GOMAXPROCS(0)
}

// newPacer returns the pacer of one worker whose grid starts now.
func newPacer(held bool, interval time.Duration, worker int) pacer {
	g := newGrid(time.Now(), interval, worker)
	if held {
		return &heldPacer{g: g, next: g.start}
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerPacer{g: g, t: t}
}
