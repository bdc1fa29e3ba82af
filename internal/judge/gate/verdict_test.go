package gate

import (
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/run/rundir"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// TestLegVerdictPrecedence pins the order written at the top of
// verdict.go.
func TestLegVerdictPrecedence(t *testing.T) {
	hardFail := rundir.Check{Gate: "wire_kbs_max", Level: gatetable.LevelHard, Status: rundir.StatusFail}
	hardUneval := rundir.Check{Gate: "wire_kbs_max", Level: gatetable.LevelHard, Status: rundir.StatusUnevaluable}
	advisoryFail := rundir.Check{Gate: "tick_ms_p99_max", Level: gatetable.LevelAdvisory, Status: rundir.StatusFail}
	inconcl := rundir.Check{Gate: "harness", Level: gatetable.LevelHard, Status: rundir.StatusInconclusive}
	pass := rundir.Check{Gate: "load", Level: gatetable.LevelHard, Status: rundir.StatusPass}
	for _, tc := range []struct {
		name   string
		checks []rundir.Check
		facts  Facts
		want   rundir.Verdict
	}{
		{"interrupted beats everything", []rundir.Check{hardFail}, Facts{Interrupted: true, NotRun: "x", ArtifactErr: true}, rundir.VerdictInterrupted},
		{"not run beats a failed check", []rundir.Check{hardFail}, Facts{NotRun: "server died"}, rundir.VerdictLaunchFailed},
		{"hard fail", []rundir.Check{inconcl, hardFail}, Facts{}, rundir.VerdictFailed},
		{"unevaluable fails", []rundir.Check{hardUneval}, Facts{}, rundir.VerdictFailed},
		{"artifact error fails", []rundir.Check{pass}, Facts{ArtifactErr: true}, rundir.VerdictFailed},
		{"artifact error beats inconclusive", []rundir.Check{inconcl}, Facts{ArtifactErr: true}, rundir.VerdictFailed},
		{"inconclusive", []rundir.Check{pass, inconcl, advisoryFail}, Facts{}, rundir.VerdictInconclusive},
		{"advisory fail passes", []rundir.Check{pass, advisoryFail}, Facts{}, rundir.VerdictPassed},
	} {
		if got := LegVerdict(tc.checks, tc.facts); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestSoftenLeavesAlwaysHardAndUnevaluable: a harness-bound leg softens a
// failed timing gate, never an unevaluable one nor a built-in check.
func TestSoftenLeavesAlwaysHardAndUnevaluable(t *testing.T) {
	checks := soften([]rundir.Check{
		{Gate: "harness", Level: gatetable.LevelHard, Status: rundir.StatusInconclusive},
		{Gate: "tick_hz_min", Level: gatetable.LevelHard, Status: rundir.StatusFail},
		{Gate: "tick_ms_p99_max", Level: gatetable.LevelHard, Status: rundir.StatusUnevaluable},
		{Gate: "wire_kbs_max", Level: gatetable.LevelHard, Status: rundir.StatusFail},
		{Gate: "swarm_assert", Title: "swarm assert-min-tick-hz", Level: gatetable.LevelHard, Status: rundir.StatusFail},
		{Gate: "transport", Level: gatetable.LevelHard, Status: rundir.StatusFail},
	}, isTiming)
	want := []rundir.Status{rundir.StatusInconclusive, rundir.StatusInconclusive, rundir.StatusUnevaluable,
		rundir.StatusFail, rundir.StatusInconclusive, rundir.StatusFail}
	for i, c := range checks {
		if c.Status != want[i] {
			t.Errorf("%s: %s, want %s", c.Gate, c.Status, want[i])
		}
	}
}

// TestSoftenOwnTimingFigure: a harness-bound leg softens a failed gate on
// a figure the profile declares timing, and only that one of its own.
func TestSoftenOwnTimingFigure(t *testing.T) {
	p := testProfile()
	p.Figures = gatetable.OwnFigures{
		"physics_ms": {Unit: "ms", Better: "lower", Timing: true, File: &serverwindow.FileFigure{Histogram: "physics.step_ms"}},
		"bodies":     {Better: "higher", File: &serverwindow.FileFigure{Gauge: "bodies"}},
	}
	checks := soften([]rundir.Check{
		{Gate: "harness", Level: gatetable.LevelHard, Status: rundir.StatusInconclusive},
		{Gate: "physics_ms_p99_max", Level: gatetable.LevelHard, Status: rundir.StatusFail},
		{Gate: "bodies_min_min", Level: gatetable.LevelHard, Status: rundir.StatusFail},
	}, timingIn(p))
	if checks[1].Status != rundir.StatusInconclusive || checks[2].Status != rundir.StatusFail {
		t.Errorf("statuses %s %s, want inconclusive (timing) and fail", checks[1].Status, checks[2].Status)
	}
}
