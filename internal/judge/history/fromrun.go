package history

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// Run is what a record says about the run beside its legs' figures.
type Run struct {
	// ID is unique per run (its run directory's name serves).
	ID, Time, Commit, Branch, ProfileHash string
	Runner                                Runner
	// Class overrides Runner.Class() when set (SCALEGATE_RUNNER_CLASS: a
	// fleet of runners a team knows to be alike, named by the team).
	Class string
	// Accepted: the run updated the baseline.
	Accepted bool
	// Baseline is the committed baseline read for the run (nil: none).
	Baseline *baseline.Committed
}

// FromRun returns one record per leg of res (the legs of every run under
// --runs N folded into one, each figure their median, σ̂ and N). A leg
// without a report records nothing: it measured nothing.
func FromRun(res *rundir.RunResult, run Run) []Record {
	var keys []string
	groups := map[string][]rundir.LegResult{}
	for _, l := range res.Legs {
		if l.Report == nil {
			continue
		}
		k := l.Leg.BaselineKey
		if _, ok := groups[k]; !ok {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], l)
	}
	out := make([]Record, 0, len(keys))
	for _, k := range keys {
		legs := groups[k]
		out = append(out, Record{SchemaVersion: SchemaVersion, ID: run.ID + "/" + k, Time: run.Time, Commit: run.Commit, Branch: run.Branch,
			Profile: res.Profile.Name, ProfileHash: run.ProfileHash, Leg: k, RunnerClass: cmp.Or(run.Class, run.Runner.Class()), Runner: run.Runner,
			Verdict: string(foldVerdict(legs)), Accepted: run.Accepted, Figures: figures(res, legs, run.Baseline)})
	}
	return out
}

// foldVerdict is the worst of the legs' verdicts (a record of N runs is
// inconclusive when any run was).
func foldVerdict(legs []rundir.LegResult) rundir.Verdict {
	v := legs[0].Verdict
	for _, l := range legs[1:] {
		if l.Verdict != rundir.VerdictPassed {
			v = l.Verdict
		}
	}
	return v
}

// figures are the leg's gate figures (under the gate's name, a phase-scoped
// one as name@phase) and the baseline's figures (under their own names),
// each folded over the runs.
func figures(res *rundir.RunResult, legs []rundir.LegResult, base *baseline.Committed) map[string]Value {
	samples := map[string][]float64{}
	meta := map[string]Value{}
	for _, l := range legs {
		for _, c := range l.Checks {
			g, ok := res.Profile.LookupGate(c.Gate)
			if !ok || g.Measure == nil || c.Measured == nil || g.Source == gatetable.AcrossTransports {
				continue
			}
			name := g.Name
			if c.Phase != "" {
				name += "@" + c.Phase
			}
			samples[name] = append(samples[name], *c.Measured)
			v := Value{Unit: g.Unit, Better: better(g.Dir), Level: c.Level}
			if thr, ok := res.Profile.GateThreshold(g, l.Leg); ok {
				v.Threshold = &thr
			}
			meta[name] = v
		}
		baselineFigures(l, base, samples, meta)
	}
	out := make(map[string]Value, len(samples))
	for name, s := range samples {
		v := meta[name]
		v.Value = sig6(stats.Median(s))
		if len(s) > 1 {
			sigma := sig6(stats.MADScale * stats.MAD(s))
			v.Sigma, v.N = &sigma, len(s)
		}
		out[name] = v
	}
	return out
}

// baselineFigures adds the baseline's figures of l, whether or not the
// profile baselines: bandwidth is the figure that creeps across PRs.
func baselineFigures(l rundir.LegResult, base *baseline.Committed, samples map[string][]float64, meta map[string]Value) {
	m := gatetable.FromReport(l.Report)
	for _, f := range baseline.Figures() {
		v, err := f.Figure.Read(m)
		if err != nil {
			continue
		}
		name := f.Figure.Name
		samples[name] = append(samples[name], v)
		val := Value{Unit: f.Figure.Unit, Better: Lower}
		for _, c := range l.Checks {
			if c.Gate == f.Gate {
				val.Level = c.Level
			}
		}
		if base != nil {
			if e, ok := base.Lookup(l.Leg.BaselineKey); ok {
				if ref, ok := e.Reference(f.Name); ok {
					r := ref.Value
					val.Baseline = &r
				}
			}
		}
		meta[name] = val
	}
}

func better(d gatetable.Direction) Better {
	if d == gatetable.AtLeast {
		return Higher
	}
	return Lower
}

// RunID makes a record id prefix from a run directory's base name, the
// host and the time, unique enough that two runners' records never collide.
func RunID(dirBase, host, time string) string {
	return strings.ReplaceAll(fmt.Sprintf("%s@%s@%s", dirBase, host, time), " ", "_")
}

// sig6 rounds v to 6 significant digits: more than any figure resolves,
// and a line stays short.
func sig6(v float64) float64 {
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 6, 64), 64)
	if err != nil {
		return v
	}
	return r
}
