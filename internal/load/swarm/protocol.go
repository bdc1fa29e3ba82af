package swarm

import (
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// Protocol is a game's client protocol as the swarm drives it: what a bot
// sends once its transport connects, what each server message means, and
// how one tick's controls are encoded. An implementation only classifies
// and encodes; the engine does everything the report counts (bytes, gaps,
// tick rate, RTT, outcomes, pacing). Load protocol v1 is one (LoadV1); the
// public bot package adapts a team's own protocol to it. There is no other
// path: the built-in protocol runs through this interface too.
type Protocol interface {
	// Name names the protocol in the report ("protocol").
	Name() string
	// ConnectData is the word a transport connect carries (ENet's connect
	// data; transports without one ignore it).
	ConnectData() uint32
	// NewWorker makes the part of the protocol one worker goroutine owns.
	// Every bot of that worker comes from it and is used only from that
	// goroutine, so neither needs locking.
	NewWorker(cfg *Config) WorkerProtocol
}

// Targeter is a Protocol whose clients dial their own address: a join
// token in a WebSocket URL's query, a per-bot path. Target gets the
// client's index and the host:port it would dial (the server's, or its
// impairment relay's) and returns what the transport's Connect takes:
// host:port, or for ws/wss a URL such as "ws://HOSTPORT/play?token=T".
type Targeter interface {
	Target(index int, hostport string) string
}

// target is the address client index dials: p's Target when it has one.
func target(p Protocol, index int, hostport string) string {
	if t, ok := p.(Targeter); ok {
		return t.Target(index, hostport)
	}
	return hostport
}

// Headerer is a Protocol whose clients send their own request headers
// when they connect (ws and wss: the HTTP upgrade's; other transports have
// none): a cookie or an Authorization per bot. nil sends none. The values
// are join secrets: the engine never shows them.
type Headerer interface {
	Header(index int) map[string][]string
}

// header is what client index sends with its connect: p's Header when it
// has one.
func header(p Protocol, index int) map[string][]string {
	if h, ok := p.(Headerer); ok {
		return h.Header(index)
	}
	return nil
}

// WorkerProtocol makes one worker's bots and holds what they share (v1:
// the snapshot body decoders, which are costly to make and not safe for
// concurrent use).
type WorkerProtocol interface {
	// NewBot makes the protocol state of client index (its index in the
	// whole run, the same in every shard).
	NewBot(index int) Bot
	// Warnings are said in the report once the run is over (the engine
	// drops duplicates across workers).
	Warnings() []string
	// Close frees what the worker's bots shared; they are not used again.
	Close()
}

// Bot is one client's side of the protocol.
type Bot interface {
	// Connected is called once, when the transport has connected: send
	// the join (and whatever opens the first round trip) with c.Send. An
	// error ends the client (never connected, protocol_error).
	Connected(c Conn) error
	// Receive classifies one server message; msg is valid only during the
	// call. It may answer through c (a challenge's response). An error
	// means the message did not decode: a State counts in
	// snapshot_decode_errors (and still as received), anything else in
	// protocol_errors, and before admission it ends the client (never
	// connected, protocol_error): a bot that cannot read its server's
	// answer to its join has no way in.
	Receive(c Conn, msg []byte) (Msg, error)
	// Input appends one tick's controls to buf and returns the message and
	// how it travels; nil sends nothing. It is called once per tick while
	// the client is admitted and its pattern produced controls.
	Input(buf []byte, ctl *Control) ([]byte, transport.Delivery)
}

// Pinger is a Bot that measures round trips itself: the engine calls Ping
// every 1/Config.PingHz while the client is admitted (from a second after
// its admission) with a fresh token, and times the Pong that carries it
// back, from when the transport received it. Ping returns ErrNoPing when
// the server cannot answer. A Bot without it (or without an answering
// server) reports the transport's own RTT estimate, where the transport
// has one; rtt_ms is missing otherwise, never zero.
type Pinger interface {
	Ping(c Conn, token uint32) error
}

// Waiter is a Bot whose join may need resending: the engine calls Waiting
// once per tick while the client waits for its admission, with the time
// since Connected. Over a transport without reliability (raw UDP) a lost
// join is otherwise never answered. An error ends the client (never
// connected, protocol_error).
type Waiter interface {
	Waiting(c Conn, waited time.Duration) error
}

// Leaver is a Bot that says goodbye when the run ends (a BYE, a logout).
// Once the hold is over (every worker has stopped sending Inputs) and
// before the server's figures are read for the last time, the engine calls
// Leave once for every admitted client; it then keeps receiving until each
// has heard its server's answer (a Receive that says MsgLeaving, or the
// transport's disconnect) or Config.LeaveTimeout has passed, and only then
// reads the server and disconnects. So what the server does on a goodbye
// (counting it, closing the session) is in the final read, while the
// population gauges it reports (peers, entities) stay as the hold left
// them. An error from Leave, or a failed send, is counted
// (report.leave.errors), never fatal: the run's own figures are taken.
type Leaver interface {
	Leave(c Conn) error
}

// Parts is a Bot that hands out its optional parts itself, nil for one it
// does not have: an adapter (package bot) that would otherwise need a type
// for every combination of Pinger, Waiter and Leaver. A Bot without it is
// asked for each part by type.
type Parts interface {
	Parts() (Pinger, Waiter, Leaver)
}

// Acker is a Bot whose Inputs acknowledge state updates (load protocol
// v1.1's snapshot acknowledgement: a delta server takes each client's
// baseline from it). AckDue reports an acknowledgement newer than the one
// the last Input carried. On a tick the idle pattern sends no Input, the
// engine then sends one holding the controls last sent, as a real client's
// input stream would: one Input a second would otherwise leave the server's
// baselines a second old, past its ring, and be sent full snapshots no real
// player gets. A trace replay sends its recording's stream unchanged.
type Acker interface {
	AckDue() bool
}

// CloseReader is a Bot that says what the server's close meant. When the
// connection ends with the server's code (the transport's disconnect
// reason, not 0: a WebSocket close status with its reason text, ENet's
// disconnect data with none), the engine calls Closed before it counts
// the client's end. MsgRefused, before admission, ends the client refused
// under Msg.Reason (the engine's own reason when empty); MsgRefused after
// it, and MsgLeaving, name the end (never connected, or lost) by
// Msg.Reason. Any other Msg, an empty Reason there, or a Bot without
// Closed leaves the end to the engine's rule (client.closed).
type CloseReader interface {
	Closed(code uint32, text string) Msg
}

// Conn is how a Bot sends outside Input: the join, a challenge response,
// a ping, a goodbye. The engine's client implements it over its own host.
type Conn interface {
	// Send queues msg (copied) to the server. A failed send ends the
	// client (send_error) once the protocol call returns.
	Send(d transport.Delivery, msg []byte) error
}

// MsgKind is what a server message was.
type MsgKind uint8

// Message kinds.
const (
	// MsgOther is a message the engine has nothing to count for.
	MsgOther MsgKind = iota
	// MsgAdmitted admits the client: the join succeeded.
	MsgAdmitted
	// MsgRefused refuses it, with Msg.Reason (refused_by_reason).
	MsgRefused
	// MsgState is a state update (a snapshot): counted, timed, and with a
	// tick (HasTick) the source of the observed server tick rate.
	MsgState
	// MsgPong answers Ping(Msg.Token).
	MsgPong
	// MsgLeaving says the server is about to disconnect the client: a
	// disconnect that follows is counted under Msg.Reason.
	MsgLeaving
	// MsgDelay is the server's own measure of the client's latency
	// (v1's PeerDelay), Msg.DelayMs: peer_delay_ms.
	MsgDelay
)

// Msg is what one server message means to the engine. Only the fields of
// its Kind are read.
type Msg struct {
	Kind MsgKind
	// HasTick: Tick is the server tick the state update describes (uint32,
	// wrap-safe). Without it the update still counts (bytes, gaps), but
	// gives no tick rate.
	HasTick bool
	// HasEntities: Entities is how many entities the update holds
	// (entities_per_snapshot, snapshot_bytes_per_entity).
	HasEntities bool
	Tick        uint32
	Entities    int
	// Delta: the update was a delta against an earlier one the client
	// acknowledged (sg-entities/3): delta_snapshot_share and the
	// full/delta bytes per entity split on it.
	Delta bool
	// HasInputAck: InputAck is the number (Control.Seq) of the newest
	// Input the server had applied when it built this state update; the
	// first update acknowledging Input N times N's input latency.
	HasInputAck bool
	InputAck    uint32
	// Token is the Pong's ping token.
	Token uint32
	// DelayMs is MsgDelay's latency in milliseconds.
	DelayMs float64
	// Reason names a refusal or a coming disconnect.
	Reason string
	// ServerTransport and BodyFormat are what an admission says of the
	// server (v1's Welcome): the report's server_transport and
	// body_format. Empty: the protocol does not say.
	ServerTransport, BodyFormat string
	// AnnouncedHz is the state-update rate an admission announces (v1's
	// Welcome tick_hz): the delivery check's reference rate unless the
	// profile declares one. 0: the protocol announces none.
	AnnouncedHz float64
}
