package stats

import (
	"math"
	"slices"
)

// Slope estimator constants, kept from the seed's scale gate so a soak reads
// the same here; TestRSSSlopeEstimatorChoice shows why the estimator is a
// bucket median.
const (
	// RSSSlopeBuckets is how many equal time buckets the tail is split into.
	RSSSlopeBuckets = 6
	// RSSSlopeMinSamplesPerBucket is the density below which the estimator
	// falls back to a whole-tail least-squares fit.
	RSSSlopeMinSamplesPerBucket = 4
	// RSSSlopeMinSamples is the shortest series the estimator will fit;
	// anything shorter is "too short" (a nil slope), never a zero.
	RSSSlopeMinSamples = 4
)

// Point is one (time, value) sample; T in seconds, V in KB.
type Point struct {
	T float64
	V float64
}

// SlopeResult is the RSS trend over a series' tail.
type SlopeResult struct {
	// OK is false when the series is too short to fit; the other fields are
	// then meaningless and the slope must be reported as null.
	OK bool
	// KBPerMin is the sustained growth rate over the tail.
	KBPerMin float64
	// Method is "bucket-median" or "least-squares" (the sparse fallback).
	Method string
	// StepMaxKB and StepAtS are the largest single-sample rise in the tail
	// and the time of the sample it rose to. The bucket median ignores an
	// isolated step by design, so the step is reported rather than eaten.
	StepMaxKB float64
	StepAtS   float64
	// TailFromS is where the tail (the final half of the run) starts.
	TailFromS float64
}

// RSSSlope estimates sustained growth over the final half of a series with
// the seed's bucket-median estimator.
//
// The tail is split into RSSSlopeBuckets equal time buckets. Each bucket's
// rate is taken from its boundary samples: the sample at a boundary is the
// last one at or before it, so every rise between two samples is charged to
// exactly one bucket and none is lost; the rate is the difference of the two
// boundary samples' values over the time between them (not the nominal
// bucket width, so jittered sample times do not bias a steady leak). The
// reported rate is the median of those
// rates: an isolated step lands in one bucket and the median ignores it; a
// real leak, or a recurring staircase, moves every bucket. Per-bucket fits
// would alias a staircase whose steps sit on the boundaries; endpoint deltas
// cannot. When a bucket would hold fewer than RSSSlopeMinSamplesPerBucket
// samples the estimator falls back to a least-squares fit of the whole tail.
//
// points should be sorted by T; an unsorted series is sorted (on a copy)
// first. A sample whose time or value is NaN or infinite is dropped: a
// sample that could not be taken is not a sample. A result that is not
// finite (only absurd magnitudes get there) is reported as OK=false, never
// as a number a JSON encoder would refuse.
func RSSSlope(points []Point) SlopeResult {
	points = usable(points)
	if len(points) < RSSSlopeMinSamples {
		return SlopeResult{}
	}
	res := rssSlope(points)
	if !isFinite(res.KBPerMin) || !isFinite(res.StepMaxKB) || !isFinite(res.StepAtS) || !isFinite(res.TailFromS) {
		return SlopeResult{}
	}
	return res
}

// usable returns points sorted by T without non-finite samples, copying
// only when it has to.
func usable(points []Point) []Point {
	clean := true
	for _, p := range points {
		if !isFinite(p.T) || !isFinite(p.V) {
			clean = false
			break
		}
	}
	if clean && slices.IsSortedFunc(points, byTime) {
		return points
	}
	out := make([]Point, 0, len(points))
	for _, p := range points {
		if isFinite(p.T) && isFinite(p.V) {
			out = append(out, p)
		}
	}
	slices.SortStableFunc(out, byTime)
	return out
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// rssSlope is RSSSlope on a sorted, finite series of at least
// RSSSlopeMinSamples points.
func rssSlope(points []Point) SlopeResult {
	t0, t1 := points[0].T, points[len(points)-1].T
	if !(t1 > t0) {
		return SlopeResult{}
	}
	from := t0 + (t1-t0)/2
	start := 0
	for start < len(points) && points[start].T < from {
		start++
	}
	// Anchor the tail at the last sample at or before its start, so the
	// first bucket has a value at its left boundary.
	if start > 0 && points[start-1].T <= from && (start == len(points) || points[start].T > from) {
		start--
	}
	tail := points[start:]
	if len(tail) < 2 || !(tail[len(tail)-1].T > tail[0].T) {
		return SlopeResult{}
	}
	res := SlopeResult{OK: true, TailFromS: tail[0].T}
	res.StepMaxKB, res.StepAtS = maxStep(tail)
	if rates, ok := bucketRates(tail); ok {
		res.Method = "bucket-median"
		res.KBPerMin = median(rates) * 60
		return res
	}
	res.Method = "least-squares"
	res.KBPerMin = leastSquares(tail) * 60
	return res
}

// bucketRates returns per-bucket endpoint rates (KB/s), or false when any
// bucket is too sparse.
func bucketRates(tail []Point) ([]float64, bool) {
	a, b := tail[0].T, tail[len(tail)-1].T
	w := (b - a) / RSSSlopeBuckets
	counts := make([]int, RSSSlopeBuckets)
	for _, p := range tail {
		i := int((p.T - a) / w)
		if i >= RSSSlopeBuckets {
			i = RSSSlopeBuckets - 1
		}
		counts[i]++
	}
	for _, c := range counts {
		if c < RSSSlopeMinSamplesPerBucket {
			return nil, false
		}
	}
	rates := make([]float64, RSSSlopeBuckets)
	for i := range rates {
		lo := a + float64(i)*w
		hi := a + float64(i+1)*w
		if i == RSSSlopeBuckets-1 {
			hi = b
		}
		pl, ph := sampleAt(tail, lo), sampleAt(tail, hi)
		if !(ph.T > pl.T) {
			return nil, false
		}
		rates[i] = (ph.V - pl.V) / (ph.T - pl.T)
	}
	return rates, true
}

// sampleAt is the last sample at or before t (step-hold). A tiny tolerance
// keeps float rounding of the boundary from skipping a sample that lies
// exactly on it.
func sampleAt(s []Point, t float64) Point {
	eps := 1e-9 * math.Max(1, math.Abs(t))
	i := 0
	for i+1 < len(s) && s[i+1].T <= t+eps {
		i++
	}
	return s[i]
}

func byTime(a, b Point) int {
	switch {
	case a.T < b.T:
		return -1
	case a.T > b.T:
		return 1
	}
	return 0
}

// maxStep is the largest single-sample rise and the time of the sample it
// rose to. With no rise at all it is the smallest fall (a negative number).
func maxStep(s []Point) (kb, at float64) {
	for i := 1; i < len(s); i++ {
		if d := s[i].V - s[i-1].V; i == 1 || d > kb {
			kb, at = d, s[i].T
		}
	}
	return kb, at
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// leastSquares is the slope (V per second) of the ordinary least-squares line.
func leastSquares(s []Point) float64 {
	var mt, mv float64
	for _, p := range s {
		mt += p.T
		mv += p.V
	}
	n := float64(len(s))
	mt /= n
	mv /= n
	var num, den float64
	for _, p := range s {
		num += (p.T - mt) * (p.V - mv)
		den += (p.T - mt) * (p.T - mt)
	}
	if den == 0 {
		return 0
	}
	return num / den
}
