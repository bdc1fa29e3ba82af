package stats

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram is the mergeable form of a distribution: a log-linear
// (HdrHistogram) histogram of the values plus their exact count, sum, min
// and max. Shards of one run each carry one; merging them gives the
// histogram of the pooled values, so a merged report's percentiles are the
// ones a single process would have reported, within HistogramRelError.
//
// Values are recorded in thousandths of their unit (a millisecond histogram
// resolves microseconds) into an HdrHistogram with 3 significant digits:
// every bucket above 2048 thousandths is at most 1/1024 of its value wide,
// so a bucket's midpoint is within 1/2048 of any value in it. Percentiles
// interpolate between order statistics like Percentile (type 7), each order
// statistic read as its bucket's midpoint clamped to [min, max]; hence
//
//	|merged p − pooled p| ≤ HistogramRelError·pooled p + HistogramAbsError.
//
// Min, max, mean and count are exact. Values below 0 are recorded as 0 and
// values above HistogramMaxValue as HistogramMaxValue (in the buckets only:
// min and max stay exact); NaN is ignored like Summarize ignores it.
// The encoded form is HdrHistogram's V2 compressed base64, which any
// HdrHistogram implementation (Java, C, Rust, Python) decodes.
type Histogram struct {
	h     *hdrhistogram.Histogram
	count int64
	sum   float64
	min   float64
	max   float64
}

// Histogram geometry. Every Histogram uses the same one so any two merge
// without loss; a decoded histogram of another geometry is refused.
const (
	// histogramScale is the recorded units per value unit.
	histogramScale  = 1000
	histogramDigits = 3
	// HistogramMaxValue is the largest value (in the value's unit) held
	// without clamping: an hour in milliseconds.
	HistogramMaxValue = 3_600_000
	// HistogramRelError is the documented relative error of a percentile
	// read from a (merged) histogram: half the widest bucket, 1/2048.
	HistogramRelError = 1.0 / 2048
	// HistogramAbsError is the absolute error from recording in
	// thousandths: half of one thousandth of the unit.
	HistogramAbsError = 0.5 / histogramScale
)

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram {
	return &Histogram{h: hdrhistogram.New(1, HistogramMaxValue*histogramScale, histogramDigits)}
}

// HistogramOf records values into a new histogram; nil when none of them
// is a number (the distribution is missing, not zero).
func HistogramOf(values []float64) *Histogram {
	h := NewHistogram()
	for _, v := range values {
		h.Record(v)
	}
	if h.count == 0 {
		return nil
	}
	return h
}

// Record adds one value; NaN is ignored.
func (h *Histogram) Record(v float64) {
	if math.IsNaN(v) {
		return
	}
	if h.count == 0 || v < h.min {
		h.min = v
	}
	if h.count == 0 || v > h.max {
		h.max = v
	}
	h.count++
	h.sum += v
	units := math.Round(min(max(v, 0), HistogramMaxValue) * histogramScale)
	// Cannot fail: units is clamped into the histogram's range.
	_ = h.h.RecordValue(int64(units))
}

// Merge adds every value of o to h. o is unchanged; a nil o adds nothing.
func (h *Histogram) Merge(o *Histogram) {
	if o == nil || o.count == 0 {
		return
	}
	if h.count == 0 || o.min < h.min {
		h.min = o.min
	}
	if h.count == 0 || o.max > h.max {
		h.max = o.max
	}
	h.count += o.count
	h.sum += o.sum
	// Same geometry on both sides (NewHistogram, checked on decode): no
	// value can fall outside h's range, so nothing is dropped.
	h.h.Merge(o.h)
}

// Count is the number of values recorded.
func (h *Histogram) Count() int64 { return h.count }

// Summary summarises the histogram like Summarize summarises the values:
// count, min, max and mean exact, percentiles within the documented error.
func (h *Histogram) Summary() Summary {
	if h == nil || h.count == 0 {
		return Summary{}
	}
	bars := h.nonEmptyBars()
	return Summary{
		Count: int(h.count),
		Min:   h.min,
		Mean:  h.sum / float64(h.count),
		P50:   h.percentile(bars, 50),
		P95:   h.percentile(bars, 95),
		P99:   h.percentile(bars, 99),
		Max:   h.max,
	}
}

// Mean is the exact mean; NaN when empty.
func (h *Histogram) Mean() float64 {
	if h == nil || h.count == 0 {
		return math.NaN()
	}
	return h.sum / float64(h.count)
}

// Min and Max are exact; NaN when empty.
func (h *Histogram) Min() float64 {
	if h == nil || h.count == 0 {
		return math.NaN()
	}
	return h.min
}

// Max is the largest value recorded; NaN when empty.
func (h *Histogram) Max() float64 {
	if h == nil || h.count == 0 {
		return math.NaN()
	}
	return h.max
}

func (h *Histogram) nonEmptyBars() []hdrhistogram.Bar {
	var out []hdrhistogram.Bar
	for _, b := range h.h.Distribution() {
		if b.Count > 0 {
			out = append(out, b)
		}
	}
	return out
}

// percentile is the type-7 percentile of the recorded values (see
// Percentile), from the histogram's order statistics.
func (h *Histogram) percentile(bars []hdrhistogram.Bar, p float64) float64 {
	rank := p / 100 * float64(h.count-1)
	lo := int64(math.Floor(rank))
	vlo := h.orderStat(bars, lo)
	if lo+1 >= h.count {
		return vlo
	}
	return vlo + (rank-float64(lo))*(h.orderStat(bars, lo+1)-vlo)
}

// orderStat is the k-th smallest value (0-based): the exact min or max at
// the ends, else its bucket's midpoint clamped to [min, max].
func (h *Histogram) orderStat(bars []hdrhistogram.Bar, k int64) float64 {
	switch {
	case k <= 0:
		return h.min
	case k >= h.count-1:
		return h.max
	}
	var seen int64
	for _, b := range bars {
		seen += b.Count
		if k < seen {
			mid := (float64(b.From) + float64(b.To)) / 2 / histogramScale
			return min(max(mid, h.min), h.max)
		}
	}
	return h.max
}

// histogramJSON is the wire form. hdr is the HdrHistogram V2 compressed
// base64 encoding of the buckets (in thousandths of the unit).
type histogramJSON struct {
	Count int64   `json:"count"`
	Sum   float64 `json:"sum"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	HDR   string  `json:"hdr"`
}

// MarshalJSON implements json.Marshaler.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	enc, err := h.h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("histogram: encode: %w", err)
	}
	return json.Marshal(histogramJSON{Count: h.count, Sum: h.sum, Min: h.min, Max: h.max, HDR: string(enc)})
}

// UnmarshalJSON implements json.Unmarshaler. It refuses a histogram whose
// geometry differs from NewHistogram's (it would not merge exactly), whose
// bucket total disagrees with count, or whose min/max/sum are impossible.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var w histogramJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	if w.HDR == "" {
		return errors.New("histogram: field \"hdr\" missing or empty")
	}
	d, err := hdrhistogram.Decode([]byte(w.HDR))
	if err != nil {
		return fmt.Errorf("histogram: field \"hdr\": %w", err)
	}
	ref := NewHistogram().h
	if d.LowestTrackableValue() != ref.LowestTrackableValue() || d.HighestTrackableValue() != ref.HighestTrackableValue() ||
		d.SignificantFigures() != ref.SignificantFigures() {
		return fmt.Errorf("histogram: geometry [%d, %d] × %d digits, want [%d, %d] × %d (another scalegate version?)",
			d.LowestTrackableValue(), d.HighestTrackableValue(), d.SignificantFigures(),
			ref.LowestTrackableValue(), ref.HighestTrackableValue(), ref.SignificantFigures())
	}
	switch {
	case w.Count < 1:
		return fmt.Errorf("histogram: count %d: an empty distribution is written as null", w.Count)
	case d.TotalCount() != w.Count:
		return fmt.Errorf("histogram: buckets hold %d values, count says %d", d.TotalCount(), w.Count)
	case !(w.Min <= w.Max) || math.IsInf(w.Min, 0) || math.IsInf(w.Max, 0):
		return fmt.Errorf("histogram: min %g and max %g are not an interval", w.Min, w.Max)
	case math.IsNaN(w.Sum) || math.IsInf(w.Sum, 0):
		return fmt.Errorf("histogram: sum %g is not a number", w.Sum)
	}
	// Re-home the buckets in a fresh histogram of the one geometry: the
	// decoded one keeps the writer's metadata, which Merge does not need.
	ref.Merge(d)
	*h = Histogram{h: ref, count: w.Count, sum: w.Sum, min: w.Min, max: w.Max}
	return nil
}

// Reset empties h, keeping its buckets' memory for the next use.
func (h *Histogram) Reset() {
	h.h.Reset()
	h.count, h.sum, h.min, h.max = 0, 0, 0, 0
}

// Encoded is a Histogram held in its encoded form (MarshalJSON's): a few
// hundred bytes where a live one holds its whole bucket array (188 KB in
// this geometry, whatever it counts). A record kept for every second of a
// long run (a timeline row) holds its distribution this way, so a day's
// run costs megabytes, not gigabytes; Decode gives the live histogram back
// to whoever merges it.
type Encoded struct {
	b []byte
}

// Encode is h's encoded form; nil for an empty or nil h (the distribution
// is missing, not zero).
func Encode(h *Histogram) (*Encoded, error) {
	if h == nil || h.count == 0 {
		return nil, nil
	}
	b, err := h.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return &Encoded{b: b}, nil
}

// Decode is the live histogram, refusing what UnmarshalJSON refuses.
func (e *Encoded) Decode() (*Histogram, error) {
	h := &Histogram{}
	if err := h.UnmarshalJSON(e.b); err != nil {
		return nil, err
	}
	return h, nil
}

// MarshalJSON implements json.Marshaler: the encoded form as it is.
func (e *Encoded) MarshalJSON() ([]byte, error) { return e.b, nil }

// UnmarshalJSON implements json.Unmarshaler. It checks the shape (an
// object with a count of at least 1 and a non-empty hdr) and keeps the
// bytes; the buckets are decoded, and refused if malformed, by Decode:
// reading a day-long report must not build 86,400 live histograms.
func (e *Encoded) UnmarshalJSON(b []byte) error {
	var w histogramJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return fmt.Errorf("histogram: %w", err)
	}
	switch {
	case w.HDR == "":
		return errors.New("histogram: field \"hdr\" missing or empty")
	case w.Count < 1:
		return fmt.Errorf("histogram: count %d: an empty distribution is written as null", w.Count)
	}
	e.b = append([]byte(nil), b...)
	return nil
}
