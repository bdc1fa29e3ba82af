package gate

import (
	"fmt"
	"math"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// baseline compares payload KB/s, wire KB/s and bytes per entity with the
// committed key. The limit is baseline.NewLimit's: the figure
// × (1 + tolerance_pct/100) for a single-run entry (as in version 1), and
// median + max(tolerance, spread_k × σ̂, worst run − median) for an entry
// recorded from N runs; the threshold shows every term.
func (e *evaluator) baseline() {
	entry, have := e.in.Baseline.Lookup(e.in.Leg.BaselineKey)
	path := baseline.DefaultPath
	if e.in.Baseline != nil && e.in.Baseline.Path != "" {
		path = e.in.Baseline.Path
	}
	for _, b := range e.baselinedFigures(entry, have) {
		e.add(e.baselineCheck(b, entry, have, path))
	}
	e.staleCheck(path)
}

// staleCheck reports, as advisory, the figures that improved past their
// baseline's margin: until the baseline is regenerated, a change that
// gives the gain back passes every baseline check. Present only then, and
// only on a leg whose hard checks so far all passed.
func (e *evaluator) staleCheck(path string) {
	if len(e.stale) == 0 {
		return
	}
	for _, c := range e.out {
		if c.Level == gatetable.LevelHard && c.Status != rundir.StatusPass {
			// A leg that failed is no gain to lock in: a server that stops
			// sending also sends fewer bytes.
			return
		}
	}
	c := rundir.Check{Gate: gatetable.CheckBaselineStale, Title: "baseline stale", Level: gatetable.LevelAdvisory,
		Status: rundir.StatusFail, Threshold: "no figure better than its baseline by more than the limit's margin",
		MeasuredText: fmt.Sprintf("%d figure(s) past the margin", len(e.stale))}
	c.Detail = fmt.Sprintf("baseline stale: update it to lock in the gain (`scalegate --profile %s --update-baseline --runs 5`, then commit %s); until then a regression back to the old level passes: %s",
		e.in.Profile.Name, path, strings.Join(e.stale, "; "))
	e.add(c)
}

// baselined is one baseline figure the leg is checked on, with its
// reference in the leg's baseline entry.
type baselined struct {
	gate, title, name string
	fig               gatetable.Figure
	dir               gatetable.Direction
	ref               baseline.Reference
	have              bool // the baseline entry carries this figure
	timing            bool // tiered (gatetable.StrictOnlyLevel), recorded only from ≥ MinRuns runs
	moved             string
}

// baselinedFigures is the baseline figures that apply to this leg, in
// baseline.Figures order, each with its reference when the entry (have)
// records it; all are picked before any is checked.
func (e *evaluator) baselinedFigures(entry baseline.Entry, have bool) []baselined {
	var checks []baselined
	for _, f := range append(baseline.Figures(), baseline.OwnFigures(e.in.Profile)...) {
		b := baselined{gate: f.Gate, title: f.Title, name: f.Name, fig: f.Figure, dir: f.Dir, timing: f.Timing, moved: f.Moved}
		if have {
			b.ref, b.have = entry.Reference(f.Name)
		}
		// Optional figures (bytes per entity) apply where either side has
		// them: a baseline that recorded one demands it (a swarm that
		// stopped decoding must not pass), and a run that has one whose
		// baseline entry lacks it is a missing key.
		if f.Optional && !b.have {
			if _, err := f.Figure.Read(e.m); err != nil {
				continue
			}
		}
		checks = append(checks, b)
	}
	return checks
}

// baselineCheck is the check of one baselined figure: recorded under
// --update-baseline, unevaluable without a reference (have: the entry
// exists, at path), else judged against the entry's limit.
func (e *evaluator) baselineCheck(b baselined, entry baseline.Entry, have bool, path string) rundir.Check {
	c := e.baselineJudged(b, entry, have, path)
	if have && !b.have && baseline.IsOwn(b.name) && !e.in.UpdateBaseline {
		// A gate added to a baselined profile (or a profile gated by an
		// older scalegate) has an entry that never recorded its figure: the
		// row says so and how to record it, and it does not fail the run
		// (docs/compatibility.md: an old baseline never fails on a figure
		// it never had).
		c.Level = gatetable.LevelAdvisory
		c.Detail = rundir.JoinDetail(c.Detail, "advisory until recorded: the entry predates this gate")
		return c
	}
	if b.timing {
		// A timing figure moves with the machine, like the tick budget:
		// hard in the strict tier (the reference machine the baseline was
		// recorded on), advisory elsewhere, where the absolute budget, ab
		// and the history gate judge it hard.
		var why string
		c.Level, why = gatetable.StrictOnlyLevel(e.tier)
		c.Detail = rundir.JoinDetail(c.Detail, why)
	}
	return c
}

// baselineJudged is baselineCheck's verdict at the hard level.
func (e *evaluator) baselineJudged(b baselined, entry baseline.Entry, have bool, path string) rundir.Check {
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
		} else if b.timing {
			c.Threshold = fmt.Sprintf("recorded by --update-baseline --runs N (N ≥ %d; one run records no timing figure)", baseline.MinRuns)
		}
		if b.have {
			c.Baseline = fmt.Sprintf("%s → %s", fmtNum(b.ref.Value), c.MeasuredText)
		}
	case !b.have:
		e.missingReference(&c, b.dir, have, path)
		if b.timing {
			c.Detail += fmt.Sprintf(" (a timing figure is recorded only with --runs N, N ≥ %d)", baseline.MinRuns)
		}
	default:
		e.judgeBaseline(&c, b, entry, v, err)
	}
	return c
}

// missingReference makes c unevaluable for want of a reference: no entry
// for the leg's key in the baseline at path, or (have) an entry that does
// not record the figure; either way the detail says how to record it.
func (e *evaluator) missingReference(c *rundir.Check, dir gatetable.Direction, have bool, path string) {
	key := e.in.Leg.BaselineKey
	c.Threshold = fmt.Sprintf("%s baseline %s%s%%", dir.Symbol(), towards(dir), fmtNum(e.in.Profile.Baseline.TolerancePct))
	c.Status = rundir.StatusUnevaluable
	c.Baseline = "missing"
	c.Detail = fmt.Sprintf("no baseline key %q in %s: run `scalegate --profile %s --update-baseline` on a passing run to record it",
		key, path, e.in.Profile.Name)
	if have {
		c.Detail = fmt.Sprintf("baseline key %q in %s does not record this figure: run `scalegate --profile %s --update-baseline` on a passing run to record it",
			key, path, e.in.Profile.Name)
	}
}

// judgeBaseline compares a measured figure (err: missing) with its limit
// (baseline.Committed.Limit: the one computation calibrate reads too).
func (e *evaluator) judgeBaseline(c *rundir.Check, b baselined, entry baseline.Entry, v float64, err error) {
	lim, _, lerr := e.in.Baseline.LimitDir(e.in.Profile, e.in.Leg.BaselineKey, b.name, b.dir)
	if lerr != nil {
		c.Threshold, c.Status = fmt.Sprintf("%s baseline %s%s%%", b.dir.Symbol(), towards(b.dir), fmtNum(e.in.Profile.Baseline.TolerancePct)), rundir.StatusUnevaluable
		c.Detail = lerr.Error()
		return
	}
	c.Threshold = lim.Text()
	if err != nil {
		c.Status, c.Detail = rundir.StatusUnevaluable, err.Error()
		return
	}
	delta := pctDelta(v, lim.Base)
	if s := lim.Sigmas(v); !math.IsNaN(s) {
		delta += fmt.Sprintf(", %+.1f σ̂", s)
	}
	c.Baseline = fmt.Sprintf("%s (%s; %s)", fmtNum(lim.Base), delta, entry.DescribeRuns())
	c.Status = rundir.StatusPass
	if lim.Stale(v) {
		e.stale = append(e.stale, fmt.Sprintf("%s %s, %s against the baseline %s (margin %s)",
			b.name, fmtNum(v), pctDelta(v, lim.Base), fmtNum(lim.Base), fmtNum(lim.Margin)))
	}
	if !lim.Holds(v) {
		c.Status = rundir.StatusFail
		c.Detail = fmt.Sprintf("%s %s baseline: %s; fix it, or if intended regenerate with --update-baseline", pctDelta(v, lim.Base), beyond(b.dir), b.moved)
		if lim.Runs > 1 {
			c.Detail += fmt.Sprintf(" (the limit's margin %s was set by the %s term)", fmtNum(lim.Margin), lim.By)
		}
	}
}

// beyond says which side of its baseline a failing figure is on.
func beyond(dir gatetable.Direction) string {
	if dir == gatetable.AtLeast {
		return "under"
	}
	return "over"
}

// towards is the sign of a baseline limit's margin: above the baseline
// for a figure that must stay at most, below for one that must stay at
// least.
func towards(dir gatetable.Direction) string {
	if dir == gatetable.AtLeast {
		return "−"
	}
	return "+"
}
