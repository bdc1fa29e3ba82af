package history

import (
	"cmp"
	"slices"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/changepoint"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// Filter selects series; an empty field selects all. RunnerClass matches
// a class or its ClassID.
type Filter struct {
	Profile, Leg, Figure, RunnerClass string
}

func (f Filter) class(c string) bool {
	return f.RunnerClass == "" || f.RunnerClass == c || f.RunnerClass == ClassID(c)
}

// Series is one figure of one leg of one profile on one runner class,
// oldest first.
type Series struct {
	Profile, Leg, RunnerClass, Figure string
	Unit                              string
	Better                            Better
	Points                            []Point
	// Skipped counts the records left out: inconclusive legs, whose
	// timings are the machine's.
	Skipped int
}

// Point is one record's value in a series.
type Point struct {
	ID, Commit, Time, Verdict string
	ProfileHash               string
	Accepted                  bool
	Value                     float64
	Level                     gatetable.Level
	Threshold, Baseline       *float64
}

// Values returns the series' values, oldest first.
func (s Series) Values() []float64 {
	v := make([]float64, len(s.Points))
	for i, p := range s.Points {
		v[i] = p.Value
	}
	return v
}

// Name is "profile leg figure", as the history command prints it.
func (s Series) Name() string { return s.Leg + " " + s.Figure }

// Build groups records (oldest first, as Load returns them) into series,
// in profile, leg, class and figure order.
func Build(records []Record, f Filter) []Series {
	type key struct{ profile, leg, class, figure string }
	by := map[key]*Series{}
	for _, r := range records {
		if (f.Profile != "" && r.Profile != f.Profile) || (f.Leg != "" && r.Leg != f.Leg) || !f.class(r.RunnerClass) {
			continue
		}
		for name, v := range r.Figures {
			if f.Figure != "" && name != f.Figure {
				continue
			}
			k := key{r.Profile, r.Leg, r.RunnerClass, name}
			s := by[k]
			if s == nil {
				s = &Series{Profile: r.Profile, Leg: r.Leg, RunnerClass: r.RunnerClass, Figure: name}
				by[k] = s
			}
			s.Unit, s.Better = v.Unit, v.Better
			if r.Verdict == "inconclusive" {
				s.Skipped++
				continue
			}
			s.Points = append(s.Points, Point{ID: r.ID, Commit: r.Commit, Time: r.Time, Verdict: r.Verdict, ProfileHash: r.ProfileHash, Accepted: r.Accepted,
				Value: v.Value, Level: v.Level, Threshold: v.Threshold, Baseline: v.Baseline})
		}
	}
	out := make([]Series, 0, len(by))
	for _, s := range by {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b Series) int {
		return cmp.Or(strings.Compare(a.Profile, b.Profile), strings.Compare(a.Leg, b.Leg),
			strings.Compare(a.RunnerClass, b.RunnerClass), strings.Compare(a.Figure, b.Figure))
	})
	return out
}

// Change is a change point of a series, named by its commits.
type Change struct {
	changepoint.ChangePoint
	// Commit is the first run's commit after the change, PrevCommit the
	// last one's before it: the change landed in PrevCommit..Commit.
	Commit, PrevCommit, Time string
	// Worse: the figure moved the way it gets worse.
	Worse bool
}

// Analyze finds the change points of s at p-value p (0: the default).
func Analyze(s Series, p float64) []Change {
	return changes(s, changepoint.Detect(s.Values(), changepoint.Options{PValue: p}))
}

func changes(s Series, cps []changepoint.ChangePoint) []Change {
	out := make([]Change, len(cps))
	for i, c := range cps {
		at := s.Points[c.Index]
		out[i] = Change{ChangePoint: c, Commit: at.Commit, PrevCommit: s.Points[c.Index-1].Commit, Time: at.Time,
			Worse: (c.After > c.Before) == (s.Better == Lower) && c.After != c.Before}
	}
	return out
}
