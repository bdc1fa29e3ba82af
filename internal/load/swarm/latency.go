package swarm

import (
	"errors"
	"math"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
)

// ErrNoPing is what a Pinger's Ping returns when its server cannot answer
// pings (load protocol v1 against a v1.0 server): the engine then reads
// the transport's own RTT estimate for that client instead, as for a Bot
// without Ping.
var ErrNoPing = errors.New("swarm: the server does not answer pings")

// DefaultPingHz is how often a Pinger is asked to ping (--ping-hz).
const DefaultPingHz = 10

// inputRing is how many of a client's latest Inputs keep their send time,
// waiting for an acknowledgement: 2.1 s of Inputs at 60 Hz. An Input still
// unanswered when its slot is needed again is unanswered (below): its
// latency is at least that long, which no budget passes. Small because
// every client's ring is touched every tick (1 KiB each: 128 clients'
// rings and buckets already crowd a core's L2).
const inputRing = 128

// unansweredAfter: an Input the client ends with, unanswered this long
// after its send, counts as unanswered. An unanswered Input enters the
// latency distribution with its age when it was given up (a lower bound of
// its latency, inputs_unanswered counts them): leaving it out would let a
// server that stops applying inputs pass on the ones it answered before.
// Younger ones may still be on their way and are left out.
const unansweredAfter = time.Second

// pingRing is how many of a client's latest pings are timed at once: at
// 10 Hz, 3.2 s of them, so a slow link's round trips are timed whole
// rather than superseded by the next ping.
const pingRing = 32

// acks is one client's input-acknowledgement bookkeeping: when each of its
// latest Inputs went out (ns since the client's ramp slot; 0: none), the
// newest acknowledged one, and its latencies in intervalBounds' buckets.
type acks struct {
	sent   []int64  // inputRing long once the first Input is numbered
	seq    uint32   // the number of the newest Input built
	acked  uint32   // the newest acknowledged Input (0: none yet)
	counts []uint64 // per-client latency buckets (nil until the first)
}

// nextSeq numbers the Input about to be built (1, 2, …; wraps at 2³²).
func (c *client) nextSeq() uint32 {
	c.acks.seq++
	return c.acks.seq
}

// unbuilt takes back the number of an Input the protocol did not build.
func (c *client) unbuilt() { c.acks.seq-- }

// noteSent records when the newest numbered Input went out. Its slot held
// the Input inputRing before it: still there, that one was never answered.
func (c *client) noteSent(w *worker, at time.Time) {
	a := &c.acks
	if a.sent == nil {
		a.sent = make([]int64, inputRing)
	}
	slot := a.seq % inputRing
	if old := a.sent[slot]; old != 0 {
		c.unanswered(w, old, at)
	}
	a.sent[slot] = max(int64(at.Sub(c.slot)), 1)
}

// unanswered gives up on an Input sent at sent (ns since the ramp slot):
// its age at is counted as its latency, a lower bound. Only a client whose
// server has acknowledged an Input gives up on one: a protocol without
// acknowledgements has no input latency at all (missing, not seconds).
func (c *client) unanswered(w *worker, sent int64, at time.Time) {
	if c.acks.acked == 0 {
		return
	}
	if !at.Before(w.warmEnd) {
		w.latUnanswered++
	}
	c.latency(w, sent, at)
}

// endInputs gives up, as the client ends at end, on its Inputs unanswered
// for longer than unansweredAfter.
func (c *client) endInputs(w *worker, end time.Time) {
	a := &c.acks
	limit := int64(end.Sub(c.slot)) - int64(unansweredAfter)
	for i, sent := range a.sent {
		if sent != 0 && sent < limit {
			c.unanswered(w, sent, end)
		}
		a.sent[i] = 0
	}
}

// onInputAck times every Input the acknowledgement of seq answers for the
// first time (cumulative: a later Input supersedes the earlier ones still
// unanswered), as arrival minus send. An acknowledgement of an Input this
// client never sent is a protocol error.
func (c *client) onInputAck(w *worker, seq uint32, at time.Time) {
	a := &c.acks
	if a.sent == nil || int32(seq-a.seq) > 0 {
		w.protocolErrors++
		return
	}
	if int32(seq-a.acked) <= 0 {
		return // nothing new (acked starts at 0, and Inputs at 1)
	}
	from := a.acked + 1
	// Inputs older than the ring were given up on as their slots were
	// reused (noteSent): nothing is left to time.
	if behind := a.seq - from + 1; behind > inputRing {
		from += min(behind-inputRing, seq-from+1)
	}
	a.acked = seq
	for n := from; int32(seq-n) >= 0; n++ {
		sent := a.sent[n%inputRing]
		if sent == 0 {
			continue // never sent (the protocol built nothing for it)
		}
		a.sent[n%inputRing] = 0
		c.latency(w, sent, at)
	}
}

// latency keeps the input latency of an Input sent at sent (ns since the
// ramp slot) and answered, or given up on, at at: in this second's timeline
// buckets always (the timeline shows the warm-up live), and after the
// warm-up in the client's buckets, the worker's pooled histogram and its
// stretch's. The bucket is found once for both bucket sets.
func (c *client) latency(w *worker, sent int64, at time.Time) {
	ms := math.Max(float64(int64(at.Sub(c.slot))-sent)/float64(time.Millisecond), 0)
	i := countIn(&w.secLat, ms)
	w.secLatN++
	if at.Before(w.warmEnd) {
		return
	}
	countAt(&c.acks.counts, i)
	w.latHist.Record(ms)
	if c.stretch != nil {
		c.cur = w.clock.at(at, c.cur)
		w.stretchHist(&w.stretchLat, c.cur).Record(ms)
	}
}

// pings is one client's outstanding pings: the send time (ns since the
// ramp slot; 0: answered or none) of the latest pingRing tokens.
type pings struct {
	sent  [pingRing]int64
	token uint32
}

// ping sends the next ping through the client's Pinger; a Pinger whose
// server cannot answer (ErrNoPing) is dropped, and the client falls back
// to the transport's estimate.
func (c *client) ping(now time.Time) {
	c.pings.token++
	tok := c.pings.token
	err := c.pinger.Ping(c, tok)
	if c.sendFailed(now) {
		return
	}
	switch {
	case errors.Is(err, ErrNoPing):
		c.pinger = nil
	case err == nil:
		c.pings.sent[tok%pingRing] = max(int64(now.Sub(c.slot)), 1)
	}
}

// onPong times the answer to one of the outstanding pings.
func (c *client) onPong(w *worker, token uint32, at time.Time) {
	if c.pings.token-token >= pingRing {
		return // older than every ping still timed, or never sent
	}
	sent := c.pings.sent[token%pingRing]
	if sent == 0 {
		return // answered already, or unasked
	}
	c.pings.sent[token%pingRing] = 0
	c.recordRTT(w, float64(int64(at.Sub(c.slot))-sent)/float64(time.Millisecond), at, true)
}

// sampleRTT takes the client's round-trip samples, from a second after its
// admission (ENet's estimate starts at 500 ms before the first ACK): a
// ping every 1/PingHz when the protocol times round trips itself, and once
// a second the transport's own estimate, where it has one. The estimate is
// transport_rtt_ms; it is rtt_ms too for a client that cannot ping.
func (c *client) sampleRTT(w *worker, now time.Time) {
	if now.Sub(c.welcomedAt) < time.Second {
		return
	}
	if c.pinger != nil && w.pingEvery > 0 && now.Sub(c.lastPingAt) >= w.pingEvery {
		c.lastPingAt = now
		c.ping(now)
	}
	if now.Sub(c.lastRTTAt) < time.Second {
		return
	}
	c.lastRTTAt = now
	rtt := c.host.RTT(c.peer)
	if rtt <= 0 {
		return
	}
	v := float64(rtt) / float64(time.Millisecond)
	if !now.Before(w.warmEnd) {
		w.trttHist.Record(v)
	}
	if c.pinger == nil || w.pingEvery <= 0 {
		c.recordRTT(w, v, now, false)
	}
}

// stretchHist is stretch i's histogram of hs, grown on first use.
func (w *worker) stretchHist(hs *[]*stats.Histogram, i int) *stats.Histogram {
	for len(*hs) <= i {
		*hs = append(*hs, stats.NewHistogram())
	}
	return (*hs)[i]
}

// publishLatency hands the second's input latencies to p, reusing the
// buckets of the previous publish (prev), and starts the next second.
func (w *worker) publishLatency(p *workerPub, prev []uint64) {
	if w.secLatN == 0 {
		p.lat = nil
		return
	}
	p.lat = append(prev[:0], w.secLat...)
	clear(w.secLat)
	w.secLatN = 0
}

// latencyP95 is the p95 of per-second latency buckets summed over workers
// (each its bucket's upper bound, as the players'), false when empty. The
// buckets are reused each second rather than a histogram made per worker
// and second: that would be garbage the collector pays for on the
// harness's own core.
func latencyP95(counts []uint64) (float64, bool) {
	for _, n := range counts {
		if n > 0 {
			return bucketP95(counts), true
		}
	}
	return 0, false
}
