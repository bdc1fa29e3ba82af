package server

import (
	"bytes"
	"cmp"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// deltaClient drives one peer of a testServer as a delta-decoding client:
// it asks for deltas (or not), decodes each snapshot against its own ring
// and acknowledges the newest it decoded in its next Input.
type deltaClient struct {
	ts        *testServer
	dec       *snapshot.Decoder
	ring      snapshot.Ring
	ask, acks bool
	seen      int // snapshots of ts.h read so far
	ack       uint32
	hasAck    bool
	seq       uint32
	// Counts over the snapshots decoded.
	v3, deltas, fails int
	bytes, ents       int
	lastErr           error
}

func newDeltaClient(t *testing.T, ts *testServer, ask, acks bool) *deltaClient {
	dec, err := snapshot.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dec.Close)
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "builtin:sensor-fighter"))
	ts.step()
	welcome := ts.h.messagesOf(1, proto.TypeWelcome)
	if len(welcome) != 1 {
		t.Fatalf("%d welcomes", len(welcome))
	}
	w, err := proto.DecodeWelcome(welcome[0])
	if err != nil || w.Flags&proto.WelcomeFlagDeltas == 0 {
		t.Fatalf("welcome %+v (%v): no deltas flag", w, err)
	}
	f := proto.FeatureInputAcks
	if ask {
		f |= proto.FeatureSnapshotDeltas
	}
	ts.h.recv(1, proto.AppendFeatures(nil, f))
	return &deltaClient{ts: ts, dec: dec, ask: ask, acks: acks}
}

// tick sends one Input (with the ack, once a version-3 body decoded),
// runs a server tick and decodes the snapshots it sent.
func (c *deltaClient) tick() {
	c.seq++
	in := proto.Input{Seq: c.seq, Throttle: 0.6, Aileron: 0.3, HasSnapshotAck: c.acks && c.hasAck, SnapshotAck: c.ack}
	c.ts.h.recv(1, proto.AppendInput(nil, &in))
	c.ts.step()
	snaps := c.ts.h.messagesOf(1, proto.TypeSnapshot)
	for _, m := range snaps[c.seen:] {
		h, body, err := proto.DecodeSnapshot(m)
		if err != nil {
			c.fails++
			continue
		}
		n, delta, err := c.dec.CheckRing(h.BodyFlags(), body, h.Tick, &c.ring)
		if err != nil {
			c.fails++
			c.lastErr = err
			continue
		}
		if c.ring.Has(h.Tick) { // a version-3 body left its view
			c.v3++
			c.ack, c.hasAck = h.Tick, true
		}
		if delta {
			c.deltas++
		}
		c.bytes += len(m)
		c.ents += n
	}
	c.seen = len(snaps)
}

func TestDeltaSnapshots(t *testing.T) {
	cases := []struct {
		name       string
		ask, acks  bool
		fault      func(*FaultConfig)
		wantV3     bool
		wantDeltas bool
		wantFails  bool
	}{
		{"a client that does not ask gets version 2", false, false, nil, false, false, false},
		{"a client that asks and acks gets deltas", true, true, nil, true, true, false},
		{"a client that never acks gets full version 3", true, false, nil, true, false, false},
		{"ignore_snapshot_acks: full version 3", true, true, func(f *FaultConfig) { f.IgnoreSnapshotAcks = true }, true, false, false},
		{"corrupt_delta_every_nth: counted failures", true, true, func(f *FaultConfig) { f.CorruptDeltaEveryNth = 5 }, true, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestServer(t, func(cfg *Config) {
				cfg.World.TestSpawnAICount = 64
				cfg.World.TestSpawnSpreadKm = 4
				if c.fault != nil {
					c.fault(&cfg.Faults)
				}
			})
			cl := newDeltaClient(t, ts, c.ask, c.acks)
			for i := 0; i < 120; i++ {
				cl.tick()
			}
			if (cl.v3 > 0) != c.wantV3 || (cl.deltas > 60) != c.wantDeltas || (cl.fails > 0) != c.wantFails {
				t.Fatalf("v3 %d, deltas %d, failures %d (%v)", cl.v3, cl.deltas, cl.fails, cl.lastErr)
			}
			if c.wantFails && !errors.Is(cl.lastErr, snapshot.ErrDelta) {
				t.Errorf("failure %v, want ErrDelta", cl.lastErr)
			}
			if ts.met.malformed != 0 {
				t.Errorf("%d malformed", ts.met.malformed)
			}
			t.Logf("%d snapshots: %d v3, %d deltas, %.2f B/entity", cl.seen, cl.v3, cl.deltas, float64(cl.bytes)/float64(max(cl.ents, 1)))
		})
	}
}

// TestFutureSnapshotAckIgnored: an ack of a tick the server has not
// reached is no snapshot it sent; it is ignored, and the peer's real acks
// keep its deltas coming.
func TestFutureSnapshotAckIgnored(t *testing.T) {
	ts := newTestServer(t, nil)
	cl := newDeltaClient(t, ts, true, true)
	for i := 0; i < 10; i++ {
		cl.tick()
	}
	ts.h.recv(1, proto.AppendInput(nil, &proto.Input{Seq: 100, HasSnapshotAck: true, SnapshotAck: ts.tick + 1000}))
	before := cl.deltas
	for i := 0; i < 20; i++ {
		cl.tick()
	}
	if cl.deltas-before < 18 || cl.fails != 0 {
		t.Errorf("%d deltas of 20 after a future ack, %d failures", cl.deltas-before, cl.fails)
	}
}

// TestSnapshotAckWithoutDeltasIsMalformed: a 29-byte Input from a peer
// that never asked for deltas is counted malformed, not applied.
func TestSnapshotAckWithoutDeltasIsMalformed(t *testing.T) {
	ts := newTestServer(t, nil)
	newDeltaClient(t, ts, false, false)
	ts.h.recv(1, proto.AppendInput(nil, &proto.Input{Seq: 1, HasSnapshotAck: true, SnapshotAck: 3}))
	ts.step()
	if ts.met.malformed != 1 || ts.met.inputsAccepted != 0 {
		t.Errorf("malformed %d, accepted %d", ts.met.malformed, ts.met.inputsAccepted)
	}
}

// TestSnapshotDeltasOff: with [network] snapshot_deltas = false the Welcome
// offers no deltas and a peer that asks all the same gets version 2.
func TestSnapshotDeltasOff(t *testing.T) {
	ts := newTestServer(t, func(cfg *Config) { cfg.Network.SnapshotDeltas = false })
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, ""))
	ts.step()
	w, err := proto.DecodeWelcome(ts.h.messagesOf(1, proto.TypeWelcome)[0])
	if err != nil || w.Flags != proto.WelcomeFlagMinor1 {
		t.Fatalf("welcome flags %#x (%v), want minor_1 alone", w.Flags, err)
	}
	ts.h.recv(1, proto.AppendFeatures(nil, proto.FeatureInputAcks|proto.FeatureSnapshotDeltas))
	ts.step()
	dec, err := snapshot.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, m := range ts.h.messagesOf(1, proto.TypeSnapshot) {
		h, body, _ := proto.DecodeSnapshot(m)
		if _, err := dec.Check(h.BodyFlags(), body); err != nil { // Check refuses version 3
			t.Fatalf("a snapshot that is not version 2: %v", err)
		}
	}
	if ts.viewers[0].In.Deltas {
		t.Error("a peer takes deltas the server does not offer")
	}
}

// A delta peer's states appended in id order through the tick's id ranking
// give the bytes the encoder's own sort gave: the same world built twice,
// once each way, with slots reused so that slot order is not id order.
func TestAppendByIDMatchesEncoderSort(t *testing.T) {
	build := func(sortInEncoder bool) (*Sim, []*Viewer) {
		cfg := DefaultConfig()
		cfg.World.TestSpawnAICount = 120
		cfg.World.TestSpawnSpreadKm = 10
		sim := newTestSim(t, cfg, 2)
		sim.sortInEncoder = sortInEncoder
		var vs []*Viewer
		for i := range 24 {
			v := &Viewer{Slot: sim.World.SpawnPlayer(1, TypeSensorFighter, uint32(i))}
			v.In.Deltas = true
			vs = append(vs, v)
		}
		// Free every fifth AI slot and fill the holes with new entities,
		// whose ids are above every other.
		for sl := int32(0); sl < 120; sl += 5 {
			sim.World.Remove(sl)
		}
		sim.World.SpawnLoiterers(24, 10, 500, "builtin:sensor-fighter")
		return sim, vs
	}
	a, va := build(false)
	b, vb := build(true)
	live := a.World.Live()
	if slices.IsSortedFunc(live, func(x, y int32) int { return cmp.Compare(a.World.At(x).ID, a.World.At(y).ID) }) {
		t.Fatal("live slots are in id order: the test needs them not to be")
	}
	for tick := uint32(1); tick <= 90; tick++ {
		for _, run := range []struct {
			sim *Sim
			vs  []*Viewer
		}{{a, va}, {b, vb}} {
			run.sim.Tick = tick
			tm := timer{at: time.Now(), sum: &[numPhases]time.Duration{}}
			run.sim.Simulate(&tm)
			run.sim.Sense(&tm)
			run.sim.Build(run.vs, &SnapshotParams{Tick: tick, BudgetBytes: 1200, Compress: true})
			ackLate(run.vs, tick)
		}
		for i := range va {
			if !bytes.Equal(va[i].In.Msg, vb[i].In.Msg) {
				t.Fatalf("tick %d, peer %d: %d bytes in id order, %d sorted by the encoder", tick, i, len(va[i].In.Msg), len(vb[i].In.Msg))
			}
			if tick > 4 && !va[i].In.Delta {
				t.Fatalf("tick %d, peer %d: not a delta", tick, i)
			}
		}
	}
	if len(a.byID) != len(live) || b.byID != nil {
		t.Fatalf("ranked %d of %d live slots (encoder-sorted sim: %d)", len(a.byID), len(live), len(b.byID))
	}
}
