package server

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/load/trace"
	"github.com/scalegate/scalegate/internal/reference/admin"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// reload applies the live key, reports the others as needing a restart, and
// answers an error (changing nothing) when the file does not load or the
// server was started without one.
func TestAdminReload(t *testing.T) {
	ts := newTestServer(t, nil)
	if got := ts.reloadConfig(); !strings.Contains(got[0], "started without --config") {
		t.Fatalf("reload without a file: %q", got)
	}
	ts.reloadPath = "s.toml"
	next := ts.cfg
	next.World.OverrunGovernor = true
	next.World.TestSpawnAICount = 9
	next.Faults.OmitMetrics = []string{"tick_ms"}
	got := ts.applyReload(&next)
	want := []string{
		"reloaded s.toml: 3 key(s) changed",
		"not applied (needs a restart): world.test_spawn_ai_count: 0 -> 9",
		"applied world.overrun_governor: false -> true",
		"not applied (needs a restart): faults.omit_metrics: [] -> [tick_ms]",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("reload answered\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !ts.gov.enabled || ts.cfg.World.TestSpawnAICount != 0 {
		t.Fatalf("governor %v, ai count %d: only the live key may change", ts.gov.enabled, ts.cfg.World.TestSpawnAICount)
	}
	// The congestion switch: off puts a backed-off peer back on every tick.
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "x"))
	ts.step()
	if !ts.cc.on || len(ts.cc.peers) != 1 {
		t.Fatalf("controller on %v with %d peer(s); want on with 1", ts.cc.on, len(ts.cc.peers))
	}
	for _, st := range ts.cc.peers {
		st.rate = CongestionFloorHz
	}
	off := ts.cfg
	off.Network.CongestionControl = false
	off.World.OverrunGovernor = false // nothing else may withhold a snapshot
	got = ts.applyReload(&off)
	if len(got) != 3 || got[1] != "applied world.overrun_governor: true -> false" || got[2] != "applied network.congestion_control: true -> false" {
		t.Fatalf("congestion and governor off: %q", got)
	}
	sent := len(ts.h.messagesOf(1, proto.TypeSnapshot))
	for range 6 {
		ts.step()
	}
	if n := len(ts.h.messagesOf(1, proto.TypeSnapshot)) - sent; ts.cc.on || n != 6 {
		t.Fatalf("controller on %v, %d snapshots in 6 ticks after switching it off; want off and 6", ts.cc.on, n)
	}
	ts.SetReload("s.toml", func(context.Context) (Config, error) {
		return Config{}, &ConfigError{File: "s.toml", Key: "world.x", Msg: "unknown key"}
	})
	if got := ts.reloadConfig(); !strings.HasPrefix(got[0], admin.ErrorPrefix) || !strings.Contains(got[0], "nothing changed") {
		t.Fatalf("reload of a bad file: %q", got)
	}
}

// adminOnTestLoop runs one admin command against a hand-ticked server: the
// command waits for the loop, and the test goroutine is the loop, draining
// the queue until the answer arrives.
func adminOnTestLoop(t *testing.T, ts *testServer, line string) []string {
	t.Helper()
	c, err := admin.Parse(line)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan []string, 1)
	go func() { done <- ts.handleAdmin(c) }()
	var got []string
	livetest.EventuallyPumping(t, livetest.Wait, func() int { ts.drainAdmin(); return 0 }, func() (bool, string) {
		select {
		case got = <-done:
			return true, ""
		default:
			return false, line + ": no answer from the loop"
		}
	})
	return got
}

// trace-start records the Inputs accepted from then on, trace-stop flushes
// and closes the files and reports the totals; starting twice and stopping
// when idle are refused.
func TestAdminTraceStartStop(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, func(c *Config) { c.Admin.Socket = filepath.Join(dir, "admin.sock") })
	if err := ts.listenAdmin(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.closeAdmin)
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "x"))
	ts.step()
	ts.h.recv(1, inputMsg(1))
	ts.step() // before trace-start: not recorded
	if got := adminOnTestLoop(t, ts, "trace-stop"); !strings.Contains(got[0], "not recording") {
		t.Fatalf("trace-stop while idle: %q", got)
	}
	tdir := filepath.Join(dir, "my traces") // the rest of the line: spaces allowed
	if got := adminOnTestLoop(t, ts, "trace-start "+tdir); len(got) != 1 || !strings.HasPrefix(got[0], "recording every peer's accepted Input to "+tdir) {
		t.Fatalf("trace-start: %q", got)
	}
	if got := adminOnTestLoop(t, ts, "trace-start "+dir); !strings.Contains(got[0], "already recording to "+tdir) {
		t.Fatalf("second trace-start: %q", got)
	}
	for seq := uint32(2); seq <= 4; seq++ {
		ts.h.recv(1, inputMsg(seq))
		ts.step()
	}
	if got := adminOnTestLoop(t, ts, "trace-stop"); len(got) != 1 || got[0] != "stopped: 3 record(s) written in 1 file(s) under "+tdir+"; 0 record(s) lost, 0 error(s)" {
		t.Fatalf("trace-stop: %q", got)
	}
	ts.h.recv(1, inputMsg(5))
	ts.step() // after trace-stop: not recorded
	tr, err := trace.ReadFile(context.Background(), filepath.Join(tdir, trace.FileName(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr.Records) != 3 || tr.Records[0].ServerTick != 2 || tr.Records[2].ServerTick != 4 {
		t.Fatalf("recorded %d records %+v; want ticks 2..4", len(tr.Records), tr.Records)
	}
}
