package stats

import "math"

// HistogramPercentile is the p-th percentile (0..100) of a bucketed
// distribution: counts[i] values fell in [bounds[i], bounds[i+1]), so
// len(bounds) == len(counts)+1 (the layout of runtime/metrics'
// Float64Histogram). The individual values are gone, so it answers with the
// upper bound of the bucket holding the value of rank ⌈p/100 · n⌉ (at least
// 1): a ceiling on the true percentile, never an underestimate. A last bucket
// open to +Inf answers with its lower bound; an unbounded first bucket
// (−Inf) with its upper one. p 100 is the largest value's bucket. It returns
// NaN when the histogram is empty or malformed.
func HistogramPercentile(counts []uint64, bounds []float64, p float64) float64 {
	if len(bounds) != len(counts)+1 || math.IsNaN(p) {
		return math.NaN()
	}
	var n uint64
	for _, c := range counts {
		n += c
	}
	if n == 0 {
		return math.NaN()
	}
	rank := uint64(math.Ceil(math.Max(0, math.Min(p, 100)) / 100 * float64(n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range counts {
		seen += c
		if seen >= rank {
			if math.IsInf(bounds[i+1], 1) {
				return bounds[i]
			}
			return bounds[i+1]
		}
	}
	return math.NaN() // unreachable: seen reaches n ≥ rank
}
