package runner

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/calibrate"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

func f64(v float64) *float64 { return &v }

// legReportWith is a report whose payload KB/s mean and max are kbs and
// whose server wire rate is wire (wire_peers 0 when wire < 0: missing).
func legReportWith(kbs, wire, tickHz float64) *report.Report {
	tick := map[string]any{"wire_out_kbs_per_client": wire, "wire_peers": 8}
	if wire < 0 {
		tick["wire_peers"] = 0
	}
	raw, _ := json.Marshal(tick)
	return &report.Report{DownstreamKBsPerClient: &report.MeanMax{Mean: kbs, Max: kbs + 1},
		ObservedServerTickHz: &report.MinMeanMax{Min: tickHz, Mean: tickHz, Max: tickHz}, ServerTick: raw}
}

func calProfile() *profile.Profile {
	return &profile.Profile{Name: "t", Tier: "pr", Clients: 8, Patterns: []string{"weave"}, Baselined: true,
		Baseline: profile.BaselinePolicy{TolerancePct: 10, SpreadK: 5},
		Gates: profile.Gates{
			"admission":       {Level: gatetable.LevelHard},
			"wire_kbs_max":    {Threshold: f64(150), Level: gatetable.LevelHard},
			"tick_hz_min":     {Threshold: f64(30), Level: gatetable.LevelHard},
			"tick_ms_p99_max": {Threshold: f64(16.6)}, // no level: the tier rule
			// spawn_took reads the leg's entity count: a leg without one
			// does not evaluate it.
			"spawn_took": {Level: gatetable.LevelHard},
		}}
}

func runOf(p *profile.Profile, r *report.Report) *rundir.RunResult {
	return &rundir.RunResult{Profile: p, Legs: []rundir.LegResult{{Leg: p.Legs()[0], Report: r}}}
}

// TestCalibrationGates: one calibrate.Gate per leg and figure gate, values
// read through the gate's reader (NaN when missing or no report), levels
// in the tier; admission left out and named; the baseline figures against
// the committed limit, or without a threshold when the key is missing.
func TestCalibrationGates(t *testing.T) {
	p := calProfile()
	runs := []*rundir.RunResult{
		runOf(p, legReportWith(60, 50, 59)),
		runOf(p, legReportWith(61, -1, 58)), // wire missing (wire_peers 0)
		runOf(p, nil),                       // no report
	}
	entry := baseline.Entry{}
	if err := entry.Record(baseline.FigureKBs, []float64{60}); err != nil {
		t.Fatal(err)
	}
	if err := entry.Record(baseline.FigureWireKBs, []float64{50}); err != nil {
		t.Fatal(err)
	}
	base := &baseline.Committed{Path: "b.json", File: baseline.File{Entries: map[string]baseline.Entry{"t/weave": entry}}}
	c := &Calibration{Profile: p}
	gates, notes := c.gates(runs, base)
	got := map[string]int{}
	for i, g := range gates {
		got[g.Gate] = i
	}
	want := []string{"weave/wire_kbs_max", "weave/tick_hz_min", "weave/tick_ms_p99_max", "weave/baseline_kbs", "weave/baseline_wire_kbs"}
	if len(gates) != len(want) {
		t.Fatalf("gates %v, want %v", got, want)
	}
	for i, name := range want {
		if gates[i].Gate != name {
			t.Fatalf("gate %d is %s, want %s (all: %v)", i, gates[i].Gate, name, got)
		}
	}
	same := func(a, b []float64) bool {
		for i := range a {
			if a[i] != b[i] && !(math.IsNaN(a[i]) && math.IsNaN(b[i])) {
				return false
			}
		}
		return len(a) == len(b)
	}
	nan := math.NaN()
	checks := []struct {
		i      int
		values []float64
		thr    float64
		level  gatetable.Level
		dir    gatetable.Direction
	}{
		{0, []float64{50, nan, nan}, 150, gatetable.LevelHard, gatetable.AtMost},
		{1, []float64{59, 58, nan}, 30, gatetable.LevelHard, gatetable.AtLeast},
		// tick p99 is strict-only: advisory in the pr tier, as a gate run
		// shows it. The reports carry no tick_ms: missing.
		{2, []float64{nan, nan, nan}, 16.6, gatetable.LevelAdvisory, gatetable.AtMost},
		// The single-run baseline's limit: 60 × 1.1, 50 × 1.1.
		{3, []float64{60, 61, nan}, 66, gatetable.LevelHard, gatetable.AtMost},
		{4, []float64{50, nan, nan}, 55, gatetable.LevelHard, gatetable.AtMost},
	}
	for _, ck := range checks {
		g := gates[ck.i]
		if !same(g.Values, ck.values) || g.Threshold == nil || math.Abs(*g.Threshold-ck.thr) > 1e-9 || g.Level != ck.level || g.Dir != ck.dir {
			t.Errorf("%s: values %v threshold %v level %s dir %v; want %v %v %s %v", g.Gate, g.Values, g.Threshold, g.Level, g.Dir, ck.values, ck.thr, ck.level, ck.dir)
		}
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "not measured: admission") {
		t.Errorf("notes %q: want admission named as not measured", notes)
	}

	// No baseline key: the figures are listed without a threshold, and a
	// note says a gate run fails them as unevaluable.
	gates, notes = c.gates(runs, &baseline.Committed{Path: "b.json"})
	if g := gates[3]; g.Gate != "weave/baseline_kbs" || g.Threshold != nil {
		t.Errorf("without a key: %+v", g)
	}
	if len(notes) != 3 || !strings.Contains(notes[1], "b.json has no kbs for key t/weave") {
		t.Errorf("notes %q", notes)
	}
}

// TestRunNotes: harness-bound legs are named by run; a stopped sequence
// says how many runs were calibrated.
func TestRunNotes(t *testing.T) {
	p := calProfile()
	bound := runOf(p, nil)
	bound.Legs[0].Checks = []rundir.Check{{Gate: "harness", Status: rundir.StatusInconclusive}}
	ok := runOf(p, nil)
	ok.Legs[0].Checks = []rundir.Check{{Gate: "harness", Status: rundir.StatusPass},
		{Gate: "host", Status: rundir.StatusRecorded, Detail: "host busy: others 1.20 cores"}}
	failed := runOf(p, nil)
	failed.Legs[0].Verdict = rundir.VerdictLaunchFailed
	rep := &Repeated{Runs: []*rundir.RunResult{ok, bound, failed}, Stopped: "stopped after run 3 of 5: it could not complete (launch failure)"}
	notes := runNotes(p, rep, rep.Runs[:2])
	if len(notes) != 3 || !strings.HasPrefix(notes[0], "harness-bound legs") || !strings.Contains(notes[0], "in run 2 (weave):") ||
		!strings.HasPrefix(notes[1], "busy-host legs") || !strings.Contains(notes[1], "in run 1 (weave):") ||
		notes[2] != "2 of 3 run(s) completed and are calibrated here; stopped after run 3 of 5: it could not complete (launch failure)" {
		t.Errorf("notes %q", notes)
	}
	if v, bad := incomplete(failed); !bad || v != rundir.VerdictLaunchFailed {
		t.Errorf("incomplete(launch failure) = %s %v", v, bad)
	}
	if _, bad := incomplete(bound); bad {
		t.Error("a harness-bound run completed")
	}
}

// TestABNotes: harness-bound and busy-host legs are counted per build;
// rounds cut short say why.
func TestABNotes(t *testing.T) {
	r := &abRun{AB: &AB{Rounds: 10}, bound: [2]int{1, 3}, busy: [2]int{0, 2}, ran: [2]int{4, 4}, rounds: 3, failed: rundir.VerdictLaunchFailed}
	notes := r.notes()
	if len(notes) != 3 || !strings.Contains(notes[0], "A 1 of 4, B 3 of 4") || !strings.Contains(notes[1], "A 0 of 4, B 2 of 4") ||
		notes[2] != "3 of 10 round(s) completed and are judged here: a leg could not complete (launch failure) in round 4" {
		t.Errorf("notes %q", notes)
	}
	if notes := (&abRun{AB: &AB{Rounds: 2}, rounds: 2}).notes(); len(notes) != 0 {
		t.Errorf("a clean run has notes %q", notes)
	}
}

// TestCalibrationOwnBaseline: a gated own figure's baseline is calibrated
// like the built-in ones, against the committed limit on its declared
// worse side: 500 bodies recorded, better higher, 10 %: at least 450.
func TestCalibrationOwnBaseline(t *testing.T) {
	p := calProfile()
	p.Figures = gatetable.OwnFigures{
		"bodies":     {Better: "higher", File: &serverwindow.FileFigure{Gauge: "world.bodies"}},
		"physics_ms": {Unit: "ms", Better: "lower", File: &serverwindow.FileFigure{Histogram: "physics.step_ms"}},
	}
	p.Gates["bodies_min_min"] = profile.GateSpec{Threshold: f64(1)}
	p.Gates["physics_ms_p99_max"] = profile.GateSpec{Threshold: f64(100)}
	withOwn := func(bodies, physics float64) *report.Report {
		r := legReportWith(60, 50, 59)
		raw, _ := json.Marshal(map[string]any{"wire_out_kbs_per_client": 50, "wire_peers": 8,
			"bodies": map[string]any{"min": bodies, "max": bodies}, "physics_ms": map[string]any{"p99": physics}})
		r.ServerTick = raw
		return r
	}
	f, err := baseline.Decode([]byte(`{"baselines": {"t/weave": {"kbs": 60, "wire_kbs": 50, "own": {"bodies.min": 500, "physics_ms.p99": 4}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := &Calibration{Profile: p}
	gates, _ := c.gates([]*rundir.RunResult{runOf(p, withOwn(470, 4.1)), runOf(p, withOwn(430, 4.6))}, &baseline.Committed{Path: "b.json", File: *f})
	for _, want := range []struct {
		gate   string
		dir    gatetable.Direction
		thr    float64
		values []float64
	}{
		{"weave/baseline_bodies_min", gatetable.AtLeast, 450, []float64{470, 430}},
		{"weave/baseline_physics_ms_p99", gatetable.AtMost, 4.4, []float64{4.1, 4.6}},
	} {
		var g *calibrate.Gate
		for i := range gates {
			if gates[i].Gate == want.gate {
				g = &gates[i]
			}
		}
		if g == nil {
			t.Errorf("no %s among %d gates", want.gate, len(gates))
			continue
		}
		if g.Dir != want.dir || g.Threshold == nil || math.Abs(*g.Threshold-want.thr) > 1e-9 || len(g.Values) != 2 || g.Values[0] != want.values[0] || g.Values[1] != want.values[1] {
			t.Errorf("%s: dir %v threshold %v values %v; want %v %v %v", g.Gate, g.Dir, g.Threshold, g.Values, want.dir, want.thr, want.values)
		}
	}

	// An entry that predates the gates: listed without a threshold, and
	// the note says a gate run shows them advisory, not failed.
	f, err = baseline.Decode([]byte(`{"baselines": {"t/weave": {"kbs": 60, "wire_kbs": 50}}}`))
	if err != nil {
		t.Fatal(err)
	}
	_, notes := c.gates([]*rundir.RunResult{runOf(p, withOwn(470, 4.1))}, &baseline.Committed{Path: "b.json", File: *f})
	if !strings.Contains(strings.Join(notes, "\n"), "weave/baseline_bodies_min: b.json has no bodies.min for key t/weave: listed without a threshold (a gate run shows it unevaluable, advisory until the entry records it)") {
		t.Errorf("notes %q", notes)
	}
}
