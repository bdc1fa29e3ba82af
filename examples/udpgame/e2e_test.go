package udpgame_test

import (
	"encoding/json"
	"testing"

	"github.com/scalegate/scalegate/examples/internal/gametest"
)

// The asserts a profile gating udpgame would forward: every bot admitted
// and kept, the server's tick as the players see it, the wire ceiling,
// the inputs the server applied.
var asserts = []string{"--clients", "16", "--duration", "4", "--ramp-ms", "10",
	"--assert-admission", "--assert-min-tick-hz", "45", "--assert-max-wire-kbs", "30", "--assert-max-kbs", "30",
	"--assert-max-input-latency-ms-p95", "50", "--assert-min-inputs-accepted-ratio", "0.95"}

// game is udpgame as gametest runs it.
var game = gametest.Game{Pkg: "github.com/scalegate/scalegate/examples/udpgame",
	Protocol: "udpgame/3", Transport: "udp", Clients: 16, Args: asserts}

// quarterTurnMs is a quarter of the bots' 60 Hz turn: an RTT timed from
// the pong's arrival is far under it; one timed from the next turn is not.
const quarterTurnMs = 1000.0 / 60 / 4

// TestGateUDPGame builds the udpgame server and bot and runs them end to
// end on loopback: healthy, every assert passes on figures measured
// through the SDK (admission, observed tick-Hz from the state's tick,
// payload and wire KB/s, RTT from the protocol's own ping, input latency
// from its acks, entities per update, the inputs the server applied), and
// every bot says bye after the hold, which the server's metrics count in
// the swarm's final read; with -fault half-tick the observed tick-Hz assert
// fails, and only it; with -fault late-inputs the input latency assert
// fails, and only it; with -fault ignore-inputs the inputs-accepted assert
// fails, and only it.
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
		// The server answers a ping in the pass that reads it, so the
		// round trip is the loopback's, timed from the pong's arrival (not
		// the bot's next turn, up to 16.7 ms later). The bound is a
		// quarter of that turn, not the loopback's own figure (which load
		// moves past 2 ms): a turn-timed reading's p50 is about 8.3 ms.
		if r.RTTSource != "ping" || r.RTTMs.P50 >= quarterTurnMs {
			t.Errorf("rtt %+v from %q, want pings with a p50 under a quarter of a 60 Hz turn (%.1f ms) on loopback", r.RTTMs, r.RTTSource, quarterTurnMs)
		}
		if r.InputLatencyMs == nil || r.InputsAcked == 0 {
			t.Errorf("input latency %+v over %d inputs: the server's acks were not timed", r.InputLatencyMs, r.InputsAcked)
		}
		if r.SnapshotDecodeErrors != 0 || r.ProtocolErrors != 0 {
			t.Errorf("decode errors %d, protocol errors %d", r.SnapshotDecodeErrors, r.ProtocolErrors)
		}
		if wire := gametest.Assert(t, r, "assert-max-wire-kbs"); wire.Measured == nil || *wire.Measured <= 0 {
			t.Errorf("wire KB/s per client %+v: the server's metrics file was not read", wire)
		}
		// Every bot's bye was answered, and counted before the final read;
		// the players the server reported are the hold's, not the none
		// left after the byes.
		var st struct {
			Byes  *int64 `json:"byes"`
			Peers int    `json:"peers"`
		}
		if err := json.Unmarshal(r.ServerTick, &st); err != nil {
			t.Fatal(err)
		}
		if l := r.Leave; l == nil || l.Sent != 16 || l.Answered != 16 || l.Errors != 0 || st.Byes == nil || *st.Byes != 16 || st.Peers != 16 {
			t.Errorf("leave %+v, the final read's byes %v and peers %d: want 16 byes sent, answered and counted, 16 peers", l, st.Byes, st.Peers)
		}
	})

	t.Run("ignore-inputs", func(t *testing.T) {
		r := b.Faulty(t, "ignore-inputs", "a server applying no input passed")
		acc := gametest.Assert(t, r, "assert-min-inputs-accepted-ratio")
		if acc.Passed || acc.Measured == nil || *acc.Measured != 0 {
			t.Errorf("inputs-accepted assert %+v, want a failure measuring 0", acc)
		}
		for _, name := range []string{"assert-admission", "assert-min-tick-hz", "assert-max-wire-kbs", "assert-max-kbs"} {
			if a := gametest.Assert(t, r, name); !a.Passed {
				t.Errorf("%s failed too (%+v): the fault is the inputs, nothing else", name, a)
			}
		}
	})

	t.Run("late-inputs", func(t *testing.T) {
		r := b.Faulty(t, "late-inputs", "a server applying inputs 100 ms late passed")
		lat := gametest.Assert(t, r, "assert-max-input-latency-ms-p95")
		if lat.Passed || lat.Measured == nil || *lat.Measured < 100 {
			t.Errorf("input latency assert %+v, want a failure measuring over 100 ms", lat)
		}
		for _, name := range []string{"assert-admission", "assert-min-tick-hz", "assert-max-wire-kbs", "assert-max-kbs"} {
			if a := gametest.Assert(t, r, name); !a.Passed {
				t.Errorf("%s failed too (%+v): the fault is the input latency, nothing else", name, a)
			}
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
