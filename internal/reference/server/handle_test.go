package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

func refusalOf(t *testing.T, ts *testServer, p transport.PeerID) proto.Reason {
	t.Helper()
	rs := ts.h.messagesOf(p, proto.TypeRefuse)
	if len(rs) != 1 {
		t.Fatalf("peer %d: %d Refuse messages", p, len(rs))
	}
	r, err := proto.DecodeRefuse(rs[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ts.h.disconnected[p]; !ok {
		t.Fatalf("peer %d refused but not disconnected", p)
	}
	return r.Reason
}

func TestAdmissionRefusesEachReason(t *testing.T) {
	cases := []struct {
		name   string
		cfg    func(*Config)
		script func(ts *testServer) // connects peers 1..n; the last one must be refused
		last   transport.PeerID
		want   proto.Reason
	}{
		{"protocol version", nil, func(ts *testServer) {
			ts.h.connect(1, "127.0.0.1", 0x53470002)
		}, 1, proto.ReasonProtocolVersion},
		{"rate limited", func(c *Config) { c.Security.ConnectRateLimitCount = 2; c.Security.ConnectRateLimitWindowS = 60 }, func(ts *testServer) {
			for p := transport.PeerID(1); p <= 3; p++ {
				ts.h.connect(p, "127.0.0.1", proto.ConnectData)
			}
		}, 3, proto.ReasonRateLimited},
		{"server full", func(c *Config) { c.Server.MaxPeers = 2; c.Security.MaxConnectionsPerIP = 10 }, func(ts *testServer) {
			for p := transport.PeerID(1); p <= 3; p++ {
				ts.h.connect(p, "127.0.0.1", proto.ConnectData)
			}
		}, 3, proto.ReasonServerFull},
		{"per-IP cap", func(c *Config) { c.Security.MaxConnectionsPerIP = 2 }, func(ts *testServer) {
			ts.h.connect(1, "127.0.0.1", proto.ConnectData)
			ts.h.connect(2, "127.0.0.2", proto.ConnectData)
			ts.h.connect(3, "127.0.0.1", proto.ConnectData)
			ts.h.connect(4, "127.0.0.1", proto.ConnectData)
		}, 4, proto.ReasonPerIPCap},
		{"bad join: undecodable", nil, func(ts *testServer) {
			ts.h.connect(1, "127.0.0.1", proto.ConnectData)
			ts.h.recv(1, []byte{byte(proto.TypeJoin), 1, 2})
		}, 1, proto.ReasonBadJoin},
		{"fault: every 2nd join refused", func(c *Config) { c.Faults.RefuseEveryNthJoin = 2 }, func(ts *testServer) {
			ts.h.connect(1, "127.0.0.1", proto.ConnectData)
			ts.h.connect(2, "127.0.0.1", proto.ConnectData)
			ts.h.recv(1, joinMsg(t, "builtin:sensor-fighter"))
			ts.h.recv(2, joinMsg(t, "builtin:sensor-fighter"))
		}, 2, proto.ReasonServerFull},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := newTestServer(t, c.cfg)
			c.script(ts)
			ts.step()
			if got := refusalOf(t, ts, c.last); got != c.want {
				t.Fatalf("refused with %v, want %v", got, c.want)
			}
			for p := transport.PeerID(1); p < c.last; p++ {
				if len(ts.h.messagesOf(p, proto.TypeRefuse)) != 0 {
					t.Fatalf("peer %d refused too", p)
				}
			}
			if n := ts.met.refused[c.want.String()]; n != 1 {
				t.Fatalf("refused[%s] = %d", c.want, n)
			}
			ts.step() // the disconnect event arrives; the slot is released
			if _, ok := ts.peers[c.last]; ok {
				t.Fatal("refused peer still tracked after its disconnect")
			}
		})
	}
}

// A refused or departed peer gives its admission slot back.
func TestAdmissionSlotsReleased(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Server.MaxPeers = 1 })
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "x"))
	ts.step()
	ts.h.connect(2, "127.0.0.1", proto.ConnectData)
	ts.step()
	if refusalOf(t, ts, 2) != proto.ReasonServerFull {
		t.Fatal("second peer not refused as full")
	}
	ts.h.Disconnect(1, 0) // peer 1 leaves
	ts.step()
	ts.h.connect(3, "127.0.0.1", proto.ConnectData)
	ts.step()
	if len(ts.h.messagesOf(3, proto.TypeRefuse)) != 0 || ts.admit.admitted != 1 {
		t.Fatalf("slot not released: admitted %d", ts.admit.admitted)
	}
	if ts.sim.World.Len() != 0 {
		t.Fatalf("departed peer's entity remains: %d entities", ts.sim.World.Len())
	}
}

// TestJoinEntityType: the requested entity_type picks what the peer flies.
// An empty one means the server's default entity (the debug entity), as a
// server treats an absent type: it is admitted, never refused as a bad Join.
func TestJoinEntityType(t *testing.T) {
	cases := []struct {
		requested string
		want      uint8
	}{
		{"", TypeDebug},
		{DefaultEntityType, TypeDebug},
		{"builtin:sensor-fighter", TypeSensorFighter},
		{"builtin:bomber", TypeBomber},
		{"f16", TypeAircraft},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.requested), func(t *testing.T) {
			ts := newTestServer(t, nil)
			ts.h.connect(1, "127.0.0.1", proto.ConnectData)
			ts.h.recv(1, joinMsg(t, c.requested))
			ts.step()
			if rs := ts.h.messagesOf(1, proto.TypeRefuse); len(rs) != 0 {
				r, _ := proto.DecodeRefuse(rs[0])
				t.Fatalf("refused (%v), want admitted", r.Reason)
			}
			if n := len(ts.h.messagesOf(1, proto.TypeWelcome)); n != 1 {
				t.Fatalf("%d Welcome, want 1", n)
			}
			p, ok := ts.peers[1]
			if !ok || p.state != peerJoined {
				t.Fatal("peer not joined")
			}
			if got := ts.sim.World.At(p.slot).Type; got != c.want {
				t.Errorf("spawned type %d, want %d", got, c.want)
			}
			if ts.met.refused[proto.ReasonBadJoin.String()] != 0 {
				t.Errorf("refused[bad_join] = %d", ts.met.refused[proto.ReasonBadJoin.String()])
			}
		})
	}
}

func TestJoinWelcomeSnapshotsAndInput(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.World.TestSpawnAICount = 30; c.World.TestSpawnSpreadKm = 5 })
	ts.h.connect(7, "127.0.0.1", proto.ConnectData)
	ts.h.recv(7, joinMsg(t, "builtin:sensor-fighter"))
	ts.step()
	ws := ts.h.messagesOf(7, proto.TypeWelcome)
	if len(ws) != 1 {
		t.Fatalf("%d Welcome", len(ws))
	}
	w, err := proto.DecodeWelcome(ws[0])
	if err != nil {
		t.Fatal(err)
	}
	if w.Transport != "fake" || w.BodyFormat != snapshot.BodyFormat || w.TickHz != TickHz || w.EntityID == 0 {
		t.Fatalf("welcome %+v", w)
	}
	for i := 0; i < 40; i++ {
		ts.h.recv(7, inputMsg(uint32(i)))
		ts.step()
	}
	snaps := ts.h.messagesOf(7, proto.TypeSnapshot)
	if len(snaps) != 41 {
		t.Fatalf("%d snapshots in 41 ticks", len(snaps))
	}
	dec, _ := snapshot.NewDecoder()
	defer dec.Close()
	for _, m := range snaps {
		h, body, err := proto.DecodeSnapshot(m)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dec.Decode(h.Flags, body); err != nil {
			t.Fatal(err)
		}
		own := dec.Records()[0]
		if own.ID != w.EntityID || own.Flags&snapshot.FlagOwn == 0 || own.Type != TypeSensorFighter {
			t.Fatalf("own record %+v", own)
		}
	}
	if got := ts.sim.World.At(ts.peers[7].slot).Ctl.Throttle; got != float64(float32(0.8)) {
		t.Fatalf("input not applied: throttle %v", got)
	}
	if n := len(ts.h.messagesOf(7, proto.TypePeerDelay)); n != 2 {
		t.Fatalf("%d PeerDelay in 41 ticks at 2 Hz", n)
	}
	if ts.met.malformed != 0 {
		t.Fatalf("malformed %d", ts.met.malformed)
	}
}

func TestMalformedCountedAndGarbageKicked(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, inputMsg(1)) // Input before Join
	ts.step()
	if ts.met.malformed != 1 || len(ts.h.disconnected) != 0 {
		t.Fatalf("malformed %d disconnected %v", ts.met.malformed, ts.h.disconnected)
	}
	ts.h.recv(1, joinMsg(t, "x"))
	ts.step()
	bad := [][]byte{
		{},                        // empty
		{0x7f, 1, 2},              // unknown type
		{byte(proto.TypeInput)},   // short
		append(inputMsg(2), 0),    // trailing byte
		{byte(proto.TypeWelcome)}, // server-to-client type
		joinMsg(t, "again"),       // second Join
		nil,                       // replaced by a NaN throttle below
	}
	nan := proto.AppendInput(nil, &proto.Input{})
	nan[5], nan[6], nan[7], nan[8] = 0, 0, 0xc0, 0x7f // throttle = NaN
	bad[len(bad)-1] = nan
	for _, m := range bad {
		ts.h.recv(1, m)
	}
	ts.step()
	if ts.met.malformed != int64(1+len(bad)) {
		t.Fatalf("malformed %d, want %d", ts.met.malformed, 1+len(bad))
	}
	if _, ok := ts.h.disconnected[1]; ok {
		t.Fatal("kicked after a few bad messages")
	}
	for i := 0; i < garbageKick; i++ {
		ts.h.recv(1, []byte{0xee})
	}
	ts.step()
	ns := ts.h.messagesOf(1, proto.TypeNotice)
	if len(ns) != 1 {
		t.Fatalf("%d notices", len(ns))
	}
	if n, _ := proto.DecodeNotice(ns[0]); n.Kind != proto.NoticeKicked {
		t.Fatalf("notice %+v", n)
	}
	if _, ok := ts.h.disconnected[1]; !ok || ts.met.kicked != 1 {
		t.Fatal("garbage sender not disconnected")
	}
}

func TestIdleAndJoinTimeouts(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Server.IdleTimeoutS = 2; c.Server.JoinTimeoutS = 1 })
	ts.h.connect(1, "127.0.0.1", proto.ConnectData) // never joins
	ts.h.connect(2, "127.0.0.1", proto.ConnectData)
	ts.h.recv(2, joinMsg(t, "x"))
	ts.h.connect(3, "127.0.0.1", proto.ConnectData)
	ts.h.recv(3, joinMsg(t, "x"))
	ts.step()
	for i := 0; i < 3*TickHz; i++ {
		ts.h.recv(3, inputMsg(uint32(i))) // 3 keeps talking
		ts.step()
	}
	if _, ok := ts.h.disconnected[1]; !ok {
		t.Fatal("peer that never joined not timed out")
	}
	if _, ok := ts.h.disconnected[2]; !ok {
		t.Fatal("silent joined peer not timed out")
	}
	if _, ok := ts.h.disconnected[3]; ok {
		t.Fatal("active peer timed out")
	}
	if ts.met.idle != 2 {
		t.Fatalf("idle timeouts %d", ts.met.idle)
	}
}

func TestShutdownNoticesEveryPeer(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, func(c *Config) { c.Metrics.TickJSONPath = filepath.Join(dir, "m.json") })
	for p := transport.PeerID(1); p <= 3; p++ {
		ts.h.connect(p, "127.0.0.1", proto.ConnectData)
		ts.h.recv(p, joinMsg(t, "x"))
	}
	ts.step()
	if err := ts.shutdown(); err != nil {
		t.Fatal(err)
	}
	for p := transport.PeerID(1); p <= 3; p++ {
		ns := ts.h.messagesOf(p, proto.TypeNotice)
		if len(ns) != 1 {
			t.Fatalf("peer %d: %d notices", p, len(ns))
		}
		if n, _ := proto.DecodeNotice(ns[0]); n.Kind != proto.NoticeShutdown {
			t.Fatalf("peer %d notice %+v", p, n)
		}
	}
	st, _, err := report.ReadServerTick(filepath.Join(dir, "m.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.TicksTotal != 1 || st.Transport != "fake" || len(ts.peers) != 0 {
		t.Fatalf("final metrics %+v, peers left %d", st, len(ts.peers))
	}
}

func TestMetricsFileFields(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.json")
	ts := newTestServer(t, func(c *Config) {
		c.Metrics.TickJSONPath = path
		c.World.TestSpawnAICount = 10
		c.Faults.ReportTransport = "quic"
		c.Faults.OmitMetrics = []string{"tick_ms", "rss_kb"}
	})
	if err := ts.WriteMetrics(); err != nil {
		t.Fatal(err)
	}
	_, raw := readRaw(t, path)
	for _, k := range wireFields {
		if _, ok := raw[k]; ok {
			t.Fatalf("%s written before any wire sample", k)
		}
	}
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "x"))
	for i := 0; i < 61; i++ {
		ts.step()
	}
	if err := ts.WriteMetrics(); err != nil {
		t.Fatal(err)
	}
	st, raw := readRaw(t, path)
	for _, k := range []string{"tick_ms", "rss_kb"} {
		if _, ok := raw[k]; ok {
			t.Fatalf("omitted field %s present", k)
		}
	}
	want := []string{"report_transport=quic", "omit_metrics=tick_ms,rss_kb"}
	if len(st.Faults) != 2 || st.Faults[0] != want[0] || st.Faults[1] != want[1] {
		t.Fatalf("faults %v", st.Faults)
	}
	if st.Transport != "quic" || st.Peers != 1 || st.Entities != 11 || st.TicksTotal != 61 || st.TicksSampled != 61 {
		t.Fatalf("metrics %+v", st)
	}
	if st.WirePeers != 1 || st.WireOutKBs != 64 || st.WireOutKBsPerClient != 64 || st.WireOutPPS != 120 {
		t.Fatalf("wire %+v", st)
	}
	if st.CongestionMinSendHz != 60 || st.LoadFactor != 1 || st.InterestScale != 1 || st.SchemaVersion != 6 {
		t.Fatalf("fixed fields %+v", st)
	}
	if st.SimWorkerThreads != 1 || st.SnapshotBudgetBytes != 1200 || !st.CompressSnapshots {
		t.Fatalf("settings %+v", st)
	}
	if _, ok := raw["refused"]; !ok {
		t.Fatal("refused map missing")
	}
	if st.SerializeBuildMs == nil || st.SerializeSendMs == nil || st.SerializeBuildMs.Max <= 0 {
		t.Fatalf("serialize split missing: %+v %+v", st.SerializeBuildMs, st.SerializeSendMs)
	}
	if st.SerializeBuildMs.Max > st.SerializeMs.Max+1e-9 || st.SerializeSendMs.Max > st.SerializeMs.Max+1e-9 {
		t.Fatalf("a part of serialize exceeds the whole: build %+v send %+v serialize %+v", *st.SerializeBuildMs, *st.SerializeSendMs, st.SerializeMs)
	}
}

// The wire sample kept is the one at the highest peer count: a drained
// server must not report its idle rate.
func TestWireSampleKeptAtPeakPeers(t *testing.T) {
	ts := newTestServer(t, nil)
	for p := transport.PeerID(1); p <= 4; p++ {
		ts.h.connect(p, "127.0.0.1", proto.ConnectData)
		ts.h.recv(p, joinMsg(t, "x"))
	}
	ts.step()
	ts.h.wire.BytesOutPerSec = 400000
	for i := 0; i < 60; i++ {
		ts.step()
	}
	for p := transport.PeerID(1); p <= 3; p++ {
		ts.h.Disconnect(p, 0)
	}
	ts.h.wire.BytesOutPerSec = 5000
	for i := 0; i < 120; i++ {
		ts.step()
	}
	st := ts.met.build(snapshotInputs{})
	if st.WirePeers != 4 || st.WireOutKBs != 400 || st.WireOutKBsPerClient != 100 {
		t.Fatalf("kept wire sample %v KB/s at %d peers (%.1f per client)", st.WireOutKBs, st.WirePeers, st.WireOutKBsPerClient)
	}
}

func readRaw(t *testing.T, path string) (*report.ServerTick, map[string]json.RawMessage) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st report.ServerTick
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return &st, raw
}

// The inflate fault pads every body with incompressible bytes, so the
// snapshot grows by about that much even with compression on.
func TestInflateFaultGrowsSnapshots(t *testing.T) {
	size := func(inflate int) int {
		ts := newTestServer(t, func(c *Config) { c.Faults.InflateSnapshotBytes = inflate })
		ts.h.connect(1, "127.0.0.1", proto.ConnectData)
		ts.h.recv(1, joinMsg(t, "x"))
		ts.step()
		return len(ts.h.messagesOf(1, proto.TypeSnapshot)[0])
	}
	plain, fat := size(0), size(2000)
	if fat-plain < 1900 {
		t.Fatalf("inflated snapshot %d bytes vs %d plain", fat, plain)
	}
}

// only_on_transport: the faults apply to a server speaking that transport
// and to no other, which is off entirely (its metrics list no fault).
func TestFaultsScopedToTransport(t *testing.T) {
	size := func(speaks, scope string, inflate int) (int, []string) {
		ts := newTestServer(t, func(c *Config) {
			c.Server.Transport, c.Faults.InflateSnapshotBytes, c.Faults.OnlyOnTransport = speaks, inflate, scope
		})
		ts.h.connect(1, "127.0.0.1", proto.ConnectData)
		ts.h.recv(1, joinMsg(t, "x"))
		ts.step()
		return len(ts.h.messagesOf(1, proto.TypeSnapshot)[0]), ts.faults
	}
	plain, _ := size("enet", "", 0)
	on, onFaults := size("quic", "quic", 2000)
	off, offFaults := size("enet", "quic", 2000)
	if on-plain < 1900 || off-plain > 100 || len(onFaults) != 1 || len(offFaults) != 0 {
		t.Fatalf("snapshot bytes: plain ≈ %d, scoped to its transport %d (faults %v), to another %d (faults %v)", plain, on, onFaults, off, offFaults)
	}
}

func TestExtraTickFaultCostsTime(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Faults.ExtraTickMs = 5 })
	start := time.Now()
	ts.step()
	if el := time.Since(start); el < 5*time.Millisecond {
		t.Fatalf("tick took %v with 5 ms of busy work", el)
	}
	if ts.met.slowTicks != 0 {
		// 5 ms is under the 12.5 ms threshold; a slow tick here would
		// mean the machine stalled, which is allowed, so only check the
		// phase attribution below.
		t.Logf("slow ticks %d (machine stall)", ts.met.slowTicks)
	}
	if s := ts.met.phase[PhaseOther].Summary(); s.Max < 5 {
		t.Fatalf("busy work not attributed to other_ms: %+v", s)
	}
}

// The slow_integrate_ms fault costs CPU inside the integrate phase (the
// flight model), and the phase's cumulative histogram, the file's
// cumulative.phase_ms.integrate_ms that a team's own figure reads over the
// hold, has it; the other phases' do not.
func TestSlowIntegrateFaultCostsThePhase(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Faults.SlowIntegrateMs = 4 })
	ts.step()
	if s := ts.met.phase[PhaseIntegrate].Summary(); s.Max < 4 {
		t.Fatalf("busy work not attributed to integrate_ms: %+v", s)
	}
	cum := ts.met.cumulative(snapshotInputs{gov: ts.gov})
	h := cum.PhaseMs["integrate_ms"]
	if h == nil || h.Count != 1 {
		t.Fatalf("cumulative.phase_ms.integrate_ms %+v, want the one tick", h)
	}
	if lo, _, _, ok := h.MaxBound(); !ok || lo < 3.9 {
		t.Fatalf("integrate_ms histogram's longest tick from %v ms, want the 4 ms spin", lo)
	}
	if h := cum.PhaseMs["ai_ms"]; h == nil || h.Count != 1 {
		t.Fatalf("cumulative.phase_ms.ai_ms %+v: every phase is kept", h)
	}
	if !slices.Contains(ts.cfg.Faults.Active(), "slow_integrate_ms=4") {
		t.Fatalf("faults %v do not list slow_integrate_ms", ts.cfg.Faults.Active())
	}
}

// delay_mode "sleep": each delay fault still makes its tick (and its
// phase) as long, but the calling thread sleeps through it instead of
// burning the CPU, which "spin" (the default) does.
func TestDelayModeSleepFreesTheCore(t *testing.T) {
	const delay = 40 * time.Millisecond
	for _, tc := range []struct {
		name  string
		set   func(*FaultConfig)
		phase Phase
	}{
		{"extra_tick_ms", func(f *FaultConfig) { f.ExtraTickMs = 40 }, PhaseOther},
		{"slow_integrate_ms", func(f *FaultConfig) { f.SlowIntegrateMs = 40 }, PhaseIntegrate},
		{"slow_stretch", func(f *FaultConfig) { f.SlowStretch = SlowStretch{ForS: 60, ExtraMs: 40} }, PhaseOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, func(c *Config) { tc.set(&c.Faults); c.Faults.DelayMode = DelaySleep })
			wall, cpu := threadCPU(t, ts.step)
			if wall < delay {
				t.Fatalf("tick took %v, want at least the %v delay", wall, delay)
			}
			// The tick's own work on an empty world is well under a
			// millisecond; a spun delay would cost about 40 ms here.
			if cpu > delay/2 {
				t.Fatalf("the sleeping delay cost %v of CPU in a %v tick: it spun", cpu, wall)
			}
			if s := ts.met.phase[tc.phase].Summary(); s.Max < 40 {
				t.Fatalf("delay not attributed to %v: %+v", tc.phase, s)
			}
			if !slices.Contains(ts.cfg.Faults.Active(), "delay_mode=sleep") {
				t.Fatalf("faults %v do not list delay_mode", ts.cfg.Faults.Active())
			}
		})
	}
	// Set alone, with no delay fault, it is no fault at all.
	if f := (FaultConfig{DelayMode: DelaySleep}); len(f.Active()) != 0 {
		t.Fatalf("delay_mode alone listed as faults %v", f.Active())
	}
}

// threadCPU runs fn on one locked OS thread and returns its wall time and
// the CPU time that thread spent in it.
func threadCPU(t *testing.T, fn func()) (wall, cpu time.Duration) {
	t.Helper()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var before, after syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &before); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	fn()
	wall = time.Since(start)
	if err := syscall.Getrusage(rusageThread, &after); err != nil {
		t.Fatal(err)
	}
	used := func(r *syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return wall, used(&after) - used(&before)
}

// rusageThread is Linux's RUSAGE_THREAD (the syscall package names only
// RUSAGE_SELF and RUSAGE_CHILDREN).
const rusageThread = 1

// The exit_after_s fault stops the server dead once its time since the
// bind has come, and not before: Run returns a *CrashFault (no shutdown).
func TestExitAfterFaultCrashes(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Faults.ExitAfterS = 5 })
	if err := ts.crashDue(ts.started.Add(4900 * time.Millisecond)); err != nil {
		t.Fatalf("crashed at 4.9 s of 5: %v", err)
	}
	err := ts.crashDue(ts.started.Add(5 * time.Second))
	var cf *CrashFault
	if !errors.As(err, &cf) || cf.After != 5*time.Second {
		t.Fatalf("at 5 s: %v, want a *CrashFault after 5s", err)
	}
	if !slices.Contains(ts.cfg.Faults.Active(), "exit_after_s=5") {
		t.Fatalf("faults %v do not list exit_after_s", ts.cfg.Faults.Active())
	}
	off := newTestServer(t, nil)
	if err := off.crashDue(off.started.Add(24 * time.Hour)); err != nil {
		t.Fatalf("fault off: %v", err)
	}
}

// Run itself returns the crash, promptly, without waiting for ctx.
func TestExitAfterFaultEndsRun(t *testing.T) {
	cfg := DefaultConfig()
	cfg.World.SimWorkerThreads = 1
	cfg.Faults.ExitAfterS = 0.2
	s, err := New(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s.attach(newFakeHost())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = s.Run(ctx)
	var cf *CrashFault
	if !errors.As(err, &cf) || ctx.Err() != nil {
		t.Fatalf("Run = %v (ctx %v), want a *CrashFault before the deadline", err, ctx.Err())
	}
}

func TestRSSFaultsAllocateTouchedMemory(t *testing.T) {
	l := newLeaker(&FaultConfig{RSSLeakKBPerMin: 60 * 1024, RSSStepKB: 256, RSSStepAtS: 1})
	held := func() int {
		n := 0
		for _, b := range l.held {
			n += len(b)
		}
		return n
	}
	for i := 0; i < TickHz; i++ { // one simulated second: 1 MiB/s leak
		l.tick(time.Duration(i) * time.Second / TickHz)
	}
	if h := held(); h < 1000*1024 || h > 1024*1024 {
		t.Fatalf("leaked %d bytes in a second at 1 MiB/s", h)
	}
	before := held()
	l.tick(time.Second)
	if step := held() - before; step < 256*1024 || step > 256*1024+2*20*1024 {
		t.Fatalf("step allocated %d bytes", step)
	}
	// A starved server ticking at 10 Hz still leaks at the named rate: the
	// leak follows wall time, not ticks.
	before = held()
	for i := 1; i <= 10; i++ {
		l.tick(time.Second + time.Duration(i)*100*time.Millisecond)
	}
	if h := held() - before; h < 1000*1024 || h > 1024*1024+4096 {
		t.Fatalf("leaked %d bytes in a second of 10 Hz ticks at 1 MiB/s", h)
	}
}

func TestConnectDuringShutdownTurnedAway(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "x"))
	ts.step()
	// A peer that connects while shutdown drains is told and dropped.
	ts.h.connect(2, "127.0.0.1", proto.ConnectData)
	if err := ts.shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, p := range []transport.PeerID{1, 2} {
		if _, ok := ts.h.disconnected[p]; !ok || len(ts.h.messagesOf(p, proto.TypeNotice)) != 1 {
			t.Fatalf("peer %d not noticed and disconnected", p)
		}
	}
	if ts.admit.admitted != 0 || len(ts.peers) != 0 {
		t.Fatalf("admitted %d, peers %d after shutdown", ts.admit.admitted, len(ts.peers))
	}
}

func TestSlowTickLineAndFaultLog(t *testing.T) {
	var logBuf bytes.Buffer
	cfg := DefaultConfig()
	cfg.World.SimWorkerThreads = 1
	cfg.World.TestSpawnAICount = 3
	cfg.Metrics.SlowTickMs = 0.000001 // every tick is slow
	cfg.Faults.ExtraTickMs = 0.5
	s, err := New(cfg, &logBuf)
	if err != nil {
		t.Fatal(err)
	}
	defer s.sim.Close()
	h := newFakeHost()
	s.attach(h)
	s.pacer = NewPacer(time.Now(), time.Second/TickHz)
	h.connect(1, "127.0.0.1", proto.ConnectData)
	h.recv(1, joinMsg(t, "x"))
	for i := 0; i < 5; i++ {
		s.runTick(time.Now(), 3*time.Millisecond)
	}
	out := logBuf.String()
	if !strings.Contains(out, "FAULT ENABLED: extra_tick_ms=0.5") {
		t.Fatalf("fault not logged at startup:\n%s", out)
	}
	lines := strings.Count(out, "SLOW TICK:")
	if lines != 1 || s.met.slowTicks != 5 {
		t.Fatalf("%d SLOW TICK lines for %d slow ticks (want 1 line a second):\n%s", lines, s.met.slowTicks, out)
	}
	for _, want := range []string{"SLOW TICK: tick 0 work ", "late 3.00ms", "gc ", "maintenance ", "sensing ", "integrate ",
		"ai ", "collision ", "serialize ", "(build ", " send ", "other ", "1 peer(s), 4 entities (3 AI)",
		"% of the work", "(run: ", "pause max ", "send queue max 0", "slow sends 0 (run: 0)"} {
		if !strings.Contains(out, want) {
			t.Fatalf("SLOW TICK line lacks %q:\n%s", want, out)
		}
	}
}

func TestOlderInputIgnored(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "x"))
	ts.step()
	in := func(seq uint32, thr float32) []byte {
		return proto.AppendInput(nil, &proto.Input{Seq: seq, Throttle: thr})
	}
	throttle := func() float64 { return ts.sim.World.At(ts.peers[1].slot).Ctl.Throttle }
	ts.h.recv(1, in(0xFFFFFFF0, 0.25))
	ts.h.recv(1, in(5, 0.5)) // newer across the wrap
	ts.h.recv(1, in(3, 1))   // older: reordered, dropped
	ts.step()
	if throttle() != 0.5 || ts.met.malformed != 0 {
		t.Fatalf("throttle %v malformed %d", throttle(), ts.met.malformed)
	}
}

// Every interval at the peak peer count is averaged, and an interval that
// straddles the last join is not mixed in once stable intervals exist: the
// figure describes the loaded server over the run, not one half-second.
func TestWireAveragedOverPeakIntervals(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "x"))
	for i := 0; i < 31; i++ {
		ts.step()
	}
	ts.h.connect(2, "127.0.0.1", proto.ConnectData)
	ts.h.recv(2, joinMsg(t, "x"))
	ts.h.wire.BytesOutPerSec = 999000 // the straddling interval: must not count
	for i := 0; i < 30; i++ {
		ts.step()
	}
	ts.h.wire.BytesOutPerSec = 400000
	for i := 0; i < 60; i++ {
		ts.step()
	}
	ts.h.wire.BytesOutPerSec = 200000
	for i := 0; i < 60; i++ {
		ts.step()
	}
	st := ts.met.build(snapshotInputs{})
	if st.WirePeers != 2 || st.WireOutKBs != 300 || st.WireOutKBsPerClient != 150 {
		t.Fatalf("wire %v KB/s at %d peers (%.1f per client), want 300 at 2 (150)", st.WireOutKBs, st.WirePeers, st.WireOutKBsPerClient)
	}
}

// max_connections_per_ip = 0 means no per-IP cap (the seed's load-test
// setting: every bot shares 127.0.0.1), not "zero connections".
func TestPerIPCapZeroMeansNoCap(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Security.MaxConnectionsPerIP = 0; c.Security.ConnectRateLimitCount = 100 })
	for p := transport.PeerID(1); p <= 20; p++ {
		ts.h.connect(p, "127.0.0.1", proto.ConnectData)
	}
	ts.step()
	for p := transport.PeerID(1); p <= 20; p++ {
		if n := len(ts.h.messagesOf(p, proto.TypeRefuse)); n != 0 {
			t.Fatalf("peer %d refused with max_connections_per_ip = 0", p)
		}
	}
}

// The ai_decay fault removes AI entities at its rate and never a player's
// entity: 3600/min is one a tick, so 30 ticks take 30 of 40 loiterers.
func TestAIDecayFaultShrinksTheWorld(t *testing.T) {
	ts := newTestServer(t, func(c *Config) {
		c.World.TestSpawnAICount = 40
		c.Faults.AIDecayPerMin = 3600
	})
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "builtin:sensor-fighter"))
	for i := 0; i < 30; i++ {
		ts.step()
	}
	ai, players := 0, 0
	for _, s := range ts.sim.World.Live() {
		if ts.sim.World.At(s).AI {
			ai++
		} else {
			players++
		}
	}
	if ai != 10 || players != 1 {
		t.Fatalf("after 30 ticks at one AI a tick: %d AI, %d players; want 10 and 1", ai, players)
	}
}

// The fatten fault pays its padding out of the snapshot budget: the message
// stays within the budget while fewer entities fit — bytes per entity rise
// with the payload unchanged, as with a fatter record encoding.
func TestFattenFaultCostsEntitiesNotBytes(t *testing.T) {
	measure := func(fatten int) (size, entities int) {
		ts := newTestServer(t, func(c *Config) {
			c.World.TestSpawnAICount = 200
			c.World.TestSpawnSpreadKm = 4
			c.Faults.FattenRecordsBytes = fatten
		})
		ts.h.connect(1, "127.0.0.1", proto.ConnectData)
		ts.h.recv(1, joinMsg(t, "x"))
		ts.step()
		ts.step()
		snaps := ts.h.messagesOf(1, proto.TypeSnapshot)
		msg := snaps[len(snaps)-1]
		h, body, err := proto.DecodeSnapshot(msg)
		if err != nil {
			t.Fatal(err)
		}
		dec, _ := snapshot.NewDecoder()
		n, err := dec.Decode(h.Flags, body)
		if err != nil {
			t.Fatalf("fattened snapshot does not decode: %v", err)
		}
		return len(msg), n
	}
	plainSize, plainN := measure(0)
	fatSize, fatN := measure(240)
	if fatSize > 1200 || plainSize > 1200 {
		t.Fatalf("snapshot over the 1200-byte budget: plain %d, fattened %d", plainSize, fatSize)
	}
	if plainN-fatN != 10 {
		t.Fatalf("entities per snapshot %d plain, %d with 240 B of the budget padded; want 10 fewer", plainN, fatN)
	}
}
