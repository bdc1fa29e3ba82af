package udpgame

import (
	"encoding/binary"
	"testing"

	"github.com/scalegate/scalegate/bot"
)

// FuzzReceive: whatever a server sends, the codec classifies it or
// returns an error, never panics; a State it accepts holds exactly the
// players it counts, and a challenge is answered with a join echoing it.
func FuzzReceive(f *testing.F) {
	state := binary.LittleEndian.AppendUint32([]byte{State}, 7)
	state = append(state, 1, 1, 0, 2, 0, 3, 0)
	for _, seed := range [][]byte{state, {Challenge, 1, 2, 3, 4}, {Welcome, 1, 0}, {Deny, 4, 'f', 'u', 'l', 'l'}, {Kick, 0}, {Pong, 9, 0, 0, 0}, {}, {State}} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		var sent [][]byte
		c := bot.NewConn(0, "", func(_ bot.Delivery, m []byte) error { sent = append(sent, append([]byte(nil), m...)); return nil })
		b := Game.New(0)
		m, err := b.Receive(c, msg)
		if err != nil {
			return
		}
		switch m.Kind {
		case bot.State:
			if !m.HasTick || len(msg) != 6+m.Entities*EntitySize {
				t.Errorf("state % x read as %+v", msg, m)
			}
		case bot.Refused, bot.Leaving:
			if m.Reason != string(msg[2:]) {
				t.Errorf("reason %q from % x", m.Reason, msg)
			}
		}
		if msg[0] == Challenge && (len(sent) != 1 || sent[0][0] != Join || string(sent[0][1:]) != string(msg[1:])) {
			t.Errorf("challenge % x answered with %x", msg, sent)
		}
	})
}
