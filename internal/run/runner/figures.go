package runner

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// figureGate is one declared gate of one leg whose verdict is a figure
// against a threshold: what calibrate and ab measure run after run.
type figureGate struct {
	leg   profile.Leg
	gate  gatetable.Gate
	phase string
	// threshold is the gate's threshold in this leg; level its level in the
	// tier.
	threshold float64
	level     gatetable.Level
}

// figureGates lists, per leg in order, the profile's declared gates that
// read a figure (gatetable.Gate.Measure), in the gate table's order. Gates
// judged by a rule rather than one figure (admission: all connected, none
// refused, none dropped) have none to measure: they are returned in judged,
// by name, for the caller to say so. A gate a leg does not evaluate (the
// sweep point's spawn_took on a leg without an entity count) is skipped for
// that leg.
func figureGates(p *profile.Profile, strict bool) (out []figureGate, judged []string) {
	tier := p.EffectiveTier(strict)
	for _, leg := range p.Legs() {
		for _, g := range p.GateList() {
			spec, ok := p.Gates[g.Name]
			if !ok {
				continue
			}
			if g.Judge != nil || g.Measure == nil {
				if !slices.Contains(judged, g.Name) {
					judged = append(judged, g.Name)
				}
				continue
			}
			thr, ok := p.GateThreshold(g, leg)
			if !ok {
				continue
			}
			level, _ := g.LevelIn(spec.Level, tier)
			out = append(out, figureGate{leg: leg, gate: g, phase: spec.Phase, threshold: thr, level: level})
		}
	}
	return out, judged
}

// name is the figure's id in calibration.json and ab.json: LEG/GATE, with
// the phase a phase-scoped gate reads.
func (f figureGate) name() string {
	n := f.leg.ID + "/" + f.gate.Name
	if f.phase != "" {
		n += "[" + f.phase + "]"
	}
	return n
}

// title is the figure's row title: the gate's, with the leg when the
// profile has several and the phase when the gate is scoped to one.
func (f figureGate) title(legs int) string {
	t := f.gate.Title
	if f.phase != "" {
		t += " [" + f.phase + "]"
	}
	if legs > 1 {
		t = f.leg.ID + ": " + t
	}
	return t
}

// measure reads the figure from a leg's report through the gate's own
// reader, narrowed to the gate's phase: NaN (missing) when there is no
// report or the reader says the figure is missing, as the gate would call
// it unevaluable.
func (f figureGate) measure(r *report.Report) float64 {
	if r == nil {
		return math.NaN()
	}
	m := gatetable.FromReport(r)
	if f.phase != "" {
		var err error
		if m, err = m.Narrow(f.phase); err != nil {
			return math.NaN()
		}
	}
	v, err := f.gate.Measure(m)
	if err != nil || math.IsInf(v, 0) {
		return math.NaN()
	}
	return v
}

// judgedNote says which declared gates were left out and why.
func judgedNote(judged []string) string {
	if len(judged) == 0 {
		return ""
	}
	return fmt.Sprintf("not measured: %s (judged by a rule over several fields, not one figure against a threshold); "+
		"the runs' summary.md shows each run's verdict on them", strings.Join(judged, ", "))
}
