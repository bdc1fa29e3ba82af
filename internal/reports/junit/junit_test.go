package junit

import (
	"bytes"
	"encoding/xml"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func ptr(v float64) *float64 { return &v }

// fixedRun has one leg of each outcome the XML must tell apart.
func fixedRun() *rundir.RunResult {
	p := &profile.Profile{Name: "pr", Transport: "enet", Clients: 64}
	leg := func(id string) profile.Leg { return profile.Leg{ID: id, Pattern: id, BaselineKey: "pr/" + id} }
	pass := func(g, title, thr, m string) rundir.Check {
		return rundir.Check{Gate: g, Title: title, Level: rundir.LevelHard, Threshold: thr, MeasuredText: m, Status: rundir.StatusPass}
	}
	return &rundir.RunResult{Profile: p, Tier: "pr", Verdict: rundir.VerdictFailed, ExitCode: 1, Legs: []rundir.LegResult{
		{Leg: leg("weave"), Verdict: rundir.VerdictPassed, ElapsedS: 24.5, StartedAt: "2026-11-30T22:00:00Z", Checks: []rundir.Check{
			pass("wire_kbs_max", "wire KB/s per client", "≤ 150", "70.83"),
			{Gate: "baseline_kbs", Title: "payload KB/s vs baseline", Level: rundir.LevelHard, Threshold: "≤ 78.34 (baseline 71.22 +10%)",
				Measured: ptr(70.24), MeasuredText: "70.24", Baseline: "71.22 (-1.4%)", Status: rundir.StatusPass},
			{Gate: "tick_ms_p99_max", Title: "server tick ms p99", Level: rundir.LevelAdvisory, Threshold: "≤ 16.60",
				MeasuredText: "19.20", Status: rundir.StatusFail, Detail: "advisory in the pr tier"},
		}},
		{Leg: leg("aggressive"), Verdict: rundir.VerdictFailed, ElapsedS: 25, StartedAt: "2026-11-30T22:00:30Z", Checks: []rundir.Check{
			{Gate: "wire_kbs_max", Title: "wire KB/s per client", Level: rundir.LevelHard, Threshold: "≤ 150",
				Measured: ptr(171.5), MeasuredText: "171.50", Status: rundir.StatusFail, Detail: "a <fat> record & more"},
			{Gate: "entities_min", Title: "server entities", Level: rundir.LevelHard, Threshold: "≥ 576",
				Status: rundir.StatusUnevaluable, Detail: "server_tick.entities missing"},
		}},
		{Leg: leg("idle"), Verdict: rundir.VerdictInconclusive, ElapsedS: 23, StartedAt: "2026-11-30T22:01:00Z", Checks: []rundir.Check{
			pass("wire_kbs_max", "wire KB/s per client", "≤ 150", "12.00"),
			{Gate: "harness", Title: "per-client service interval (harness-bound?)", Level: rundir.LevelHard, Threshold: "p99 ≤ 33.33 ms (2 periods), mean ≤ 16.83 ms (period +1 %)",
				Measured: ptr(41.2), MeasuredText: "p99 41.20 ms, mean 20.50 ms", Status: rundir.StatusInconclusive, Detail: "the swarm was the bottleneck"},
		}},
		{Leg: leg("mix"), Verdict: rundir.VerdictLaunchFailed, StartedAt: "2026-11-30T22:01:30Z",
			Error: "server did not become ready in 30s", Checks: []rundir.Check{
				{Gate: "wire_kbs_max", Title: "wire KB/s per client", Level: rundir.LevelHard, Threshold: "≤ 150",
					Status: rundir.StatusUnevaluable, Detail: "leg did not run"},
			}},
	}}
}

// TestGolden pins the XML of a fixed run (go test -update rewrites it).
func TestGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, fixedRun()); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "run.golden.xml")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("JUnit XML differs from %s (go test -update rewrites it):\n%s", golden, buf.String())
	}
}

// TestCounts reads the XML back and checks each leg's outcome per testcase.
func TestCounts(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, fixedRun()); err != nil {
		t.Fatal(err)
	}
	var doc Suites
	if err := xml.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	tests := []struct {
		suite                            string
		tests, failures, errors, skipped int
	}{
		{"pr/weave", 3, 0, 0, 0},      // an advisory fail does not fail its testcase
		{"pr/aggressive", 2, 2, 0, 0}, // fail and unevaluable both fail
		{"pr/idle", 2, 0, 0, 2},       // inconclusive leg: every check skipped
		{"pr/mix", 2, 1, 1, 0},        // launch failure: the leg is an error, its checks fail
	}
	if len(doc.Suites) != len(tests) {
		t.Fatalf("%d suites, want %d", len(doc.Suites), len(tests))
	}
	for i, tc := range tests {
		s := doc.Suites[i]
		if s.Name != tc.suite || s.Tests != tc.tests || s.Failures != tc.failures || s.Errors != tc.errors || s.Skipped != tc.skipped {
			t.Errorf("suite %s: tests %d failures %d errors %d skipped %d; want %+v", s.Name, s.Tests, s.Failures, s.Errors, s.Skipped, tc)
		}
	}
	if doc.Tests != 9 || doc.Failures != 3 || doc.Errors != 1 || doc.Skipped != 2 {
		t.Errorf("totals: tests %d failures %d errors %d skipped %d", doc.Tests, doc.Failures, doc.Errors, doc.Skipped)
	}
	f := doc.Suites[1].Cases[0].Failure
	if f == nil || !strings.Contains(f.Message, "measured 171.50, threshold ≤ 150") || f.Text != "a <fat> record & more" {
		t.Errorf("failure must carry measured vs threshold and the detail: %+v", f)
	}
	if m := doc.Suites[1].Cases[1].Failure.Message; !strings.Contains(m, "measured missing") {
		t.Errorf("unevaluable failure message %q must say the figure is missing", m)
	}
	if s := doc.Suites[2].Cases[0].Skipped; s == nil || !strings.Contains(s.Message, "the swarm was the bottleneck") {
		t.Errorf("inconclusive skip must carry the reason: %+v", s)
	}
}

// TestAbortProperties: an early end is on the leg's suite, when and why.
func TestAbortProperties(t *testing.T) {
	r := fixedRun()
	at := 3.04
	r.Legs[1].AbortedAtS, r.Legs[1].AbortReason = &at, "server died (exit 6)"
	props := map[string]string{}
	for _, p := range Build(r).Suites[1].Properties {
		props[p.Name] = p.Value
	}
	if props["aborted_at_s"] != "3.0" || props["abort_reason"] != "server died (exit 6)" {
		t.Errorf("properties %v lack the early end", props)
	}
	for _, p := range Build(fixedRun()).Suites[1].Properties {
		if p.Name == "aborted_at_s" {
			t.Error("a leg that ran its course has no aborted_at_s")
		}
	}
}
