package swarm

import (
	"errors"
	"fmt"

	"github.com/scalegate/scalegate/internal/load/swarm/bodydec"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// LoadV1 is scalegate's load protocol v1 (internal/wire/proto, docs/protocol.md)
// as a Protocol: Join on connect, Welcome admits, Refuse refuses, Snapshot
// is the state update (its header carries the tick, its body is decoded
// when the Welcome names a format this build decodes), PeerDelay is the
// server's latency, Notice(kicked, shutdown) announces a disconnect, and
// every tick's controls go out as an unreliable Input. It is the swarm's
// default (Config.Protocol nil).
var LoadV1 Protocol = loadV1{}

// LoadV1Name is load protocol v1's name in the report.
const LoadV1Name = report.ProtocolLoadV1

// BodyFormatOpaque is the body_format a client must not decode. Bodies of
// any other format are decoded by the decoder registered for it (package
// bodydec: the scalegate binary registers sg-entities), and counted as not
// decoded, with a warning, when there is none.
const BodyFormatOpaque = "opaque"

type loadV1 struct{}

func (loadV1) Name() string        { return LoadV1Name }
func (loadV1) ConnectData() uint32 { return proto.ConnectData }

func (loadV1) NewWorker(cfg *Config) WorkerProtocol {
	return &v1Worker{skipBodies: cfg.SkipBodyDecode, entityType: cfg.EntityType, decoders: map[string]bodydec.Decoder{}}
}

// v1Worker holds one worker's body decoders (costly to make, not safe for
// concurrent use) and what it could not decode.
type v1Worker struct {
	skipBodies     bool
	entityType     string
	decoders       map[string]bodydec.Decoder
	unknownFormats []string // body formats seen that no decoder handles
	decoderErrs    []string // decoders that could not be created
}

func (w *v1Worker) NewBot(index int) Bot { return &v1Bot{w: w, index: index} }

func (w *v1Worker) Warnings() []string {
	out := append([]string(nil), w.decoderErrs...)
	for _, f := range w.unknownFormats {
		out = append(out, fmt.Sprintf("server body_format %q has no decoder in this build: snapshot bodies were not decoded", f))
	}
	if w.skipBodies {
		out = append(out, "snapshot body decoding was off (--decode-bodies=false): snapshot_decode_errors counts header errors only")
	}
	return out
}

func (w *v1Worker) Close() {
	for _, d := range w.decoders {
		if cl, ok := d.(interface{ Close() }); ok {
			cl.Close()
		}
	}
}

// decoderFor returns this worker's decoder for a body format, nil for
// "opaque" and for formats no decoder is registered for (recorded).
func (w *v1Worker) decoderFor(format string) bodydec.Decoder {
	if format == BodyFormatOpaque || w.skipBodies {
		return nil
	}
	if d, ok := w.decoders[format]; ok {
		return d
	}
	mk, ok := bodydec.Lookup(format)
	if !ok {
		w.decoders[format] = nil
		w.unknownFormats = append(w.unknownFormats, format)
		return nil
	}
	d, err := mk()
	if err != nil {
		w.decoders[format] = nil
		w.decoderErrs = append(w.decoderErrs, fmt.Sprintf("body format %q: decoder unavailable: %v", format, err))
		return nil
	}
	w.decoders[format] = d
	return d
}

// v1Bot is one client's v1 state.
type v1Bot struct {
	w        *v1Worker
	index    int
	welcomed bool
	// minor1: the server's Welcome announced v1.1 (acks and pings).
	minor1  bool
	decoder bodydec.Decoder // nil: opaque or unknown format, not decoded
	// base is the client's baselines when it asked for deltas (nil
	// otherwise); ack is the newest snapshot tick whose body left a
	// baseline, which every Input acknowledges once hasAck.
	base   bodydec.Baselines
	ack    uint32
	hasAck bool
	// sent is the acknowledgement the last Input carried (AckDue).
	sent    uint32
	hasSent bool
	// in is reused: a fresh &proto.Input escapes to the heap and would
	// allocate once per client-tick. ping is reused the same way: a local
	// array handed to Conn.Send escapes, one allocation per ping.
	in   proto.Input
	ping [proto.PingSize]byte
}

// errWelcomeAgain is a second Welcome: a protocol error, the first stands.
var errWelcomeAgain = errors.New("proto: Welcome: the client was already welcomed")

// errToClient is a client-to-server message sent to a client.
var errToClient = errors.New("proto: a client-to-server message sent to a client")

func (b *v1Bot) Connected(c Conn) error {
	msg, err := proto.AppendJoin(nil, &proto.Join{
		ClientIndex: uint32(b.index),
		EntityType:  b.w.entityType,
		Name:        fmt.Sprintf("sg-bot-%d", b.index),
	})
	if err != nil {
		return err
	}
	return c.Send(transport.Reliable, msg)
}

func (b *v1Bot) Receive(c Conn, msg []byte) (Msg, error) {
	t, err := proto.PeekType(msg)
	if err != nil {
		return Msg{}, err
	}
	switch t {
	case proto.TypeSnapshot:
		return b.snapshot(msg)
	case proto.TypePeerDelay:
		ms, err := proto.DecodePeerDelay(msg)
		return Msg{Kind: MsgDelay, DelayMs: float64(ms)}, err
	case proto.TypeWelcome:
		return b.welcome(c, msg)
	case proto.TypePong:
		tok, err := proto.DecodePong(msg)
		return Msg{Kind: MsgPong, Token: tok}, err
	case proto.TypeRefuse:
		m, err := proto.DecodeRefuse(msg)
		if err != nil {
			return Msg{}, err
		}
		return Msg{Kind: MsgRefused, Reason: m.Reason.String()}, nil
	case proto.TypeNotice:
		m, err := proto.DecodeNotice(msg)
		if err != nil {
			return Msg{}, err
		}
		switch m.Kind {
		case proto.NoticeKicked:
			return Msg{Kind: MsgLeaving, Reason: lostKicked}, nil
		case proto.NoticeShutdown:
			return Msg{Kind: MsgLeaving, Reason: lostShutdown}, nil
		}
		return Msg{}, nil
	}
	return Msg{}, errToClient
}

// welcome admits the client and, when the server speaks v1.1, asks for
// input acknowledgements (Features) before anything else is sent.
func (b *v1Bot) welcome(c Conn, msg []byte) (Msg, error) {
	m, err := proto.DecodeWelcome(msg)
	if err != nil {
		return Msg{}, err
	}
	if b.welcomed {
		return Msg{}, errWelcomeAgain
	}
	b.welcomed = true
	b.decoder = b.w.decoderFor(m.BodyFormat)
	if m.Flags&proto.WelcomeFlagMinor1 != 0 {
		b.minor1 = true
		f := proto.FeatureInputAcks
		if dd, ok := b.decoder.(bodydec.DeltaDecoder); ok && m.Flags&proto.WelcomeFlagDeltas != 0 {
			f |= proto.FeatureSnapshotDeltas
			b.base = dd.NewBaselines()
		}
		if err := c.Send(transport.Reliable, proto.AppendFeatures(nil, f)); err != nil {
			return Msg{}, err
		}
	}
	return Msg{Kind: MsgAdmitted, ServerTransport: m.Transport, BodyFormat: m.BodyFormat, AnnouncedHz: float64(m.TickHz)}, nil
}

// snapshot reads the header (the tick) and, when the Welcome named a
// decodable format, checks the body and counts its entities.
func (b *v1Bot) snapshot(msg []byte) (Msg, error) {
	h, body, err := proto.DecodeSnapshot(msg)
	if err != nil {
		return Msg{Kind: MsgState}, err
	}
	m := Msg{Kind: MsgState, Tick: h.Tick, HasTick: true, HasInputAck: h.HasInputAck(), InputAck: h.InputSeq}
	if b.decoder == nil {
		return m, nil
	}
	var n int
	if dd, ok := b.decoder.(bodydec.DeltaDecoder); ok && b.base != nil {
		var kept bool
		n, m.Delta, kept, err = dd.DecodeDelta(h.BodyFlags(), body, h.Tick, b.base)
		if kept && (!b.hasAck || int32(h.Tick-b.ack) > 0) {
			b.ack, b.hasAck = h.Tick, true // a baseline now: acknowledge it
		}
	} else {
		n, err = b.decoder.Decode(h.BodyFlags(), body)
	}
	if err != nil {
		return m, err
	}
	m.Entities, m.HasEntities = n, true
	return m, nil
}

// Ping sends a v1.1 Ping; a v1.0 server cannot answer one (ErrNoPing).
func (b *v1Bot) Ping(c Conn, token uint32) error {
	if !b.minor1 {
		return ErrNoPing
	}
	return c.Send(transport.Unreliable, proto.AppendPing(b.ping[:0], token))
}

// AckDue implements Acker: a baseline newer than the last Input named.
func (b *v1Bot) AckDue() bool { return b.hasAck && (!b.hasSent || b.sent != b.ack) }

func (b *v1Bot) Input(buf []byte, ctl *Control) ([]byte, transport.Delivery) {
	b.sent, b.hasSent = b.ack, b.hasAck
	b.in = proto.Input{
		Seq: ctl.Seq, Throttle: ctl.Throttle, Elevator: ctl.Elevator,
		Aileron: ctl.Aileron, Rudder: ctl.Rudder, Buttons: ctl.Buttons,
		HasSnapshotAck: b.hasAck, SnapshotAck: b.ack,
	}
	return proto.AppendInput(buf, &b.in), transport.Unreliable
}
