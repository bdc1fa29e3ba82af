package runner

import (
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// TestFigureGatesHoldOwnFigures: scalegate ab and calibrate judge a gate
// on a figure the profile declares like a table gate: it is among the
// leg's figure gates, with its threshold and its tier's level (a figure
// declared timing is advisory in the pr tier).
func TestFigureGatesHoldOwnFigures(t *testing.T) {
	thr := 4.0
	p := &profile.Profile{Name: "t", Tier: gatetable.TierPR, Clients: 8, Patterns: []string{"weave"},
		Figures: gatetable.OwnFigures{"physics_ms": {Unit: "ms", Better: "lower", Timing: true, File: &serverwindow.FileFigure{Histogram: "physics.step_ms"}}},
		Gates:   profile.Gates{"physics_ms_p99_max": {Threshold: &thr}}}
	got, _ := figureGates(p, false)
	if len(got) != 1 || got[0].gate.Name != "physics_ms_p99_max" || got[0].threshold != 4 || got[0].level != gatetable.LevelAdvisory {
		t.Fatalf("figure gates %+v", got)
	}
	if got, _ := figureGates(p, true); len(got) != 1 || got[0].level != gatetable.LevelHard {
		t.Fatalf("strict: %+v", got)
	}
}
