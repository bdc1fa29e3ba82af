// Package gate decides a leg from its swarm report and the server's metrics.
// It evaluates every check of the leg (the built-in checks, the gates the
// profile declares, the baseline), softens what the harness or a partial
// load makes unattributable, and folds the checks into the leg's and the
// run's verdict, in one place (verdict.go). It also reads, compares and
// rewrites the baseline file, and finds a capacity sweep's knee. It
// imports neither CUE nor the processes it judges: its inputs are data.
package gate

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// Input is everything a leg's evaluation reads.
type Input struct {
	Profile *profile.Profile
	Leg     profile.Leg
	// Strict forces the strict tier (--strict).
	Strict bool
	// Report is the parsed swarm report; nil when ReportErr says why.
	Report    *report.Report
	ReportErr error
	// Baseline is the committed baseline; UpdateBaseline turns the
	// baseline gates into "recorded".
	Baseline       *baseline.Committed
	UpdateBaseline bool
	// SchemaValidated says the report file was checked against the
	// report schema, and SchemaErr what that found (nil: valid). The
	// runner validates (it needs the CUE schema, which this package does
	// not import); a report nobody validated is unevaluable, never valid.
	SchemaValidated bool
	SchemaErr       error
	// Witness is what the runner saw of the leg apart from the report
	// (nil: a report judged without its run).
	Witness *Witness
}

// Evaluate checks every gate of a leg. It never trusts the swarm's own
// verdict alone: each gate is recomputed from the report and the embedded
// server_tick with the gate table's rule (the one the swarm's asserts use),
// and any swarm assert that failed is carried as well.
func Evaluate(in Input) []rundir.Check {
	if in.Report == nil {
		return unreadReport(in)
	}
	e := &evaluator{in: in, r: in.Report, m: gatetable.FromReport(in.Report), tier: in.Profile.EffectiveTier(in.Strict)}
	e.transport()
	e.loadHappened()
	e.delivery()
	e.snapshotDecode()
	e.impaired()
	e.shards()
	for _, g := range in.Profile.GateList() {
		if spec, ok := in.Profile.Gates[g.Name]; ok {
			e.declared(g, spec)
		}
	}
	if in.Profile.Baselined {
		e.baseline()
	}
	e.earlyEnd()
	e.swarmAsserts()
	e.harness()
	e.harnessErrors()
	e.hostCheck()
	e.realtimePriority()
	if _, ok := profile.TracePath(in.Leg.Pattern); ok {
		e.add(traceCheck(e.r, nil))
	}
	e.schema()
	return soften(e.out, timingIn(in.Profile))
}

// timingIn is isTiming with p's own figures: a gate on one declared
// timing, and the baseline check of a timing figure (input latency, or an
// own figure declared timing), is a timing check (a harness-bound or busy
// leg makes its failure inconclusive, as its gate's).
func timingIn(p *profile.Profile) func(rundir.Check) bool {
	baselineTiming := map[string]bool{}
	for _, f := range append(baseline.Figures(), baseline.OwnFigures(p)...) {
		baselineTiming[f.Gate] = f.Timing
	}
	return func(c rundir.Check) bool {
		if g, ok := p.LookupGate(c.Gate); ok && g.Own {
			return g.Timing
		}
		if timing, ok := baselineTiming[c.Gate]; ok {
			return timing
		}
		return isTiming(c)
	}
}

// unreadReport: without a report nothing is evaluable. Every declared gate
// is listed as unevaluable so the summary shows what was not checked.
func unreadReport(in Input) []rundir.Check {
	why := "swarm report not read"
	if in.ReportErr != nil {
		why = in.ReportErr.Error()
	}
	out := []rundir.Check{{Gate: gatetable.CheckReport, Title: "swarm report read", Level: gatetable.LevelHard, Threshold: "present and valid",
		MeasuredText: "unread", Status: rundir.StatusUnevaluable, Detail: why}}
	for _, name := range declaredGates(in.Profile) {
		out = append(out, rundir.Check{Gate: name, Title: name, Level: gatetable.LevelHard, MeasuredText: "—",
			Status: rundir.StatusUnevaluable, Detail: "no report: an unread report is not a clean one"})
	}
	if _, ok := profile.TracePath(in.Leg.Pattern); ok {
		out = append(out, traceCheck(nil, errors.New(why)))
	}
	return out
}

// declaredGates lists the checks a profile asks for, in the summary's
// order: the built-in checks, the declared gates in table order, the
// baseline figures every leg has (payload and wire KB/s, and the gated
// own figures).
func declaredGates(p *profile.Profile) []string {
	names := []string{gatetable.CheckTransport, gatetable.CheckLoad, gatetable.CheckDelivery}
	if len(p.Impairment) > 0 {
		names = append(names, gatetable.CheckImpairment)
	}
	if p.Shards > 1 {
		names = append(names, gatetable.CheckShards)
	}
	for _, g := range p.GateList() {
		if p.Gates.Has(g.Name) && g.Source != gatetable.AcrossTransports {
			names = append(names, g.Name)
		}
	}
	if p.Baselined {
		names = append(names, gatetable.CheckBaselineKBs, gatetable.CheckBaselineWireKBs)
		for _, f := range baseline.OwnFigures(p) {
			names = append(names, f.Gate)
		}
	}
	return names
}

type evaluator struct {
	in   Input
	r    *report.Report
	m    *gatetable.Metrics
	tier gatetable.Tier
	out  []rundir.Check
	// stale are the baselined figures better than their baseline by
	// more than the margin (baseline.Limit.Stale), for the stale check.
	stale []string
}

func (e *evaluator) add(c rundir.Check) { e.out = append(e.out, c) }

// declared evaluates one gate the profile declares.
func (e *evaluator) declared(g gatetable.Gate, spec profile.GateSpec) {
	thr, ok := e.in.Profile.GateThreshold(g, e.in.Leg)
	if !ok {
		return
	}
	level, why := g.LevelIn(spec.Level, e.tier)
	c := rundir.Check{Gate: g.Name, Title: g.Title, Level: level, Threshold: g.Bound(thr), Detail: why, Phase: spec.Phase}
	m := e.m
	if spec.Phase != "" {
		c.Title += " [" + spec.Phase + "]"
		var err error
		if m, err = e.m.Narrow(spec.Phase); err != nil {
			c.Status, c.MeasuredText, c.Detail = rundir.StatusUnevaluable, "missing", rundir.JoinDetail(err.Error(), why)
			e.add(c)
			return
		}
	}
	if g.Windowed && spec.WindowS != nil {
		m = m.WithWindow(*spec.WindowS)
	}
	o := g.Evaluate(m, thr)
	c.Window = g.WindowRead(m)
	c.Measured, c.MeasuredText = o.Measured, o.Text
	if o.Measured != nil && g.Unit != "" {
		c.MeasuredText += " " + g.Unit
	}
	switch {
	case o.Err != nil:
		c.Status, c.Detail = rundir.StatusUnevaluable, rundir.JoinDetail(o.Err.Error(), c.Detail)
	case o.Pass:
		c.Status, c.Detail = rundir.StatusPass, rundir.JoinDetail(c.Detail, o.Detail)
	default:
		why := o.Detail
		if why == "" || g.Explain != nil {
			why = rundir.JoinDetail(fmt.Sprintf("%s = %s, must be %s", g.Metric, c.MeasuredText, c.Threshold), o.Detail)
		}
		c.Status, c.Detail = rundir.StatusFail, rundir.JoinDetail(why, c.Detail)
	}
	if spec.Phase == "" {
		e.endedOn(&c)
	}
	e.add(c)
}

// fmtMs shows a millisecond figure to 0.01 ms, enough to tell a mean
// 1 % over a 16.67 ms period from one on it.
func fmtMs(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func fmtNum(v float64) string { return gatetable.FormatNumber(v) }

func pctDelta(v, base float64) string {
	if base == 0 {
		if v == 0 {
			return "±0%"
		}
		return "baseline 0"
	}
	return fmt.Sprintf("%+.1f%%", (v-base)/base*100)
}

func orMissing(s string) string {
	if s == "" {
		return "(missing)"
	}
	return s
}
