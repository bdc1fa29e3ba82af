package wsgame_test

import (
	"testing"
	"time"

	"github.com/scalegate/scalegate/examples/internal/gametest"
)

// A bot that hears nothing for --timeout-s is lost (silent); 2.5 s leaves
// a loaded machine room and the 6 s run room to see it.
var asserts = []string{"--clients", "16", "--duration", "6", "--ramp-ms", "10", "--timeout-s", "2.5",
	"--assert-admission", "--assert-min-tick-hz", "45", "--assert-max-wire-kbs", "60", "--assert-max-kbs", "60"}

// TestGateWSGame builds the wsgame server and bot and runs them end to end
// over WebSocket on loopback: healthy, every assert passes (JSON text
// messages, the state's tick and count read by the codec, wire bytes
// counted at the server's TCP sockets, RTT from the protocol's ping);
// with -fault stall-half half the players hear nothing after their
// welcome, and the admission assert fails on exactly them (lost, silent).
func TestGateWSGame(t *testing.T) {
	dir := t.TempDir()
	server := gametest.Build(t, dir, "github.com/scalegate/scalegate/examples/wsgame/server")
	bot := gametest.Build(t, dir, "github.com/scalegate/scalegate/examples/wsgame/bot")

	t.Run("healthy", func(t *testing.T) {
		s := gametest.StartServer(t, server)
		code, r := gametest.RunBot(t, bot, s, 90*time.Second, asserts...)
		if code != 0 || !r.Passed {
			t.Fatalf("exit %d, passed %v, asserts %+v", code, r.Passed, r.Asserts)
		}
		if r.Protocol != "wsgame/1" || r.Transport != "ws" || r.ClientsConnected != 16 {
			t.Errorf("protocol %q transport %q connected %d", r.Protocol, r.Transport, r.ClientsConnected)
		}
		if h := r.ObservedServerTickHz; h == nil || h.Max > 62 {
			t.Errorf("observed tick-Hz %+v, want the server's 60", h)
		}
		if r.RTTMs == nil || r.EntitiesPerSnapshot == nil || r.SnapshotDecodeErrors != 0 || r.ProtocolErrors != 0 {
			t.Errorf("rtt %v entities %v decode errors %d protocol errors %d", r.RTTMs, r.EntitiesPerSnapshot, r.SnapshotDecodeErrors, r.ProtocolErrors)
		}
		if wire := gametest.Assert(t, r, "assert-max-wire-kbs"); wire.Measured == nil || *wire.Measured <= 0 {
			t.Errorf("wire KB/s per client %+v: the server's metrics file was not read", wire)
		}
	})

	t.Run("stall-half", func(t *testing.T) {
		s := gametest.StartServer(t, server, "-fault", "stall-half")
		code, r := gametest.RunBot(t, bot, s, 90*time.Second, asserts...)
		if code != 1 || r.Passed {
			t.Fatalf("exit %d, passed %v: a server that stopped talking to half its players passed", code, r.Passed)
		}
		if a := gametest.Assert(t, r, "assert-admission"); a.Passed {
			t.Errorf("admission %+v passed", a)
		}
		if r.ClientsConnected != 16 || r.ClientsDisconnected != 8 || r.DisconnectedByReason["silent"] != 8 {
			t.Errorf("connected %d, lost %d %v: want the 8 stalled players lost as silent", r.ClientsConnected, r.ClientsDisconnected, r.DisconnectedByReason)
		}
	})
}
