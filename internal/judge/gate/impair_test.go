package gate

import (
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
	"github.com/scalegate/scalegate/internal/load/swarmcmd"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// impairedFixture is a profile with one impairment phase and a report of a
// run that went through it: 60 Hz before, 40 Hz during, recovered in 3 s.
func impairedFixture() (*profile.Profile, *report.Report) {
	sched, _ := impairment.Schedule{{StartS: 5, DurationS: 10, Settings: impairment.Settings{Loss: 0.1, DelayMs: 50}}}.Normalize()
	p := testProfile()
	p.Baselined = false
	p.Impairment = sched
	r := healthyReport(healthyTick())
	r.Impairment = sched
	r.Relay = &report.RelayStats{Seed: 1, Stats: impairment.Stats{DatagramsDown: 1000, DatagramsUp: 1000, DroppedDown: 50, DroppedUp: 40, Delayed: 800}}
	r.Phases = []report.Stretch{
		{Name: "before", EndS: 5, ObservedServerTickHz: &report.MinMeanMax{Min: 59.8, Mean: 60, Max: 60.1}, SnapshotsReceived: 400},
		{Name: "during", StartS: 5, EndS: 15, ObservedServerTickHz: &report.MinMeanMax{Min: 40, Mean: 45, Max: 50}, SnapshotsReceived: 500},
		{Name: "after", StartS: 15, EndS: 30, ObservedServerTickHz: &report.MinMeanMax{Min: 59.9, Mean: 60, Max: 60}, SnapshotsReceived: 900, RecoverS: f64(3)},
	}
	return p, r
}

func TestImpairmentCheck(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*report.Report)
		status rundir.Status
		detail string
	}{
		{"applied", func(*report.Report) {}, rundir.StatusPass, ""},
		{"impaired nothing", func(r *report.Report) { r.Relay.Stats = impairment.Stats{DatagramsDown: 1000, DatagramsUp: 1000} }, rundir.StatusFail, "impaired none"},
		{"no relay", func(r *report.Report) { r.Relay = nil }, rundir.StatusUnevaluable, "did not route"},
		{"other schedule", func(r *report.Report) { r.Impairment = nil }, rundir.StatusFail, "another impairment"},
		{"relay overflowed", func(r *report.Report) { r.Relay.Overflow = 7 }, rundir.StatusInconclusive, "dropped 7"},
	} {
		p, r := impairedFixture()
		c.mutate(r)
		checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r})
		got, ok := find(checks, "impairment")
		if !ok || got.Status != c.status || !strings.Contains(got.Detail, c.detail) {
			t.Errorf("%s: impairment check %+v, want %s with %q", c.name, got, c.status, c.detail)
		}
	}
	// Without an impairment there is no such check.
	if _, ok := find(Evaluate(Input{SchemaValidated: true, Profile: testProfile(), Report: healthyReport(healthyTick())}), "impairment"); ok {
		t.Error("an unimpaired profile got an impairment check")
	}
}

// Any gate can be scoped to a stretch; it then reads that stretch's
// figures, and a gate reading the run-long server file is unevaluable.
func TestPhaseScopedGates(t *testing.T) {
	for _, c := range []struct {
		name   string
		gate   string
		spec   profile.GateSpec
		status rundir.Status
		detail string
	}{
		{"whole run passes", "tick_hz_min", profile.GateSpec{Threshold: f64(55), Level: gatetable.LevelHard}, rundir.StatusPass, ""},
		{"during fails", "tick_hz_min", profile.GateSpec{Threshold: f64(55), Level: gatetable.LevelHard, Phase: "during"}, rundir.StatusFail, "must be"},
		{"after passes", "tick_hz_min", profile.GateSpec{Threshold: f64(55), Level: gatetable.LevelHard, Phase: "after"}, rundir.StatusPass, ""},
		{"unknown phase", "tick_hz_min", profile.GateSpec{Threshold: f64(55), Level: gatetable.LevelHard, Phase: "spike"}, rundir.StatusUnevaluable, "has no phase \"spike\""},
		{"server gate scoped", "wire_kbs_max", profile.GateSpec{Threshold: f64(150), Level: gatetable.LevelHard, Phase: "during"}, rundir.StatusUnevaluable, "run-long"},
		{"missing figure stays missing", "kbs_max", profile.GateSpec{Threshold: f64(100), Level: gatetable.LevelHard, Phase: "during"}, rundir.StatusUnevaluable, "in phase during missing"},
		{"recover passes", "recover_s_max", profile.GateSpec{Threshold: f64(5), Level: gatetable.LevelHard}, rundir.StatusPass, ""},
		{"recover too slow", "recover_s_max", profile.GateSpec{Threshold: f64(2), Level: gatetable.LevelHard}, rundir.StatusFail, "must be"},
		{"recover on during", "recover_s_max", profile.GateSpec{Threshold: f64(5), Level: gatetable.LevelHard, Phase: "during"}, rundir.StatusUnevaluable, "only on the \"after\""},
	} {
		p, r := impairedFixture()
		p.Gates = profile.Gates{c.gate: c.spec}
		got, ok := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r}), c.gate)
		if !ok || got.Status != c.status || !strings.Contains(got.Detail, c.detail) || got.Phase != c.spec.Phase {
			t.Errorf("%s: %+v, want %s with %q", c.name, got, c.status, c.detail)
		}
	}
	// recover_s null (never recovered) fails with the swarm's reason.
	p, r := impairedFixture()
	p.Gates = profile.Gates{"recover_s_max": {Threshold: f64(30), Level: gatetable.LevelHard}}
	r.Phases[2].RecoverS, r.Phases[2].RecoverNote = nil, "never held"
	if got, _ := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r}), "recover_s_max"); got.Status != rundir.StatusUnevaluable || !strings.Contains(got.Detail, "never held") {
		t.Errorf("null recover_s: %+v", got)
	}
	// Scoped gates are not forwarded to the swarm (its asserts read the
	// whole run); unscoped ones are.
	p.Gates = profile.Gates{"tick_hz_min": {Threshold: f64(55), Level: gatetable.LevelHard, Phase: "during"}, "recover_s_max": {Threshold: f64(9), Level: gatetable.LevelHard}}
	if got := strings.Join(swarmcmd.AssertFlags(p, p.Legs()[0], false), " "); got != "--assert-max-recover-s 9" {
		t.Errorf("AssertFlags = %q", got)
	}
}
