package history

import (
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// TestFromRunRecordsOwnFigures: a gate on a figure the profile declares
// is recorded in the history like a table gate, under its name, with its
// unit, direction and threshold, so the history gate can judge it.
func TestFromRunRecordsOwnFigures(t *testing.T) {
	thr := 4.0
	p := &profile.Profile{Name: "own",
		Figures: gatetable.OwnFigures{"physics_ms": {Unit: "ms", Better: "lower", File: &serverwindow.FileFigure{Histogram: "physics.step_ms"}}},
		Gates:   profile.Gates{"physics_ms_p99_max": {Threshold: &thr}}}
	v := 2.5
	leg := profile.Leg{ID: "weave", BaselineKey: "own/weave"}
	res := &rundir.RunResult{Profile: p, Legs: []rundir.LegResult{{Leg: leg, Report: &report.Report{},
		Checks: []rundir.Check{{Gate: "physics_ms_p99_max", Level: gatetable.LevelHard, Measured: &v, Status: rundir.StatusPass}}}}}
	recs := FromRun(res, Run{ID: "r1"})
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	got, ok := recs[0].Figures["physics_ms_p99_max"]
	if !ok || got.Value != 2.5 || got.Unit != "ms" || got.Better != better(gatetable.AtMost) || got.Threshold == nil || *got.Threshold != 4 {
		t.Fatalf("physics_ms_p99_max recorded as %+v (present %v)", got, ok)
	}
}
