package changepoint

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/scalegate/scalegate/internal/judge/stats"
)

// pooled returns the pooled standard deviation of a and b and its degrees
// of freedom (len(a)+len(b)−2); df ≤ 0 when there are too few points. A
// one-point side adds no spread (its own is undefined) and one degree less.
func pooled(a, b []float64) (sp float64, df int) {
	df = len(a) + len(b) - 2
	if df <= 0 {
		return 0, df
	}
	ss := 0.0
	for _, v := range [][]float64{a, b} {
		if len(v) > 1 {
			_, sd := stats.MeanSD(v)
			ss += sd * sd * float64(len(v)-1)
		}
	}
	return math.Sqrt(ss / float64(df)), df
}

// pValue is the two-sided p-value of Student's two-sample t-test (pooled
// variance) that a and b have the same mean. Pooled rather than Welch's so
// a segment of one point (the newest run, Options.OpenEnd) is testable
// against the spread of the other. Identical constant segments are the
// same (1); different constant segments differ (0).
func pValue(a, b []float64) float64 {
	sp, df := pooled(a, b)
	if df <= 0 {
		return 1
	}
	d := mean(b) - mean(a)
	se := sp * math.Sqrt(1/float64(len(a))+1/float64(len(b)))
	if se == 0 {
		if d == 0 {
			return 1
		}
		return 0
	}
	t := math.Abs(d / se)
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Survival(t)
}

// halfWidth95 is the half-width of the 95 % confidence interval of
// mean(b) − mean(a) under the same pooled model.
func halfWidth95(a, b []float64) float64 {
	sp, df := pooled(a, b)
	if df <= 0 {
		return math.Inf(1)
	}
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(0.975)
	return q * sp * math.Sqrt(1/float64(len(a))+1/float64(len(b)))
}
