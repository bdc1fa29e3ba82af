package gate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// ownBaselineProfile is testProfile with three own figures gated:
// physics_ms p99 (better lower), bodies min (better higher) and frame_ms
// p99 (better lower, timing). The gates' own thresholds are far away, so
// only the baseline decides.
func ownBaselineProfile() *profile.Profile {
	p := testProfile()
	p.Figures = gatetable.OwnFigures{
		"physics_ms": {Unit: "ms", Better: "lower", File: &serverwindow.FileFigure{Histogram: "physics.step_ms"}},
		"bodies":     {Better: "higher", File: &serverwindow.FileFigure{Gauge: "world.bodies"}},
		"frame_ms":   {Unit: "ms", Better: "lower", Timing: true, File: &serverwindow.FileFigure{Summary: "frame_ms"}},
	}
	p.Gates["physics_ms_p99_max"] = profile.GateSpec{Threshold: f64(100)}
	p.Gates["bodies_min_min"] = profile.GateSpec{Threshold: f64(1)}
	p.Gates["frame_ms_p99_max"] = profile.GateSpec{Threshold: f64(100)}
	return p
}

// ownReport is a healthy report whose server_tick has the own figures.
func ownReport(physicsP99, bodiesMin, frameP99 float64) *report.Report {
	tick := healthyTick()
	tick["physics_ms"] = map[string]any{"p50": physicsP99 / 2, "p99": physicsP99, "max": physicsP99 + 1}
	tick["bodies"] = map[string]any{"min": bodiesMin, "max": bodiesMin + 10}
	tick["frame_ms"] = map[string]any{"p99": frameP99}
	return healthyReport(tick)
}

// ownBaselineFile decodes a baseline file holding t/weave with extra
// fields (the own figures) beside its payload and wire figures.
func ownBaselineFile(t *testing.T, runs int, extra string) *baseline.Committed {
	t.Helper()
	if extra == "no key" {
		return &baseline.Committed{Path: "b.json", File: baseline.File{Entries: map[string]baseline.Entry{}}}
	}
	n, _ := json.Marshal(runs)
	f, err := baseline.Decode([]byte(`{"schema_version": 2, "baselines": {"t/weave": {"kbs": 60, "wire_kbs": 50, "runs": ` + string(n) + extra + `}}}`))
	if err != nil {
		t.Fatal(err)
	}
	return &baseline.Committed{Path: "b.json", File: *f}
}

// The entries the cases judge against: one run (physics 4 ms, 500 bodies,
// no frame time: a timing figure is recorded only from 3 runs), three runs
// (physics median 4, MAD 0.1, σ̂ 0.148; frame median 9, MAD 0.5), and an
// entry written before own figures were baselined.
const (
	ownSingle = `, "own": {"physics_ms.p99": 4, "bodies.min": 500}`
	ownSpread = `, "own": {"physics_ms.p99": 4, "bodies.min": 500, "frame_ms.p99": 9}, "spread": {
		"physics_ms.p99": {"n": 3, "median": 4, "mad": 0.1, "min": 3.9, "max": 4.2, "samples": [3.9, 4, 4.2]},
		"bodies.min": {"n": 3, "median": 500, "mad": 0, "min": 500, "max": 500, "samples": [500, 500, 500]},
		"frame_ms.p99": {"n": 3, "median": 9, "mad": 0.5, "min": 8.5, "max": 9.5, "samples": [8.5, 9, 9.5]}}`
	ownNone = ``
)

// TestOwnFigureBaselineLimits: what the summary shows of a gated own
// figure's baseline check, beside TestOwnFigureBaseline's verdicts: the
// threshold on the figure's worse side from one run and from a spread
// (k·σ̂ setting the margin, and named when it fails), the stale advisory's
// words for either direction, a missing key (hard, every baseline check
// is), an entry that predates the gate (advisory, with the threshold in
// the figure's direction), a timing figure a single-run update left out
// (saying to record it with --runs), and --update-baseline recording it.
func TestOwnFigureBaselineLimits(t *testing.T) {
	cases := []struct {
		name                     string
		runs                     int
		entry                    string
		physics, bodies, frame   float64
		strict, update           bool
		gate                     string
		want                     rundir.Status
		level                    gatetable.Level
		threshold, detail, stale string // substrings ("" stale: no stale check)
	}{
		{"lower: one run", 1, ownSingle, 4.3, 500, 9, false, false, "baseline_physics_ms_p99",
			rundir.StatusPass, gatetable.LevelHard, "≤ 4.40 (baseline 4 +10%)", "", ""},
		{"higher: one run", 1, ownSingle, 4, 460, 9, false, false, "baseline_bodies_min",
			rundir.StatusPass, gatetable.LevelHard, "≥ 450 (baseline 500 −10%)", "", ""},
		{"lower: a large gain is stale", 1, ownSingle, 3, 500, 9, false, false, "baseline_physics_ms_p99",
			rundir.StatusPass, gatetable.LevelHard, "≤ 4.40", "", "physics_ms.p99 3, -25.0% against the baseline 4 (margin 0.40)"},
		{"higher: a large gain is stale", 1, ownSingle, 4, 600, 9, false, false, "baseline_bodies_min",
			rundir.StatusPass, gatetable.LevelHard, "≥ 450", "", "bodies.min 600, +20.0% against the baseline 500 (margin 50)"},
		// 3 runs: 5 × σ̂ 0.148 = 0.74 beats 10 % = 0.4.
		{"spread: within k·σ̂", 3, ownSpread, 4.7, 500, 9, false, false, "baseline_physics_ms_p99",
			rundir.StatusPass, gatetable.LevelHard, "≤ 4.74 (median 4 of 3 runs + max(10 % = 0.40, 5 × σ̂ 0.15 = 0.74, worst run +0.20))", "", ""},
		{"spread: beyond k·σ̂", 3, ownSpread, 4.8, 500, 9, false, false, "baseline_physics_ms_p99",
			rundir.StatusFail, gatetable.LevelHard, "≤ 4.74", "set by the spread term", ""},
		{"higher: the entry predates the gate", 1, ownNone, 4, 500, 9, false, false, "baseline_bodies_min",
			rundir.StatusUnevaluable, gatetable.LevelAdvisory, "≥ baseline −10%", `baseline key "t/weave" in b.json does not record this figure`, ""},
		{"no key", 1, "no key", 4, 500, 9, false, false, "baseline_physics_ms_p99",
			rundir.StatusUnevaluable, gatetable.LevelHard, "≤ baseline +10%", `no baseline key "t/weave"`, ""},
		{"timing, recorded from one run", 1, ownSingle, 4, 500, 9, true, false, "baseline_frame_ms_p99",
			rundir.StatusUnevaluable, gatetable.LevelAdvisory, "", "a timing figure is recorded only with --runs N, N ≥ 3", ""},
		{"--update-baseline records it", 1, ownNone, 4.6, 500, 9, false, true, "baseline_physics_ms_p99",
			rundir.StatusRecorded, gatetable.LevelHard, "recorded by --update-baseline", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := ownBaselineProfile()
			p.Baseline = profile.BaselinePolicy{TolerancePct: 10, SpreadK: 5}
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: ownReport(tc.physics, tc.bodies, tc.frame),
				Baseline: ownBaselineFile(t, tc.runs, tc.entry), Strict: tc.strict, UpdateBaseline: tc.update})
			c, ok := find(checks, tc.gate)
			if !ok {
				t.Fatalf("no %s check among %s", tc.gate, gateNames(checks))
			}
			if c.Status != tc.want || c.Level != tc.level || !strings.Contains(c.Threshold, tc.threshold) || !strings.Contains(c.Detail, tc.detail) {
				t.Errorf("got %s %s, threshold %q, detail %q\nwant %s %s, threshold ~%q, detail ~%q",
					c.Level, c.Status, c.Threshold, c.Detail, tc.level, tc.want, tc.threshold, tc.detail)
			}
			stale, ok := find(checks, gatetable.CheckBaselineStale)
			if ok != (tc.stale != "") || !strings.Contains(stale.Detail, tc.stale) {
				t.Errorf("baseline_stale present %v (%q), want ~%q", ok, stale.Detail, tc.stale)
			}
			if ok && (stale.Level != gatetable.LevelAdvisory || !strings.Contains(stale.Detail, "update it to lock in the gain")) {
				t.Errorf("baseline_stale %s: %q", stale.Level, stale.Detail)
			}
			if kbs, _ := find(checks, gatetable.CheckBaselineKBs); tc.entry != "no key" && !tc.update && kbs.Status != rundir.StatusPass {
				t.Errorf("baseline_kbs %s (%s): an own figure must not move the built-in checks", kbs.Status, kbs.Detail)
			}
		})
	}
}

func gateNames(checks []rundir.Check) string {
	var out []string
	for _, c := range checks {
		out = append(out, c.Gate)
	}
	return strings.Join(out, ", ")
}

// TestBaselineOwnTimingSoftened: on a harness-bound leg the baseline check
// of an own figure declared timing is inconclusive, as its gate is; one
// on a figure not declared timing stays failed. Without a report, every
// gated own figure's baseline check is listed unevaluable.
func TestBaselineOwnTimingSoftened(t *testing.T) {
	p := ownBaselineProfile()
	checks := soften([]rundir.Check{
		{Gate: gatetable.CheckHarness, Level: gatetable.LevelHard, Status: rundir.StatusInconclusive},
		{Gate: "baseline_frame_ms_p99", Level: gatetable.LevelHard, Status: rundir.StatusFail},
		{Gate: "baseline_physics_ms_p99", Level: gatetable.LevelHard, Status: rundir.StatusFail},
	}, timingIn(p))
	if checks[1].Status != rundir.StatusInconclusive || checks[2].Status != rundir.StatusFail {
		t.Errorf("statuses %s %s, want inconclusive (timing) and fail", checks[1].Status, checks[2].Status)
	}

	unread := Evaluate(Input{Profile: p, Leg: p.Legs()[0], ReportErr: errTest})
	for _, gate := range []string{"baseline_physics_ms_p99", "baseline_bodies_min", "baseline_frame_ms_p99"} {
		if c, ok := find(unread, gate); !ok || c.Status != rundir.StatusUnevaluable {
			t.Errorf("unread report: %s %+v (listed %v), want unevaluable", gate, c, ok)
		}
	}
}

type testErr string

func (e testErr) Error() string { return string(e) }

const errTest = testErr("no report.json")

// The built-in baseline check of a timing figure (input latency p95) is
// softened like its gate: on a harness-bound leg, or beside a busy host, a
// failure cannot be laid on the server and is inconclusive; the byte
// baselines beside it are facts and stay failed.
func TestBaselineInputLatencySoftened(t *testing.T) {
	for _, tc := range []struct {
		name    string
		trigger rundir.Check
	}{
		{"harness-bound", rundir.Check{Gate: gatetable.CheckHarness, Level: gatetable.LevelHard, Status: rundir.StatusInconclusive}},
		{"host busy", rundir.Check{Gate: gatetable.CheckHost, Level: gatetable.LevelAdvisory, Status: rundir.StatusRecorded,
			Detail: hostBusyPrefix + "other processes used 1.20 cores"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checks := soften([]rundir.Check{
				tc.trigger,
				{Gate: gatetable.CheckBaselineInputLatency, Level: gatetable.LevelHard, Status: rundir.StatusFail},
				{Gate: gatetable.CheckBaselineWireKBs, Level: gatetable.LevelHard, Status: rundir.StatusFail},
			}, timingIn(testProfile()))
			if checks[1].Status != rundir.StatusInconclusive {
				t.Errorf("%s: %s, want inconclusive", checks[1].Gate, checks[1].Status)
			}
			if checks[2].Status != rundir.StatusFail {
				t.Errorf("%s: %s, want fail (bytes are facts whatever the harness or host did)", checks[2].Gate, checks[2].Status)
			}
		})
	}
}
