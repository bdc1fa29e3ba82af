package swarm

import (
	"context"
	"runtime"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// A pacer makes a worker wait for its next iteration. Iterations fall on the
// grid start + k·interval; one that ends past its successor's slot is
// followed at once, and the slots it overran are dropped (a time.Ticker's
// behaviour), so a slow iteration never causes a burst.
type pacer interface {
	// wait blocks until the next slot; false when ctx ended first.
	wait(ctx context.Context) bool
	stop()
}

// tickerPacer waits on a time.Ticker: the worker's goroutine parks between
// iterations and the Go scheduler wakes it.
type tickerPacer struct{ t *time.Ticker }

func (p tickerPacer) wait(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-p.t.C:
		return true
	}
}

func (p tickerPacer) stop() { p.t.Stop() }

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
	next     time.Time
	interval time.Duration
}

func (p *heldPacer) wait(ctx context.Context) bool {
	p.next = p.next.Add(p.interval)
	if late := time.Since(p.next); late >= 0 {
		p.next = p.next.Add(late / p.interval * p.interval) // overran: go at once
	}
	for {
		runtime.Gosched()
		if ctx.Err() != nil {
			return false
		}
		d := time.Until(p.next)
		if d <= 0 {
			return true
		}
		sleepHeld(min(d, holdChunk))
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
func pacing(cfg *Config, b transport.Backend, relayed bool, workers int) (held bool) {
	in, ok := b.(transport.Inline)
	return cfg.HoldThreads && holdSupported && ok && in.InlineIO() && !relayed &&
		workers <= runtime.GOMAXPROCS(0)
}

// newPacer returns the pacer of one worker whose grid starts now.
func newPacer(held bool, interval time.Duration) pacer {
	if held {
		return &heldPacer{next: time.Now(), interval: interval}
	}
	return tickerPacer{time.NewTicker(interval)}
}
