package history

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/changepoint"
)

// The history gate's defaults (profile history block).
const (
	DefaultMinRuns      = 10
	DefaultMaxChangePct = 10.0
)

// Gate is the history gate: a run fails when the level its record opens
// is worse than the reference level by more than MaxChangePct, and the
// history between them holds a change point at PValue. The reference
// level is that of the segment holding the newest accepted record (a run
// that updated the baseline), else the oldest segment: so five +3 % steps
// fail on the run where their sum crosses 10 %, though each alone passes.
type Gate struct {
	MinRuns      int
	PValue       float64
	MaxChangePct float64
}

// WithDefaults fills the unset fields.
func (g Gate) WithDefaults() Gate {
	g.MinRuns = cmp.Or(g.MinRuns, DefaultMinRuns)
	g.PValue = cmp.Or(g.PValue, changepoint.DefaultPValue)
	g.MaxChangePct = cmp.Or(g.MaxChangePct, DefaultMaxChangePct)
	return g
}

// Judgement is the gate on one series whose last point is the run judged.
type Judgement struct {
	Series Series
	// Runs is the points judged (the run included); Enough is Runs ≥
	// MinRuns (fewer: the gate is advisory and says so).
	Runs   int
	Enough bool
	// Ref and Now are the reference and the newest segment: their first
	// point and mean. Equal when nothing changed.
	RefStart, NowStart int
	RefMean, NowMean   float64
	// WorsePct is how much worse Now is than Ref in percent (negative: better).
	WorsePct float64
	// Changes are the change points between Ref and Now.
	Changes []Change
	// Breach: WorsePct > MaxChangePct across at least one change point.
	Breach bool
}

// Judge judges the newest point of s.
func (g Gate) Judge(s Series) Judgement {
	g = g.WithDefaults()
	x := s.Values()
	j := Judgement{Series: s, Runs: len(x), Enough: len(x) >= g.MinRuns}
	if len(x) == 0 {
		return j
	}
	cps := changepoint.Detect(x, changepoint.Options{PValue: g.PValue, OpenEnd: true})
	starts, means := changepoint.Segments(x, cps)
	ref := refSegment(s, starts)
	j.RefStart, j.RefMean = starts[ref], means[ref]
	j.NowStart, j.NowMean = starts[len(starts)-1], means[len(means)-1]
	all := changes(s, cps)
	j.Changes = all[ref:]
	if j.RefMean != 0 {
		d := (j.NowMean - j.RefMean) / math.Abs(j.RefMean) * 100
		if s.Better == Higher {
			d = -d
		}
		j.WorsePct = d
	}
	j.Breach = len(j.Changes) > 0 && j.WorsePct > g.MaxChangePct
	return j
}

// refSegment is the index of the segment holding the newest accepted
// point, else 0.
func refSegment(s Series, starts []int) int {
	ref := 0
	for i, p := range s.Points {
		if !p.Accepted {
			continue
		}
		for k, st := range starts {
			if st <= i {
				ref = k
			}
		}
	}
	return ref
}

// Text says the judgement in one line: the change since the reference and
// the commits that made it.
func (j Judgement) Text(g Gate) string {
	g = g.WithDefaults()
	s := j.Series
	if len(j.Changes) == 0 {
		return fmt.Sprintf("%s: no change point over %d runs", s.Figure, j.Runs)
	}
	var steps []string
	for _, c := range j.Changes {
		steps = append(steps, fmt.Sprintf("%s..%s %+.1f %%", short(c.PrevCommit), short(c.Commit), c.ChangePct))
	}
	ref := s.Points[j.RefStart]
	return fmt.Sprintf("%s: %s → %s %s (%+.1f %% worse, limit %g %%) since %s over %d change point(s): %s",
		s.Figure, num(j.RefMean), num(j.NowMean), s.Unit, j.WorsePct, g.MaxChangePct, short(ref.Commit), len(j.Changes), strings.Join(steps, ", "))
}

func short(commit string) string {
	if len(commit) > 10 {
		return commit[:10]
	}
	return commit
}

func num(v float64) string { return fmt.Sprintf("%.4g", v) }
