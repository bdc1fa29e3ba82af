package gate

import (
	"fmt"

	"github.com/scalegate/scalegate/internal/gatetable"
	"github.com/scalegate/scalegate/internal/rundir"
)

// baseline compares payload and wire KB/s with the committed keys.
func (e *evaluator) baseline() {
	key := e.in.Leg.BaselineKey
	entry, have := e.in.Baseline.Lookup(key)
	tol := e.in.Profile.Baseline.TolerancePct
	path := DefaultBaselinePath
	if e.in.Baseline != nil && e.in.Baseline.Path != "" {
		path = e.in.Baseline.Path
	}
	type baselined struct {
		gate, title string
		fig         gatetable.Figure
		base        float64
		have        bool // the baseline entry carries this figure
	}
	var checks []baselined
	for _, f := range baselinedFigures {
		b := baselined{gate: f.gate, title: f.title, fig: f.fig}
		if v := f.entry(&entry); v != nil && have {
			b.base, b.have = *v, true
		}
		// Optional figures (bytes per entity) apply where either side has
		// them: a baseline that recorded one demands it (a swarm that
		// stopped decoding must not pass), and a run that has one whose
		// baseline entry lacks it is a missing key.
		if f.optional && !b.have {
			if _, err := f.fig.Read(e.m); err != nil {
				continue
			}
		}
		checks = append(checks, b)
	}
	for _, b := range checks {
		c := rundir.Check{Gate: b.gate, Title: b.title, Level: gatetable.LevelHard}
		v, err := b.fig.Read(e.m)
		if err == nil {
			c.Measured, c.MeasuredText = &v, fmtNum(v)
		} else {
			c.MeasuredText = "missing"
		}
		switch {
		case e.in.UpdateBaseline:
			c.Threshold = "recorded by --update-baseline"
			c.Status = rundir.StatusRecorded
			if err != nil {
				c.Status, c.Detail = rundir.StatusUnevaluable, err.Error()
			}
			if b.have {
				c.Baseline = fmt.Sprintf("%s → %s", fmtNum(b.base), c.MeasuredText)
			}
		case !b.have:
			c.Threshold = fmt.Sprintf("≤ baseline +%s%%", fmtNum(tol))
			c.Status = rundir.StatusUnevaluable
			c.Baseline = "missing"
			c.Detail = fmt.Sprintf("no baseline key %q in %s: run `scalegate --profile %s --update-baseline` on a passing run to record it",
				key, path, e.in.Profile.Name)
			if have {
				c.Detail = fmt.Sprintf("baseline key %q in %s does not record this figure: run `scalegate --profile %s --update-baseline` on a passing run to record it",
					key, path, e.in.Profile.Name)
			}
		default:
			limit := b.base * (1 + tol/100)
			c.Threshold = fmt.Sprintf("≤ %s (baseline %s +%s%%)", fmtNum(limit), fmtNum(b.base), fmtNum(tol))
			if err != nil {
				c.Status, c.Detail = rundir.StatusUnevaluable, err.Error()
				break
			}
			c.Baseline = fmt.Sprintf("%s (%s)", fmtNum(b.base), pctDelta(v, b.base))
			c.Status = rundir.StatusPass
			if v > limit {
				c.Status, c.Detail = rundir.StatusFail, fmt.Sprintf("%s over baseline: bytes moved; fix it, or if intended regenerate with --update-baseline", pctDelta(v, b.base))
			}
		}
		e.add(c)
	}
}
