// Package stats is the shared math of scalegate's server, swarm and gate. It
// is their one implementation of percentiles, summaries, rolling windows,
// rates and the RSS slope estimator. Keeping one copy is what makes a p99 in
// the server's metrics file and a p99 in the swarm's report the same
// quantity.
package stats

import (
	"math"
	"slices"
	"time"
)

// Percentile returns the p-th percentile (0..100) of sorted values using
// linear interpolation between closest ranks (the "type 7" definition numpy
// and most spreadsheets use): rank = p/100 · (n−1). It returns NaN for an
// empty slice or a NaN p. sorted must be in ascending order.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 || math.IsNaN(p) {
		return math.NaN()
	}
	if p <= 0 {
		return sorted[0]
	}
	if p >= 100 {
		return sorted[n-1]
	}
	rank := p / 100 * float64(n-1)
	lo := int(math.Floor(rank))
	hi := lo + 1
	if hi >= n {
		return sorted[n-1]
	}
	frac := rank - float64(lo)
	return sorted[lo] + frac*(sorted[hi]-sorted[lo])
}

// Summary is a distribution summary. Count 0 means no data: every other
// field is then zero and callers must report the metric as missing.
type Summary struct {
	Count int
	Min   float64
	Mean  float64
	P50   float64
	P95   float64
	P99   float64
	Max   float64
}

// Summarize sorts a copy of values and summarises it. NaN values are
// ignored: a measurement that could not be taken is not a zero.
func Summarize(values []float64) Summary {
	s := make([]float64, 0, len(values))
	for _, v := range values {
		if !math.IsNaN(v) {
			s = append(s, v)
		}
	}
	return SummarizeInPlace(s)
}

// SummarizeInPlace sorts values in place and summarises them, ignoring NaN
// like Summarize; it does not allocate, so hot loops can reuse one scratch
// slice.
func SummarizeInPlace(values []float64) Summary {
	slices.Sort(values)
	// slices.Sort orders NaNs first: skip them.
	for len(values) > 0 && math.IsNaN(values[0]) {
		values = values[1:]
	}
	if len(values) == 0 {
		return Summary{}
	}
	var sum float64
	for _, v := range values {
		sum += v
	}
	return Summary{
		Count: len(values),
		Min:   values[0],
		Mean:  sum / float64(len(values)),
		P50:   Percentile(values, 50),
		P95:   Percentile(values, 95),
		P99:   Percentile(values, 99),
		Max:   values[len(values)-1],
	}
}

// Window is a fixed-capacity rolling window of samples: the newest cap
// samples are kept, older ones are overwritten. Not safe for concurrent use.
type Window struct {
	buf     []float64
	next    int
	full    bool
	scratch []float64
}

// NewWindow returns a window that keeps the newest capacity samples.
func NewWindow(capacity int) *Window {
	if capacity < 1 {
		capacity = 1
	}
	return &Window{buf: make([]float64, capacity), scratch: make([]float64, 0, capacity)}
}

// Add records one sample.
func (w *Window) Add(v float64) {
	w.buf[w.next] = v
	w.next++
	if w.next == len(w.buf) {
		w.next = 0
		w.full = true
	}
}

// Reset empties the window.
func (w *Window) Reset() { w.next, w.full = 0, false }

// Len is the number of samples held.
func (w *Window) Len() int {
	if w.full {
		return len(w.buf)
	}
	return w.next
}

// Values returns a copy of the samples held, oldest first.
func (w *Window) Values() []float64 {
	if !w.full {
		return append([]float64(nil), w.buf[:w.next]...)
	}
	return append(append([]float64(nil), w.buf[w.next:]...), w.buf[:w.next]...)
}

// Summary summarises the samples held without allocating; NaN samples are
// held (they count in Len) but ignored, as Summarize ignores them.
func (w *Window) Summary() Summary {
	w.scratch = append(w.scratch[:0], w.buf[:w.Len()]...)
	return SummarizeInPlace(w.scratch)
}

// Rate is count per second over d; 0 for a non-positive duration.
func Rate(count float64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return count / d.Seconds()
}

// MinMeanMax returns the minimum, mean and maximum of values, ignoring NaN.
// ok is false when no value was present.
func MinMeanMax(values []float64) (lo, mean, hi float64, ok bool) {
	n := 0
	var sum float64
	for _, v := range values {
		if math.IsNaN(v) {
			continue
		}
		if n == 0 || v < lo {
			lo = v
		}
		if n == 0 || v > hi {
			hi = v
		}
		sum += v
		n++
	}
	if n == 0 {
		return 0, 0, 0, false
	}
	return lo, sum / float64(n), hi, true
}
