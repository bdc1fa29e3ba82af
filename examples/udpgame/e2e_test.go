package udpgame_test

import (
	"testing"

	"github.com/scalegate/scalegate/examples/internal/gametest"
)

// The asserts a profile gating udpgame would forward: every bot admitted
// and kept, the server's tick as the players see it, the wire ceiling.
var asserts = []string{"--clients", "16", "--duration", "4", "--ramp-ms", "10",
	"--assert-admission", "--assert-min-tick-hz", "45", "--assert-max-wire-kbs", "30", "--assert-max-kbs", "30"}

// game is udpgame as gametest runs it.
var game = gametest.Game{Pkg: "github.com/scalegate/scalegate/examples/udpgame",
	Protocol: "udpgame/1", Transport: "udp", Clients: 16, Args: asserts}

// TestGateUDPGame builds the udpgame server and bot and runs them end to
// end on loopback: healthy, every assert passes on figures measured
// through the SDK (admission, observed tick-Hz from the state's tick,
// payload and wire KB/s, RTT from the protocol's own ping, entities per
// update); with -fault half-tick the observed tick-Hz assert fails, and
// only it.
func TestGateUDPGame(t *testing.T) {
	b := gametest.BuildGame(t, game)

	t.Run("healthy", func(t *testing.T) {
		r := b.Healthy(t)
		if h := r.ObservedServerTickHz; h == nil || h.Min < 45 || h.Max > 62 {
			t.Errorf("observed tick-Hz %+v, want the server's 60", h)
		}
		if r.RTTMs == nil || r.EntitiesPerSnapshot == nil || *r.EntitiesPerSnapshot < 1 || r.SnapshotBytesPerEntity == nil {
			t.Errorf("rtt %v entities %v bytes/entity %v: the codec's pong and counts were not measured", r.RTTMs, r.EntitiesPerSnapshot, r.SnapshotBytesPerEntity)
		}
		if r.SnapshotDecodeErrors != 0 || r.ProtocolErrors != 0 {
			t.Errorf("decode errors %d, protocol errors %d", r.SnapshotDecodeErrors, r.ProtocolErrors)
		}
		if wire := gametest.Assert(t, r, "assert-max-wire-kbs"); wire.Measured == nil || *wire.Measured <= 0 {
			t.Errorf("wire KB/s per client %+v: the server's metrics file was not read", wire)
		}
	})

	t.Run("half-tick", func(t *testing.T) {
		r := b.Faulty(t, "half-tick", "a server ticking at half its rate passed")
		tick := gametest.Assert(t, r, "assert-min-tick-hz")
		if tick.Passed || tick.Measured == nil || *tick.Measured > 32 {
			t.Errorf("tick-Hz assert %+v, want a failure measuring about 30", tick)
		}
		for _, name := range []string{"assert-admission", "assert-max-wire-kbs", "assert-max-kbs"} {
			if a := gametest.Assert(t, r, name); !a.Passed {
				t.Errorf("%s failed too (%+v): the fault is the tick, nothing else", name, a)
			}
		}
	})
}
