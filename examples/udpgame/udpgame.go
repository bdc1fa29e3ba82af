// Package udpgame is the bot side of a small UDP game. The game speaks a
// binary protocol over raw datagrams with a challenge-response join, and is
// gated by scalegate through the bot package. Its server is ./server, its
// bot binary ./bot; docs/own-protocol.md walks through this file.
//
// Every message is one datagram; the first byte is its type; integers are
// little-endian.
//
//	hello     C→S  'h' u32 index          resent until answered
//	challenge S→C  'c' u32 token          the server's proof the address is real
//	join      C→S  'j' u32 token
//	welcome   S→C  'w' u16 player
//	deny      S→C  'd' u8 len, reason     the server is full, the token was wrong
//	input     C→S  'i' u32 seq, i8 x, i8 y, u8 buttons
//	state     S→C  's' u32 tick, u32 ack, u8 n, n × (u16 player, i16 x, i16 y)
//
// A state's ack is the seq of the newest input the server had applied for
// that player when it sent the state (0: none yet): the swarm times each
// input from its send to the first state acknowledging it.
//
//	ping      C→S  'p' u32 token
//	pong      S→C  'o' u32 token
//	kick      S→C  'k' u8 len, reason     the server drops the player
//	bye       C→S  'b'                    the player leaves; answered by kick "bye"
//
// A bye is the player's goodbye: the server counts it, answers with a kick
// whose reason is "bye" and drops the player at once instead of after its
// silence timeout. The bot sends it when the run ends (bot.Leaver).
package udpgame

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/scalegate/scalegate/bot"
	"github.com/scalegate/scalegate/bot/transport/udp"
)

// Message types (the first byte of every datagram).
const (
	Hello, Challenge, Join, Welcome, Deny = 'h', 'c', 'j', 'w', 'd'
	Input, State, Ping, Pong, Kick        = 'i', 's', 'p', 'o', 'k'
	Bye                                   = 'b'
	// EntitySize is one player record of a state update; StateHeader is
	// what comes before the records ('s', tick, ack, n).
	EntitySize  = 6
	StateHeader = 1 + 4 + 4 + 1
)

// Game is the protocol as the swarm runs it: bot.Main(udpgame.Game).
var Game = bot.Game{
	Name:      "udpgame/3",
	Transport: udp.Name,
	New:       func(index int) bot.Protocol { return &Bot{index: uint32(index)} },
}

// Bot is one bot's state: its index and last hello.
type Bot struct {
	index     uint32
	lastHello time.Duration
}

var errShort = errors.New("udpgame: message too short")

// Connected sends the hello; Waiting resends it until it is answered.
func (b *Bot) Connected(c *bot.Conn) error { return b.hello(c) }

func (b *Bot) hello(c *bot.Conn) error {
	return c.Send(bot.Unreliable, binary.LittleEndian.AppendUint32([]byte{Hello}, b.index))
}

// Waiting resends the hello every 250 ms until welcomed: a hello, a
// challenge or a join may be lost, and the server answers a repeat again.
func (b *Bot) Waiting(c *bot.Conn, waited time.Duration) error {
	if waited-b.lastHello < 250*time.Millisecond {
		return nil
	}
	b.lastHello = waited
	return b.hello(c)
}

// Receive says what a server datagram was, answering the challenge.
func (b *Bot) Receive(c *bot.Conn, msg []byte) (bot.Msg, error) {
	if len(msg) == 0 {
		return bot.Msg{}, errShort
	}
	switch msg[0] {
	case State:
		if len(msg) < StateHeader || len(msg) != StateHeader+int(msg[9])*EntitySize {
			return bot.Msg{Kind: bot.State}, errShort
		}
		ack := binary.LittleEndian.Uint32(msg[5:])
		return bot.Msg{Kind: bot.State, Tick: binary.LittleEndian.Uint32(msg[1:]), HasTick: true,
			Entities: int(msg[9]), HasEntities: true, InputAck: ack, HasInputAck: ack != 0}, nil
	case Challenge:
		if len(msg) != 5 {
			return bot.Msg{}, errShort
		}
		return bot.Msg{}, c.Send(bot.Unreliable, append([]byte{Join}, msg[1:5]...))
	case Welcome:
		return bot.Msg{Kind: bot.Admitted}, nil
	case Deny, Kick:
		if len(msg) < 2 || len(msg) != 2+int(msg[1]) {
			return bot.Msg{}, errShort
		}
		kind := bot.Refused
		if msg[0] == Kick {
			kind = bot.Leaving
		}
		return bot.Msg{Kind: kind, Reason: string(msg[2:])}, nil
	case Pong:
		if len(msg) != 5 {
			return bot.Msg{}, errShort
		}
		return bot.Msg{Kind: bot.Pong, Token: binary.LittleEndian.Uint32(msg[1:])}, nil
	}
	return bot.Msg{}, errors.New("udpgame: unknown message type")
}

// Controls sends one input a tick: the pattern's aileron and elevator as
// x and y, its buttons as they are, numbered with the swarm's Seq so that
// the server's ack names it.
func (b *Bot) Controls(buf []byte, ctl *bot.Controls) ([]byte, bot.Delivery) {
	buf = binary.LittleEndian.AppendUint32(append(buf, Input), ctl.Seq)
	return append(buf, byte(int8(ctl.Aileron*127)), byte(int8(ctl.Elevator*127)), byte(ctl.Buttons)), bot.Unreliable
}

// Ping sends a ping the server echoes as a pong: rtt_ms.
func (b *Bot) Ping(c *bot.Conn, token uint32) error {
	return c.Send(bot.Unreliable, binary.LittleEndian.AppendUint32([]byte{Ping}, token))
}

// Leave says goodbye when the run ends: the server answers it with a kick
// whose reason is "bye" (Receive: Leaving), counts it and drops the
// player. The swarm calls it after the hold and before its final read of
// the server's figures, so the server's count of byes is in that read.
func (b *Bot) Leave(c *bot.Conn) error {
	return c.Send(bot.Unreliable, []byte{Bye})
}
