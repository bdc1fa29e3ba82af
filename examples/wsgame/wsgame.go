// Package wsgame is the bot side of a small io-style browser game. The game
// speaks JSON text messages over a WebSocket, and is gated by scalegate
// through the bot package. Its server is ./server, its bot binary ./bot.
//
// Every message is one WebSocket text message holding one JSON object
// whose first member is its type "t":
//
//	C→S {"t":"join","name":"bot-7"}
//	S→C {"t":"welcome","id":7}        or {"t":"full"} (the room is full)
//	C→S {"t":"move","seq":12,"x":0.5,"y":-0.25,"fire":true}
//	S→C {"t":"state","tick":1234,"n":3,"p":[[7,10.5,3.25],…]}   n players in p
//	C→S {"t":"ping","id":4}           S→C {"t":"pong","id":4}
//
// The state update is classified and its tick and count read without
// decoding the whole object (it is most of the traffic); the rare messages
// go through encoding/json.
package wsgame

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/scalegate/scalegate/bot"
	"github.com/scalegate/scalegate/bot/transport/ws"
)

// Game is the protocol as the swarm runs it: bot.Main(wsgame.Game).
var Game = bot.Game{
	Name:      "wsgame/1",
	Transport: ws.Name,
	New:       func(index int) bot.Protocol { return &Bot{index: index} },
}

// Bot is one player.
type Bot struct {
	index int
	seq   uint64
}

var statePrefix = []byte(`{"t":"state",`)

// Connected joins with the bot's name.
func (b *Bot) Connected(c *bot.Conn) error {
	return c.Send(bot.Text, fmt.Appendf(nil, `{"t":"join","name":"bot-%d"}`, b.index))
}

// Receive classifies one server message.
func (b *Bot) Receive(_ *bot.Conn, msg []byte) (bot.Msg, error) {
	if bytes.HasPrefix(msg, statePrefix) {
		tick, err1 := field(msg, `"tick":`)
		n, err2 := field(msg, `"n":`)
		if err := errors.Join(err1, err2); err != nil {
			return bot.Msg{Kind: bot.State}, err
		}
		return bot.Msg{Kind: bot.State, Tick: uint32(tick), HasTick: true, Entities: int(n), HasEntities: true}, nil
	}
	var m struct {
		T  string `json:"t"`
		ID uint32 `json:"id"`
	}
	if err := json.Unmarshal(msg, &m); err != nil {
		return bot.Msg{}, err
	}
	switch m.T {
	case "welcome":
		return bot.Msg{Kind: bot.Admitted}, nil
	case "full":
		return bot.Msg{Kind: bot.Refused, Reason: "server_full"}, nil
	case "pong":
		return bot.Msg{Kind: bot.Pong, Token: m.ID}, nil
	}
	return bot.Msg{}, fmt.Errorf("wsgame: unknown message type %q", m.T)
}

// field reads the unsigned integer after key in msg.
func field(msg []byte, key string) (uint64, error) {
	i := bytes.Index(msg, []byte(key))
	if i < 0 {
		return 0, fmt.Errorf("wsgame: state without %s", key)
	}
	rest := msg[i+len(key):]
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	return strconv.ParseUint(string(rest[:end]), 10, 32) // the conversion does not escape: no allocation
}

// Controls sends one move a tick from the pattern's axes and fire button.
func (b *Bot) Controls(buf []byte, ctl *bot.Controls) ([]byte, bot.Delivery) {
	b.seq++
	buf = append(buf, `{"t":"move","seq":`...)
	buf = strconv.AppendUint(buf, b.seq, 10)
	buf = append(buf, `,"x":`...)
	buf = strconv.AppendFloat(buf, float64(ctl.Aileron), 'f', 3, 32)
	buf = append(buf, `,"y":`...)
	buf = strconv.AppendFloat(buf, float64(ctl.Elevator), 'f', 3, 32)
	buf = append(buf, `,"fire":`...)
	buf = strconv.AppendBool(buf, ctl.Buttons&1 != 0)
	return append(buf, '}'), bot.Text
}

// Ping asks the server to echo a token: rtt_ms.
func (b *Bot) Ping(c *bot.Conn, token uint32) error {
	return c.Send(bot.Text, fmt.Appendf(nil, `{"t":"ping","id":%d}`, token))
}
