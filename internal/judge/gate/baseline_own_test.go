package gate

import (
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/run/rundir"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// TestOwnFigureBaseline: a statistic of the profile's own figure that a
// gate names is judged against the baseline like the built-in figures,
// in its own direction: a lower-is-better figure fails above its limit, a
// higher-is-better one below it; an improvement past the margin is the
// stale advisory; an entry that does not record it makes the check
// unevaluable at the advisory level (an old baseline never fails on a
// figure it never had), and a timing figure's check is hard only in the
// strict tier.
func TestOwnFigureBaseline(t *testing.T) {
	recorded := baseline.Entry{KBs: 60, WireKBs: 50, Own: map[string]float64{"physics_ms.p99": 2, "bodies.min": 100}}
	for _, tc := range []struct {
		name           string
		physics, bodie float64
		entry          baseline.Entry
		timing, strict bool
		want           map[string]rundir.Status // check → status ("" : absent)
		level          gatetable.Level          // of baseline_physics_ms_p99
		detail         string
	}{
		{name: "within", physics: 2.1, bodie: 100, entry: recorded,
			want: map[string]rundir.Status{"baseline_physics_ms_p99": rundir.StatusPass, "baseline_bodies_min": rundir.StatusPass, gatetable.CheckBaselineStale: ""}},
		{name: "slower", physics: 2.5, bodie: 100, entry: recorded, detail: "over baseline",
			want: map[string]rundir.Status{"baseline_physics_ms_p99": rundir.StatusFail, "baseline_bodies_min": rundir.StatusPass}},
		{name: "fewer bodies", physics: 2, bodie: 80, entry: recorded, detail: "under baseline",
			want: map[string]rundir.Status{"baseline_physics_ms_p99": rundir.StatusPass, "baseline_bodies_min": rundir.StatusFail}},
		{name: "faster: stale", physics: 1, bodie: 100, entry: recorded,
			want: map[string]rundir.Status{"baseline_physics_ms_p99": rundir.StatusPass, gatetable.CheckBaselineStale: rundir.StatusFail}},
		{name: "more bodies: stale", physics: 2, bodie: 130, entry: recorded,
			want: map[string]rundir.Status{"baseline_bodies_min": rundir.StatusPass, gatetable.CheckBaselineStale: rundir.StatusFail}},
		{name: "not recorded: advisory", physics: 2, bodie: 100, entry: baseline.Entry{KBs: 60, WireKBs: 50}, detail: "does not record this figure",
			level: gatetable.LevelAdvisory,
			want:  map[string]rundir.Status{"baseline_physics_ms_p99": rundir.StatusUnevaluable, "baseline_bodies_min": rundir.StatusUnevaluable}},
		{name: "timing, pr tier", physics: 2.5, bodie: 100, entry: recorded, timing: true, level: gatetable.LevelAdvisory,
			want: map[string]rundir.Status{"baseline_physics_ms_p99": rundir.StatusFail}},
		{name: "timing, strict", physics: 2.5, bodie: 100, entry: recorded, timing: true, strict: true, level: gatetable.LevelHard,
			want: map[string]rundir.Status{"baseline_physics_ms_p99": rundir.StatusFail}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			p.Figures = gatetable.OwnFigures{
				"physics_ms": {Unit: "ms", Better: "lower", Timing: tc.timing, File: &serverwindow.FileFigure{Histogram: "physics.step_ms"}},
				"bodies":     {Better: "higher", File: &serverwindow.FileFigure{Gauge: "bodies"}},
			}
			p.Gates["physics_ms_p99_max"] = profileGate(50)
			p.Gates["bodies_min_min"] = profileGate(1)
			tick := healthyTick()
			tick["physics_ms"] = map[string]any{"p99": tc.physics}
			tick["bodies"] = map[string]any{"min": tc.bodie}
			b := &baseline.Committed{Path: "b.json", File: baseline.File{Entries: map[string]baseline.Entry{"t/weave": tc.entry}}}
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: healthyReport(tick), Baseline: b, Strict: tc.strict})
			byGate := map[string]rundir.Check{}
			for _, c := range checks {
				byGate[c.Gate] = c
			}
			for gate, want := range tc.want {
				c, ok := byGate[gate]
				switch {
				case want == "" && ok:
					t.Errorf("%s present (%s: %s), want none", gate, c.Status, c.Detail)
				case want != "" && (!ok || c.Status != want):
					t.Errorf("%s: %q (%s), want %s", gate, c.Status, c.Detail, want)
				}
				if ok && want == rundir.StatusFail && tc.detail != "" && !strings.Contains(c.Detail, tc.detail) && gate != gatetable.CheckBaselineStale {
					t.Errorf("%s detail %q, want it to say %q", gate, c.Detail, tc.detail)
				}
				if ok && want == rundir.StatusUnevaluable && !strings.Contains(c.Detail, tc.detail) {
					t.Errorf("%s detail %q, want it to say %q", gate, c.Detail, tc.detail)
				}
			}
			if tc.level != "" && byGate["baseline_physics_ms_p99"].Level != tc.level {
				t.Errorf("baseline_physics_ms_p99 level %s, want %s", byGate["baseline_physics_ms_p99"].Level, tc.level)
			}
		})
	}
}

// profileGate is a declared hard gate at threshold.
func profileGate(threshold float64) profile.GateSpec {
	return profile.GateSpec{Threshold: f64(threshold), Level: gatetable.LevelHard}
}
