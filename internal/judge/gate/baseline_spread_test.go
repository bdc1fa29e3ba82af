package gate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// spreadEntry is t/weave recorded from 5 runs: payload KB/s median 60, MAD
// 1 (σ̂ 1.4826), worst run 61; wire KB/s 50 in every run.
func spreadEntry(t *testing.T) baseline.Entry {
	t.Helper()
	e := baseline.Entry{Host: "host-1"}
	if err := e.Record(baseline.FigureKBs, []float64{58, 60, 60.5, 61, 59}); err != nil {
		t.Fatal(err)
	}
	if err := e.Record(baseline.FigureWireKBs, []float64{50, 50, 50, 50, 50}); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestBaselineLimitFromSpread: a spread entry's limit is median + max(tol,
// k·σ̂, worst run − median) with k from the profile, and the check shows
// the terms; a single-run entry keeps figure × (1 + tol).
func TestBaselineLimitFromSpread(t *testing.T) {
	single := baseline.Entry{KBs: 60, WireKBs: 50}
	cases := []struct {
		name      string
		entry     baseline.Entry
		k         float64
		kbs       float64
		want      rundir.Status
		threshold string // substring of the threshold
		column    string // substring of the baseline column
		detail    string // substring of the detail ("" = none)
	}{
		// k = 5: margin 5 × 1.4826 = 7.41 over the median 60.
		{"within k·σ̂", baseline.Entry{}, 5, 66, rundir.StatusPass,
			"≤ 67.41 (median 60 of 5 runs + max(1 % = 0.60, 5 × σ̂ 1.48 = 7.41, worst run +1))", "60 (+10.0%, +4.0 σ̂; median of 5 runs on host-1)", ""},
		{"beyond k·σ̂", baseline.Entry{}, 5, 67.5, rundir.StatusFail,
			"≤ 67.41", "+5.1 σ̂", "set by the spread term"},
		// k = 0: the worst recorded run (61) sets the margin.
		{"k 0: the worst run is the limit", baseline.Entry{}, 0, 61, rundir.StatusPass, "≤ 61 (median 60 of 5 runs", "", ""},
		{"k 0: beyond the worst run", baseline.Entry{}, 0, 61.5, rundir.StatusFail, "≤ 61 ", "", "set by the worst run term"},
		// One run: the declared tolerance only, as in version 1.
		{"single run within tolerance", single, 5, 60.5, rundir.StatusPass, "≤ 60.60 (baseline 60 +1%)", "60 (+0.8%; 1 run)", ""},
		{"single run beyond tolerance", single, 5, 61, rundir.StatusFail, "≤ 60.60 (baseline 60 +1%)", "", "+1.7% over baseline"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			entry := tc.entry
			if entry.Runs == 0 && entry.KBs == 0 {
				entry = spreadEntry(t)
			}
			p := testProfile()
			p.Baseline = profile.BaselinePolicy{TolerancePct: 1, SpreadK: tc.k}
			r := healthyReport(healthyTick())
			r.DownstreamKBsPerClient.Mean = tc.kbs
			b := &baseline.Committed{Path: "b.json", File: baseline.File{Entries: map[string]baseline.Entry{"t/weave": entry}}}
			c, ok := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: b}), "baseline_kbs")
			if !ok {
				t.Fatal("no baseline_kbs check")
			}
			if c.Status != tc.want || !strings.Contains(c.Threshold, tc.threshold) || !strings.Contains(c.Baseline, tc.column) ||
				(tc.detail == "") != (c.Detail == "") || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("got %s, threshold %q, baseline %q, detail %q\nwant %s, threshold ~%q, baseline ~%q, detail ~%q",
					c.Status, c.Threshold, c.Baseline, c.Detail, tc.want, tc.threshold, tc.column, tc.detail)
			}
		})
	}
}

// runLegs folds legs sharing t/weave (one per run) into a passing run.
func runLegs(t *testing.T, p *profile.Profile, reports ...*report.Report) *rundir.RunResult {
	t.Helper()
	res := &rundir.RunResult{Profile: p, Verdict: rundir.VerdictPassed}
	for i, r := range reports {
		leg := p.Legs()[0]
		leg.ID = "run-" + string(rune('1'+i)) + "/" + leg.ID
		res.Legs = append(res.Legs, rundir.LegResult{Leg: leg, Verdict: rundir.VerdictPassed, Report: r})
	}
	return res
}

func reportKBs(kbs float64, bpe *float64) *report.Report {
	r := healthyReport(healthyTick())
	r.DownstreamKBsPerClient.Mean = kbs
	r.SnapshotBytesPerEntity = bpe
	return r
}

// TestUpdateBaselineRecordsSpread: three runs of a key record their
// samples (rounded to 3 decimals), median, MAD, min, max, the run count
// and the host, as schema version 2, keeping other keys; a single run
// records no spread.
func TestUpdateBaselineRecordsSpread(t *testing.T) {
	path := writeBaseline(t)
	b, err := baseline.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	run := runLegs(t, testProfile(), reportKBs(60.00049, f64(24.43)), reportKBs(61.2344, f64(24.41)), reportKBs(59.9, f64(24.45)))
	if ok, err := baseline.Update(b, run, time.Now(), "abc", "host-1"); !ok || err != nil {
		t.Fatalf("update: ok=%v err=%v", ok, err)
	}
	raw, _ := os.ReadFile(path)
	nb, err := baseline.Read(path)
	if err != nil {
		t.Fatalf("written baseline does not decode: %v\n%s", err, raw)
	}
	if nb.SchemaVersion != baseline.SchemaVersion {
		t.Errorf("schema_version %d", nb.SchemaVersion)
	}
	e := nb.Entries["t/weave"]
	s := e.Spread[baseline.FigureKBs]
	if e.Runs != 3 || e.Host != "host-1" || e.KBs != 60 || s.Median != 60 || s.Min != 59.9 || s.Max != 61.234 ||
		!equal(s.Samples, []float64{60, 61.234, 59.9}) || s.MAD != 0.1 {
		t.Errorf("t/weave = %+v, kbs spread %+v", e, s)
	}
	if bpe := e.Spread[baseline.FigureBytesPerEntity]; e.BytesPerEntity == nil || *e.BytesPerEntity != 24.43 || bpe.N != 3 {
		t.Errorf("bytes per entity %v, spread %+v", e.BytesPerEntity, bpe)
	}
	if e := nb.Entries["other/weave"]; e.KBs != 11 || e.Runs != 0 || e.Spread != nil {
		t.Errorf("other key changed: %+v", e)
	}

	// One run: schema 2, runs 1, no spread.
	if ok, err := baseline.Update(nb, runLegs(t, testProfile(), reportKBs(62, nil)), time.Now(), "abc", "host-2"); !ok || err != nil {
		t.Fatalf("single-run update: ok=%v err=%v", ok, err)
	}
	raw, _ = os.ReadFile(path)
	var file map[string]any
	if err := json.Unmarshal(raw, &file); err != nil || file["schema_version"] != 2.0 {
		t.Fatalf("single-run file: %v %s", err, raw)
	}
	nb, _ = baseline.Read(path)
	if e := nb.Entries["t/weave"]; e.Runs != 1 || e.Spread != nil || e.KBs != 62 || e.BytesPerEntity != nil || e.Host != "host-2" {
		t.Errorf("single-run entry %+v", e)
	}
}

// TestUpdateBaselineRefusesInconsistentRuns: two runs (no spread from
// two), or an optional figure only some runs measured, write nothing.
func TestUpdateBaselineRefusesInconsistentRuns(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T) *rundir.RunResult
		want string
	}{
		{"two runs", func(t *testing.T) *rundir.RunResult {
			return runLegs(t, testProfile(), reportKBs(60, nil), reportKBs(61, nil))
		}, "at least 3"},
		{"bytes per entity in 2 of 3 runs", func(t *testing.T) *rundir.RunResult {
			return runLegs(t, testProfile(), reportKBs(60, f64(24)), reportKBs(61, nil), reportKBs(62, f64(24)))
		}, "bytes_per_entity measured in 2 of 3 runs (missing in run-2/weave)"},
		{"a run without a report", func(t *testing.T) *rundir.RunResult {
			return runLegs(t, testProfile(), reportKBs(60, nil), nil, reportKBs(62, nil))
		}, "leg run-2/weave has no report"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := writeBaseline(t)
			before, _ := os.ReadFile(path)
			b, _ := baseline.Read(path)
			ok, err := baseline.Update(b, tc.run(t), time.Now(), "abc", "h")
			if ok || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ok=%v err=%v, want an error containing %q", ok, err, tc.want)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
				t.Fatalf("baseline changed:\n%s", after)
			}
		})
	}
}

// TestReadBaselineChecksSpread: a version-2 file whose summary disagrees
// with its samples is an error naming the file, the key and the field.
func TestReadBaselineChecksSpread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.json")
	os.WriteFile(path, []byte(`{"schema_version": 2, "baselines": {"t/weave": {"kbs": 70, "wire_kbs": 50, "runs": 3,
		"spread": {"kbs": {"n": 3, "median": 70, "mad": 1, "min": 59, "max": 61, "samples": [59, 60, 61]}}}}}`), 0o644)
	_, err := baseline.Read(path)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), `baselines["t/weave"]: spread.kbs.median is 70`) {
		t.Fatalf("err = %v", err)
	}
}

func equal(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestBaselineInputLatency: input latency p95 is a baselined timing figure.
// Its check is advisory in the pr tier and hard in the strict tier (like
// the tick budget), with the same verdicts in both; a server that applies inputs a
// tick (16.7 ms at 60 Hz) later fails it against a 5-run baseline, its
// detail saying what moved; an entry that never recorded it (single-run
// updates record no timing figure) makes it unevaluable, saying how to
// record it; a run without acknowledged inputs against an entry that
// recorded it is unevaluable too, never a pass.
func TestBaselineInputLatency(t *testing.T) {
	withLatency := spreadEntry(t)
	if err := withLatency.Record(baseline.FigureInputLatencyP95, []float64{15.2, 15.6, 15.4, 15.9, 15.5}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		entry  baseline.Entry
		p95    float64 // 0: the run measured no input latency
		want   rundir.Status
		detail string
	}{
		{"healthy", withLatency, 15.8, rundir.StatusPass, ""},
		{"applied a tick late", withLatency, 15.5 + 16.7, rundir.StatusFail, "inputs take longer to show in the state"},
		{"not recorded", spreadEntry(t), 15.5, rundir.StatusUnevaluable, "--runs N, N ≥ 3"},
		{"recorded, not measured", withLatency, 0, rundir.StatusUnevaluable, "no Input was acknowledged"},
	}
	for _, tc := range cases {
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/strict=%v", tc.name, strict), func(t *testing.T) {
				baselineInputLatencyCase(t, tc.entry, tc.p95, strict, tc.want, tc.detail)
			})
		}
	}
}

// baselineInputLatencyCase is one case of TestBaselineInputLatency.
func baselineInputLatencyCase(t *testing.T, entry baseline.Entry, p95 float64, strict bool, want rundir.Status, detail string) {
	t.Helper()
	p := testProfile()
	p.Baseline = profile.BaselinePolicy{TolerancePct: 1, SpreadK: 5}
	r := healthyReport(healthyTick())
	r.DownstreamKBsPerClient.Mean = 60
	if p95 > 0 {
		r.InputLatencyMs = &report.Percentiles{P50: p95 * 0.6, P95: p95, P99: p95 + 1, Max: p95 + 2}
		r.InputsAcked = 1000
	}
	b := &baseline.Committed{Path: "b.json", File: baseline.File{Entries: map[string]baseline.Entry{"t/weave": entry}}}
	checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: b, Strict: strict})
	c, ok := find(checks, "baseline_input_latency_p95_ms")
	if !ok {
		t.Fatal("no baseline_input_latency_p95_ms check")
	}
	level := gatetable.LevelAdvisory
	if strict {
		level = gatetable.LevelHard
	}
	if c.Level != level || c.Status != want || !strings.Contains(c.Detail, detail) {
		t.Errorf("got %s %s, detail %q, threshold %q; want %s %s, detail ~%q", c.Level, c.Status, c.Detail, c.Threshold, level, want, detail)
	}
	if kbs, _ := find(checks, "baseline_kbs"); kbs.Status != rundir.StatusPass {
		t.Errorf("baseline_kbs %s (%s): the latency figure must not move the bandwidth checks", kbs.Status, kbs.Detail)
	}
}
