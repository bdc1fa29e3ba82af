package promsource

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// FormatPromQL is a block's Format when a Prometheus server computed its
// figures (FinalQuery).
const FormatPromQL = "promql"

// Querier evaluates one PromQL expression at an instant and returns the
// vector it gives (package promql asks a Prometheus server through the
// Prometheus project's HTTP API client).
type Querier interface {
	Query(ctx context.Context, expr string, at time.Time) (model.Vector, error)
}

// FinalQuery is Final's block with every figure computed by a Prometheus
// server instead of from the scrapes: over the same window (the first
// scrape in the hold to the latest one), each figure is a PromQL
// expression over the window as a range, evaluated at its end:
//
//   - gauge: last_over_time, with min_over_time and max_over_time for its
//     extremes (a population gauge frozen at the hold's end, Freeze, is
//     evaluated at the freeze);
//   - counter: increase; counter_rate: rate;
//   - histogram: histogram_quantile on the buckets' increase, the mean
//     from the increase of _sum and _count;
//   - summary: the quantiles' last value, the mean as for a histogram;
//   - info: the label of the last value.
//
// The derived figures (wire_peers, tick_hz, …) are derived as Final's.
// A query that fails or gives no single series leaves its figure missing,
// the expression named. Nil when nothing was scraped.
func (s *Source) FinalQuery(ctx context.Context, q Querier) *Block {
	if s.last == nil {
		return nil
	}
	base, hold := s.base, true
	if base == nil || base == s.last {
		base, hold = s.first, false
	}
	return s.query(ctx, q, base.at, s.last.at, hold)
}

// QueryWindow is FinalQuery over the window (from, to] of the caller's
// choosing, freezes ignored: a test matches it to the very scrapes of the
// Prometheus server. Nil when nothing was scraped (the derived figures
// need the run's first scrape).
func (s *Source) QueryWindow(ctx context.Context, q Querier, from, to time.Time) *Block {
	if s.first == nil {
		return nil
	}
	frozen := s.frozenFigs
	s.frozenFigs = nil
	defer func() { s.frozenFigs = frozen }()
	return s.query(ctx, q, from, to, true)
}

func (s *Source) query(ctx context.Context, q Querier, from, to time.Time, hold bool) *Block {
	b := s.newBlock(from, to, hold)
	b.Format = FormatPromQL
	for i := range s.figs {
		f := &s.figs[i]
		d := &Detail{Kind: f.kind, Scale: f.scale, Default: f.def}
		b.Details[f.name] = d
		end := to
		if s.frozenFigs[i] {
			end = s.frozen.at
		}
		w := &window{q: q, ctx: ctx, f: f, b: b, d: d, end: end, rng: promRange(end.Sub(from))}
		w.fill()
		if f.own {
			b.ownShape(f, d)
		}
	}
	s.derive(b)
	return b
}

// promRange is a window's length as a PromQL range, in whole
// milliseconds.
func promRange(d time.Duration) string {
	ms := d.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	return strconv.FormatInt(ms, 10) + "ms"
}

// window is one figure's evaluation over the hold.
type window struct {
	q   Querier
	ctx context.Context
	f   *figure
	b   *Block
	d   *Detail
	end time.Time
	rng string
}

// sel is the figure's series selector with a suffix on the metric name
// (_bucket, _sum, _count) and extra matchers, ranged over the window.
func (w *window) sel(suffix string) string {
	return selectorString(w.f.metric+suffix, w.f.labels) + "[" + w.rng + "]"
}

func (w *window) fill() {
	switch w.f.kind {
	case Gauge:
		w.gauge()
	case CounterRate, Counter:
		w.counter()
	case Histogram:
		w.histogram()
	case Summary:
		w.summary()
	case Info:
		w.info()
	}
}

func (w *window) missing(why string) { w.b.Missing[w.f.name] = why }

// vector evaluates expr at the window's end.
func (w *window) vector(expr string) (model.Vector, error) {
	v, err := w.q.Query(w.ctx, expr, w.end)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	return v, nil
}

// one evaluates expr and wants exactly one finite sample.
func (w *window) one(expr string) (*model.Sample, error) {
	v, err := w.vector(expr)
	if err != nil {
		return nil, err
	}
	switch len(v) {
	case 0:
		return nil, fmt.Errorf("%s gave no series: the series does not exist, or has fewer samples in the window (t=%.1f–%.1f s) than the function needs", expr, w.b.Window.FromS, w.b.Window.ToS)
	case 1:
	default:
		return nil, fmt.Errorf("%s gave %d series (%s): add labels to select one", expr, len(v), sampleList(v))
	}
	x := float64(v[0].Value)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil, fmt.Errorf("%s is %v, not a measurement", expr, x)
	}
	return v[0], nil
}

// value is one's value.
func (w *window) value(expr string) (float64, error) {
	s, err := w.one(expr)
	if err != nil {
		return 0, err
	}
	return float64(s.Value), nil
}

func (w *window) gauge() {
	expr := "last_over_time(" + w.sel("") + ")"
	w.d.Series = expr
	v, err := w.value(expr)
	if err != nil {
		w.missing(err.Error())
		return
	}
	if r := notNegative(w.f, reading{value: v}); r.err != "" {
		w.missing(r.err)
		return
	}
	lo, errLo := w.value("min_over_time(" + w.sel("") + ")")
	hi, errHi := w.value("max_over_time(" + w.sel("") + ")")
	n, errN := w.value("count_over_time(" + w.sel("") + ")")
	w.b.setNumber(w.f.name, v*w.f.scale)
	if errLo == nil && errHi == nil && errN == nil {
		w.d.Min, w.d.Max, w.d.Scrapes = ptr(lo*w.f.scale), ptr(hi*w.f.scale), int(n)
	}
}

func (w *window) counter() {
	inc, err := w.value("increase(" + w.sel("") + ")")
	if err != nil {
		w.missing(err.Error())
		return
	}
	if resets, err := w.value("resets(" + w.sel("") + ")"); err == nil {
		w.d.Resets = int(resets)
	}
	w.d.Increase = ptr(inc)
	if w.f.kind == Counter {
		w.d.Series = "increase(" + w.sel("") + ")"
		w.b.setCount(w.f.name, inc*w.f.scale)
		return
	}
	w.d.Series = "rate(" + w.sel("") + ")"
	rate, err := w.value(w.d.Series)
	if err != nil {
		w.missing(err.Error())
		return
	}
	w.b.setNumber(w.f.name, rate*w.f.scale)
}

// increases are the increases of a histogram's or summary's _sum and
// _count over the window.
func (w *window) increases() (sum, cnt float64, err error) {
	if sum, err = w.value("increase(" + w.sel("_sum") + ")"); err != nil {
		return 0, 0, err
	}
	if cnt, err = w.value("increase(" + w.sel("_count") + ")"); err != nil {
		return 0, 0, err
	}
	return sum, cnt, nil
}

func (w *window) histogram() {
	buckets := "increase(" + w.sel("_bucket") + ")"
	w.d.Series = "histogram_quantile(q, sum by (le) (" + buckets + "))"
	upper, cum, err := w.buckets(buckets)
	if err != nil {
		w.missing(err.Error())
		return
	}
	sum, cnt, err := w.increases()
	if err != nil {
		w.missing(err.Error())
		return
	}
	if total, err := w.value("last_over_time(" + w.sel("_count") + ")"); err == nil {
		w.d.totalObservations = total
	}
	fillHistogram(w.b, w.d, w.f, upper, cum, sum, cnt, func(q float64) (float64, error) {
		return w.value(fmt.Sprintf("histogram_quantile(%g, sum by (le) (%s))", q, buckets))
	})
}

// buckets evaluates the buckets' increases: one series per le, laid out
// for fillHistogram (ascending bounds ending at +Inf).
func (w *window) buckets(expr string) (upper, cum []float64, err error) {
	v, err := w.vector(expr)
	if err != nil {
		return nil, nil, err
	}
	if len(v) == 0 {
		return nil, nil, fmt.Errorf("%s gave no series: no %s_bucket series with those labels, or fewer than two samples in the window (t=%.1f–%.1f s)", expr, w.f.metric, w.b.Window.FromS, w.b.Window.ToS)
	}
	bs := make([]bucket, 0, len(v))
	for _, s := range v {
		le, err := strconv.ParseFloat(string(s.Metric["le"]), 64)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: series %s has no numeric le", expr, s.Metric)
		}
		bs = append(bs, bucket{le: le, n: float64(s.Value)})
	}
	slices.SortFunc(bs, func(x, y bucket) int { return cmpFloat(x.le, y.le) })
	for i := 1; i < len(bs); i++ {
		if bs[i].le == bs[i-1].le {
			return nil, nil, fmt.Errorf("%s gave two series with le=%v (%s): add labels to select one histogram", expr, bs[i].le, sampleList(v))
		}
	}
	if !math.IsInf(bs[len(bs)-1].le, 1) {
		return nil, nil, fmt.Errorf("%s has no le=\"+Inf\" bucket", expr)
	}
	for _, x := range bs {
		upper, cum = append(upper, x.le), append(cum, x.n)
	}
	return upper, cum, nil
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func (w *window) summary() {
	expr := "last_over_time(" + w.sel("") + ")"
	w.d.Series = expr
	v, err := w.vector(expr)
	if err != nil {
		w.missing(err.Error())
		return
	}
	quant := map[float64]float64{}
	for _, s := range v {
		q, err := strconv.ParseFloat(string(s.Metric["quantile"]), 64)
		if err != nil {
			continue
		}
		if _, dup := quant[q]; dup {
			w.missing(fmt.Sprintf("%s gave two series with quantile=%v (%s): add labels to select one summary", expr, q, sampleList(v)))
			return
		}
		quant[q] = float64(s.Value)
	}
	var inc []float64
	why := ""
	if sum, cnt, err := w.increases(); err != nil {
		why = err.Error()
	} else {
		inc = []float64{sum, cnt}
	}
	fillSummary(w.b, w.d, w.f, quant, inc, why)
}

func (w *window) info() {
	expr := "last_over_time(" + w.sel("") + ")"
	w.d.Series = expr
	s, err := w.one(expr)
	if err != nil {
		w.missing(err.Error())
		return
	}
	v, ok := s.Metric[model.LabelName(w.f.label)]
	if !ok {
		w.missing(fmt.Sprintf("%s has no label %q", expr, w.f.label))
		return
	}
	w.b.Strings[w.f.name] = string(v)
}

// sampleList shows up to 5 series' label sets.
func sampleList(v model.Vector) string {
	var parts []string
	for i, s := range v {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("… %d more", len(v)-5))
			break
		}
		parts = append(parts, s.Metric.String())
	}
	return strings.Join(parts, ", ")
}
