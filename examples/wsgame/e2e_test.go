package wsgame_test

import (
	"testing"

	"github.com/scalegate/scalegate/examples/internal/gametest"
)

// A bot that hears nothing for --timeout-s is lost (silent); 2.5 s leaves
// a loaded machine room and the 6 s run room to see it.
var asserts = []string{"--clients", "16", "--duration", "6", "--ramp-ms", "10", "--timeout-s", "2.5",
	"--assert-admission", "--assert-min-tick-hz", "45", "--assert-max-wire-kbs", "60", "--assert-max-kbs", "60"}

// game is wsgame as gametest runs it.
var game = gametest.Game{Pkg: "github.com/scalegate/scalegate/examples/wsgame",
	Protocol: "wsgame/1", Transport: "ws", Clients: 16, Args: asserts}

// quarterTurnMs is a quarter of the bots' 60 Hz turn: an RTT timed from
// the pong's arrival is far under it; one timed from the next turn is not.
const quarterTurnMs = 1000.0 / 60 / 4

// TestGateWSGame builds the wsgame server and bot and runs them end to end
// over WebSocket on loopback: healthy, every assert passes (JSON text
// messages, the state's tick and count read by the codec, wire bytes
// counted at the server's TCP sockets, RTT from the protocol's ping);
// with -fault stall-half half the players hear nothing after their
// welcome, and the admission assert fails on exactly them (lost, silent).
func TestGateWSGame(t *testing.T) {
	b := gametest.BuildGame(t, game)

	t.Run("healthy", func(t *testing.T) {
		r := b.Healthy(t)
		if h := r.ObservedServerTickHz; h == nil || h.Max > 62 {
			t.Errorf("observed tick-Hz %+v, want the server's 60", h)
		}
		if r.RTTMs == nil || r.EntitiesPerSnapshot == nil || r.SnapshotDecodeErrors != 0 || r.ProtocolErrors != 0 {
			t.Errorf("rtt %v entities %v decode errors %d protocol errors %d", r.RTTMs, r.EntitiesPerSnapshot, r.SnapshotDecodeErrors, r.ProtocolErrors)
		}
		// The server echoes a ping as it reads it: the round trip is the
		// loopback's, timed from the pong's arrival, not the bot's next
		// turn (which read 16.57 ms at 60 Hz before arrivals were stamped).
		// The bound is a quarter of a 60 Hz turn, not the loopback's own
		// figure (a p50 of 2.12 ms once on the loaded 2-core machine): a
		// reading timed from the next turn is uniform over the turn, p50
		// about 8.3 ms, so it still fails at any machine speed.
		if r.RTTSource != "ping" || r.RTTMs.P50 >= quarterTurnMs {
			t.Errorf("rtt %+v from %q, want pings with a p50 under a quarter of a 60 Hz turn (%.1f ms) on loopback", r.RTTMs, r.RTTSource, quarterTurnMs)
		}
		if wire := gametest.Assert(t, r, "assert-max-wire-kbs"); wire.Measured == nil || *wire.Measured <= 0 {
			t.Errorf("wire KB/s per client %+v: the server's metrics file was not read", wire)
		}
	})

	t.Run("stall-half", func(t *testing.T) {
		r := b.Faulty(t, "stall-half", "a server that stopped talking to half its players passed")
		if a := gametest.Assert(t, r, "assert-admission"); a.Passed {
			t.Errorf("admission %+v passed", a)
		}
		if r.ClientsConnected != 16 || r.ClientsDisconnected != 8 || r.DisconnectedByReason["silent"] != 8 {
			t.Errorf("connected %d, lost %d %v: want the 8 stalled players lost as silent", r.ClientsConnected, r.ClientsDisconnected, r.DisconnectedByReason)
		}
	})
}
