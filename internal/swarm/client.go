package swarm

import (
	"fmt"
	"github.com/scalegate/scalegate/internal/relay"
	"math"
	"time"

	"github.com/scalegate/scalegate/internal/proto"
	"github.com/scalegate/scalegate/internal/transport"
)

// phase is where a client is in its life.
type phase uint8

const (
	phasePending    phase = iota // waiting for its ramp slot
	phaseConnecting              // transport connect issued
	phaseJoining                 // transport connected, Join sent
	phaseJoined                  // Welcome received: admitted
	phaseRefused                 // Refuse received (terminal)
	phaseLost                    // admitted, then disconnected (terminal)
	phaseFailed                  // never admitted, no Refuse (terminal)
	phaseDone                    // the run ended with the client joined
)

func (p phase) terminal() bool { return p >= phaseRefused }

// Reasons a client ends without a server Refuse. They key
// disconnected_by_reason and never_connected_by_reason in the report.
const (
	lostTransport      = "transport_disconnect"
	lostTimeout        = "transport_timeout"
	lostSilent         = "silent"          // no message for the silence timeout
	lostKicked         = "kicked"          // Notice(kicked)
	lostShutdown       = "server_shutdown" // Notice(shutdown) then disconnect
	failDial           = "dial_error"
	failConnect        = "connect_error"
	failConnectTimeout = "connect_timeout"
	failJoinTimeout    = "join_timeout"
	failSend           = "send_error"
	failProtocol       = "protocol_error"
)

// client is one synthetic player. It is owned by one worker goroutine.
type client struct {
	index       int
	patternName string
	pattern     Pattern
	host        transport.Host
	addr        string       // where it connects: the server, or its relay socket
	relay       *relay.Relay // the impairment relay, nil without one
	peer        transport.PeerID
	phase       phase
	reason      string // refuse reason or loss reason
	noticeKind  proto.NoticeKind

	slot        time.Time // scheduled connect (ramp)
	issuedAt    time.Time
	connectedAt time.Time
	welcomedAt  time.Time
	endedAt     time.Time
	lastMsgAt   time.Time
	connectMs   float64 // NaN until the transport connected

	welcome proto.Welcome
	decoder BodyDecoder // nil: opaque or unknown format, not decoded
	seq     uint32
	// pendingInput: an Input was built this iteration and is in the batch.
	pendingInput bool
	lastService  time.Time // previous service while joined (zero: none yet)
	// inputs sent, and when the first and the latest went out: the
	// client's own input rate, which says whether the harness kept it on
	// cadence however many clients share its worker.
	inputs                    int64
	firstInputAt, lastInputAt time.Time

	snaps        int64
	firstTick    uint32
	lastTick     uint32
	firstSnapAt  time.Time
	lastSnapAt   time.Time
	snapBytes    int64 // all Snapshot message bytes
	firstBytes   int64 // bytes of the first snapshot (outside the rate window)
	maxGap       time.Duration
	decodeErrors int64
	decoded      int64
	// decodedBytes and decodedEntities are the Snapshot message bytes and
	// the entity records of the snapshots that decoded: their ratio is what
	// one entity costs on the wire of the protocol (bytes_per_entity).
	decodedBytes    int64
	decodedEntities int64
	rttMs           []float64
	peerDelayMs     []float64
	lastRTTAt       time.Time
	lastRTT         float64 // NaN when none yet
	// stretch holds the client's figures per stretch of an impaired run
	// (nil without impairment); cur is the stretch it is in.
	stretch []stretchAcc
	cur     int

	// timeline bookkeeping: values at the previous publish
	pubTick  uint32
	pubHave  bool
	pubBytes int64
}

func newClient(index int, patternName string, p Pattern, slot time.Time) *client {
	return &client{index: index, patternName: patternName, pattern: p, slot: slot, connectMs: math.NaN(), lastRTT: math.NaN()}
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
		c.onConnect(w, now)
	case transport.EventDisconnect:
		c.onDisconnect(ev, now)
	case transport.EventReceive:
		c.lastMsgAt = now
		c.onMessage(w, ev.Payload, now)
	}
}

func (c *client) onConnect(w *worker, now time.Time) {
	if c.phase != phaseConnecting {
		return
	}
	c.connectedAt = now
	c.connectMs = msSince(c.slot, now)
	c.lastMsgAt = now
	var err error
	w.scratch, err = proto.AppendJoin(w.scratch[:0], &proto.Join{
		ClientIndex: uint32(c.index),
		EntityType:  w.cfg.EntityType,
		Name:        fmt.Sprintf("sg-bot-%d", c.index),
	})
	if err != nil {
		c.fail(failProtocol, now)
		return
	}
	if err := c.host.Send(c.peer, transport.Reliable, w.scratch); err != nil {
		c.fail(failSend, now)
		return
	}
	c.phase = phaseJoining
}

func (c *client) onDisconnect(ev transport.Event, now time.Time) {
	if c.phase.terminal() {
		return
	}
	reason := lostTransport
	if ev.Data == transport.ReasonTimeout {
		reason = lostTimeout
	}
	switch {
	case c.noticeKind == proto.NoticeKicked:
		reason = lostKicked
	case c.noticeKind == proto.NoticeShutdown:
		reason = lostShutdown
	case c.phase == phaseConnecting:
		reason = failConnect
	}
	c.fail(reason, now)
}

func (c *client) onMessage(w *worker, b []byte, now time.Time) {
	t, err := proto.PeekType(b)
	if err != nil {
		w.protocolErrors++
		return
	}
	switch t {
	case proto.TypeSnapshot:
		c.onSnapshot(w, b, now)
	case proto.TypePeerDelay:
		if ms, err := proto.DecodePeerDelay(b); err == nil {
			c.peerDelayMs = append(c.peerDelayMs, float64(ms))
		} else {
			w.protocolErrors++
		}
	case proto.TypeWelcome:
		c.onWelcome(w, b, now)
	case proto.TypeRefuse:
		m, err := proto.DecodeRefuse(b)
		if err != nil {
			w.protocolErrors++
			c.fail(failProtocol, now)
			return
		}
		c.end(phaseRefused, m.Reason.String(), now)
	case proto.TypeNotice:
		if m, err := proto.DecodeNotice(b); err == nil {
			c.noticeKind = m.Kind
		} else {
			w.protocolErrors++
		}
	default:
		w.protocolErrors++ // a client-to-server type sent to a client
	}
}

func (c *client) onWelcome(w *worker, b []byte, now time.Time) {
	m, err := proto.DecodeWelcome(b)
	if err != nil || c.phase != phaseJoining {
		w.protocolErrors++
		return
	}
	c.welcome = m
	c.welcomedAt = now
	c.phase = phaseJoined
	c.decoder = w.decoderFor(m.BodyFormat)
}

func (c *client) onSnapshot(w *worker, b []byte, now time.Time) {
	h, body, err := proto.DecodeSnapshot(b)
	if err != nil {
		c.decodeErrors++
		return
	}
	if c.phase != phaseJoined {
		return // a snapshot racing the Welcome: not part of the measurement
	}
	var gap time.Duration
	if c.snaps == 0 {
		c.firstTick, c.firstSnapAt, c.firstBytes = h.Tick, now, int64(len(b))
	} else if gap = now.Sub(c.lastSnapAt); gap > c.maxGap {
		c.maxGap = gap
	}
	if c.stretch != nil {
		c.cur = w.clock.at(now, c.cur)
		c.stretch[c.cur].snapshot(h.Tick, now, len(b), gap)
		w.countSecond(now)
	}
	c.snaps++
	c.lastTick, c.lastSnapAt = h.Tick, now
	c.snapBytes += int64(len(b))
	if c.decoder != nil {
		if n, err := c.decoder.Decode(h.Flags, body); err != nil {
			c.decodeErrors++
		} else {
			c.decoded++
			c.decodedBytes += int64(len(b))
			c.decodedEntities += int64(n)
		}
	}
}

// sendInput sends this tick's Input, if the pattern wants one.
func (c *client) sendInput(w *worker, now time.Time) {
	msg := c.buildInput(w, now)
	c.pendingInput = false
	if msg == nil {
		return
	}
	if err := c.host.Send(c.peer, transport.Unreliable, msg); err != nil {
		c.fail(failSend, now)
		return
	}
	c.inputSent(w, now)
}

// inputSent counts one Input that went out at the given time.
func (c *client) inputSent(w *worker, at time.Time) {
	w.inputsSent++
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

// buildInput encodes this tick's Input into the worker's scratch buffer, or
// returns nil when the pattern sends none. The bytes are valid until the
// next call; pendingInput says one was built.
func (c *client) buildInput(w *worker, now time.Time) []byte {
	ctl := &w.ctl // a local passed to an interface method would escape
	if !c.pattern.Control(now.Sub(c.welcomedAt).Seconds(), ctl) {
		return nil
	}
	c.seq++
	// The worker's Input is reused: a fresh &proto.Input escapes to the
	// heap and would allocate once per client-tick.
	w.input = proto.Input{
		Seq: c.seq, Throttle: ctl.Throttle, Elevator: ctl.Elevator,
		Aileron: ctl.Aileron, Rudder: ctl.Rudder, Buttons: ctl.Buttons,
	}
	w.scratch = proto.AppendInput(w.scratch[:0], &w.input)
	c.pendingInput = true
	return w.scratch
}

// sampleRTT records the backend's RTT estimate once a second. ENet's
// estimate starts at 500 ms before the first ACK, so sampling begins a second
// after the Welcome.
func (c *client) sampleRTT(w *worker, now time.Time) {
	if now.Sub(c.lastRTTAt) < time.Second || now.Sub(c.welcomedAt) < time.Second {
		return
	}
	c.lastRTTAt = now
	if rtt := c.host.RTT(c.peer); rtt > 0 {
		v := float64(rtt) / float64(time.Millisecond)
		c.rttMs = append(c.rttMs, v)
		c.lastRTT = v
		if c.stretch != nil {
			c.cur = w.clock.at(now, c.cur)
			c.stretch[c.cur].rtt = append(c.stretch[c.cur].rtt, v)
		}
	}
}

// tickHz is the server tick rate this client observed, NaN when it saw fewer
// than two snapshots. Tick numbers are uint32 and the difference is taken
// modulo 2^32, so a wrap is harmless.
func (c *client) tickHz() float64 {
	el := c.lastSnapAt.Sub(c.firstSnapAt).Seconds()
	if c.snaps < 2 || el <= 0 {
		return math.NaN()
	}
	return float64(c.lastTick-c.firstTick) / el
}

// kbs is downstream payload KB/s (1 KB = 1000 B) over the same window as
// tickHz: the bytes of every snapshot after the first, per second.
func (c *client) kbs() float64 {
	el := c.lastSnapAt.Sub(c.firstSnapAt).Seconds()
	if c.snaps < 2 || el <= 0 {
		return math.NaN()
	}
	return float64(c.snapBytes-c.firstBytes) / el / 1000
}

func msSince(from, to time.Time) float64 {
	return float64(to.Sub(from)) / float64(time.Millisecond)
}
