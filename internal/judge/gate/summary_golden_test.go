package gate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// fixedRun is a rundir.RunResult built by Evaluate from fixed inputs: a passing
// leg, a leg failing its wire ceiling and baseline, and a harness-bound leg
// whose timing failure is inconclusive.
func fixedRun() *rundir.RunResult {
	p := testProfile()
	p.Description = "golden fixture"
	p.Patterns = []string{"weave", "idle", "aggressive"}
	p.DurationS = 20
	p.WarmupS = 2
	legs := p.Legs()
	base := &baseline.Committed{Path: "baselines/b.json", File: baseline.File{Entries: map[string]baseline.Entry{
		"t/weave": {KBs: 60, WireKBs: 50}, "t/idle": {KBs: 60, WireKBs: 50}, "t/aggressive": {KBs: 60, WireKBs: 50}}}}
	mk := func(i int, tweak func(tick map[string]any, r *report.Report)) rundir.LegResult {
		tick := healthyTick()
		r := healthyReport(tick)
		if tweak != nil {
			tweak(tick, r)
			r.ServerTick = mustJSON(tick)
		}
		checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: legs[i], Report: r, Baseline: base})
		exit := 0
		return rundir.LegResult{Leg: legs[i], Dir: "results/t_20261130T000000Z/" + legs[i].ID, Port: 40000 + i,
			Verdict: LegVerdict(checks, Facts{}), Checks: checks, SwarmExit: &exit, ServerExit: &exit,
			ServerCmd: "scalegate serve --config server.toml", SwarmCmd: "scalegate swarm 127.0.0.1 40000 --clients 8",
			StartedAt: "2026-11-30T00:00:00Z", ElapsedS: 21.5, Report: r}
	}
	res := &rundir.RunResult{Profile: p, Tier: "pr", Dir: "results/t_20261130T000000Z",
		StartedAt: "2026-11-30T00:00:00Z", FinishedAt: "2026-11-30T00:01:05Z"}
	res.Legs = []rundir.LegResult{
		// The diagnostics a reference server writes: the line shows them;
		// the other legs' server wrote none, and their line says missing.
		mk(0, func(tick map[string]any, r *report.Report) {
			tick["window_s"], tick["cpu_pct_mean"], tick["cpu_pct_max"] = 9.98, 41.3, 57.25
			tick["slow_ticks"], tick["gc_count"], tick["send_queue_max"], tick["slow_sends"] = 3, 12, 0, 1
			tick["gc_pause_ms"] = map[string]any{"max": 0.9, "p99": 0.41}
		}),
		mk(1, func(tick map[string]any, r *report.Report) {
			tick["wire_out_kbs_per_client"] = 180.0
			r.DownstreamKBsPerClient.Mean = 70
		}),
		mk(2, func(tick map[string]any, r *report.Report) {
			r.ServiceIntervalMs.P99, r.ServiceIntervalMs.Mean = 41.2, 20.5
			r.ObservedServerTickHz.Min = 20
		}),
	}
	res.Verdict = RunVerdict(res)
	res.ExitCode = 1
	return res
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -run Golden -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./internal/judge/gate -run Golden -update rewrites it after a deliberate change)\n--- got ---\n%s", path, got)
	}
}

// The summary.md, summary.json and terminal table of a fixed run are
// pinned: a change to titles, order, wording or fields shows in review.
func TestSummaryGolden(t *testing.T) {
	res := fixedRun()
	golden(t, "summary.md", []byte(rundir.Markdown(res)))
	dir := t.TempDir()
	if err := report.WriteJSONAtomic(filepath.Join(dir, "summary.json"), res); err != nil {
		t.Fatal(err)
	}
	js, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.json", js)
	var tbl bytes.Buffer
	if err := rundir.WriteTable(&tbl, res); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.txt", tbl.Bytes())
}
