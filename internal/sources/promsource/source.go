package promsource

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
)

// RecentWindow is the trailing window Recent's figures cover: 10 s, the
// span of the reference server's rolling 600-tick window, so a timeline
// row means the same thing from either source.
const RecentWindow = 10 * time.Second

// Fetcher reads every series a mapping names, once: a Scraper reads the
// endpoint itself; package promql asks a Prometheus server that scrapes
// it (the route of a server only Prometheus can reach).
type Fetcher interface {
	// Fetch returns the series and the format they came in.
	Fetch(ctx context.Context) (Families, string, error)
	// Origin is where the series are read from (a URL), as the figures
	// and errors name it.
	Origin() string
}

// Config is one Source.
type Config struct {
	// Scraper reaches the endpoint, unless Fetcher is set.
	Scraper Scraper
	// Fetcher, when set, reads the series instead of Scraper.
	Fetcher Fetcher
	// Map is the mapping (validated by New); the process_* defaults are
	// added for the figures it does not name.
	Map Map
	// Start is the run's start: window times are reported relative to it.
	Start time.Time
	// Own are the profile's own figures (gatetable.OwnFigure), by name:
	// scraped like mapped figures, written as objects of their statistics
	// (own.go).
	Own Map
	// Labels are matchers every figure's series must also carry (its own
	// labels win on a clash): the one server, among the many a Prometheus
	// server scrapes, whose figures these are ({pod: "game-0"}).
	Labels map[string]string
}

// ValidateLabels checks Config.Labels: label names PromQL can select
// (le and quantile belong to buckets and quantiles, not to series).
func ValidateLabels(labels map[string]string) error {
	for _, k := range sortedKeys(labels) {
		if !labelNameRe.MatchString(k) || k == "le" || k == "quantile" {
			return fmt.Errorf("labels.%s: not a label that selects a series (a Prometheus label name, not le or quantile)", k)
		}
	}
	return nil
}

// merged is the mapping a Source reads: m with the defaults, the own
// figures and labels added to each.
func merged(m, own Map, labels map[string]string) Map {
	full := m.WithDefaults()
	for name, f := range own {
		full[name] = f
	}
	if len(labels) == 0 {
		return full
	}
	for name, f := range full {
		l := make(map[string]string, len(labels)+len(f.Labels))
		for k, v := range labels {
			l[k] = v
		}
		for k, v := range f.Labels {
			l[k] = v
		}
		f.Labels = l
		full[name] = f
	}
	return full
}

// Series is one series a mapping reads: how, which metric, and the
// labels that select it.
type Series struct {
	Kind   Kind
	Metric string
	Labels map[string]string
}

// Plan lists the series a Source built from cfg reads (defaults, own
// figures and Labels merged as New merges them), sorted by figure name:
// what a Fetcher other than a scrape must fetch.
func Plan(cfg Config) []Series {
	full := merged(cfg.Map, cfg.Own, cfg.Labels)
	out := make([]Series, 0, len(full))
	for _, name := range sortedKeys(full) {
		k, metric, err := full[name].kind()
		if err != nil {
			continue
		}
		out = append(out, Series{Kind: k, Metric: metric, Labels: full[name].Labels})
	}
	return out
}

// figure is one resolved mapping entry.
type figure struct {
	name      string
	kind      Kind
	metric    string
	sel       string
	labels    map[string]string
	label     string
	scale     float64
	quantiles []string // histogram/summary: explicit fields, nil = all
	def       bool     // from the defaults
	own       bool     // a profile's own figure (Config.Own)
}

// track is what a Source keeps of one figure across scrapes.
type track struct {
	last   []float64 // raw counter-like components of the previous reading
	acc    []float64 // their run-long increase, resets handled
	upper  []float64 // histogram layout of the first reading
	resets int
	broken string // the figure cannot be windowed any more, and why
	run    extremes
	hold   extremes
}

// extremes are a gauge's min and max over a stretch of scrapes.
type extremes struct {
	min, max float64
	n        int
}

func (e *extremes) add(v float64) {
	if e.n == 0 || v < e.min {
		e.min = v
	}
	if e.n == 0 || v > e.max {
		e.max = v
	}
	e.n++
}

// snap is one scrape's state: per figure its reading and the run-long
// accumulated increases at that moment.
type snap struct {
	at   time.Time
	figs []figSnap
}

type figSnap struct {
	r   reading
	acc []float64 // nil when the figure was not read in this scrape
}

// Source turns successive scrapes of one endpoint into server_tick
// figures. Not safe for concurrent use: the swarm's monitor owns it.
type Source struct {
	sc     Fetcher
	figs   []figure
	tracks []track
	start  time.Time

	first, base, last *snap
	// frozen is the scrape the gauges of frozenFigs stopped at (Freeze);
	// nil while none is frozen.
	frozen          *snap
	frozenFigs      map[int]bool
	prev            *snap   // the scrape before last (LastStep)
	recent          []*snap // trailing snapshots for Recent
	scrapes, failed int
	format          string
	lastErr         error
}

// New builds a Source, validating the mapping.
func New(cfg Config) (*Source, error) {
	if err := cfg.Map.Validate(); err != nil {
		return nil, err
	}
	if err := validateOwn(cfg.Own); err != nil {
		return nil, err
	}
	if err := ValidateLabels(cfg.Labels); err != nil {
		return nil, err
	}
	full := merged(cfg.Map, cfg.Own, cfg.Labels)
	var fe Fetcher = &cfg.Scraper
	if cfg.Fetcher != nil {
		fe = cfg.Fetcher
	}
	s := &Source{sc: fe, start: cfg.Start}
	for _, name := range sortedKeys(full) {
		f := full[name]
		_, own := cfg.Own[name]
		k, metric, _ := f.kind()
		scale := 1.0
		if f.Scale != nil {
			scale = *f.Scale
		}
		s.figs = append(s.figs, figure{name: name, kind: k, metric: metric, sel: selectorString(metric, f.Labels),
			labels: f.Labels, label: f.Label, scale: scale, quantiles: f.Quantiles, def: cfg.Map.IsDefault(name) && !own, own: own})
	}
	s.tracks = make([]track, len(s.figs))
	return s, nil
}

// URL is where the series are read from (Fetcher.Origin).
func (s *Source) URL() string { return s.sc.Origin() }

// Sample scrapes the endpoint at time at and records what the windows
// need. inHold says the hold has begun (every client of the run has had
// its connect slot): the first such scrape starts the window the final
// figures cover. A failed scrape records nothing and is returned; the
// windows then span it.
func (s *Source) Sample(ctx context.Context, at time.Time, inHold bool) error {
	return s.Took(s.Fetch(ctx)).Apply(at, inHold)
}

// Fetch scrapes the endpoint once and touches no state of s, so it may
// run while another goroutine holds the lock that guards s: the fetch and
// the parse, the part of a sample that takes time, happen outside it.
// Took then records the result.
func (s *Source) Fetch(ctx context.Context) (Families, string, error) {
	return s.sc.Fetch(ctx)
}

// Scrape is one fetched scrape waiting to be recorded (Took).
type Scrape struct {
	src    *Source
	fams   Families
	format string
	err    error
}

// Took pairs a Fetch's results with s for Apply.
func (s *Source) Took(fams Families, format string, err error) Scrape {
	return Scrape{src: s, fams: fams, format: format, err: err}
}

// Apply records the scrape as taken at time at (Sample's second half): a
// failed one is counted and returned. A scrape older than the last one
// recorded (two fetches that overlapped and finished out of order) is
// left out: the windows need their scrapes in time order.
func (sc Scrape) Apply(at time.Time, inHold bool) error {
	s := sc.src
	if sc.err != nil {
		s.failed++
		s.lastErr = sc.err
		return sc.err
	}
	if s.last != nil && at.Before(s.last.at) {
		return nil
	}
	s.format = sc.format
	s.Record(at, sc.fams, inHold)
	return nil
}

// Record adds one parsed scrape taken at time at (Sample without the
// fetch: tests and benchmarks feed expositions directly).
func (s *Source) Record(at time.Time, fams Families, inHold bool) {
	sn := &snap{at: at, figs: make([]figSnap, len(s.figs))}
	startHold := inHold && s.base == nil
	for i := range s.figs {
		f, t := &s.figs[i], &s.tracks[i]
		r := notNegative(f, read(fams, f.kind, f.metric, f.labels, f.label))
		sn.figs[i].r = r
		if r.err != "" {
			continue
		}
		if f.kind == Gauge && !s.frozenFigs[i] {
			v := r.value * f.scale
			t.run.add(v)
			if inHold {
				t.hold.add(v)
			}
		}
		sn.figs[i].acc = t.accumulate(f, r, at.Sub(s.start))
	}
	s.scrapes++
	if s.first == nil {
		s.first = sn
	}
	if startHold {
		s.base = sn
	}
	s.prev, s.last = s.last, sn
	s.recent = append(s.recent, sn)
	cut := at.Add(-RecentWindow)
	for len(s.recent) >= 2 && !s.recent[1].at.After(cut) {
		s.recent[0] = nil
		s.recent = s.recent[1:]
	}
}

// components are the counter-like values of a reading whose increase the
// windows need: a counter's value; a histogram's cumulative bucket
// counts, sum and count; a summary's sum and count.
func components(k Kind, r reading) []float64 {
	switch k {
	case CounterRate, Counter:
		return []float64{r.value}
	case Histogram:
		return append(slices.Clone(r.cum), r.sum, r.count)
	case Summary:
		return []float64{r.sum, r.count}
	}
	return nil
}

// accumulate folds a reading into the run-long increases and returns a
// copy of them (nil when the figure has none or cannot be windowed).
func (t *track) accumulate(f *figure, r reading, at time.Duration) []float64 {
	c := components(f.kind, r)
	if c == nil || t.broken != "" {
		return nil
	}
	if f.kind == Histogram {
		if t.upper == nil {
			t.upper = slices.Clone(r.upper)
		} else if !slices.Equal(t.upper, r.upper) {
			t.broken = fmt.Sprintf("%s changed its buckets at t=%.1f s (%d bounds, then %d): no window spans two layouts", f.sel, at.Seconds(), len(t.upper), len(r.upper))
			return nil
		}
	}
	if t.last == nil {
		t.acc = make([]float64, len(c))
	} else {
		reset := false
		for j := range c {
			d, rs := stats.CounterStep(t.last[j], c[j])
			t.acc[j] += d
			reset = reset || rs
		}
		if reset {
			t.resets++
		}
	}
	t.last = c
	return slices.Clone(t.acc)
}

// LastStep is a histogram figure's observations between the two latest
// scrapes, in the figure's scale: the timeline row's share of the ticks.
// Nil when there is no such step: fewer than two scrapes, the figure
// missing from either, or it cannot be windowed (its buckets changed).
func (s *Source) LastStep(name string) *stats.Buckets {
	i := s.index(name)
	if i < 0 || s.prev == nil || s.figs[i].kind != Histogram {
		return nil
	}
	f, t := &s.figs[i], &s.tracks[i]
	a, b := s.prev.figs[i].acc, s.last.figs[i].acc
	n := len(t.upper)
	if t.broken != "" || a == nil || b == nil || len(a) != n+2 || len(b) != n+2 {
		return nil
	}
	upper, cum := make([]float64, n), make([]float64, n)
	for j := range n {
		upper[j], cum[j] = t.upper[j]*f.scale, b[j]-a[j]
	}
	if f.scale <= 0 {
		return nil
	}
	upper[n-1] = math.Inf(1)
	h, err := stats.FromCumulative(upper, cum, (b[n]-a[n])*f.scale)
	if err != nil {
		return nil
	}
	return h
}

// Scrapes is how many scrapes succeeded and failed so far, and the last
// failure.
func (s *Source) Scrapes() (ok, failed int, lastErr error) { return s.scrapes, s.failed, s.lastErr }

// Freeze stops the named gauge figures where the latest scrape left them:
// later scrapes move the counters, histograms and other gauges, but
// neither the value nor the extremes of these. The swarm freezes the
// population gauges (peers, entities, …) when its bots leave before the
// final scrape (a goodbye the server answers by ending the session), so
// that the figures over the hold describe the loaded server rather than
// one its players have just left. Names that are not gauges of the
// mapping are ignored; before any scrape, or called twice, it does
// nothing.
func (s *Source) Freeze(names []string) {
	if s.frozen != nil || s.last == nil {
		return
	}
	s.frozen, s.frozenFigs = s.last, map[int]bool{}
	for _, n := range names {
		if i := s.index(n); i >= 0 && s.figs[i].kind == Gauge {
			s.frozenFigs[i] = true
		}
	}
}

// Final is the block of figures over the hold: from the first scrape in
// the hold to the latest one. With no scrape in the hold before the
// latest, it falls back to the run's first scrape (Window.Hold false).
// Nil when nothing was scraped.
func (s *Source) Final() *Block {
	if s.last == nil {
		return nil
	}
	base, hold := s.base, true
	if base == nil || base == s.last {
		base, hold = s.first, false
	}
	return s.compute(base, s.last, hold)
}

// Recent is the block over the trailing RecentWindow (or since the first
// scrape, when the run is younger): what a timeline row shows. Nil when
// nothing was scraped.
func (s *Source) Recent() *Block {
	if s.last == nil {
		return nil
	}
	return s.compute(s.recent[0], s.last, false)
}

// compute renders the figures over [base, end].
func (s *Source) compute(base, end *snap, hold bool) *Block {
	span := end.at.Sub(base.at).Seconds()
	b := s.newBlock(base.at, end.at, hold)
	for i := range s.figs {
		f, t := &s.figs[i], &s.tracks[i]
		d := &Detail{Kind: f.kind, Series: f.sel, Scale: f.scale, Default: f.def}
		b.Details[f.name] = d
		eb, ee := base.figs[i], end.figs[i]
		which, at := "final scrape", b.Window.ToS
		if s.frozenFigs[i] {
			// A frozen gauge reads as the hold left it.
			ee, which, at = s.frozen.figs[i], "the hold's last scrape", round3(s.frozen.at.Sub(s.start).Seconds())
		}
		if ee.r.err != "" {
			b.Missing[f.name] = fmt.Sprintf("%s (%s, t=%.1f s)", ee.r.err, which, at)
			continue
		}
		switch f.kind {
		case Gauge:
			b.setNumber(f.name, ee.r.value*f.scale)
			ex := t.hold
			if !hold || base != s.base {
				ex = t.run
			}
			if base == end || ex.n == 0 {
				ex = extremes{min: ee.r.value * f.scale, max: ee.r.value * f.scale, n: 1}
			}
			d.Min, d.Max, d.Scrapes = ptr(ex.min), ptr(ex.max), ex.n
		case Info:
			b.Strings[f.name] = ee.r.text
		case CounterRate, Counter:
			s.counter(b, d, f, t, eb, ee, span)
		case Histogram:
			s.histogram(b, d, f, t, eb, ee, span)
		case Summary:
			s.summary(b, d, f, t, eb, ee, span)
		}
		if f.own {
			b.ownShape(f, d)
		}
	}
	s.derive(b)
	return b
}

// newBlock is an empty block over [base, end].
func (s *Source) newBlock(from, to time.Time, hold bool) *Block {
	return &Block{
		URL: s.sc.Origin(), Format: s.format,
		Numbers: map[string]float64{}, Counts: map[string]bool{}, Phases: map[string]map[string]float64{},
		Strings: map[string]string{}, Missing: map[string]string{}, Details: map[string]*Detail{},
		Window: WindowInfo{FromS: round3(from.Sub(s.start).Seconds()), ToS: round3(to.Sub(s.start).Seconds()),
			SpanS: round3(to.Sub(from).Seconds()), Hold: hold},
	}
}

// counter fills a counter_rate figure (the increase per second) or a
// counter figure (the increase as a count): both read one increase over
// the window and differ only in how it is set.
func (s *Source) counter(b *Block, d *Detail, f *figure, t *track, eb, ee figSnap, span float64) {
	inc, why := s.increase(b, f, t, eb, ee, span)
	if why != "" {
		b.Missing[f.name] = why
		return
	}
	d.Increase, d.Resets = ptr(inc[0]), t.resets
	if f.kind == CounterRate {
		b.setNumber(f.name, inc[0]/span*f.scale)
		return
	}
	b.setCount(f.name, inc[0]*f.scale)
}

// increase is the growth of a figure's components over the window, or
// why there is none.
func (s *Source) increase(b *Block, f *figure, t *track, eb, ee figSnap, span float64) ([]float64, string) {
	switch {
	case t.broken != "":
		return nil, t.broken
	case eb.r.err != "":
		return nil, fmt.Sprintf("%s (the window's first scrape, t=%.1f s)", eb.r.err, b.Window.FromS)
	case eb.acc == nil || ee.acc == nil:
		return nil, fmt.Sprintf("%s could not be read at both ends of the window", f.sel)
	case !(span > 0):
		return nil, fmt.Sprintf("%s: the window has one scrape, no length to take a %s over", f.sel, f.kind)
	}
	inc := make([]float64, len(ee.acc))
	for j := range inc {
		inc[j] = ee.acc[j] - eb.acc[j]
	}
	return inc, ""
}

func (f *figure) wants(field string, all []string) bool {
	if f.quantiles == nil {
		return slices.Contains(all, field)
	}
	return slices.Contains(f.quantiles, field)
}

// histogram fills a histogram figure from the scrapes: the bucket
// increases over the window (fillHistogram).
func (s *Source) histogram(b *Block, d *Detail, f *figure, t *track, eb, ee figSnap, span float64) {
	inc, why := s.increase(b, f, t, eb, ee, span)
	if why != "" {
		b.Missing[f.name] = why
		return
	}
	n := len(t.upper)
	d.Resets = t.resets
	d.totalObservations = ee.r.count
	fillHistogram(b, d, f, t.upper, inc[:n], inc[n], inc[n+1], nil)
}

// fillHistogram fills a histogram figure from its buckets' increases over
// the window (upper bounds ascending to +Inf, cumulative counts) and the
// increases of _sum and _count: quantiles interpolated as PromQL's
// histogram_quantile does, each with the bucket it lies in; max as the
// upper bound of the highest bucket that gained observations; mean from
// _sum and _count. value, when set, gives a quantile's value instead (the
// Prometheus server's own histogram_quantile), placed in its bucket.
func fillHistogram(b *Block, d *Detail, f *figure, upper, cum []float64, sum, cnt float64, value func(q float64) (float64, error)) {
	d.Observations = ptr(cnt)
	if !(cnt > 0) {
		b.Missing[f.name] = fmt.Sprintf("%s: no observations in the window (t=%.1f–%.1f s)", f.sel, b.Window.FromS, b.Window.ToS)
		return
	}
	out := map[string]float64{}
	miss := func(field, why string) { b.Missing[f.name+"."+field] = why }
	for _, field := range histogramFields {
		if !f.wants(field, histogramFields) {
			continue
		}
		switch field {
		case "mean":
			out[field] = sum / cnt * f.scale
		case "max":
			lo, hi, above, ok := stats.HistogramMaxBound(upper, cum)
			switch {
			case !ok:
				miss(field, fmt.Sprintf("%s: no bucket gained observations", f.sel))
			case above:
				miss(field, fmt.Sprintf("%s: the largest observation is above the highest finite bucket bound %g: unbounded", f.sel, lo))
			default:
				out[field] = hi * f.scale
				d.bound(field, lo*f.scale, hi*f.scale)
			}
		default:
			q := stats.HistogramQuantile(quantileQ[field], upper, cum)
			switch {
			case q.AboveFinite:
				miss(field, fmt.Sprintf("%s: the %s lies above the highest finite bucket bound %g (%g of %g observations are above it): unbounded", f.sel, field, q.Lo, q.Count-cumAt(upper, cum, q.Lo), q.Count))
				continue
			case !q.OK:
				miss(field, fmt.Sprintf("%s: no %s from these buckets", f.sel, field))
				continue
			}
			v, lo, hi := q.Value, q.Lo, q.Hi
			if value != nil {
				pv, err := value(quantileQ[field])
				if err != nil {
					miss(field, err.Error())
					continue
				}
				v = pv
				lo, hi = bucketAround(upper, pv)
			}
			out[field] = v * f.scale
			d.bound(field, lo*f.scale, hi*f.scale)
		}
	}
	b.Phases[f.name] = out
}

// bucketAround is the bucket (lo, hi] holding v.
func bucketAround(upper []float64, v float64) (lo, hi float64) {
	for i, u := range upper {
		if v <= u {
			if i > 0 {
				lo = upper[i-1]
			}
			return lo, u
		}
	}
	return upper[len(upper)-1], math.Inf(1)
}

// cumAt is the cumulative count at bound le.
func cumAt(upper, cum []float64, le float64) float64 {
	for i, u := range upper {
		if u == le {
			return cum[i]
		}
	}
	return 0
}

// summary fills a summary figure from the scrapes (fillSummary).
func (s *Source) summary(b *Block, d *Detail, f *figure, t *track, eb, ee figSnap, span float64) {
	d.totalObservations = ee.r.count
	var inc []float64
	why := ""
	if f.wants("mean", []string{"mean"}) {
		inc, why = s.increase(b, f, t, eb, ee, span)
		d.Resets = t.resets
	}
	fillSummary(b, d, f, ee.r.quant, inc, why)
}

// fillSummary fills a summary figure: its quantiles as exported at the
// end of the window (quant), its mean from the increase of _sum and
// _count over it (inc, or why there is none).
func fillSummary(b *Block, d *Detail, f *figure, quant map[float64]float64, inc []float64, why string) {
	out := map[string]float64{}
	if f.wants("mean", []string{"mean"}) {
		switch {
		case why != "":
			b.Missing[f.name+".mean"] = why
		case inc[1] > 0:
			d.Observations = ptr(inc[1])
			out["mean"] = inc[0] / inc[1] * f.scale
		default:
			d.Observations = ptr(inc[1])
			b.Missing[f.name+".mean"] = fmt.Sprintf("%s: no observations in the window", f.sel)
		}
	}
	for _, field := range []string{"min", "p50", "p90", "p95", "p99", "max"} {
		q := quantileQ[field]
		v, exported := quant[q]
		switch {
		case f.quantiles == nil && !exported:
			continue
		case !slices.Contains(f.quantiles, field) && f.quantiles != nil:
			continue
		case !exported:
			b.Missing[f.name+"."+field] = fmt.Sprintf("%s exports no quantile %g (it has %v)", f.sel, q, sortedQuantiles(quant))
		case math.IsNaN(v):
			b.Missing[f.name+"."+field] = fmt.Sprintf("%s quantile %g is NaN: no observations in the summary's own window", f.sel, q)
		default:
			out[field] = v * f.scale
		}
	}
	b.Phases[f.name] = out
}

func sortedQuantiles(m map[float64]float64) []float64 {
	qs := make([]float64, 0, len(m))
	for q := range m {
		qs = append(qs, q)
	}
	slices.Sort(qs)
	return qs
}

// derive fills what comes from other figures: rss_startup_kb (rss_kb in
// the run's first scrape), the tick counts and rate (tick_ms's
// observations), wire_peers (the peers gauge's minimum over the window)
// and wire_out_kbs_per_client (wire_out_kbs / wire_peers).
func (s *Source) derive(b *Block) {
	b.Numbers["window_s"] = b.Window.SpanS
	if i := s.index("rss_kb"); i >= 0 {
		f, r := &s.figs[i], s.first.figs[i].r
		if r.err == "" {
			b.setCount("rss_startup_kb", r.value*f.scale)
		} else {
			b.Missing["rss_startup_kb"] = fmt.Sprintf("%s (the run's first scrape, t=%.1f s)", r.err, round3(s.first.at.Sub(s.start).Seconds()))
		}
	}
	if d := b.Details["tick_ms"]; d != nil && d.Observations != nil {
		b.setCount("ticks_sampled", *d.Observations)
		b.setCount("ticks_total", d.totalObservations)
		if _, mapped := b.Details["tick_hz"]; !mapped && b.Window.SpanS > 0 {
			b.Numbers["tick_hz"] = *d.Observations / b.Window.SpanS
		}
	}
	if d := b.Details["degraded_ticks"]; d != nil && d.Kind == Counter {
		deg, okD := b.Numbers["degraded_ticks"]
		ticks, okT := b.Numbers["ticks_sampled"]
		switch {
		case okD && okT && ticks > 0:
			b.Numbers["degraded_ticks_share"] = deg / ticks
		case okD && okT:
			b.Missing["degraded_ticks_share"] = "no tick in the window (tick_ms has no observations)"
		}
	}
	if _, mapped := b.Details["wire_peers"]; !mapped {
		if d := b.Details["peers"]; d != nil && d.Kind == Gauge && d.Min != nil {
			b.setCount("wire_peers", *d.Min)
		} else if d != nil {
			b.Missing["wire_peers"] = "peers is missing: " + b.Missing["peers"]
		}
	}
	if _, mapped := b.Details["wire_out_kbs_per_client"]; !mapped {
		kbs, okK := b.Numbers["wire_out_kbs"]
		peers, okP := b.Numbers["wire_peers"]
		switch {
		case okK && okP && peers > 0:
			b.Numbers["wire_out_kbs_per_client"] = kbs / peers
		case okK && okP:
			b.Missing["wire_out_kbs_per_client"] = "wire_peers is 0: no peers connected at some scrape of the window, so no per-client rate"
		case b.Details["wire_out_kbs"] != nil && !okK:
			b.Missing["wire_out_kbs_per_client"] = "wire_out_kbs is missing: " + b.Missing["wire_out_kbs"]
		case b.Details["wire_out_kbs"] != nil && !okP:
			b.Missing["wire_out_kbs_per_client"] = "wire_peers is missing: " + b.Missing["wire_peers"]
		}
	}
}

func (s *Source) index(name string) int {
	for i := range s.figs {
		if s.figs[i].name == name {
			return i
		}
	}
	return -1
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// notNegative refuses a reading no honest server exports: a counter below
// zero, or a negative value for a figure that counts (dropped_ticks = -7
// would otherwise pass dropped_ticks_max ≤ 0). The figure is then missing,
// with the series named, and its gate unevaluable.
func notNegative(f *figure, r reading) reading {
	if r.err != "" {
		return r
	}
	switch {
	case (f.kind == Counter || f.kind == CounterRate) && r.value < 0:
		return reading{err: fmt.Sprintf("%s is %v: a counter is never negative", f.sel, r.value)}
	case f.kind == Gauge && fields[f.name] == count && r.value*f.scale < 0:
		return reading{err: fmt.Sprintf("%s is %v: %s counts, and a count is never negative", f.sel, r.value, f.name)}
	}
	return r
}
