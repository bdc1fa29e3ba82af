package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// Bite tests for figures that once had a second reader or a second rule:
// each fails if the gate's reading goes back to disagreeing.

// TestBaselineWireReadsWirePeers: the baseline reads the wire rate through
// the gate table, so a server that kept no sample with peers connected
// (wire_peers 0, the rate a meaningless 0) is unevaluable against the
// baseline, and is never recorded as one.
func TestBaselineWireReadsWirePeers(t *testing.T) {
	p, tick := testProfile(), healthyTick()
	tick["wire_peers"] = 0
	tick["wire_out_kbs_per_client"] = 0.0
	r := healthyReport(tick)
	checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
	c, ok := find(checks, "baseline_wire_kbs")
	if !ok || c.Status != rundir.StatusUnevaluable || !strings.Contains(c.Detail, "wire_peers is 0") {
		t.Fatalf("baseline_wire_kbs with wire_peers 0: %+v", c)
	}
	if v := LegVerdict(checks, Facts{}); v != rundir.VerdictFailed {
		t.Fatalf("verdict %s, want failed", v)
	}
	// Even a run marked passed cannot record it: the update reads the
	// figure through the same gate-table reader.
	b := &baseline.Committed{Path: filepath.Join(t.TempDir(), "b.json")}
	run := &rundir.RunResult{Profile: p, Verdict: rundir.VerdictPassed, Legs: []rundir.LegResult{{Leg: p.Legs()[0], Report: r}}}
	if ok, err := baseline.Update(b, run, time.Now(), "abc", "host"); ok || err == nil || !strings.Contains(err.Error(), "wire_peers") {
		t.Fatalf("baseline.Update with wire_peers 0 = %v, %v: must refuse", ok, err)
	}
	if _, err := os.Stat(b.Path); err == nil {
		t.Fatal("a refused update wrote the baseline")
	}
}

// TestPartialLoadNeverSoftensAlwaysHard: on a merged report missing a
// shard, a declared gate's failure is inconclusive (measured on part of
// the load), but a transport mismatch still fails: that check is always
// hard.
func TestPartialLoadNeverSoftensAlwaysHard(t *testing.T) {
	p := testProfile()
	p.Shards = 4
	r := healthyReport(healthyTick())
	r.Shards = &report.ShardsInfo{Count: 4, Merged: []int{0, 1, 3}, Missing: []int{2}}
	r.ObservedServerTickHz.Min = 10 // fails tick_hz_min
	checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
	if c, _ := find(checks, "tick_hz_min"); c.Status != rundir.StatusInconclusive {
		t.Fatalf("tick_hz_min on partial load: %+v, want inconclusive", c)
	}
	if v := LegVerdict(checks, Facts{}); v != rundir.VerdictInconclusive {
		t.Fatalf("verdict %s, want inconclusive", v)
	}
	r.Transport = "quic"
	checks = Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
	if c, _ := find(checks, "transport"); c.Status != rundir.StatusFail {
		t.Fatalf("transport mismatch on partial load: %+v, want fail", c)
	}
	if v := LegVerdict(checks, Facts{}); v != rundir.VerdictFailed {
		t.Fatalf("verdict %s, want failed", v)
	}
}

// TestLoadHappenedOneRule: the gate's load check reads the rule the swarm's
// exit status and `passed` read, lost clients included.
func TestLoadHappenedOneRule(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*report.Report)
		want   string
	}{
		{"no snapshots", func(r *report.Report) { r.SnapshotsReceived = 0 }, "no client received a snapshot"},
		{"nobody admitted", func(r *report.Report) { r.ClientsConnected = 0 }, "no client was admitted"},
		{"clients lost", func(r *report.Report) { r.ClientsDisconnected = 2 }, "2 of 8 admitted clients lost mid-run"},
		{"no clients", func(r *report.Report) { r.Clients = 0 }, "the swarm ran no clients"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			r := healthyReport(healthyTick())
			tc.mutate(r)
			c, _ := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()}), "load")
			if c.Status != rundir.StatusFail || !strings.Contains(c.Detail, tc.want) {
				t.Fatalf("load check %+v, want fail with %q", c, tc.want)
			}
			if why := gatetable.LoadHappened(r); len(why) == 0 {
				t.Fatal("gatetable.LoadHappened says the load happened")
			}
		})
	}
}

// TestSchemaCheck: a report nobody validated is unevaluable, one that
// breaks the schema fails.
func TestSchemaCheck(t *testing.T) {
	p := testProfile()
	in := Input{Profile: p, Leg: p.Legs()[0], Report: healthyReport(healthyTick()), Baseline: testBaseline()}
	if c, _ := find(Evaluate(in), "report_schema"); c.Status != rundir.StatusUnevaluable {
		t.Fatalf("unvalidated report: %+v", c)
	}
	in.SchemaValidated, in.SchemaErr = true, errString("clients: conflicting values")
	if c, _ := find(Evaluate(in), "report_schema"); c.Status != rundir.StatusFail || c.Detail != "clients: conflicting values" {
		t.Fatalf("invalid report: %+v", c)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestTransportOwnProtocol: a swarm speaking a team's own protocol has no
// Welcome to say the transport; the swarm's side and the server's metrics
// decide, and a mismatch between them still fails.
func TestTransportOwnProtocol(t *testing.T) {
	p := testProfile()
	r := healthyReport(healthyTick())
	r.Protocol, r.ServerTransport = "udpgame/1", ""
	c, _ := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()}), "transport")
	if c.Status != rundir.StatusPass {
		t.Fatalf("own protocol, both sides enet: %+v", c)
	}
	r.Transport = "udp"
	c, _ = find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()}), "transport")
	if c.Status != rundir.StatusFail {
		t.Fatalf("own protocol, swarm spoke udp for an enet profile: %+v", c)
	}
	r.Transport, r.Protocol = "enet", report.ProtocolLoadV1
	c, _ = find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()}), "transport")
	if c.Status != rundir.StatusUnevaluable {
		t.Fatalf("load protocol v1 without a Welcome transport must stay unevaluable: %+v", c)
	}
}
