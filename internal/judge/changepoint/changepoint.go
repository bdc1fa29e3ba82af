// Package changepoint finds where a series of runs changed level (E-Divisive means).
//
// The method is Otava's (formerly Hunter, after MongoDB's): E-Divisive means
// (Matteson and James, 2014) proposes the split that best separates a
// segment's distributions, and a two-sample Student's t-test between the
// segments either side of it decides whether it is a change. The
// permutation test of the original paper is replaced by the t-test, as
// Otava does, so the same series always gives the same answer. Candidates
// are accepted at ten times the p-value (a weak pass) and every change
// point is then re-tested against its final neighbours at the p-value
// itself, weakest first, until all hold.
package changepoint

import (
	"cmp"
	"math"
	"slices"

	"github.com/scalegate/scalegate/internal/judge/stats"
)

// The defaults.
const (
	// DefaultPValue is the significance a change point must reach. It is
	// a tenth of Otava's 0.001: the t-test judges the split E-Divisive
	// chose because the series differ most there, so the share of
	// pure-noise histories with a false change point is several times the
	// p-value (3.2 % of 80-run histories at 0.001, 0.4 % at 0.0001:
	// docs/history.md has the table).
	DefaultPValue = 0.0001
	// WeakFactor: candidates pass at WeakFactor × the p-value before the
	// re-test at the p-value.
	WeakFactor = 10
)

// Options tune Detect.
type Options struct {
	// PValue is the significance a change point must reach (0 takes
	// DefaultPValue).
	PValue float64
	// OpenEnd lets the newest point open a segment alone, so a gate can
	// fail on the run that opens a change; elsewhere a segment holds at
	// least two points, so one outlier inside the history is not named a
	// change point.
	OpenEnd bool
}

// ChangePoint is one change of level: the series' Index-th point (0-based)
// is the first of the new level.
type ChangePoint struct {
	Index int
	// Before and After are the means of the segments either side (as
	// re-tested: the neighbouring change points bound them).
	Before, After float64
	// NBefore and NAfter are the segments' lengths.
	NBefore, NAfter int
	// PValue is the two-sided Student's t-test p-value between them.
	PValue float64
	// ChangePct is (After − Before) / |Before| in percent; LowPct and
	// HighPct its 95 % confidence interval (pooled t).
	ChangePct, LowPct, HighPct float64
}

// Detect returns the change points of x in index order. Non-finite values
// must be removed by the caller (a missing figure is not a level).
func Detect(x []float64, o Options) []ChangePoint {
	p := cmp.Or(o.PValue, DefaultPValue)
	cuts := propose(x, p*WeakFactor, o.OpenEnd)
	cuts = retest(x, cuts, p)
	relocate(x, cuts, o.OpenEnd)
	out := make([]ChangePoint, 0, len(cuts))
	bounds := withEnds(cuts, len(x))
	for i := 1; i < len(bounds)-1; i++ {
		out = append(out, describe(x, bounds[i-1], bounds[i], bounds[i+1]))
	}
	return out
}

// Segments returns the means of the stretches between change points (one
// per segment, oldest first) and their starting indices.
func Segments(x []float64, cps []ChangePoint) (starts []int, means []float64) {
	cuts := make([]int, len(cps))
	for i, c := range cps {
		cuts[i] = c.Index
	}
	b := withEnds(cuts, len(x))
	for i := 0; i+1 < len(b); i++ {
		starts = append(starts, b[i])
		means = append(means, mean(x[b[i]:b[i+1]]))
	}
	return starts, means
}

// relocate moves each cut to the split of its neighbours' span with the
// largest m·n/(m+n)·(mean difference)², the maximum-likelihood location of
// one shift in the mean under normal noise. E-Divisive finds that a
// distribution changed; this places the change more precisely, and never
// weakens its t-test (the same statistic, maximised).
func relocate(x []float64, cuts []int, openEnd bool) {
	for i := range cuts {
		lo, hi := 0, len(x)
		if i > 0 {
			lo = cuts[i-1]
		}
		if i+1 < len(cuts) {
			hi = cuts[i+1]
		}
		min := minSizes(hi == len(x) && openEnd)
		seg := x[lo:hi]
		best, bestS := cuts[i]-lo, -1.0
		total := 0.0
		for _, v := range seg {
			total += v
		}
		left := 0.0
		for t := 1; t < len(seg); t++ {
			left += seg[t-1]
			if t < min.left || len(seg)-t < min.right {
				continue
			}
			m, k := float64(t), float64(len(seg)-t)
			d := (total-left)/k - left/m
			if s := m * k / (m + k) * d * d; s > bestS {
				best, bestS = t, s
			}
		}
		cuts[i] = lo + best
	}
}

// propose adds, one at a time, the best E-Divisive split of any segment
// that passes the t-test at weak, until none does.
func propose(x []float64, weak float64, openEnd bool) []int {
	var cuts []int
	for {
		bounds := withEnds(cuts, len(x))
		var cands []candidate
		for i := 0; i+1 < len(bounds); i++ {
			a, b := bounds[i], bounds[i+1]
			tau, q, ok := bestSplit(x[a:b], minSizes(b == len(x) && openEnd))
			if !ok {
				continue
			}
			cands = append(cands, candidate{at: a + tau, q: q, lo: a, hi: b})
		}
		slices.SortFunc(cands, func(c, d candidate) int { return cmp.Compare(d.q, c.q) })
		added := false
		for _, c := range cands {
			if pValue(x[c.lo:c.at], x[c.at:c.hi]) <= weak {
				cuts = append(cuts, c.at)
				slices.Sort(cuts)
				added = true
				break
			}
		}
		if !added {
			return cuts
		}
	}
}

type candidate struct {
	at, lo, hi int
	q          float64
}

// sizes is the fewest points a split may leave on its left and right.
type sizes struct{ left, right int }

func minSizes(openEnd bool) sizes {
	if openEnd {
		return sizes{2, 1}
	}
	return sizes{2, 2}
}

// retest drops, weakest first, every cut whose segments either side no
// longer differ at p once its neighbours are final.
func retest(x []float64, cuts []int, p float64) []int {
	for len(cuts) > 0 {
		b := withEnds(cuts, len(x))
		worst, worstP := -1, p
		for i := 1; i < len(b)-1; i++ {
			if pv := pValue(x[b[i-1]:b[i]], x[b[i]:b[i+1]]); pv > worstP {
				worst, worstP = i-1, pv
			}
		}
		if worst < 0 {
			return cuts
		}
		cuts = slices.Delete(cuts, worst, worst+1)
	}
	return cuts
}

func withEnds(cuts []int, n int) []int {
	b := make([]int, 0, len(cuts)+2)
	b = append(b, 0)
	b = append(b, cuts...)
	return append(b, n)
}

func describe(x []float64, lo, at, hi int) ChangePoint {
	l, r := x[lo:at], x[at:hi]
	c := ChangePoint{Index: at, Before: mean(l), After: mean(r), NBefore: len(l), NAfter: len(r), PValue: pValue(l, r)}
	if c.Before == 0 {
		c.ChangePct, c.LowPct, c.HighPct = math.NaN(), math.NaN(), math.NaN()
		return c
	}
	half := halfWidth95(l, r)
	scale := 100 / math.Abs(c.Before)
	d := c.After - c.Before
	c.ChangePct, c.LowPct, c.HighPct = d*scale, (d-half)*scale, (d+half)*scale
	return c
}

// mean is stats.MeanSD's mean: the one implementation of the math.
func mean(v []float64) float64 {
	m, _ := stats.MeanSD(v)
	return m
}
