package wsgame

import (
	"testing"

	"github.com/scalegate/scalegate/bot"
)

// FuzzReceive: whatever a server sends, the codec classifies it or
// returns an error, never panics; a State it accepts carries the tick and
// count its text says.
func FuzzReceive(f *testing.F) {
	for _, seed := range []string{`{"t":"state","tick":12,"n":2,"p":[[1,0,0],[2,1,1]]}`, `{"t":"welcome","id":3}`, `{"t":"full"}`,
		`{"t":"pong","id":7}`, `{"t":"state","tick":`, `{"t":"state","n":1}`, `[]`, ``} {
		f.Add([]byte(seed))
	}
	c := bot.NewConn(0, "", func(bot.Delivery, []byte) error { return nil })
	f.Fuzz(func(t *testing.T, msg []byte) {
		m, err := Game.New(0).Receive(c, msg)
		if err != nil || m.Kind != bot.State {
			return
		}
		if tick, _ := field(msg, `"tick":`); !m.HasTick || m.Tick != uint32(tick) {
			t.Errorf("state %q read as %+v", msg, m)
		}
	})
}
