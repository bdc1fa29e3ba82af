package swarm

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// sendRec is a Conn that keeps what the bot sent.
type sendRec struct{ msgs [][]byte }

func (s *sendRec) Send(_ transport.Delivery, msg []byte) error {
	s.msgs = append(s.msgs, bytes.Clone(msg))
	return nil
}

// v3Snapshot is the Snapshot message of tick carrying 5 entities, a delta
// against ack when the server ring holds it.
func v3Snapshot(t *testing.T, enc *snapshot.Encoder, ring *snapshot.Ring, tick, ack uint32, hasAck bool) []byte {
	t.Helper()
	enc.Reset()
	for id := uint32(1); id <= 5; id++ {
		r := snapshot.Record{ID: id, Type: 16, Pos: [3]float32{float32(id) * 100, 1000, float32(tick)}, Rot: [4]float32{0, 0, 0, 1}, Vel: [3]float32{0, 0, 60}}
		s := snapshot.Quantize(&r)
		enc.AppendState(&s)
	}
	flags, body, _ := enc.FinishDelta(tick, ring, ack, hasAck, nil, false, false)
	return append(proto.AppendSnapshotHeader(nil, proto.SnapshotHeader{Tick: tick, Flags: flags}), body...)
}

// TestBotAcknowledgesDeltas: a bot asks a server that offers deltas for
// them, sends 25-byte Inputs until a version-3 body arrives and 29-byte
// Inputs acknowledging the newest decoded one after; a delta against a
// snapshot it does not hold is a decode error that leaves the ack alone.
// A server that does not offer deltas is never asked and never acked.
func TestBotAcknowledgesDeltas(t *testing.T) {
	for _, offer := range []bool{true, false} {
		w := LoadV1.NewWorker(&Config{}).(*v1Worker)
		defer w.Close()
		b := w.NewBot(0).(*v1Bot)
		conn := &sendRec{}
		flags := proto.WelcomeFlagMinor1
		if offer {
			flags |= proto.WelcomeFlagDeltas
		}
		welcome, _ := proto.AppendWelcome(nil, &proto.Welcome{EntityID: 1, TickHz: 60, Transport: "enet", BodyFormat: snapshot.BodyFormat, Flags: flags})
		if _, err := b.Receive(conn, welcome); err != nil {
			t.Fatal(err)
		}
		wantF := proto.FeatureInputAcks
		if offer {
			wantF |= proto.FeatureSnapshotDeltas
		}
		if len(conn.msgs) != 1 || !bytes.Equal(conn.msgs[0], proto.AppendFeatures(nil, wantF)) {
			t.Fatalf("offer %v: sent %x, want Features %#x", offer, conn.msgs, wantF)
		}
		input := func() []byte { m, _ := b.Input(nil, &Control{Seq: 1}); return m }
		if n := len(input()); n != proto.InputSize {
			t.Fatalf("offer %v: %d-byte Input before any version-3 body", offer, n)
		}
		if !offer {
			continue
		}
		enc, err := snapshot.NewEncoder()
		if err != nil {
			t.Fatal(err)
		}
		var srv snapshot.Ring
		m, err := b.Receive(conn, v3Snapshot(t, enc, &srv, 100, 0, false))
		if err != nil || m.Delta || m.Entities != 5 {
			t.Fatalf("full body: %+v, %v", m, err)
		}
		wantAck := func(tick uint32) {
			t.Helper()
			var in proto.Input
			if err := proto.DecodeInput(input(), &in); err != nil || !in.HasSnapshotAck || in.SnapshotAck != tick {
				t.Fatalf("Input %+v (%v), want snapshot_ack %d", in, err, tick)
			}
		}
		wantAck(100)
		if m, err = b.Receive(conn, v3Snapshot(t, enc, &srv, 101, 100, true)); err != nil || !m.Delta || m.Entities != 5 {
			t.Fatalf("delta: %+v, %v", m, err)
		}
		wantAck(101)
		var other snapshot.Ring // a server ring the bot's does not match
		v3Snapshot(t, enc, &other, 90, 0, false)
		_, err = b.Receive(conn, v3Snapshot(t, enc, &other, 102, 90, true))
		if !errors.Is(err, snapshot.ErrBaseline) {
			t.Fatalf("delta against a snapshot never received: %v", err)
		}
		wantAck(101)
	}
}

// TestIdleClientAcknowledgesEverySnapshot: a client whose pattern sends
// one Input a second (idle) still sends an Input for every new baseline
// it decoded, holding the controls it last sent, and none when nothing new
// is to be acknowledged, at most one per ackInterval; a trace replay's
// stream is left as recorded. Without it the server's baselines were up to a
// second old, past its 32-view ring: on reference-enet's idle leg half of
// the snapshots went out full (delta share 0.51, 18.6 B per entity against
// 7.2 on weave).
func TestIdleClientAcknowledgesEverySnapshot(t *testing.T) {
	w := LoadV1.NewWorker(&Config{}).(*v1Worker)
	defer w.Close()
	b := w.NewBot(0).(*v1Bot)
	conn := &sendRec{}
	welcome, _ := proto.AppendWelcome(nil, &proto.Welcome{EntityID: 1, TickHz: 60, Transport: "enet", BodyFormat: snapshot.BodyFormat, Flags: proto.WelcomeFlagMinor1 | proto.WelcomeFlagDeltas})
	if _, err := b.Receive(conn, welcome); err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1000, 0)
	c := newClient(0, "idle", &idle{lastS: -1}, start, b)
	c.welcomedAt = start
	wk := &worker{cfg: &Config{}}
	// The pattern's own Input at t=0 (neutral controls); say a trace had
	// left a throttle set instead, the acknowledging Inputs must hold it.
	if msg, _ := c.buildInput(wk, start); msg == nil {
		t.Fatal("idle sent no Input at t=0")
	}
	c.held.Throttle = 0.5
	enc, err := snapshot.NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	var srv snapshot.Ring
	at := func(tick uint32) time.Time { return start.Add(time.Duration(tick-99) * time.Second / 60) }
	sent := 0
	for tick := uint32(100); tick < 130; tick++ {
		if _, err := b.Receive(conn, v3Snapshot(t, enc, &srv, tick, tick-1, tick > 100)); err != nil {
			t.Fatalf("tick %d: %v", tick, err)
		}
		msg, _ := c.buildInput(wk, at(tick))
		if msg == nil {
			continue // within ackInterval of the last Input
		}
		sent++
		var in proto.Input
		if err := proto.DecodeInput(msg, &in); err != nil || !in.HasSnapshotAck || in.SnapshotAck != tick || in.Throttle != 0.5 {
			t.Fatalf("tick %d: Input %+v (%v), want one acknowledging %d and holding throttle 0.5", tick, in, err, tick)
		}
		if msg, _ := c.buildInput(wk, at(tick).Add(time.Millisecond)); msg != nil {
			t.Fatalf("tick %d: a second Input with nothing new to acknowledge", tick)
		}
	}
	// 30 ticks (0.5 s) at one Input per ackInterval (3 ticks): 10.
	if sent != 10 {
		t.Fatalf("%d acknowledging Inputs over 30 ticks, want 10 (one per %v)", sent, ackInterval)
	}
	// A replay sends its recording's stream unchanged, acknowledgement due
	// or not: the server must record exactly the records replayed.
	r := newClient(1, "trace", silent{}, start, b)
	r.welcomedAt = start
	if _, err := b.Receive(conn, v3Snapshot(t, enc, &srv, 130, 129, true)); err != nil || !b.AckDue() {
		t.Fatalf("tick 130: %v, ack due %v", err, b.AckDue())
	}
	if msg, _ := r.buildInput(wk, at(130)); msg != nil {
		t.Fatal("a pattern that sends nothing (a replay between records) sent an Input to acknowledge")
	}
}

// silent is a pattern that sends no Input, as a trace replay between its
// records.
type silent struct{}

func (silent) Control(float64, *Control) bool { return false }
