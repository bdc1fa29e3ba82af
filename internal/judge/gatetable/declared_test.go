package gatetable

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/promsource"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

func ownFixture() OwnFigures {
	return OwnFigures{
		"physics_ms": {Unit: "ms", Better: "lower", Stats: []string{"p50", "p99"},
			File:       &serverwindow.FileFigure{Histogram: "cumulative.phase_ms.integrate_ms"},
			Prometheus: &promsource.Figure{Histogram: "game_physics_seconds"}},
		"bodies": {Better: "higher", File: &serverwindow.FileFigure{Gauge: "bodies"}},
		// A name that is the front of another's: physics_ms_p99_max is
		// still a gate on physics_ms.
		"physics":  {Unit: "ms", Better: "lower", File: &serverwindow.FileFigure{Histogram: "physics"}},
		"frame_ms": {Unit: "ms", Better: "lower", Timing: true, File: &serverwindow.FileFigure{Summary: "frame_ms"}},
	}
}

// TestParseOwnGate: a gate name that is not a table gate is read as a gate
// on a declared figure, or refused saying why in the profile's terms.
func TestParseOwnGate(t *testing.T) {
	ds := ownFixture()
	for _, tc := range []struct {
		gate, source, want string
	}{
		{"physics_ms_p99_max", SourceFile, ""},
		{"physics_ms_p50_max", SourcePrometheus, ""},
		{"bodies_min_min", SourceFile, ""},
		{"physcs_ms_p99_max", SourceFile, "no gate physcs_ms_p99_max: not a built-in gate, and no declared figure it is a gate on (declared figures: bodies, frame_ms, physics, physics_ms; a gate on one is NAME_STAT_max or NAME_STAT_min); did you mean physics_ms_p99_max?"},
		{"bodies_p99_min", SourceFile, `bodies has no statistic "p99": it is a gauge (file: bodies), which offers min, max; p99 needs a histogram or a summary`},
		{"physics_ms_p95_max", SourceFile, `figure physics_ms does not offer p95: its stats are p50, p99 (add "p95" to figures.physics_ms.stats)`},
		{"physics_ms_p99_min", SourceFile, "figure physics_ms is better lower, so a gate on it is a ceiling: physics_ms_p99_max, not physics_ms_p99_min"},
		{"bodies_min_max", SourceFile, "figure bodies is better higher, so a gate on it is a floor: bodies_min_min, not bodies_min_max"},
		{"bodies_min_min", SourcePrometheus, "figure bodies declares no prometheus source, and the profile reads its server's metrics from prometheus"},
		{"physics_p50_max", SourceFile, ""},
		{"physics_ms_min_max", SourceFile, `physics_ms has no statistic "min": it is a histogram (file: cumulative.phase_ms.integrate_ms), which offers mean, p50, p90, p95, p99, max; min needs a summary or a gauge`},
	} {
		g, err := ParseOwnGate(tc.gate, ds, tc.source)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s (%s): %v", tc.gate, tc.source, err)
		case tc.want == "" && (g.Name != tc.gate || !g.Own):
			t.Errorf("%s: parsed as %+v", tc.gate, g)
		case tc.want != "" && (err == nil || err.Error() != tc.want):
			t.Errorf("%s (%s):\n got %v\nwant %s", tc.gate, tc.source, err, tc.want)
		}
	}
}

// TestOwnGateReadsTheBlock: a gate on an own figure reads
// server_tick.NAME.STAT by the table's rules: its direction, its tier rule
// (a timing figure is StrictOnly), and missing is unevaluable with the
// source's reason.
func TestOwnGateReadsTheBlock(t *testing.T) {
	ds := ownFixture()
	tick := `{"physics_ms": {"p99": 5.5}, "bodies": {"min": 40, "max": 50},
		"hold": {"from_s": 1, "to_s": 9, "span_s": 8, "hold": true, "cumulative": true, "figures": ["bodies", "physics_ms"],
		"missing": {"frame_ms": "the metrics file's frame_ms (summary): no value at the hold's end (t=9.0 s)"}, "readings": 8}}`
	m := FromReport(&report.Report{ServerTick: json.RawMessage(tick)})
	for _, tc := range []struct {
		gate      string
		thr       float64
		pass      bool
		err       string
		tier      TierRule
		windowHas string
	}{
		{gate: "physics_ms_p99_max", thr: 4, pass: false, windowHas: "the hold (t=1.0–9.0 s)"},
		{gate: "physics_ms_p99_max", thr: 6, pass: true},
		{gate: "bodies_min_min", thr: 45, pass: false},
		{gate: "bodies_min_min", thr: 40, pass: true},
		{gate: "frame_ms_p99_max", thr: 16, err: "server_tick.frame_ms.p99 missing (the metrics file's frame_ms (summary): no value", tier: StrictOnly},
	} {
		g, err := ParseOwnGate(tc.gate, ds, SourceFile)
		if err != nil {
			t.Fatal(err)
		}
		o := g.Evaluate(m, tc.thr)
		switch {
		case tc.err != "":
			if o.Err == nil || !strings.Contains(o.Err.Error(), tc.err) {
				t.Errorf("%s: err %v, want %q", tc.gate, o.Err, tc.err)
			}
		case o.Err != nil || o.Pass != tc.pass:
			t.Errorf("%s ≷ %v: pass %v err %v, want pass %v", tc.gate, tc.thr, o.Pass, o.Err, tc.pass)
		}
		if g.Tier != tc.tier {
			t.Errorf("%s: tier rule %v, want %v", tc.gate, g.Tier, tc.tier)
		}
		if tc.windowHas != "" && !strings.Contains(g.WindowRead(m), tc.windowHas) {
			t.Errorf("%s: window %q, want %q", tc.gate, g.WindowRead(m), tc.windowHas)
		}
	}
}

// TestOwnFiguresCheck: every problem of a declaration, at its field.
func TestOwnFiguresCheck(t *testing.T) {
	for _, tc := range []struct {
		name   string
		d      OwnFigure
		source string
		want   string
	}{
		{"tick_ms", OwnFigure{Better: "lower", File: &serverwindow.FileFigure{Histogram: "a"}}, SourceFile, "figures.tick_ms: tick_ms is a built-in server_tick field"},
		{"entities", OwnFigure{Better: "higher", File: &serverwindow.FileFigure{Gauge: "a"}}, SourceFile, "figures.entities: entities is a built-in server_tick field"},
		{"x_ms", OwnFigure{Better: "less", File: &serverwindow.FileFigure{Histogram: "a"}}, SourceFile, `figures.x_ms.better: must be "lower" or "higher"`},
		{"x_ms", OwnFigure{Better: "lower", File: &serverwindow.FileFigure{Histogram: "a"}}, SourcePrometheus, "figures.x_ms: declares no prometheus source"},
		{"x_ms", OwnFigure{Better: "lower", Stats: []string{"p99"}, File: &serverwindow.FileFigure{Gauge: "a"}}, SourceFile, "figures.x_ms.stats: p99: the file source is a gauge (a), which offers min, max"},
		{"x_ms", OwnFigure{Better: "lower", File: &serverwindow.FileFigure{Histogram: "a b"}}, SourceFile, `figures.x_ms.file: "a b" is not a JSON path`},
		{"x_ms", OwnFigure{Better: "lower", Prometheus: &promsource.Figure{Info: "b", Label: "v"}}, SourcePrometheus, "figures.x_ms.prometheus: an own figure is a number"},
		{"x_ms", OwnFigure{Better: "lower", File: &serverwindow.FileFigure{}}, SourceFile, "figures.x_ms.file: names no kind"},
		{"x_ms", OwnFigure{Better: "lower", Phase: true, File: &serverwindow.FileFigure{Gauge: "a"}}, SourceFile, "figures.x_ms.phase: a tick phase is drawn and listed by its mean per tick, which a gauge (file: a) does not give"},
	} {
		var got []string
		for _, e := range (OwnFigures{tc.name: tc.d}).Check(tc.source) {
			got = append(got, e.Error())
		}
		if !strings.Contains(strings.Join(got, "\n"), tc.want) {
			t.Errorf("%s: got %q, want %q", tc.name, got, tc.want)
		}
	}
	if errs := ownFixture().Check(SourceFile); len(errs) != 0 {
		t.Errorf("the fixture is valid from the file: %v", errs)
	}
	// A summary is the server's own window, and the summary says so.
	m := FromReport(&report.Report{ServerTick: json.RawMessage(`{"frame_ms": {"p99": 9}, "ticks_sampled": 600, "window_s": 10,
		"hold": {"from_s": 1, "to_s": 9, "span_s": 8, "hold": true, "cumulative": true, "figures": ["tick_ms"], "readings": 8}}`)})
	g, err := ParseOwnGate("frame_ms_p99_max", ownFixture(), SourceFile)
	if err != nil {
		t.Fatal(err)
	}
	if w := g.WindowRead(m); w != "the server's own window: frame_ms as the server wrote it (a summary, not over the hold)" {
		t.Errorf("a summary's window %q", w)
	}
	if errs := ownFixture().Check(SourceFile); len(errs) != 0 {
		t.Errorf("the fixture is valid from the file: %v", errs)
	}
}
