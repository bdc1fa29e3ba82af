package server

import (
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// joinedPeer connects and joins peer id on ts.
func joinedPeer(t *testing.T, ts *testServer, id transport.PeerID) {
	t.Helper()
	ts.h.connect(id, "127.0.0.1", proto.ConnectData)
	ts.h.recv(id, joinMsg(t, "x"))
}

// snapshots_then_silent: each peer gets its Welcome and N snapshots, then
// nothing at all, no PeerDelay either, for as long as the run lasts; a
// peer joining later gets its own N.
func TestSnapshotsThenSilentFault(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Faults.SnapshotsThenSilent = 2 })
	joinedPeer(t, ts, 1)
	for range TickHz { // one second
		ts.step()
	}
	joinedPeer(t, ts, 2)
	for range 2 * TickHz {
		ts.step()
	}
	for _, id := range []transport.PeerID{1, 2} {
		if n := len(ts.h.messagesOf(id, proto.TypeWelcome)); n != 1 {
			t.Errorf("peer %d: %d Welcome(s), want 1", id, n)
		}
		if n := len(ts.h.messagesOf(id, proto.TypeSnapshot)); n != 2 {
			t.Errorf("peer %d: %d snapshots, want 2 then silence", id, n)
		}
		snaps, after := 0, 0
		for _, m := range ts.h.sent[id] {
			if snaps == 2 {
				after++
			}
			if proto.Type(m[0]) == proto.TypeSnapshot {
				snaps++
			}
		}
		if after != 0 {
			t.Errorf("peer %d: %d message(s) after its 2nd snapshot, want none (a silent server sends nothing)", id, after)
		}
	}
	if got := ts.faults; len(got) != 1 || got[0] != "snapshots_then_silent=2" {
		t.Errorf("faults listed %v", got)
	}
}

// snapshot_interval_ms: each peer gets a snapshot every interval of the
// tick clock (4.5 s: 2 in 5 s), whose tick numbers advance at 60 Hz; its
// PeerDelay still flows, so it is never silent.
func TestSnapshotIntervalFault(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Faults.SnapshotIntervalMs = 4500 })
	joinedPeer(t, ts, 1)
	for range 5 * TickHz {
		ts.step()
	}
	snaps := ts.h.messagesOf(1, proto.TypeSnapshot)
	if len(snaps) != 2 {
		t.Fatalf("%d snapshots in 5 s at one per 4.5 s, want 2", len(snaps))
	}
	var ticks []uint32
	for _, m := range snaps {
		h, _, err := proto.DecodeSnapshot(m)
		if err != nil {
			t.Fatal(err)
		}
		ticks = append(ticks, h.Tick)
	}
	// The first tick at or past 4.5 s: 270 periods of 16.666666 ms fall
	// 180 ns short of it, so the 271st.
	if d := ticks[1] - ticks[0]; d < 270 || d > 271 {
		t.Errorf("tick numbers advanced %d between snapshots 4.5 s apart, want 270–271 (60 Hz)", d)
	}
	if n := len(ts.h.messagesOf(1, proto.TypePeerDelay)); n < 9 {
		t.Errorf("%d PeerDelay in 5 s, want 2 Hz", n)
	}
}

// Without the faults every joined peer gets a snapshot every tick.
func TestNoDeliveryFaultEveryTick(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Network.CongestionControl = false })
	joinedPeer(t, ts, 1)
	for range TickHz {
		ts.step()
	}
	if n := len(ts.h.messagesOf(1, proto.TypeSnapshot)); n != TickHz {
		t.Fatalf("%d snapshots in %d ticks", n, TickHz)
	}
}

// [metrics] tick_stats_warmup_s: the tick statistics restart once, that
// long after the first join; the file says warmup_pending until then.
func TestTickStatsWarmup(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Metrics.TickStatsWarmupS = 1 })
	for range 30 { // before any join: no warm-up started
		ts.step()
	}
	if p := ts.warm.pending(); p == nil || !*p {
		t.Fatalf("warmup_pending %v before the first join, want true", p)
	}
	joinedPeer(t, ts, 1)
	for range TickHz - 1 {
		ts.step()
	}
	if ts.met.tick.Len() < TickHz {
		t.Fatalf("window restarted early: %d ticks held", ts.met.tick.Len())
	}
	for range 10 {
		ts.step()
	}
	if p := ts.warm.pending(); p == nil || *p {
		t.Fatalf("warmup_pending %v a second after the first join, want false", p)
	}
	if n := ts.met.tick.Len(); n > 10 {
		t.Fatalf("tick window holds %d ticks after the restart, want ≤ 10 (the ticks since)", n)
	}
	if _, span := ts.met.tickHz(); span > 10.0/TickHz {
		t.Fatalf("tick-Hz window spans %.3f s after the restart", span)
	}
	off := newTestServer(t, nil)
	if off.warm.pending() != nil {
		t.Error("warmup_pending must be absent without a warm-up")
	}
}

// The metrics file's tick_ms carries p50 (percentile budgets gate it).
func TestTickMsP50(t *testing.T) {
	ts := newTestServer(t, nil)
	for range 20 {
		ts.step()
	}
	st := ts.met.build(snapshotInputs{})
	if s := ts.met.tick.Summary(); st.TickMs.P50 != s.P50 || !(st.TickMs.P50 > 0) || st.TickMs.P50 > st.TickMs.P95 {
		t.Fatalf("tick_ms %+v, window p50 %v", st.TickMs, s.P50)
	}
}
