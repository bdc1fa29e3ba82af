package swarm

import (
	"cmp"
	"context"
	"math"
	"sync"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/transport"
)

// worker owns a shard of clients and their hosts. Everything it touches is
// its own except pub, which the monitor reads once a second under mu.
type worker struct {
	id  int
	cfg *Config
	// holdOver, when set, is called once the worker's loop is over; it
	// returns when every worker's is, so that no goodbye (sayGoodbye)
	// goes out while another worker's clients are still in the hold.
	holdOver func()
	// park, when set, is called once the goodbyes are said and before the
	// clients disconnect; it returns when Run releases the workers.
	park func()
	// leave is what the clients' goodbyes came to (a Leaver protocol).
	leave   leaveTally
	backend transport.Backend
	// idle is the timeout its clients' hosts are dialled with
	// (hostTimeout).
	idle     time.Duration
	clients  []*client
	interval time.Duration

	now      time.Time // time of the event being handled (see clientFn)
	clientFn []func(transport.Event)
	scratch  []byte
	ctl      Control
	// proto is the protocol's part this worker owns; every client's bot
	// comes from it.
	proto       WorkerProtocol
	connectData uint32
	// batch, when the backend batches, sends and services every live
	// client's host in one call per iteration; batched are its clients in
	// item order.
	batch transport.Batch
	// held: pace with a heldPacer (see pacing), not a timer.
	held    bool
	batched []*client
	onEvent func(item int, at time.Time, ev transport.Event) // onBatchEvent, bound once

	// dtHist, rttHist and pdHist hold every iteration's work time, every
	// RTT sample and every PeerDelay of the worker's clients (after the
	// warm-up) as mergeable histograms: a slice of raw samples would grow
	// with the run's length, a histogram does not.
	dtHist, rttHist, pdHist *stats.Histogram
	// trttHist holds the transport's own RTT estimates (transport_rtt_ms),
	// latHist the input latencies (input_latency_ms); latUnanswered counts
	// the Inputs given up on unanswered (in latHist with their age).
	trttHist, latHist *stats.Histogram
	latUnanswered     int64
	// secLat holds the input latencies timed since the last publish
	// (secLatN of them), in intervalBounds' buckets.
	secLat  []uint64
	secLatN int64
	// rttPinged and rttEstimated count the rtt_ms samples (after the
	// warm-up) that were pings and transport estimates.
	rttPinged, rttEstimated int64
	// pingEvery is the time between two pings of a client (0: none).
	pingEvery time.Duration
	// svcInterval: per joined client, the time between two consecutive
	// services of its host (a mergeable histogram: one record per
	// client-tick would not fit in a slice at 1000 clients).
	svcInterval    *stats.Histogram
	intervalDt     []float64 // iterations since the last publish
	pubSvcSum      float64   // service intervals (ms) since the last publish
	pubSvcN        int64
	inputsSent     int64
	clientTicks    int64 // clients serviced, summed over iterations
	protocolErrors int64
	spoken         string // Backend() of the first host this worker made
	firstDialErr   error
	// Clients the harness itself failed to start (harnessFail): no socket,
	// no connect issued, and of those the descriptor-limit ones; fds is
	// the run's descriptor budget (nil: none needed).
	socketErrs, dialErrs, fdErrs int
	fds                          *fdRoom
	// clock and perSec serve impaired runs: the stretch a time falls in,
	// and the snapshots that arrived in each second of the run;
	// stretchIntervals the state-update intervals of each stretch.
	clock            *phaseClock
	perSec           []int64
	stretchIntervals []*stats.Histogram
	stretchRTT       []*stats.Histogram
	stretchLat       []*stats.Histogram
	// warmEnd is the warm-up's end (zero: none): the windowed figures
	// count from it (Config.Warmup).
	warmEnd time.Time
	// stateInterval pools the joined clients' times between consecutive
	// windowed state updates.
	stateInterval *stats.Histogram
	// stoppedAt is when the worker's loop ended (before it parked): the
	// end of its clients' joined time for the delivery figures.
	stoppedAt time.Time

	mu      sync.Mutex
	pub     workerPub
	lastPub time.Time
}

// workerPub is what a worker tells the monitor about the last second.
type workerPub struct {
	at        time.Time
	connected int
	tickHz    []float64 // per joined client: server ticks advanced per second
	kbsSum    float64
	kbsN      int
	rttMs     []float64 // latest RTT estimate per joined client
	dtP99     float64   // NaN: no iteration in the interval
	svcSum    float64   // joined clients' service intervals (ms) in the interval
	svcN      int64
	lat       []uint64 // input latencies timed in the interval, in intervalBounds' buckets (nil: none)
}

func newWorker(id int, cfg *Config, b transport.Backend, interval time.Duration) *worker {
	p := cfg.protocol()
	w := &worker{
		id: id, cfg: cfg, backend: b, interval: interval,
		scratch:       make([]byte, 0, 512),
		proto:         p.NewWorker(cfg),
		connectData:   p.ConnectData(),
		pub:           workerPub{dtP99: math.NaN()},
		svcInterval:   stats.NewHistogram(),
		dtHist:        stats.NewHistogram(),
		rttHist:       stats.NewHistogram(),
		pdHist:        stats.NewHistogram(),
		trttHist:      stats.NewHistogram(),
		latHist:       stats.NewHistogram(),
		stateInterval: stats.NewHistogram(),
	}
	w.idle = hostTimeout(cfg, b)
	if cfg.PingHz > 0 {
		w.pingEvery = time.Duration(float64(time.Second) / cfg.PingHz)
	}
	if bt, ok := b.(transport.Batcher); ok && !cfg.PerClientService {
		w.batch = bt.NewBatch()
		w.onEvent = w.onBatchEvent
	}
	return w
}

func (w *worker) add(c *client) {
	w.clients = append(w.clients, c)
	// One closure per client, made once: passing a fresh closure to
	// Service every tick would allocate N times per tick.
	w.clientFn = append(w.clientFn, func(ev transport.Event) { c.handle(w, ev, w.now) })
}

// run paces the worker at the input rate until ctx ends or every client
// has reached a terminal state, then disconnects and frees every host.
func (w *worker) run(ctx context.Context, start time.Time) {
	w.lastPub = start
	p := newPacer(w.held, w.interval, w.id)
	defer p.stop()
	defer func() {
		w.stoppedAt = time.Now()
		w.countLeavers()
		if w.holdOver != nil {
			w.holdOver()
		}
		w.sayGoodbye()
		if w.park != nil {
			w.park()
		}
		w.shutdown()
	}()
	for p.wait(ctx) {
		begin := time.Now()
		work, done, ok := w.iterateSpread(ctx, p, begin)
		if !ok {
			return
		}
		dt := float64(work) / float64(time.Millisecond)
		if !begin.Before(w.warmEnd) {
			w.dtHist.Record(dt)
		}
		w.intervalDt = append(w.intervalDt, dt)
		w.maybePublish(time.Now())
		if done {
			return
		}
	}
}

// burstClients is the most clients a worker serves in one burst. An
// iteration over more is split into bursts spread evenly over the
// interval (iterateSpread).
//
// Why: the swarm shares the machine with the server it measures, and a
// worker serving all its clients at once holds a core for a few
// milliseconds each interval. When that burst fell on the server's tick,
// the tick lost a core: on the 2-core machine, reference-enet's idle leg
// (128 clients in two workers of 64) read tick p99 6.2–6.3 ms over 30 s
// with one burst per worker, and 4.66–4.84 ms with the clients spread
// over 8–32 workers (the server's own work: a tick's p50 about 3.3 ms).
// Players' inputs do not arrive in two bursts a tick either.
const burstClients = 16

// iterateSpread is one iteration of the worker (iterate) in bursts of at
// most burstClients clients, burst b of n starting b/n of an interval
// after first (at once when the burst before overran that). It returns
// the bursts' work time, the waits between them left out, and whether
// every client is terminal; ok is false when ctx ended while it waited.
func (w *worker) iterateSpread(ctx context.Context, p pacer, first time.Time) (work time.Duration, allTerminal, ok bool) {
	n := len(w.clients)
	bursts := max(1, (n+burstClients-1)/burstClients)
	allTerminal = true
	for b := range bursts {
		if b > 0 && !p.until(ctx, first.Add(w.interval*time.Duration(b)/time.Duration(bursts))) {
			return work, false, false
		}
		begin := time.Now()
		if !w.iterate(b*n/bursts, (b+1)*n/bursts) {
			allTerminal = false
		}
		work += time.Since(begin)
	}
	return work, allTerminal, true
}

// iterate is one loop of the worker over its clients [lo, hi): start due
// clients, send inputs, service every host. It reports whether every one
// of them is terminal.
func (w *worker) iterate(lo, hi int) (allTerminal bool) {
	if w.batch != nil {
		return w.iterateBatch(lo, hi)
	}
	allTerminal = true
	for i := lo; i < hi; i++ {
		c := w.clients[i]
		now, live, running := w.turn(c)
		allTerminal = allTerminal && !running
		if !live {
			continue
		}
		switch c.phase {
		case phaseJoined:
			c.sendInput(w, now)
			c.sampleRTT(w, now)
		case phaseJoining:
			c.wait(now)
		}
		if c.live() {
			w.clientTicks++
			w.now = now
			w.serviced(c, now)
			if _, err := c.host.Service(w.clientFn[i]); err != nil {
				c.fail(lostTransport, now)
			}
		}
		w.checkTimeouts(c, time.Now())
		if c.phase.terminal() {
			w.release(c)
		}
	}
	return allTerminal
}

// turn begins a client's step of an iteration, the same in both loops: it
// reads the clock, starts or releases the client (ready) and, while the
// client is live, spends the --test-busy-us knob's CPU; now is the time
// after that.
func (w *worker) turn(c *client) (now time.Time, live, running bool) {
	now = time.Now()
	if live, running = w.ready(c, now); live {
		now = w.testBusy(now)
	}
	return now, live, running
}

// ready starts a client whose ramp slot has come and releases one that has
// ended. live: it holds an open host this iteration; running: it is not
// over yet (still waiting for its slot, or live).
func (w *worker) ready(c *client, now time.Time) (live, running bool) {
	wasPending := c.phase == phasePending
	if wasPending {
		if now.Before(c.slot) {
			return false, true
		}
		w.start(c, now)
	}
	if !c.live() {
		w.release(c)
		return false, wasPending
	}
	return true, true
}

// iterateBatch is iterate on a batching backend: the same steps for each
// client, with every live client's Input send and host service done in one
// batch call (in client order, each timed when its turn came) and the
// events handed back afterwards.
func (w *worker) iterateBatch(lo, hi int) (allTerminal bool) {
	allTerminal = true
	b := w.batch
	b.Reset()
	w.batched = w.batched[:0]
	for _, c := range w.clients[lo:hi] {
		now, live, running := w.turn(c)
		allTerminal = allTerminal && !running
		if !live {
			continue
		}
		var msg []byte
		switch c.phase {
		case phaseJoined:
			msg = w.batchInput(c, now)
			c.sampleRTT(w, now)
		case phaseJoining:
			c.wait(now)
		}
		if !c.live() { // the protocol's send failed, or it gave up
			w.release(c)
			continue
		}
		b.Add(c.host, c.peer, msg)
		w.batched = append(w.batched, c)
	}
	b.Run(w.onEvent)
	for i, c := range w.batched {
		at, sendErr, svcErr := b.Result(i)
		if sendErr != nil {
			c.fail(failSend, at)
		} else {
			if c.pendingInput {
				c.inputSent(w, at)
			}
			w.clientTicks++
			w.serviced(c, at)
			if svcErr != nil && c.live() {
				c.fail(lostTransport, at)
			}
		}
		c.pendingInput = false
		w.checkTimeouts(c, at)
		if c.phase.terminal() {
			w.release(c)
		}
	}
	return allTerminal
}

// batchInput builds the client's Input for the batch, which sends
// unreliably; one the protocol sends another way goes out at once, and the
// batch then only services the host. A failed send ends the client.
func (w *worker) batchInput(c *client, now time.Time) []byte {
	msg, d := c.buildInput(w, now)
	if msg == nil || d == transport.Unreliable {
		return msg
	}
	c.pendingInput = false
	if err := c.host.Send(c.peer, d, msg); err != nil {
		c.fail(failSend, now)
		return nil
	}
	c.inputSent(w, now)
	return nil
}

// testBusy spins cfg.TestBusy of CPU (the --test-busy-us test knob) and
// returns the time after it; now itself when the knob is off. It spins
// rather than sleeps: a slow harness is one short of CPU, and a sleep
// would hand the core to the server under test.
func (w *worker) testBusy(now time.Time) time.Time {
	if w.cfg.TestBusy <= 0 {
		return now
	}
	end := now.Add(w.cfg.TestBusy)
	for now.Before(end) {
		now = time.Now()
	}
	return now
}

// serviced records the interval since the client's previous service while
// it is joined: the per-client view of whether the harness keeps up.
func (w *worker) serviced(c *client, at time.Time) {
	if c.phase != phaseJoined {
		c.lastService = time.Time{}
		return
	}
	if !c.lastService.IsZero() {
		ms := float64(at.Sub(c.lastService)) / float64(time.Millisecond)
		if !at.Before(w.warmEnd) {
			w.svcInterval.Record(ms)
		}
		w.pubSvcSum += ms
		w.pubSvcN++
	}
	c.lastService = at
}

// onBatchEvent hands one batched event to its client, timed when the
// client's turn in the batch began.
func (w *worker) onBatchEvent(item int, at time.Time, ev transport.Event) {
	if c := w.batched[item]; c.live() {
		c.handle(w, ev, at)
	}
}

// hostTimeout is the idle timeout a client's host is dialled with. Where
// the backend has a handshake it is the swarm's own (--timeout-s): the
// transport's timeout is a real one there (ENet's retransmits, a
// WebSocket ping nobody answers). Raw UDP has none; its host only forgets
// a peer it heard nothing from, which would end a client as
// transport_timeout when the server never answered its join (join_timeout)
// or fell silent (silent). There the host's timeout lies past both of the
// engine's clocks, so they name what happened.
func hostTimeout(cfg *Config, b transport.Backend) time.Duration {
	if b == nil || b.Capabilities().Handshake {
		return cfg.Timeout
	}
	return max(cfg.Timeout, cfg.ConnectTimeout) + time.Second
}

// start creates the client's own host (its own UDP socket) and connects.
func (w *worker) start(c *client, now time.Time) {
	if err := w.fds.take(); err != nil {
		w.harnessFail(err, true)
		c.end(phaseFailed, failDial, now)
		return
	}
	h, err := w.backend.Dial(transport.Options{Timeout: w.idle, Header: c.header})
	if err != nil {
		w.harnessFail(err, true)
		c.end(phaseFailed, failDial, now)
		return
	}
	if w.spoken == "" {
		w.spoken = h.Backend()
	}
	// Behind the relay, the client's link relays for this socket only
	// (anything else sending to it is stray), so it is named before the
	// first datagram leaves.
	if c.relay != nil {
		if err := c.relay.Expect(c.index, h.Addr()); err != nil {
			w.harnessFail(err, false)
			h.Close()
			c.end(phaseFailed, failDial, now)
			return
		}
	}
	c.host, c.issuedAt = h, now
	peer, err := h.Connect(c.addr, w.connectData)
	if err != nil {
		w.harnessFail(err, false)
		c.end(phaseFailed, failConnect, now)
		return
	}
	c.peer, c.phase = peer, phaseConnecting
}

// countSecond counts a snapshot in its second of the run.
func (w *worker) countSecond(now time.Time) {
	s := int(now.Sub(w.clock.start) / time.Second)
	if s < 0 {
		return
	}
	for len(w.perSec) <= s {
		w.perSec = append(w.perSec, 0)
	}
	w.perSec[s]++
}

// checkTimeouts ends clients the transport would leave hanging: a connect
// or Join nobody answers, or a server that went silent (a backend timeout
// may follow its retransmit backoff; the swarm must not hang on it).
func (w *worker) checkTimeouts(c *client, now time.Time) {
	switch c.phase {
	case phaseConnecting:
		if now.Sub(c.issuedAt) > w.cfg.ConnectTimeout {
			c.fail(failConnectTimeout, now)
		}
	case phaseJoining:
		if now.Sub(c.connectedAt) > w.cfg.ConnectTimeout {
			c.fail(failJoinTimeout, now)
		}
	case phaseJoined:
		if now.Sub(c.lastMsgAt) > w.cfg.Timeout {
			c.fail(lostSilent, now)
		}
	}
}

// release closes a terminal client's host: its socket is not needed any
// more, and a dead server must not keep hundreds of sockets open.
func (w *worker) release(c *client) {
	if c.host != nil {
		c.endInputs(w, cmp.Or(c.endedAt, time.Now()))
		c.host.Close()
		c.host = nil
	}
}

// shutdown ends the run for this worker's clients: joined clients
// disconnect gracefully (queued, then flushed), everything is closed.
func (w *worker) shutdown() {
	now := time.Now()
	for _, c := range w.clients {
		switch c.phase {
		case phaseJoined:
			c.end(phaseDone, "", now)
			c.host.Disconnect(c.peer, 0)
			c.host.Flush()
		case phasePending:
			c.end(phaseFailed, "not_started", now)
		case phaseConnecting, phaseJoining:
			c.end(phaseFailed, "run_ended", now)
		}
		w.release(c)
	}
	w.proto.Close()
}

// maybePublish hands the monitor the last second's figures.
func (w *worker) maybePublish(now time.Time) {
	el := now.Sub(w.lastPub).Seconds()
	if el < 1 {
		return
	}
	p := workerPub{at: now, dtP99: math.NaN()}
	for _, c := range w.clients {
		if c.phase != phaseJoined {
			continue
		}
		p.connected++
		if c.snaps > 0 {
			if c.pubHave {
				p.kbsSum += float64(c.snapBytes-c.pubBytes) / el / 1000
				p.kbsN++
			}
			c.pubHave, c.pubBytes = true, c.snapBytes
		}
		if c.ticks > 0 {
			if c.pubTicked {
				p.tickHz = append(p.tickHz, float64(c.lastTick-c.pubTick)/el)
			}
			c.pubTick, c.pubTicked = c.lastTick, true
		}
		if !math.IsNaN(c.lastRTT) {
			p.rttMs = append(p.rttMs, c.lastRTT)
		}
	}
	if len(w.intervalDt) > 0 {
		p.dtP99 = stats.SummarizeInPlace(w.intervalDt).P99
	}
	w.intervalDt = w.intervalDt[:0]
	p.svcSum, p.svcN = w.pubSvcSum, w.pubSvcN
	w.pubSvcSum, w.pubSvcN = 0, 0

	w.lastPub = now
	w.mu.Lock()
	lat := w.pub.lat
	w.pub = p
	w.publishLatency(&w.pub, lat) // into the published buckets, under the lock the monitor reads them with
	w.mu.Unlock()
}

// addLatency adds the last published second's input latency buckets to
// dst (intervalBounds' layout). The buckets are reused each second, so
// they are read under the lock, never through a copy of pub.
func (w *worker) addLatency(dst []uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, n := range w.pub.lat {
		dst[i] += n
	}
}

func (w *worker) published() workerPub {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pub
}
