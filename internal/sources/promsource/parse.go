package promsource

import (
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Exposition formats a body can be parsed as.
const (
	FormatText        = "text"        // Prometheus text 0.0.4
	FormatOpenMetrics = "openmetrics" // OpenMetrics 0.0.1 / 1.0.0
	FormatProtobuf    = "protobuf"    // delimited protobuf (a server may answer it)
)

// Families is one parsed exposition: metric family name → family.
type Families map[string]*dto.MetricFamily

// ChooseFormat picks the parser for a response's Content-Type the way
// Prometheus 3 does: text/plain is the text format, application/
// openmetrics-text OpenMetrics (versions 0.0.1 and 1.0.0; the parser has
// no other), delimited protobuf protobuf. A blank, unparseable or other
// Content-Type is an error unless fallback ("text" or "openmetrics", the
// mapping's fallback_format, Prometheus's fallback_scrape_protocol)
// names the format to assume.
func ChooseFormat(contentType, fallback string) (expfmt.Format, string, error) {
	useFallback := func(why string) (expfmt.Format, string, error) {
		switch fallback {
		case FormatText:
			return expfmt.NewFormat(expfmt.TypeTextPlain), FormatText, nil
		case FormatOpenMetrics:
			return expfmt.FmtOpenMetrics_1_0_0, FormatOpenMetrics, nil
		case "":
			return expfmt.FmtUnknown, "", fmt.Errorf("%s and no fallback format given (fallback_format: \"text\" or \"openmetrics\")", why)
		}
		return expfmt.FmtUnknown, "", fmt.Errorf("%s, and the fallback format %q is neither \"text\" nor \"openmetrics\"", why, fallback)
	}
	if strings.TrimSpace(contentType) == "" {
		return useFallback("the endpoint sent no Content-Type")
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return useFallback(fmt.Sprintf("Content-Type %q does not parse (%v)", contentType, err))
	}
	switch mt {
	case "text/plain":
		return expfmt.NewFormat(expfmt.TypeTextPlain), FormatText, nil
	case expfmt.OpenMetricsType:
		switch v := params["version"]; v {
		case "", expfmt.OpenMetricsVersion_0_0_1, expfmt.OpenMetricsVersion_1_0_0:
			f := expfmt.FmtOpenMetrics_1_0_0
			if v == expfmt.OpenMetricsVersion_0_0_1 {
				f = expfmt.FmtOpenMetrics_0_0_1
			}
			return f, FormatOpenMetrics, nil
		default:
			return useFallback(fmt.Sprintf("OpenMetrics version %q has no parser here (0.0.1 and 1.0.0 do)", v))
		}
	case expfmt.ProtoType:
		if params["proto"] == expfmt.ProtoProtocol && params["encoding"] == "delimited" {
			return expfmt.FmtProtoDelim, FormatProtobuf, nil
		}
	}
	return useFallback(fmt.Sprintf("Content-Type %q is not a Prometheus exposition format", contentType))
}

// Parse decodes a whole exposition of the given format (ChooseFormat) with
// the Prometheus project's own parsers. A malformed body is an error
// saying what and where (the parser's line); a family given twice is an
// error too. It never panics on any input: a parser panic is turned into
// an error, since the body comes from the network.
func Parse(r io.Reader, format expfmt.Format) (fams Families, err error) {
	defer func() {
		if p := recover(); p != nil {
			fams, err = nil, fmt.Errorf("exposition parser failed on this body: %v", p)
		}
	}()
	dec := expfmt.NewDecoder(r, format)
	fams = Families{}
	for i := 0; ; i++ {
		mf := &dto.MetricFamily{}
		if err := dec.Decode(mf); err != nil {
			if errors.Is(err, io.EOF) {
				return fams, nil
			}
			return nil, fmt.Errorf("parse: %w", err)
		}
		name := mf.GetName()
		if _, dup := fams[name]; dup {
			return nil, fmt.Errorf("parse: metric family %q appears twice", name)
		}
		fams[name] = mf
	}
}

// reading is one figure's series as found in one scrape: the values its
// kind needs, or why it could not be read (err non-empty).
type reading struct {
	err string
	// gauge, counter_rate
	value float64
	// histogram (upper bounds ascending, ending at +Inf; cumulative
	// counts), histogram and summary sum and count
	upper, cum []float64
	sum, count float64
	// summary: quantile → value as exported
	quant map[float64]float64
	// info
	text string
}

// selectSeries finds the one series of metric whose labels include every
// matcher. None or several is an error naming the metric, the matchers
// and what the family does hold.
func selectSeries(fams Families, metric string, labels map[string]string) (*dto.MetricFamily, *dto.Metric, error) {
	sel := selectorString(metric, labels)
	mf, ok := fams[metric]
	if !ok {
		hint := ""
		if _, ok := fams[metric+"_total"]; ok {
			hint = fmt.Sprintf(" (the scrape has %s_total: counters are named with _total)", metric)
		}
		return nil, nil, fmt.Errorf("%s not found: the scrape has no metric %s%s", sel, metric, hint)
	}
	var hits []*dto.Metric
	for _, m := range mf.GetMetric() {
		if matches(m, labels) {
			hits = append(hits, m)
		}
	}
	switch len(hits) {
	case 1:
		return mf, hits[0], nil
	case 0:
		return nil, nil, fmt.Errorf("%s not found: no series of %s has those labels (it has %s)", sel, metric, seriesList(mf))
	}
	return nil, nil, fmt.Errorf("%s matches %d series (%s): add labels to select one", sel, len(hits), seriesList(&dto.MetricFamily{Metric: hits}))
}

func matches(m *dto.Metric, labels map[string]string) bool {
	for k, v := range labels {
		found := false
		for _, lp := range m.GetLabel() {
			if lp.GetName() == k {
				found = lp.GetValue() == v
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// seriesList shows up to 5 series' label sets.
func seriesList(mf *dto.MetricFamily) string {
	ms := mf.GetMetric()
	var parts []string
	for i, m := range ms {
		if i == 5 {
			parts = append(parts, fmt.Sprintf("… %d more", len(ms)-5))
			break
		}
		l := map[string]string{}
		for _, lp := range m.GetLabel() {
			l[lp.GetName()] = lp.GetValue()
		}
		s := selectorString("", l)
		if s == "" {
			s = "{}"
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		return "no series"
	}
	return strings.Join(parts, ", ")
}

// read extracts what kind k needs from the selected series, checking the
// family's type.
func read(fams Families, k Kind, metric string, labels map[string]string, label string) reading {
	mf, m, err := selectSeries(fams, metric, labels)
	if err != nil {
		return reading{err: err.Error()}
	}
	sel := selectorString(metric, labels)
	typ := mf.GetType()
	wrongType := func(want string) reading {
		return reading{err: fmt.Sprintf("%s is a %s, a %s figure reads %s", sel, strings.ToLower(typ.String()), k, want)}
	}
	switch k {
	case Gauge:
		switch typ {
		case dto.MetricType_GAUGE:
			return finite(sel, reading{value: m.GetGauge().GetValue()})
		case dto.MetricType_COUNTER:
			return finite(sel, reading{value: m.GetCounter().GetValue()})
		case dto.MetricType_UNTYPED:
			return finite(sel, reading{value: m.GetUntyped().GetValue()})
		}
		return wrongType("a gauge, counter or untyped series")
	case CounterRate, Counter:
		switch typ {
		case dto.MetricType_COUNTER:
			return finite(sel, reading{value: m.GetCounter().GetValue()})
		case dto.MetricType_UNTYPED:
			return finite(sel, reading{value: m.GetUntyped().GetValue()})
		}
		return wrongType("a counter")
	case Histogram:
		if typ != dto.MetricType_HISTOGRAM {
			return wrongType("a histogram")
		}
		return histogramReading(sel, m.GetHistogram())
	case Summary:
		if typ != dto.MetricType_SUMMARY {
			return wrongType("a summary")
		}
		return summaryReading(m.GetSummary())
	case Info:
		return labelReading(sel, m, label)
	}
	return reading{err: fmt.Sprintf("unknown kind %q", k)}
}

// summaryReading takes a summary as exported: its quantiles are the
// client library's own, so they are kept as they are, with sum and count.
func summaryReading(s *dto.Summary) reading {
	r := reading{sum: s.GetSampleSum(), count: float64(s.GetSampleCount()), quant: map[float64]float64{}}
	for _, q := range s.GetQuantile() {
		r.quant[q.GetQuantile()] = q.GetValue()
	}
	return r
}

// labelReading is an info figure's reading: the value of label on the
// series, whatever the family's type (the info-metric convention).
func labelReading(sel string, m *dto.Metric, label string) reading {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == label {
			return reading{text: lp.GetValue()}
		}
	}
	return reading{err: fmt.Sprintf("%s has no label %q", sel, label)}
}

func finite(sel string, r reading) reading {
	if math.IsNaN(r.value) || math.IsInf(r.value, 0) {
		return reading{err: fmt.Sprintf("%s is %v, not a measurement", sel, r.value)}
	}
	return r
}

// histogramReading lays a classic histogram out for stats.HistogramQuantile:
// bounds ascending, ending at +Inf (added from the sample count when the
// exposition left it implicit, as client_golang's parsed form does).
func histogramReading(sel string, h *dto.Histogram) reading {
	bs := h.GetBucket()
	if len(bs) == 0 {
		return reading{err: fmt.Sprintf("%s has no classic buckets (a native-only histogram): histogram_quantile needs buckets", sel)}
	}
	count := float64(h.GetSampleCount())
	if h.SampleCountFloat != nil {
		count = h.GetSampleCountFloat()
	}
	buckets := sortedBuckets(bs)
	for i := 1; i < len(buckets); i++ {
		if buckets[i].le == buckets[i-1].le {
			return reading{err: fmt.Sprintf("%s has two buckets le=%v", sel, buckets[i].le)}
		}
	}
	if last := buckets[len(buckets)-1]; !math.IsInf(last.le, 1) {
		buckets = append(buckets, bucket{math.Inf(1), count})
	}
	r := reading{sum: h.GetSampleSum(), count: count, upper: make([]float64, len(buckets)), cum: make([]float64, len(buckets))}
	for i, x := range buckets {
		if math.IsNaN(x.le) || math.IsNaN(x.n) {
			return reading{err: fmt.Sprintf("%s has a NaN bucket", sel)}
		}
		if x.n < 0 {
			return reading{err: fmt.Sprintf("%s has a negative count %v in its bucket le=%v", sel, x.n, x.le)}
		}
		if i > 0 && x.n < buckets[i-1].n {
			// A quantile read from such buckets would be anywhere: the
			// counts must grow with the bound.
			return reading{err: fmt.Sprintf("%s is not cumulative: its bucket le=%v counts %v, fewer than le=%v's %v", sel, x.le, x.n, buckets[i-1].le, buckets[i-1].n)}
		}
		r.upper[i], r.cum[i] = x.le, x.n
	}
	return r
}

// bucket is one classic histogram bucket: its upper bound and cumulative
// count.
type bucket struct{ le, n float64 }

// sortedBuckets puts an exposition's buckets in bound order (a parser
// keeps them as written, which need not be sorted), reading float counts
// where the exposition gave them. The slice has room for the +Inf bucket
// histogramReading may add, so that append does not grow it.
func sortedBuckets(bs []*dto.Bucket) []bucket {
	buckets := make([]bucket, 0, len(bs)+1)
	for _, x := range bs {
		n := float64(x.GetCumulativeCount())
		if x.CumulativeCountFloat != nil {
			n = x.GetCumulativeCountFloat()
		}
		buckets = append(buckets, bucket{x.GetUpperBound(), n})
	}
	slices.SortFunc(buckets, func(x, y bucket) int {
		switch {
		case x.le < y.le:
			return -1
		case x.le > y.le:
			return 1
		}
		return 0
	})
	return buckets
}
