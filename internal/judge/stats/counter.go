package stats

import (
	"math"
	"slices"
)

// CounterStep is how much a monotonic counter grew between two successive
// readings, prev then cur, with a counter reset handled as Prometheus's
// increase() handles it: a reading below the previous one means the
// process restarted and the counter began again at zero, so everything it
// now shows is new (cur, reset true). NaN in either reading is no step
// (0, false): a value that could not be read adds nothing.
func CounterStep(prev, cur float64) (inc float64, reset bool) {
	switch {
	case math.IsNaN(prev) || math.IsNaN(cur):
		return 0, false
	case cur < prev:
		return cur, true
	default:
		return cur - prev, false
	}
}

// CounterIncrease is the growth of a counter over successive readings (the
// sum of CounterStep over each consecutive pair) and how many resets it
// crossed. Unlike Prometheus's increase() it does not extrapolate to the
// edges of a range: the readings are the window's edges.
func CounterIncrease(readings []float64) (inc float64, resets int) {
	for i := 1; i < len(readings); i++ {
		d, r := CounterStep(readings[i-1], readings[i])
		inc += d
		if r {
			resets++
		}
	}
	return inc, resets
}

// BucketQuantile is the result of a quantile estimated from cumulative
// histogram buckets.
type BucketQuantile struct {
	// Value is the estimate (valid only when OK).
	Value float64
	// Lo and Hi are the bounds of the bucket the estimate lies in: the
	// observation of rank ⌈q·Count⌉ lies in [Lo, Hi] too, so the estimate
	// is off by at most Hi − Lo.
	Lo, Hi float64
	// Count is the number of observations (the +Inf bucket's count).
	Count float64
	// AboveFinite: the quantile lies in the +Inf bucket, above the highest
	// finite bound (Lo). Prometheus answers Lo there, an underestimate of
	// unknown size; OK is then false.
	AboveFinite bool
	// ForcedMonotonic: the cumulative counts decreased somewhere and were
	// raised to be monotonic before the estimate, as Prometheus does.
	ForcedMonotonic bool
	// OK: Value is an estimate with the stated bounds. False for an empty
	// histogram, a layout without a final +Inf bucket, a NaN or out-of-range
	// q, or AboveFinite.
	OK bool
}

// Error is the largest distance between the estimate and the true
// quantile: the width of the bucket it lies in.
func (b BucketQuantile) Error() float64 { return b.Hi - b.Lo }

// HistogramQuantile estimates the q-quantile (0 ≤ q ≤ 1) of a histogram
// given as cumulative bucket counts: cum[i] observations were ≤ upper[i],
// upper ascending and ending at +Inf (Prometheus's classic histogram
// layout). It follows PromQL's histogram_quantile: rank = q·n, the first
// bucket whose cumulative count reaches the rank holds the quantile, and
// the estimate interpolates linearly inside it, from the previous bucket's
// upper bound (0 for the first bucket when its bound is positive) to its
// own. Where PromQL answers the highest finite bound for a quantile in
// the +Inf bucket, this reports AboveFinite instead: the figure is unknown,
// never an underestimate. Counts that decrease are raised to be monotonic
// first (PromQL does the same). cum is not modified.
func HistogramQuantile(q float64, upper, cum []float64) BucketQuantile {
	r := BucketQuantile{}
	n := len(upper)
	if n < 2 || len(cum) != n || !math.IsInf(upper[n-1], 1) || math.IsNaN(q) || q < 0 || q > 1 {
		return r
	}
	if !slices.IsSorted(upper) {
		return r
	}
	var mono []float64
	mono, r.ForcedMonotonic = monotonic(cum)
	r.Count = mono[n-1]
	if !(r.Count > 0) {
		return r
	}
	rank := q * r.Count
	b := holdingBucket(mono, rank)
	if b == n-1 {
		r.Lo, r.Hi, r.AboveFinite = upper[n-2], math.Inf(1), true
		return r
	}
	r.interpolate(upper, mono, b, rank)
	return r
}

// monotonic returns cum with decreases and NaNs raised to the count
// before them, as PromQL does, and whether any were. cum itself is
// returned when it already is monotonic, so the common case allocates
// nothing; otherwise a copy is fixed, never the caller's slice.
func monotonic(cum []float64) (mono []float64, forced bool) {
	mono = cum
	for i := 1; i < len(cum); i++ {
		if mono[i] < mono[i-1] || math.IsNaN(mono[i]) {
			if !forced {
				mono = slices.Clone(cum)
				forced = true
			}
			if math.IsNaN(mono[i]) || mono[i] < mono[i-1] {
				mono[i] = mono[i-1]
			}
		}
	}
	return mono, forced
}

// holdingBucket is the first bucket whose cumulative count reaches rank
// and that actually holds observations (with q = 0, rank 0, the first
// bucket would qualify even when empty). len(mono)-1, the +Inf bucket,
// means the quantile lies above every finite bound.
func holdingBucket(mono []float64, rank float64) int {
	last := len(mono) - 1
	b := 0
	for b < last && mono[b] < rank {
		b++
	}
	for b < last && mono[b] == 0 {
		b++
	}
	return b
}

// interpolate sets the estimate inside finite bucket b linearly from its
// lower bound to its upper, rank being the overall one; a first bucket
// with a non-positive bound has no lower bound to start from and answers
// its bound exactly.
func (r *BucketQuantile) interpolate(upper, mono []float64, b int, rank float64) {
	if b == 0 && upper[0] <= 0 {
		r.Value, r.Lo, r.Hi, r.OK = upper[0], upper[0], upper[0], true
		return
	}
	start, end, count := 0.0, upper[b], mono[b]
	if b > 0 {
		start = upper[b-1]
		count -= mono[b-1]
		rank -= mono[b-1]
	}
	r.Lo, r.Hi = start, end
	r.Value = start + (end-start)*(rank/count)
	r.OK = true
}

// HistogramMaxBound is a ceiling on the largest observation of a
// cumulative histogram (the layout of HistogramQuantile): the upper bound
// of the highest bucket that holds any, with that bucket's lower bound.
// ok is false for an empty histogram; aboveFinite when the highest holder
// is the +Inf bucket (the maximum is then unbounded above lo).
func HistogramMaxBound(upper, cum []float64) (lo, hi float64, aboveFinite, ok bool) {
	n := len(upper)
	if n < 2 || len(cum) != n || !math.IsInf(upper[n-1], 1) {
		return 0, 0, false, false
	}
	for i := n - 1; i >= 0; i-- {
		below := 0.0
		if i > 0 {
			below = cum[i-1]
		}
		if cum[i] > below {
			lo = 0
			if i > 0 {
				lo = upper[i-1]
			}
			return lo, upper[i], i == n-1, true
		}
	}
	return 0, 0, false, false
}
