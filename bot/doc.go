// Package bot turns your game's own client protocol into a scalegate swarm
// binary. Use it when your server does not speak scalegate's load protocol:
// the binary is the headless bots the gate runs against your server. You
// write what your messages mean; the swarm does everything else it does for
// the built-in protocol — the connect ramp, fixed-rate input on every bot's
// own socket, flight patterns and recorded traces, shards, the impairment
// relay, the harness self-check — and measures what your bots observe:
// admissions and refusals by reason, the server tick rate from the ticks
// your state updates carry, payload KB/s, state-update gaps, round trips,
// decode errors and its own CPU cost. The binary takes exactly the arguments
// of `scalegate swarm` and writes exactly its report
// (docs/swarm-contract.md), so a profile runs it in place of the built-in
// swarm.
//
// Add it to your module with
//
//	go get github.com/scalegate/scalegate/bot@latest
//
// It needs Go 1.26 or later (scalegate's go.mod). This package and its
// subpackages under bot/transport are scalegate's public Go API; nothing
// else of the module is. docs/compatibility.md says what a version may
// change in it: a minor version only adds (a field, an optional
// interface, a package), so write Game, Msg and Controls literals with
// field names.
//
// A bot links only the transports it imports, one package each:
// bot/transport/udp (raw UDP), bot/transport/ws (ws and wss),
// bot/transport/quic and bot/transport/enet (cgo, the C libenet). Naming
// the Game's transport by its package's Name (Transport: udp.Name) is the
// import; a bot that may also run over another imports that one too. A
// --transport the binary does not link exits 2, naming the import to add.
// So a raw UDP or WebSocket bot builds with CGO_ENABLED=0 and carries no
// ENet, QUIC or WebSocket code it does not use.
//
// You implement Protocol, one value per bot:
//
//   - Connected: send your join or login once the transport is up.
//   - Receive: say what each server message was (Admitted, Refused with a
//     reason, a State with its Tick and entity count, a Pong, Leaving, or
//     Other), answering a challenge through the Conn if your join has one.
//   - Controls: encode one tick of input from the pattern's Controls.
//
// Optionally it is a Waiter (resend the join until answered: raw UDP loses
// datagrams), a Pinger (time round trips with your own ping; otherwise
// the transport's estimate, where it has one, is the RTT), a CloseReader
// (say what your server's close codes mean: a WebSocket server that
// refuses a join by closing with 4003 "server full") and a Leaver
// (say your protocol's goodbye when the run ends: after the hold, before
// the swarm's final read of the server's figures, so what your server
// counts of the goodbyes is in that read). A goodbye is one method:
//
//	func (t *tiny) Leave(c *bot.Conn) error { return c.Send(bot.Unreliable, []byte("B")) }
//
// and Receive returns Msg{Kind: bot.Leaving} for the server's answer, which
// ends the swarm's wait for it (at most a second).
//
// Game.Target and Game.Header give each bot its own address and upgrade
// headers: a WebSocket URL with the bot's path and join token, a cookie.
// A server that refuses the upgrade counts the bot as never connected
// with the HTTP status ("connect_error (HTTP 403 Forbidden)"); the query's
// values and the headers never show in the report or on the terminal.
//
// A complete bot for a game whose server speaks, over raw UDP, "J" to
// join, "W" or "F" (full) in answer, "S" + a u32 tick per state update and
// takes "I" + two signed bytes as input:
//
//	package main
//
//	import (
//		"encoding/binary"
//		"errors"
//		"time"
//
//		"github.com/scalegate/scalegate/bot"
//		"github.com/scalegate/scalegate/bot/transport/udp"
//	)
//
//	type tiny struct{ lastJoin time.Duration }
//
//	func (t *tiny) Connected(c *bot.Conn) error { return c.Send(bot.Unreliable, []byte("J")) }
//
//	// Waiting resends the join every 200 ms until it is answered: a datagram may be lost.
//	func (t *tiny) Waiting(c *bot.Conn, waited time.Duration) error {
//		if waited-t.lastJoin < 200*time.Millisecond {
//			return nil
//		}
//		t.lastJoin = waited
//		return c.Send(bot.Unreliable, []byte("J"))
//	}
//
//	func (t *tiny) Receive(_ *bot.Conn, msg []byte) (bot.Msg, error) {
//		switch {
//		case len(msg) == 5 && msg[0] == 'S':
//			return bot.Msg{Kind: bot.State, Tick: binary.LittleEndian.Uint32(msg[1:]), HasTick: true}, nil
//		case len(msg) == 1 && msg[0] == 'W':
//			return bot.Msg{Kind: bot.Admitted}, nil
//		case len(msg) == 1 && msg[0] == 'F':
//			return bot.Msg{Kind: bot.Refused, Reason: "server_full"}, nil
//		}
//		return bot.Msg{}, errors.New("tiny: unknown message")
//	}
//
//	func (t *tiny) Controls(buf []byte, ctl *bot.Controls) ([]byte, bot.Delivery) {
//		return append(buf, 'I', byte(int8(ctl.Aileron*127)), byte(int8(ctl.Elevator*127))), bot.Unreliable
//	}
//
//	func main() {
//		bot.Main(bot.Game{Name: "tiny/1", Transport: udp.Name, New: func(int) bot.Protocol { return &tiny{} }})
//	}
//
// Build it and run it as you would run `scalegate swarm`:
//
//	go build -o bin/tinybot . && bin/tinybot 127.0.0.1 7777 --clients 64 --duration 20 --json report.json
//
// The package's Example runs this bot against a tiny server. examples/udpgame
// (a binary protocol with a challenge-response join) and examples/wsgame (JSON
// over WebSocket) in the scalegate repository are two whole games, each gated
// end to end; docs/own-protocol.md walks from a UDP game server to a passing
// gate.
package bot
