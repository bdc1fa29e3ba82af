package server

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// maxHotSpin bounds how long a helper spins for the next pass before it
// parks, whatever the tick does: a tick that never calls cool (a panic, a
// bug) costs at most this much of a core, not a core for good.
const maxHotSpin = 5 * time.Millisecond

// wakeLead is how long before the next tick is due a helper wakes. Timers
// that fire together are run by one OS thread, and the second goroutine
// readied gets a core only after another thread wakes: a helper due at the
// tick's own time joined 28 % of the passes (benchmark, 12 ms between
// ticks), one due 1 ms earlier 79 %.
const wakeLead = time.Millisecond

// pool runs data-parallel passes over n workers: the calling goroutine is
// worker 0, and n−1 long-lived goroutines are the helpers. Items are handed
// out through one atomic counter, so which worker builds which item varies
// from tick to tick — results must (and do) depend only on the item. A pool
// of 1 runs everything inline. stop ends the goroutines.
//
// Waking a parked helper costs a pass 90–280 µs (a goroutine wake, an OS
// thread wake, on a VM an idle vCPU's wake), and a helper woken by the
// tick goroutine is queued on the tick's own P, behind it: measured on the
// 2-core machine, a tick that slept 12 ms between ticks and woke its helper
// for each of its eight passes built snapshots only 7 % faster with two
// workers than with one. So a tick's passes run hot, between warm and
// cool: a helper that finishes a pass spins for the next instead of
// parking, and after cool it sleeps on its own timer until the next tick
// is due (coolUntil), so it is already running when the tick starts.
//
// Hot spans need each worker on a CPU of its own: a spinning helper that
// the kernel placed on the tick's CPU took turns with it, and the tick ran
// its passes alone (live, 128 clients with the swarm beside: 15 % of ticks
// built their snapshots on one worker, 6–7 ms). So they run only in a
// pinned pool (cpus set: worker k's thread bound to cpus[k]); an unpinned
// pool parks its helpers between passes and wakes them for each.
//
// A helper joins a pass only while it is open, and the caller closes it
// once it has run out of items: the caller waits only for helpers that are
// working, never for one still waking.
type pool struct {
	n    int
	wake []chan struct{} // one per helper, capacity 1: a token wakes it
	exit sync.WaitGroup  // goroutine lifetimes
	// state is the pass: its generation (high 32 bits), whether it is
	// open to joiners (openBit) and how many helpers joined (the rest).
	state   atomic.Uint64
	left    atomic.Int32  // joined helpers done with the pass
	hot     atomic.Bool   // between warm and cool
	cools   atomic.Uint32 // cool calls: a hot span's end
	wakeAt  atomic.Int64  // when the next tick is due (Unix ns; 0: none)
	next    atomic.Int64
	gen     uint32 // the caller's count of passes
	count   int
	chunk   int
	fn      func(worker, i int)
	passHot bool  // the pass began hot: its helpers stay for the next
	cpus    []int // worker k's CPU; nil: unpinned, never hot
	prio    int   // pinned workers' SCHED_FIFO priority; 0: normal
	// waiting: the caller of a cold pass blocks on done for its helpers.
	waiting atomic.Bool
	done    chan struct{}
	// parks and spinOuts count helpers going to sleep and giving up a
	// spin, for the tests.
	parks, spinOuts atomic.Int64
}

const (
	openBit  = 1 << 31
	joinMask = openBit - 1
)

// newPool starts a pool of n workers, pinned to cpus (one each, the
// caller's first) when cpus holds at least n and n ≥ 2, and then under
// SCHED_FIFO at prio when prio > 0.
func newPool(n int, cpus []int, prio int) *pool {
	p := &pool{n: max(n, 1), done: make(chan struct{}, 1)}
	if p.n >= 2 && len(cpus) >= p.n {
		p.cpus, p.prio = cpus[:p.n], prio
	}
	for w := 1; w < p.n; w++ {
		ch := make(chan struct{}, 1)
		p.wake = append(p.wake, ch)
		p.exit.Add(1)
		go p.helper(w, ch)
	}
	return p
}

// helper serves passes until the pool stops: it serves a hot span to its
// cool, then sleeps until the next is due or a token wakes it.
func (p *pool) helper(w int, wake chan struct{}) {
	defer p.exit.Done()
	if p.cpus != nil {
		// Restored before the goroutine ends, although the runtime is
		// meant to end a thread whose goroutine exits locked: measured, a
		// helper's thread outlived its pool, asleep in the runtime's pool
		// of threads still pinned and under SCHED_FIFO, where any
		// goroutine could be given it. A refused priority is the caller's
		// to report (pinCaller): the same process asks the same kernel.
		restore, _, _ := p.pinWorker(w)
		defer restore()
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var seen uint32
	var used int64
	spunOut := false
	for {
		ok, due := p.park(wake, t, seen, &used, spunOut)
		if !ok {
			return
		}
		spunOut = p.serve(w, &seen, due)
	}
}

// serve takes every open pass it has not seen until the current hot span
// cools, spinning between passes; woken at the next tick's due time
// (due), it also spins for the span to begin. Outside both (a cold pass,
// in any pool) it returns as soon as no pass is open: a helper that spun
// there burned 5 ms of a core for every pass it came too late for (a
// calm server's CPU 3-5 % -> 24 %). It gives up after maxHotSpin without
// a pass (and reports that it did): a tick that never cools (a panic, a
// bug) or a timer that fired late costs at most that much of a core.
//
// The spin never yields (runtime.Gosched): a yielding helper goes to the
// global run queue while the tick takes its P, and waits there until the
// tick next blocks, so the passes ran on one core (measured: 2.3 ms of AI
// work a tick instead of 0.1). The runtime's own preemption still stops it
// for the GC.
func (p *pool) serve(w int, seen *uint32, due bool) (spunOut bool) {
	cools := p.cools.Load()
	idle := time.Now()
	for spins := 0; ; spins++ {
		if joined, hot := p.join(w, seen); joined {
			if !hot {
				return false
			}
			idle = time.Now()
			continue
		}
		if p.cools.Load() != cools || !due && !p.hot.Load() {
			return false
		}
		if spins%1024 == 1023 && time.Since(idle) > maxHotSpin {
			p.spinOuts.Add(1)
			return true
		}
	}
}

// join takes part in the open pass if this helper has not seen it, and
// reports whether it did and whether the pass was hot.
func (p *pool) join(w int, seen *uint32) (joined, hot bool) {
	for {
		st := p.state.Load()
		g := uint32(st >> 32)
		if g == *seen {
			return false, false
		}
		if st&openBit == 0 {
			*seen = g // closed before this helper came: nothing left
			return false, false
		}
		if p.state.CompareAndSwap(st, st+1) {
			*seen = g
			break
		}
		// Joined by another helper, or closed, meanwhile: look again.
	}
	hot = p.passHot
	p.drain(w)
	n := p.left.Add(1)
	// The caller of a cold pass may be blocked waiting: the last joined
	// helper (the pass is closed once it waits, so the count is final)
	// hands it the one token.
	if p.waiting.Load() && n == int32(p.state.Load()&joinMask) && p.waiting.CompareAndSwap(true, false) {
		p.done <- struct{}{}
	}
	return true, hot
}

// park waits until there is work: a token (a warm or a cold pass), or the
// time the next tick is due (wakeAt, acted on once: a tick already due, as
// when the loop catches up after a slow tick, is served at once). A token
// left from a span the helper served anyway is dropped first, then the
// state read again, so a fresh one is never lost. A helper that spun out
// of a span still hot waits for the next warm. It reports false once the
// pool is stopped (ok false); due says it woke for the next tick.
func (p *pool) park(wake chan struct{}, t *time.Timer, seen uint32, used *int64, spunOut bool) (ok, due bool) {
	select {
	case _, ok := <-wake:
		if !ok {
			return false, false
		}
	default:
	}
	if p.opened(seen) || !spunOut && p.hot.Load() {
		return true, false
	}
	var timer <-chan time.Time
	if at := p.wakeAt.Load(); at != 0 && at != *used {
		*used = at
		d := time.Until(time.Unix(0, at))
		if d <= 0 {
			return true, true
		}
		if p.cpus != nil {
			p.parks.Add(1)
			return p.sleepUntil(wake, time.Unix(0, at))
		}
		t.Reset(d)
		timer = t.C
	}
	p.parks.Add(1)
	select {
	case _, ok := <-wake:
		t.Stop()
		return ok, false
	case <-timer:
		return true, true
	}
}

// sleepUntil is a pinned helper's park until at, the next tick's wake time: in
// the kernel (blockStep, which also yields once a tick), not on a Go timer, for the reason waitTick
// gives (a helper woken late missed whole ticks: "cpu 100 % of the
// work"). A token is seen between sleeps of at most blockChunk; a pass
// opened meanwhile runs without this helper, as any pass a helper comes
// late for.
func (p *pool) sleepUntil(wake chan struct{}, at time.Time) (ok, due bool) {
	for {
		select {
		case _, ok := <-wake:
			return ok, false
		default:
		}
		d := time.Until(at)
		if d <= 0 {
			return true, true
		}
		blockStep(d+wakeLead, wakeLead)
	}
}

// opened reports whether a pass the helper has not seen is open.
func (p *pool) opened(seen uint32) bool {
	st := p.state.Load()
	return uint32(st>>32) != seen && st&openBit != 0
}

func (p *pool) drain(w int) {
	for {
		lo := int(p.next.Add(int64(p.chunk))) - p.chunk
		if lo >= p.count {
			return
		}
		for i := lo; i < min(lo+p.chunk, p.count); i++ {
			p.fn(w, i)
		}
	}
}

// warm starts a hot span: the helpers, normally awake already (coolUntil),
// are woken if they are not, and spin between passes until cool.
func (p *pool) warm() {
	if p.cpus == nil || len(p.wake) == 0 {
		return
	}
	p.hot.Store(true)
	p.wakeAll()
}

// coolUntil ends the hot span: the helpers sleep until wakeLead before
// next, when the next span is due to start (the zero time: until woken).
func (p *pool) coolUntil(next time.Time) {
	if p.cpus == nil {
		return
	}
	if next.IsZero() {
		p.wakeAt.Store(0)
	} else {
		p.wakeAt.Store(next.Add(-wakeLead).UnixNano())
	}
	p.hot.Store(false)
	p.cools.Add(1)
}

// wakeAll gives every helper a token unless it holds one already.
func (p *pool) wakeAll() {
	for _, ch := range p.wake {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// run calls fn(worker, i) for every i in [0, count), chunk items at a time,
// and returns when all are done. A pass of one chunk runs inline: waking a
// helper would cost more than the chunk.
func (p *pool) run(count, chunk int, fn func(worker, i int)) {
	if count == 0 {
		return
	}
	p.count, p.chunk, p.fn = count, max(chunk, 1), fn
	p.next.Store(0)
	if len(p.wake) == 0 || count <= p.chunk {
		p.drain(0)
		p.fn = nil
		return
	}
	p.passHot = p.hot.Load()
	p.left.Store(0)
	p.gen++
	p.state.Store(uint64(p.gen)<<32 | openBit) // publishes the fields above
	if !p.passHot {
		p.wakeAll()
	}
	p.drain(0)
	if joined := p.close(); p.passHot {
		p.await(joined)
	} else {
		p.block(joined)
	}
	p.fn = nil
}

// close shuts the pass to joiners and returns how many joined.
func (p *pool) close() int32 {
	for {
		st := p.state.Load()
		if p.state.CompareAndSwap(st, st&^openBit) {
			return int32(st & joinMask)
		}
	}
}

// await spins until the joined helpers are done: each is working, within
// a chunk of the end. Past maxHotSpin (a helper descheduled by the OS) it
// also yields between polls.
func (p *pool) await(joined int32) {
	start := time.Now()
	for spins := 0; p.left.Load() != joined; spins++ {
		if spins%1024 == 1023 && time.Since(start) > maxHotSpin {
			runtime.Gosched()
		}
	}
}

// pinCaller pins the calling goroutine, the pool's worker 0, to its CPU
// and raises it to the pool's priority (pinWorker), and gives the Go
// runtime a spare processor (spareProc); an unpinned pool has nothing to
// do or undo.
func (p *pool) pinCaller() (restore func(), prio int, err error) {
	if p.cpus == nil {
		return func() {}, 0, nil
	}
	unspare := spareProc(p.n)
	unpin, prio, err := p.pinWorker(0)
	return func() { unpin(); unspare() }, prio, err
}

// spareProc makes GOMAXPROCS one more than a pinned pool's n workers
// while it runs, and returns what puts the old count back (nothing to do
// when it is higher already). With exactly one processor (P) per worker,
// a worker asleep in the kernel between ticks (held.Block) or in a cgo
// call within one (the transport's drain and flush) leaves no P idle, and
// then the scheduler takes the sleeper's P after 20 µs and hands it to
// another thread, which finds nothing to run; the sleeper takes a P back
// when it returns, and the scheduler's monitor, which did the taking,
// keeps waking every 20 µs to look for more. A spare P that stays idle
// is what tells the scheduler no other goroutine is waiting. Measured on
// a 128-client weave leg (docs/server.md, "The Go scheduler and the
// pinned workers"): the server's context switches fell from 37,000–47,000
// to 25,500 in 10 s.
func spareProc(n int) (restore func()) {
	old := runtime.GOMAXPROCS(0)
	if old > n {
		return func() {}
	}
	runtime.GOMAXPROCS(n + 1)
	return func() { runtime.GOMAXPROCS(old) }
}

// pinWorker pins the calling goroutine's thread to worker w's CPU and
// raises it to the pool's priority, and returns what undoes both and the
// SCHED_FIFO priority the thread got (0: normal). A refused pin leaves
// nothing to undo (the worker then floats, and only the spans lose); err
// is a refused priority: the worker stays pinned at normal priority.
func (p *pool) pinWorker(w int) (restore func(), prio int, err error) {
	unpin, perr := pinThread(p.cpus[w])
	if perr != nil {
		return func() {}, 0, nil
	}
	if p.prio == 0 {
		return unpin, 0, nil
	}
	lower, err := raiseThread(p.prio)
	if err != nil {
		return unpin, 0, err
	}
	return func() { lower(); unpin() }, p.prio, nil
}

// block waits for a cold pass's joined helpers without spinning: outside
// a hot span the caller gives its core up, as a parked pool always did (a
// helper descheduled mid-item on a loaded machine would otherwise cost a
// core of spinning).
func (p *pool) block(joined int32) {
	if p.left.Load() == joined {
		return
	}
	p.waiting.Store(true)
	if p.left.Load() == joined && p.waiting.CompareAndSwap(true, false) {
		return // the last helper finished before it could see the wait
	}
	<-p.done
}

// stop stops the helper goroutines and waits for them; calling it again
// does nothing.
func (p *pool) stop() {
	p.coolUntil(time.Time{})
	for _, ch := range p.wake {
		close(ch)
	}
	p.wake = nil // idempotent
	p.exit.Wait()
}
