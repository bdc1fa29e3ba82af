package swarm

import (
	"cmp"
	"math"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/scalegate/scalegate/internal/guard/safetext"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/relay"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// phase is where a client is in its life.
type phase uint8

const (
	phasePending    phase = iota // waiting for its ramp slot
	phaseConnecting              // transport connect issued
	phaseJoining                 // transport connected, join sent
	phaseJoined                  // admitted (v1: Welcome received)
	phaseRefused                 // refused (terminal)
	phaseLost                    // admitted, then disconnected (terminal)
	phaseFailed                  // never admitted, not refused (terminal)
	phaseDone                    // the run ended with the client joined
)

func (p phase) terminal() bool { return p >= phaseRefused }

// Reasons a client ends without a server Refuse. They key
// disconnected_by_reason and never_connected_by_reason in the report. A
// transport_timeout is the transport's own (ENet's retransmits, QUIC's
// idle timeout, an unanswered WebSocket ping): raw UDP has none, and a
// client there ends by the engine's clocks instead (join_timeout, silent;
// worker.hostTimeout). A connect_error says why, where the transport knows
// ("connect_error (HTTP 403 Forbidden)"), and a close carrying the
// server's application code is named by it (closeReason).
const (
	lostTransport      = "transport_disconnect"
	lostTimeout        = "transport_timeout"
	lostSilent         = gatetable.SilentReason // no message for the silence timeout
	lostKicked         = "kicked"               // v1 Notice(kicked)
	lostShutdown       = "server_shutdown"      // v1 Notice(shutdown) then disconnect
	failDial           = "dial_error"
	failConnect        = "connect_error"
	failConnectTimeout = "connect_timeout"
	failJoinTimeout    = "join_timeout"
	failSend           = "send_error"
	failProtocol       = "protocol_error"
)

// Application close codes: a WebSocket server's own (RFC 6455 7.4.2).
const (
	appCodeMin = 4000
	appCodeMax = 4999
)

// maxDetail bounds the server's text in a reason, in bytes: reasons key the
// report's *_by_reason maps and print on one line.
const maxDetail = 64

// withDetail is reason followed by what the transport said of it (a close
// frame's text, why a dial failed) in parentheses, cut to maxDetail bytes
// and escaped for a terminal: the server wrote it.
func withDetail(reason string, detail []byte) string {
	s := strings.TrimSpace(string(detail))
	if s == "" {
		return reason
	}
	if len(s) > maxDetail {
		cut := maxDetail
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return reason + " (" + safetext.Terminal(s) + ")"
}

// closeReason names a close by the server's code and text:
// "close_4003 (server full)".
func closeReason(code uint32, text string) string {
	return withDetail("close_"+strconv.FormatUint(uint64(code), 10), []byte(text))
}

// client is one synthetic player. It is owned by one worker goroutine.
type client struct {
	index       int
	patternName string
	pattern     Pattern
	bot         Bot    // the protocol's state for this client
	pinger      Pinger // bot, when it measures round trips itself
	waiter      Waiter // bot, when it resends its join while waiting
	leaver      Leaver // bot, when it says goodbye at the end of the run
	acker       Acker  // bot, when its Inputs acknowledge state updates and the pattern acksEveryUpdate
	host        transport.Host
	addr        string              // where it connects: the server, or its relay socket
	header      map[string][]string // what it sends with its connect (Headerer); secret
	relay       *relay.Relay        // the impairment relay, nil without one
	peer        transport.PeerID
	phase       phase
	reason      string // refuse reason or loss reason
	// leaving is the reason the server announced before disconnecting
	// (MsgLeaving); it names the disconnect that follows.
	leaving string
	// answered: the server answered the client's goodbye (Leaver) with a
	// MsgLeaving or a disconnect.
	answered bool
	// sendErr is the first failed Send the protocol made through the
	// client (Conn); the client ends with send_error once the protocol
	// call returns.
	sendErr error

	// held is the controls of the last Input built, at heldAt: what an
	// Input sent only to carry an acknowledgement holds (Acker).
	held   Control
	heldAt time.Time

	slot        time.Time // scheduled connect (ramp)
	issuedAt    time.Time
	connectedAt time.Time
	welcomedAt  time.Time
	endedAt     time.Time
	lastMsgAt   time.Time
	connectMs   float64 // NaN until the transport connected

	// serverTransport and bodyFormat: what the admission said of the
	// server (v1's Welcome), empty when the protocol does not say;
	// announcedHz the state-update rate it announced (0: none).
	serverTransport, bodyFormat string
	announcedHz                 float64
	// pendingInput: an Input was built this iteration and is in the batch.
	pendingInput bool
	lastService  time.Time // previous service while joined (zero: none yet)
	// inputs sent, and when the first and the latest went out: the
	// client's own input rate, which says whether the harness kept it on
	// cadence however many clients share its worker.
	inputs                    int64
	firstInputAt, lastInputAt time.Time

	// State updates: received counts every one that arrived while the
	// client was joined. The figures below are windowed: they count only
	// the updates from the warm-up's end on (every one without a
	// warm-up). Each counts in snaps, bytes and gaps; those that carry a
	// server tick (ticks of them) also give the tick rate, over their own
	// window.
	received    int64
	snaps       int64
	ticks       int64
	firstTick   uint32
	lastTick    uint32
	firstTickAt time.Time
	lastTickAt  time.Time
	firstSnapAt time.Time
	lastSnapAt  time.Time
	snapBytes   int64 // all state update bytes
	firstBytes  int64 // bytes of the first update (outside the rate window)
	maxGap      time.Duration
	// intervals counts the times between consecutive windowed updates in
	// intervalBounds' buckets (nil until the first).
	intervals    []uint64
	decodeErrors int64
	decoded      int64
	// decodedBytes and decodedEntities are the bytes and the entity
	// records of the updates whose entities were counted: their ratio is
	// what one entity costs on the wire of the protocol (bytes_per_entity).
	decodedBytes    int64
	decodedEntities int64
	// The same for the updates that were deltas (Msg.Delta), and their count.
	deltaBytes    int64
	deltaEntities int64
	deltas        int64
	// rttCounts counts the client's RTT samples in intervalBounds' buckets
	// (nil until the first): its own p95 without keeping every sample.
	rttCounts []uint64
	lastRTTAt time.Time
	lastRTT   float64 // NaN when none yet
	// lastPingAt and pings: when the Pinger last pinged, and the pings
	// still waiting for their Pong.
	lastPingAt time.Time
	pings      pings
	// acks: the Inputs waiting for the server's acknowledgement, and the
	// client's input latencies.
	acks acks
	// stretch holds the client's figures per stretch of an impaired run
	// (nil without impairment); cur is the stretch it is in.
	stretch []stretchAcc
	cur     int

	// timeline bookkeeping: values at the previous publish
	pubTick   uint32
	pubHave   bool // pubBytes is set
	pubTicked bool // pubTick is set
	pubBytes  int64
}

func newClient(index int, patternName string, p Pattern, slot time.Time, bot Bot) *client {
	c := &client{index: index, patternName: patternName, pattern: p, slot: slot, bot: bot, connectMs: math.NaN(), lastRTT: math.NaN()}
	if _, ok := p.(acksEveryUpdate); ok {
		c.acker, _ = bot.(Acker)
	}
	if p, ok := bot.(Parts); ok {
		c.pinger, c.waiter, c.leaver = p.Parts()
		return c
	}
	c.pinger, _ = bot.(Pinger)
	c.waiter, _ = bot.(Waiter)
	c.leaver, _ = bot.(Leaver)
	return c
}

// live reports whether the client holds an open host.
func (c *client) live() bool { return c.host != nil && !c.phase.terminal() }

func (c *client) end(p phase, reason string, now time.Time) {
	c.phase, c.reason, c.endedAt = p, reason, now
}

// fail ends a client that was never admitted, or one that was admitted
// (it is then lost, not failed).
func (c *client) fail(reason string, now time.Time) {
	if c.phase == phaseJoined {
		c.end(phaseLost, reason, now)
		return
	}
	c.end(phaseFailed, reason, now)
}

// handle processes one transport event.
func (c *client) handle(w *worker, ev transport.Event, now time.Time) {
	switch ev.Kind {
	case transport.EventConnect:
		c.onConnect(now)
	case transport.EventDisconnect:
		c.onDisconnect(ev, now)
	case transport.EventReceive:
		c.lastMsgAt = now
		c.onMessage(w, ev.Payload, now, arrival(ev, now))
	}
}

// arrival is when a message received at the service call of now really
// arrived: the backend's stamp (Event.At), carried onto now's monotonic
// clock so that it subtracts cleanly from send times; now itself when the
// backend has none or the stamp is not before it.
func arrival(ev transport.Event, now time.Time) time.Time {
	if ev.At.IsZero() {
		return now
	}
	d := now.Sub(ev.At)
	if d <= 0 || d > time.Second {
		return now // a stamp from a stepped wall clock: not believable
	}
	return now.Add(-d)
}

// Send implements Conn over the client's host.
func (c *client) Send(d transport.Delivery, msg []byte) error {
	if c.host == nil {
		return transport.ErrClosed
	}
	err := c.host.Send(c.peer, d, msg)
	if err != nil && c.sendErr == nil {
		c.sendErr = err
	}
	return err
}

// sendFailed ends the client when the protocol's last call made a send
// that failed, and reports whether it did.
func (c *client) sendFailed(now time.Time) bool {
	if c.sendErr == nil {
		return false
	}
	if !c.phase.terminal() {
		c.fail(failSend, now)
	}
	return true
}

func (c *client) onConnect(now time.Time) {
	if c.phase != phaseConnecting {
		return
	}
	c.connectedAt = now
	c.connectMs = msSince(c.slot, now)
	c.lastMsgAt = now
	err := c.bot.Connected(c)
	if c.sendFailed(now) {
		return
	}
	if err != nil {
		c.fail(failProtocol, now)
		return
	}
	c.phase = phaseJoining
}

// onDisconnect ends the client when its transport did: under the reason
// the server announced (MsgLeaving), why its connect failed, what the
// server's close code says, or the transport's timeout or loss.
func (c *client) onDisconnect(ev transport.Event, now time.Time) {
	switch {
	case c.phase.terminal():
	case c.leaving != "":
		c.fail(c.leaving, now)
	case c.phase == phaseConnecting:
		c.fail(withDetail(failConnect, ev.Payload), now)
	case ev.Data == transport.ReasonTimeout:
		c.fail(lostTimeout, now)
	case !c.closed(ev.Data, string(ev.Payload), now):
		c.fail(lostTransport, now)
	}
}

// closed ends the client for a close that carried the server's code, as
// its CloseReader says or by the engine's rule, and reports whether it
// did. The rule: an application code (4000-4999) before admission is a
// refusal (the server answered the join with it: 4003 "server full"),
// after it the loss's reason, named by closeReason either way; any other
// code is left to the caller.
func (c *client) closed(code uint32, text string, now time.Time) bool {
	own := closeReason(code, text)
	if cr, ok := c.bot.(CloseReader); ok {
		switch m := cr.Closed(code, text); {
		case m.Kind == MsgRefused && c.phase == phaseJoining:
			c.end(phaseRefused, cmp.Or(m.Reason, own), now)
			return true
		case (m.Kind == MsgRefused || m.Kind == MsgLeaving) && m.Reason != "":
			c.fail(m.Reason, now)
			return true
		}
	}
	switch {
	case code < appCodeMin || code > appCodeMax:
		return false
	case c.phase == phaseJoining:
		c.end(phaseRefused, own, now)
	default:
		c.fail(own, now)
	}
	return true
}

// onMessage hands one server message to the protocol and counts what it
// says the message was.
// at is when the message arrived (arrival): round trips and input
// latency are timed by it, everything else by now.
func (c *client) onMessage(w *worker, b []byte, now, at time.Time) {
	m, err := c.bot.Receive(c, b)
	if c.sendFailed(now) {
		return
	}
	if m.Kind == MsgState {
		if m.HasInputAck && err == nil && c.phase == phaseJoined {
			c.onInputAck(w, m.InputAck, at)
		}
		c.onState(w, &m, err != nil, len(b), now)
		return
	}
	if err != nil {
		w.protocolErrors++
		if c.phase == phaseJoining {
			c.fail(failProtocol, now)
		}
		return
	}
	switch m.Kind {
	case MsgAdmitted:
		c.onAdmitted(w, &m, now)
	case MsgRefused:
		c.end(phaseRefused, m.Reason, now)
	case MsgDelay:
		if !now.Before(w.warmEnd) {
			w.pdHist.Record(m.DelayMs)
		}
	case MsgLeaving:
		c.leaving = m.Reason
	case MsgPong:
		if c.phase == phaseJoined {
			c.onPong(w, m.Token, at)
		}
	}
}

func (c *client) onAdmitted(w *worker, m *Msg, now time.Time) {
	if c.phase != phaseJoining {
		w.protocolErrors++
		return
	}
	c.serverTransport, c.bodyFormat, c.announcedHz = m.ServerTransport, m.BodyFormat, m.AnnouncedHz
	c.welcomedAt = now
	c.phase = phaseJoined
}

// onState counts one state update; bad: its content did not decode.
func (c *client) onState(w *worker, m *Msg, bad bool, size int, now time.Time) {
	if bad {
		c.decodeErrors++
	}
	if c.phase != phaseJoined {
		return // an update racing the admission: not part of the measurement
	}
	c.received++
	if m.HasEntities && !bad {
		c.decoded++
		c.decodedBytes += int64(size)
		c.decodedEntities += int64(m.Entities)
		if m.Delta {
			c.deltas++
			c.deltaBytes += int64(size)
			c.deltaEntities += int64(m.Entities)
		}
	}
	if now.Before(w.warmEnd) {
		return // the warm-up: counted, not measured
	}
	if c.stretch != nil {
		c.cur = w.clock.at(now, c.cur) // the stretch the update (and its interval) belongs to
	}
	var gap time.Duration
	if c.snaps == 0 {
		c.firstSnapAt, c.firstBytes = now, int64(size)
	} else {
		gap = now.Sub(c.lastSnapAt)
		c.maxGap = max(c.maxGap, gap)
		c.recordInterval(w, gap)
	}
	if c.stretch != nil {
		c.stretch[c.cur].snapshot(m.HasTick, m.Tick, now, size, gap)
		w.countSecond(now)
	}
	c.snaps++
	c.lastSnapAt = now
	c.snapBytes += int64(size)
	if m.HasTick {
		if c.ticks == 0 {
			c.firstTick, c.firstTickAt = m.Tick, now
		}
		c.ticks++
		c.lastTick, c.lastTickAt = m.Tick, now
	}
}

// recordInterval counts one time between two consecutive windowed state
// updates: in the client's own buckets, the worker's pooled histogram and
// its stretch's.
func (c *client) recordInterval(w *worker, gap time.Duration) {
	ms := float64(gap) / float64(time.Millisecond)
	countIn(&c.intervals, ms)
	w.stateInterval.Record(ms)
	if c.stretch != nil {
		w.stretchHist(&w.stretchIntervals, c.cur).Record(ms)
	}
}

// wait gives a protocol that resends its join its turn while the client
// waits for admission.
func (c *client) wait(now time.Time) {
	if c.waiter == nil || c.phase != phaseJoining {
		return
	}
	err := c.waiter.Waiting(c, now.Sub(c.connectedAt))
	if c.sendFailed(now) {
		return
	}
	if err != nil {
		c.fail(failProtocol, now)
	}
}

// sendInput sends this tick's Input, if the pattern wants one.
func (c *client) sendInput(w *worker, now time.Time) {
	msg, d := c.buildInput(w, now)
	c.pendingInput = false
	if msg == nil {
		return
	}
	if err := c.host.Send(c.peer, d, msg); err != nil {
		c.fail(failSend, now)
		return
	}
	c.inputSent(w, now)
}

// inputSent counts one Input that went out at the given time.
func (c *client) inputSent(w *worker, at time.Time) {
	w.inputsSent++
	c.noteSent(w, at)
	if at.Before(w.warmEnd) {
		return // sent (inputs_sent counts it), not part of the windowed rate
	}
	if c.inputs == 0 {
		c.firstInputAt = at
	}
	c.inputs++
	c.lastInputAt = at
}

// inputsPerS is the rate at which this client's Inputs went out, from its
// first to its latest; NaN with fewer than two.
func (c *client) inputsPerS() float64 {
	el := c.lastInputAt.Sub(c.firstInputAt).Seconds()
	if c.inputs < 2 || el <= 0 {
		return math.NaN()
	}
	return float64(c.inputs-1) / el
}

// ackInterval is the least time between two Inputs a pattern that
// acksEveryUpdate sends only to acknowledge: 20 a second, a real client's
// input stream when its pilot is idle (Quake 3 sends at most 30 packets a
// second by default), which keeps the server's baseline a few ticks old,
// well inside its 32-view ring. One every tick would cost a QUIC server and
// swarm an encrypted datagram per client-tick each way for no byte saved:
// on a 2-core machine it starved reference's idle leg (tick p99 18.48 ms).
const ackInterval = 50 * time.Millisecond

// buildInput encodes this tick's Input into the worker's scratch buffer, or
// returns nil when the pattern or the protocol sends none. On a tick the
// pattern sends none, a pattern that acksEveryUpdate with an Acker's
// acknowledgement due still sends one, holding the last controls. The bytes are valid until the next call;
// pendingInput says one was built.
func (c *client) buildInput(w *worker, now time.Time) ([]byte, transport.Delivery) {
	ctl := &w.ctl // a local passed to an interface method would escape
	if !c.pattern.Control(now.Sub(c.welcomedAt).Seconds(), ctl) {
		if c.acker == nil || now.Sub(c.heldAt) < ackInterval || !c.acker.AckDue() {
			return nil, 0
		}
		*ctl = c.held
	}
	c.held, c.heldAt = *ctl, now
	ctl.Seq = c.nextSeq()
	msg, d := c.bot.Input(w.scratch[:0], ctl)
	if msg == nil {
		c.unbuilt()
		return nil, 0
	}
	if cap(msg) > cap(w.scratch) {
		w.scratch = msg[:0] // keep a grown buffer: the next tick appends into it
	}
	c.pendingInput = true
	return msg, d
}

// recordRTT keeps one RTT sample (ms) in the run's and the stretch's;
// pinged says it was a ping's round trip, not the transport's estimate.
func (c *client) recordRTT(w *worker, v float64, now time.Time, pinged bool) {
	c.lastRTT = v
	if now.Before(w.warmEnd) {
		return // the warm-up: shown live, not measured
	}
	if pinged {
		w.rttPinged++
	} else {
		w.rttEstimated++
	}
	countIn(&c.rttCounts, v)
	w.rttHist.Record(v)
	if c.stretch != nil {
		c.cur = w.clock.at(now, c.cur)
		w.stretchHist(&w.stretchRTT, c.cur).Record(v)
	}
}

// tickHz is the server tick rate this client observed, NaN when fewer than
// two of its state updates carried a tick. Tick numbers are uint32 and the
// difference is taken modulo 2^32, so a wrap is harmless.
func (c *client) tickHz() float64 {
	return spanRate(c.ticks, float64(c.lastTick-c.firstTick), c.firstTickAt, c.lastTickAt)
}

// kbs is downstream payload KB/s (1 KB = 1000 B): the bytes of every state
// update after the first, per second from the first to the last.
func (c *client) kbs() float64 {
	return spanRate(c.snaps, float64(c.snapBytes-c.firstBytes), c.firstSnapAt, c.lastSnapAt) / 1000
}

// linkKBs is kbs with header bytes more per state update: the state
// updates' KB/s on the link where each is one datagram.
func (c *client) linkKBs(header int) float64 {
	return spanRate(c.snaps, float64(c.snapBytes-c.firstBytes)+float64(header)*float64(c.snaps-1), c.firstSnapAt, c.lastSnapAt) / 1000
}

// isIPv6 reports whether addr (host:port or host) names an IPv6 host.
func isIPv6(addr string) bool {
	host := addr
	if h, _, err := net.SplitHostPort(addr); err == nil {
		host = h
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.To4() == nil
}

// spanRate is delta per second from first to last, NaN when fewer than two
// samples (n) were seen or no time passed between them: the one shape of
// the per-client tick and byte rates, the run's (client) and a stretch's
// (stretchAcc). The division is stats.Rate's.
func spanRate(n int64, delta float64, first, last time.Time) float64 {
	d := last.Sub(first)
	if n < 2 || d <= 0 {
		return math.NaN()
	}
	return stats.Rate(delta, d)
}

// windowFrom is where the client's windowed figures start: its admission,
// or the warm-up's end when that is later; zero when never admitted.
func (c *client) windowFrom(warmEnd time.Time) time.Time {
	if c.welcomedAt.IsZero() || warmEnd.Before(c.welcomedAt) {
		return c.welcomedAt
	}
	return warmEnd
}

// delivery is the client's state-update rate over its joined time after
// the warm-up (from windowFrom to its loss, or to stopped, when its
// worker stopped at the run's end) and the longest it went without an
// update in that time, both edges included: a client that got one
// update and then nothing has the rest of its time as its gap. Both are
// NaN when it had no joined time after the warm-up, and the rate also
// when that time was under report.MinDeliveryWindowS.
func (c *client) delivery(warmEnd, stopped time.Time) (perS, gapMs float64) {
	from := c.windowFrom(warmEnd)
	to := stopped
	if !c.endedAt.IsZero() && c.endedAt.Before(to) {
		to = c.endedAt
	}
	if from.IsZero() || !to.After(from) {
		return math.NaN(), math.NaN()
	}
	span := to.Sub(from)
	gap := span
	if c.snaps > 0 {
		gap = max(c.firstSnapAt.Sub(from), c.maxGap, to.Sub(c.lastSnapAt), 0)
	}
	perS = math.NaN()
	if span.Seconds() >= report.MinDeliveryWindowS {
		perS = float64(c.snaps) / span.Seconds()
	}
	return perS, float64(gap) / float64(time.Millisecond)
}

// intervalBounds are the buckets of a client's state-update intervals
// (ms): 0.25 ms wide to 20 ms (a 60 Hz step is 16.67 ms), 0.5 ms to 50,
// 1 ms to 100, then 5, 25 and 250 ms wide to 10 s, and one bucket above.
// 279 counts a client: per-client percentiles at 1,000 clients without
// keeping every interval.
var intervalBounds = func() []float64 {
	b := []float64{0}
	for _, r := range []struct{ to, step float64 }{{20, 0.25}, {50, 0.5}, {100, 1}, {200, 5}, {1000, 25}, {10000, 250}} {
		for {
			v := math.Round((b[len(b)-1]+r.step)*1000) / 1000
			if v > r.to {
				break
			}
			b = append(b, v)
		}
	}
	return append(b, math.Inf(1))
}()

// intervalBucket is the bucket of intervalBounds holding ms.
func intervalBucket(ms float64) int {
	i := sort.SearchFloat64s(intervalBounds, ms) // first bound ≥ ms
	if i < len(intervalBounds) && intervalBounds[i] == ms {
		i++ // ms is the lower bound of bucket i
	}
	return min(max(i-1, 0), len(intervalBounds)-2)
}

// countIn counts ms in the intervalBounds buckets *b (made on first use)
// and returns its bucket: a client's own distributions (intervals, RTT,
// input latency) without keeping every sample.
func countIn(b *[]uint64, ms float64) int {
	i := intervalBucket(ms)
	countAt(b, i)
	return i
}

// countAt counts one sample in bucket i of *b (made on first use).
func countAt(b *[]uint64, i int) {
	if *b == nil {
		*b = make([]uint64, len(intervalBounds)-1)
	}
	(*b)[i]++
}

// bucketP95 is the p95 of intervalBounds buckets (its bucket's upper
// bound), NaN when there are none.
func bucketP95(b []uint64) float64 {
	if b == nil {
		return math.NaN()
	}
	return stats.HistogramPercentile(b, intervalBounds, 95)
}

// intervalSummary is the client's interval percentiles (each its bucket's
// upper bound, stats.HistogramPercentile), nil without an interval.
func (c *client) intervalSummary() *report.IntervalSummary {
	if c.intervals == nil {
		return nil
	}
	at := func(p float64) float64 { return stats.HistogramPercentile(c.intervals, intervalBounds, p) }
	return &report.IntervalSummary{P50: at(50), P95: at(95), P99: at(99)}
}

func msSince(from, to time.Time) float64 {
	return float64(to.Sub(from)) / float64(time.Millisecond)
}
