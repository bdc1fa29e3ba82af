package stats

import (
	"math"
	"slices"
)

// MADScale is 1/Φ⁻¹(3/4): the median absolute deviation of a normal
// distribution is σ·Φ⁻¹(3/4) = 0.6745·σ, so MADScale·MAD estimates σ for
// normal data. Callers store the raw MAD (a fact anyone can recompute from
// the samples) and apply the scale where a model turns it into a σ.
const MADScale = 1.482602218505602

// Median is the 50th percentile of values (type 7, so the mean of the two
// middle values for an even count), ignoring NaN. It returns NaN when no
// value is present.
func Median(values []float64) float64 {
	s := finiteSorted(values)
	return Percentile(s, 50)
}

// MAD is the raw median absolute deviation: the median of |x − median(x)|,
// ignoring NaN, unscaled (multiply by MADScale for a σ estimate). It returns
// NaN when no value is present.
func MAD(values []float64) float64 {
	s := finiteSorted(values)
	if len(s) == 0 {
		return math.NaN()
	}
	m := Percentile(s, 50)
	for i, v := range s {
		s[i] = math.Abs(v - m)
	}
	slices.Sort(s)
	return Percentile(s, 50)
}

// MeanSD returns the mean and the sample standard deviation (n − 1
// denominator) of values, ignoring NaN. sd is NaN for fewer than two
// values; both are NaN for none.
func MeanSD(values []float64) (mean, sd float64) {
	n := 0
	var sum float64
	for _, v := range values {
		if !math.IsNaN(v) {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	mean = sum / float64(n)
	if n < 2 {
		return mean, math.NaN()
	}
	var ss float64
	for _, v := range values {
		if !math.IsNaN(v) {
			ss += (v - mean) * (v - mean)
		}
	}
	return mean, math.Sqrt(ss / float64(n-1))
}

// finiteSorted is a sorted copy of values without NaN.
func finiteSorted(values []float64) []float64 {
	s := make([]float64, 0, len(values))
	for _, v := range values {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	slices.Sort(s)
	return s
}
