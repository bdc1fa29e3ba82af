package bot

import (
	"fmt"
	"net/http"
	"time"

	"github.com/scalegate/scalegate/internal/load/swarm"
	"github.com/scalegate/scalegate/internal/load/transport"
)

// Protocol is one bot's side of your game's protocol. The swarm makes one
// per bot (Game.New) and calls it only from that bot's worker goroutine,
// so an implementation keeps per-bot state (a challenge token, a sequence
// number) in plain fields, with no locking.
//
// It only says what messages mean. The swarm counts everything in the
// report itself: admissions and refusals, bytes and gaps of the state
// updates, the server tick rate, round trips, the harness's own cost.
type Protocol interface {
	// Connected is called once, when the transport has connected (on raw
	// UDP, which has no handshake, at once): send your join or login with
	// c.Send. An error ends the bot as never connected, reason
	// "protocol_error".
	Connected(c *Conn) error
	// Receive is called for every message from the server and says what
	// it was. msg is valid only during the call: copy what you keep. It
	// may answer through c (a challenge's response: as many round trips as
	// the join needs, until a message is Admitted or Refused).
	//
	// An error says the message did not decode: a State counts in
	// snapshot_decode_errors (and still counts as received), anything else
	// in protocol_errors; before the bot is admitted an error ends it as
	// never connected, reason "protocol_error".
	Receive(c *Conn, msg []byte) (Msg, error)
	// Controls appends the bot's input for one tick to buf and returns it
	// with how it travels; return nil to send nothing. It is called once
	// per tick (--rate) while the bot is admitted and its pattern has
	// controls for the tick (the idle pattern has them once a second).
	// ctl is the pattern's; a protocol may ignore it and send its own.
	// Appending to buf allocates nothing once the swarm's buffer has grown
	// to your message size.
	Controls(buf []byte, ctl *Controls) ([]byte, Delivery)
}

// Pinger is a Protocol that times round trips itself. Ten times a second
// (--ping-hz) while the bot is admitted (from a second after admission)
// the swarm calls Ping with a fresh token; the Protocol sends whatever its
// server echoes, and Receive returns Msg{Kind: Pong, Token: token} for the
// echo. The swarm times it from the moment the transport received the
// echo, not from the bot's next turn: rtt_ms. The latest 32 pings are
// timed, so a slow echo is not lost to the next ping.
//
// Without Pinger, rtt_ms is the transport's own estimate where it has one
// (ENet, QUIC, WebSocket pings) and missing where it has none (raw UDP):
// missing, never zero. transport_rtt_ms is that estimate either way.
type Pinger interface {
	Ping(c *Conn, token uint32) error
}

// Waiter is a Protocol that resends its join until the server answers.
// Once per tick while the bot waits for admission the swarm calls Waiting
// with the time since Connected; resend what is unanswered (every 250 ms,
// say). Over raw UDP a lost hello is otherwise never answered and the bot
// ends as never connected (join_timeout, 10 s). An error ends the bot
// (never connected, protocol_error).
type Waiter interface {
	Waiting(c *Conn, waited time.Duration) error
}

// Leaver is a Protocol that says goodbye when the run ends: your
// protocol's BYE, logout or leave message. When the hold is over (no bot
// sends Controls any more) and before the swarm reads the server's figures
// for the last time, the swarm calls Leave once for every admitted bot;
// send the goodbye with c.Send. The swarm then keeps receiving until each
// bot's server has answered it (Receive returns Leaving, or the transport
// disconnects) or a second has passed, and only then reads the server and
// disconnects. So what your server does on a goodbye is in the final
// read: a BYE it counts is counted, a session it closes is closed.
//
// The population your server reports (peers, entities) is read as the
// hold left it, not after the goodbyes: a server that drops a player on
// its BYE would otherwise show no players at the final read, and the wire
// rate per client could not be computed. Everything else (counters, tick
// times, bytes) is read at the final read.
//
// Do not send a goodbye from Controls near the end: the swarm cannot know
// which tick is the last, so the server drops players while the swarm
// still counts them (lost mid-run), and their departure lands in the
// hold's figures. An error from Leave, or a failed send, is counted in the
// report (leave.errors) and never fails the run.
type Leaver interface {
	Leave(c *Conn) error
}

// CloseReader is a Protocol that says what the server's close means, for
// a server that refuses or drops a player by closing the connection with a
// code rather than with a message: a WebSocket close frame's status and
// reason text (4003 "server full"), ENet's disconnect data (reason "").
// The swarm calls Closed from the bot's worker goroutine when the
// connection ends with a code (never for a timeout or a broken
// connection, and not on raw UDP, which has no close). Return
//
//   - Msg{Kind: Refused, Reason: r} to count a close before admission as
//     refused under r (refused_by_reason); after admission it is a loss
//     under r;
//   - Msg{Kind: Leaving, Reason: r} to count the bot's end under r: never
//     connected before admission, disconnected after;
//   - the zero Msg to leave it to the swarm's rule.
//
// The swarm's rule, for a Protocol without Closed too: an application code
// (4000–4999) before admission is a refusal and after it a loss, both
// under "close_CODE (text)" ("close_4003 (server full)": the text cut to 64
// bytes, control characters escaped); any other code is
// transport_disconnect.
type CloseReader interface {
	Closed(code uint32, reason string) Msg
}

// Delivery is how a message travels. What each one means depends on the
// transport (--transport): ENet sends Reliable on its reliable channel and
// Unreliable on its unreliable one, QUIC on its control stream and as a
// datagram, WebSocket sends both as binary messages and Text as a text
// message, and raw UDP sends both as one plain datagram (your protocol
// owns reliability there).
type Delivery uint8

// Deliveries.
const (
	Reliable Delivery = iota
	Unreliable
	// Text is a WebSocket text message (UTF-8); other transports refuse
	// it with an error from Send.
	Text
)

// Kind is what a server message was.
type Kind uint8

// Message kinds. The values of the swarm's engine (internal/load/swarm MsgKind)
// are the same, so a Msg crosses to it without a table.
const (
	// Other is a message the swarm has nothing to count for (a chat line,
	// a world event, an answer the join is still waiting past).
	Other Kind = iota
	// Admitted admits the bot: its join succeeded. From here on it sends
	// Controls every tick, and its state updates are measured.
	Admitted
	// Refused refuses it; Msg.Reason names why (refused_by_reason).
	Refused
	// State is a state update (a snapshot): counted, timed and sized.
	// With HasTick, its Tick gives the observed server tick rate.
	State
	// Pong answers a Ping; Msg.Token is the ping's token.
	Pong
	// Leaving says the server is about to disconnect the bot; Msg.Reason
	// names why, and the disconnect that follows is counted under it.
	Leaving
)

func (k Kind) String() string {
	switch k {
	case Other:
		return "other"
	case Admitted:
		return "admitted"
	case Refused:
		return "refused"
	case State:
		return "state"
	case Pong:
		return "pong"
	case Leaving:
		return "leaving"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Msg is what one server message means. Only the fields of its Kind are
// read; the zero Msg is Other.
type Msg struct {
	Kind Kind
	// Tick is the server tick a State describes, when HasTick. Ticks are
	// uint32 and wrap safely. A protocol whose state updates carry no
	// tick leaves HasTick false: the updates still count (payload KB/s,
	// gaps, counts), but observed_server_tick_hz is then missing, never
	// estimated from arrival times, and a tick_hz_min gate is unevaluable
	// (it fails). Arrival rate is not tick rate: a server that halves its
	// tick but sends every update twice would pass.
	Tick    uint32
	HasTick bool
	// Entities is how many entities a State holds, when HasEntities:
	// entities_per_snapshot and snapshot_bytes_per_entity (missing without).
	Entities    int
	HasEntities bool
	// InputAck is, when HasInputAck, the Seq (Controls.Seq) of the newest
	// input the server had applied when it sent this State. The first
	// State acknowledging input N gives N's input latency: its arrival
	// minus the time N was sent. Acknowledgements are cumulative: one for
	// N also answers every earlier input not yet answered.
	InputAck    uint32
	HasInputAck bool
	// Token is a Pong's ping token.
	Token uint32
	// Reason names a refusal (Refused) or a coming disconnect (Leaving):
	// a short stable word such as "server_full", it keys the report's
	// *_by_reason maps.
	Reason string
	// AnnouncedHz is the rate at which the server says, on Admitted, it
	// will send this bot state (0: your protocol announces none). The
	// gate's delivery check measures every bot's state updates per second
	// against it, unless the profile declares delivery.rate_hz; with
	// neither, against the tick rate observed from Tick (HasTick), and a
	// protocol without ticks must declare the rate. It is the state rate,
	// not the tick rate: a 40 Hz server that sends state every other tick
	// announces 20.
	AnnouncedHz float64
}

// Controls are one tick of the bot's pattern (--pattern, --pattern-mix, a
// recorded trace): axes and buttons, which your Controls method maps to
// your game's input. Throttle is in [0, 1], Elevator, Aileron and Rudder
// in [-1, 1] (a walking game might read Aileron and Elevator as x and y);
// Buttons bit 0 is fire, bit 1 a secondary action, bit 2 a boost.
type Controls struct {
	Throttle, Elevator, Aileron, Rudder float32
	Buttons                             uint32
	// Seq numbers this input: 1, 2, … per bot, wrapping at 2³². If your
	// server acknowledges inputs, send Seq (or a number you map back to
	// it) and return it as Msg.InputAck: the swarm then measures input
	// latency (input_latency_ms).
	Seq uint32
}

// Game describes your protocol to the swarm.
type Game struct {
	// Name names the protocol in the report ("protocol") and the usage,
	// e.g. "tinyudp/1".
	Name string
	// New makes bot index's Protocol (index is the bot's number in the
	// whole run, 0 … clients−1, the same in every shard).
	New func(index int) Protocol
	// Transport is --transport's default when the command line gives
	// none: "enet", "quic", "udp", "ws" or "wss". Empty: "enet". The bot
	// speaks only the transports it imports (bot/transport/udp and its
	// siblings): name this one by its package's Name (udp.Name) and the
	// import is there. A --transport the binary does not link exits 2,
	// naming the import to add.
	Transport string
	// ConnectData is the word ENet's connect carries (your server may
	// check it); other transports have none.
	ConnectData uint32
	// Target, when set, is the address bot index dials, given the
	// host:port it would dial (the server's, or the impairment relay's in
	// front of it): for ws and wss a URL with the bot's own path and query,
	// e.g. "ws://" + hostport + "/play?token=" + tokens[index]; for the
	// other transports host:port. Nil dials hostport (ws: the path "/").
	// The query's values and any userinfo never show in the report, the
	// terminal or an error.
	Target func(index int, hostport string) string
	// Header, when set, is the HTTP headers bot index sends with its
	// WebSocket upgrade (ws and wss; other transports have none): a
	// cookie, an Authorization. The upgrade's own headers (Upgrade,
	// Sec-WebSocket-*) override these. Their values never show anywhere.
	Header func(index int) http.Header
}

// Conn is one bot's way to its server, for what it sends outside Controls:
// its join, a challenge response, a ping.
type Conn struct {
	c          swarm.Conn // the engine's client, set before each call
	index      int
	entityType string
}

// Send queues msg to the server (the swarm copies it: reuse your buffer).
// A send that fails ends the bot (send_error) once the call that made it
// returns.
func (c *Conn) Send(d Delivery, msg []byte) error {
	if d > Text {
		return fmt.Errorf("bot: Send: unknown delivery %d", d)
	}
	return c.c.Send(transport.Delivery(d), msg)
}

// NewConn is a Conn outside a swarm, for testing a Protocol on its own (a
// fuzz test of Receive, say): what the Protocol sends goes to send.
func NewConn(index int, entityType string, send func(d Delivery, msg []byte) error) *Conn {
	return &Conn{c: sendFunc(send), index: index, entityType: entityType}
}

// sendFunc is a send function as the engine's side of a Conn.
type sendFunc func(d Delivery, msg []byte) error

func (f sendFunc) Send(d transport.Delivery, msg []byte) error { return f(Delivery(d), msg) }

// Index is the bot's number in the whole run (0 … clients−1).
func (c *Conn) Index() int { return c.index }

// EntityType is the --entity-type flag: what the run asks each bot to
// play, for a protocol whose join names it.
func (c *Conn) EntityType() string { return c.entityType }
