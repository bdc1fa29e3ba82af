package promql

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"

	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// Series reads the mapped series from a Prometheus server: each Fetch is
// one instant query of every series a mapping reads, answered as a scrape
// of the server itself would be (promsource.Families), so the swarm's
// timeline, readiness and the runner's witness read a server behind
// Prometheus as they read its endpoint. A value is the series' latest
// sample, as old as Prometheus's scrape interval.
type Series struct {
	c    *Client
	expr string
	// kinds: metric name as the mapping names it → how it is read.
	kinds map[string]promsource.Kind
}

// NewSeries reads plan's series (promsource.Plan) through c.
func NewSeries(c *Client, plan []promsource.Series) *Series {
	s := &Series{c: c, kinds: map[string]promsource.Kind{}}
	for _, p := range plan {
		s.kinds[p.Metric] = p.Kind
	}
	s.expr = unionSelector(plan)
	return s
}

// Origin is the Prometheus server's URL.
func (s *Series) Origin() string { return s.c.url }

// Expr is the query each Fetch sends.
func (s *Series) Expr() string { return s.expr }

// Fetch asks for every series at once and lays the answer out as
// families of the types the mapping reads them as.
func (s *Series) Fetch(ctx context.Context) (promsource.Families, string, error) {
	v, err := s.c.Query(ctx, s.expr, time.Now())
	if err != nil {
		return nil, "", &promsource.ScrapeError{URL: s.c.url, Err: err}
	}
	return s.families(v), promsource.FormatPromQL, nil
}

// Newest is the timestamp of the newest sample Prometheus holds of the
// mapped series: when it last scraped the server.
func (s *Series) Newest(ctx context.Context) (time.Time, error) {
	v, err := s.c.Query(ctx, "max(timestamp("+s.expr+"))", time.Now())
	if err != nil {
		return time.Time{}, err
	}
	if len(v) != 1 {
		return time.Time{}, fmt.Errorf("prometheus %s holds no sample of %s", s.c.url, s.expr)
	}
	sec := float64(v[0].Value)
	return time.Unix(0, int64(sec*1e9)), nil
}

// unionSelector is one selector for every series of plan: their metric
// names (with a histogram's _bucket, _sum and _count, a summary's _sum
// and _count) as one regular expression, and the matchers every series
// of plan shares. Each figure's own matchers are applied to the answer
// as to a scrape's. One selector, not `a or b`: PromQL's set operators
// match series on their labels without the metric name, so `or` would
// drop every series whose labels equal one already in the answer.
func unionSelector(plan []promsource.Series) string {
	names := map[string]bool{}
	for _, p := range plan {
		for _, n := range seriesNames(p) {
			names[n] = true
		}
	}
	matchers := []string{"__name__=~" + strconv.Quote(strings.Join(slices.Sorted(maps.Keys(names)), "|"))}
	common := shared(plan)
	for _, k := range slices.Sorted(maps.Keys(common)) {
		matchers = append(matchers, k+"="+strconv.Quote(common[k]))
	}
	return "{" + strings.Join(matchers, ",") + "}"
}

// seriesNames are the metric names one mapped series is stored under.
func seriesNames(p promsource.Series) []string {
	switch p.Kind {
	case promsource.Histogram:
		return []string{p.Metric + "_bucket", p.Metric + "_sum", p.Metric + "_count"}
	case promsource.Summary:
		return []string{p.Metric, p.Metric + "_sum", p.Metric + "_count"}
	}
	return []string{p.Metric}
}

// shared are the matchers every series of plan has, same value.
func shared(plan []promsource.Series) map[string]string {
	if len(plan) == 0 {
		return nil
	}
	out := maps.Clone(plan[0].Labels)
	for _, p := range plan[1:] {
		for k, v := range out {
			if p.Labels[k] != v {
				delete(out, k)
			}
		}
	}
	return out
}

// families groups an answer into metric families: a histogram's buckets,
// _sum and _count into one histogram per label set, a summary's
// quantiles, _sum and _count into one summary; every other series
// untyped (a gauge or counter figure reads an untyped series).
func (s *Series) families(v model.Vector) promsource.Families {
	fams := promsource.Families{}
	hist := map[string]*grouped{}
	for _, smp := range v {
		name := string(smp.Metric[model.MetricNameLabel])
		base, part := s.split(name)
		switch s.kinds[base] {
		case promsource.Histogram, promsource.Summary:
			g := hist[base]
			if g == nil {
				g = &grouped{kind: s.kinds[base], sets: map[string]*dto.Metric{}}
				hist[base] = g
			}
			g.add(smp, part)
		default:
			mf := fams[name]
			if mf == nil {
				mf = &dto.MetricFamily{Name: ptr(name), Type: dto.MetricType_UNTYPED.Enum()}
				fams[name] = mf
			}
			mf.Metric = append(mf.Metric, &dto.Metric{Label: labelPairs(smp.Metric), Untyped: &dto.Untyped{Value: ptr(float64(smp.Value))}})
		}
	}
	for base, g := range hist {
		fams[base] = g.family(base)
	}
	return fams
}

// split names the mapped metric a stored series belongs to and which part
// of it the series is ("_bucket", "_sum", "_count", or "" for the metric
// itself).
func (s *Series) split(name string) (base, part string) {
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suf); ok {
			if k := s.kinds[b]; k == promsource.Histogram || (k == promsource.Summary && suf != "_bucket") {
				return b, suf
			}
		}
	}
	return name, ""
}

// grouped gathers one histogram or summary family's series by label set.
type grouped struct {
	kind promsource.Kind
	sets map[string]*dto.Metric
}

func (g *grouped) add(smp *model.Sample, part string) {
	lbl := smp.Metric.Clone()
	delete(lbl, model.MetricNameLabel)
	le, q := lbl["le"], lbl["quantile"]
	delete(lbl, "le")
	if part == "" {
		delete(lbl, "quantile")
	}
	key := lbl.String()
	m := g.sets[key]
	if m == nil {
		m = &dto.Metric{Label: labelPairs(lbl)}
		if g.kind == promsource.Histogram {
			m.Histogram = &dto.Histogram{}
		} else {
			m.Summary = &dto.Summary{}
		}
		g.sets[key] = m
	}
	val := float64(smp.Value)
	switch {
	case part == "_bucket":
		if ub, err := strconv.ParseFloat(string(le), 64); err == nil {
			m.Histogram.Bucket = append(m.Histogram.Bucket, &dto.Bucket{UpperBound: ptr(ub), CumulativeCountFloat: ptr(val)})
		}
	case part == "_sum" && m.Histogram != nil:
		m.Histogram.SampleSum = ptr(val)
	case part == "_count" && m.Histogram != nil:
		m.Histogram.SampleCountFloat = ptr(val)
	case part == "_sum":
		m.Summary.SampleSum = ptr(val)
	case part == "_count":
		m.Summary.SampleCount = ptr(uint64(math.Max(val, 0)))
	default:
		if qv, err := strconv.ParseFloat(string(q), 64); err == nil {
			m.Summary.Quantile = append(m.Summary.Quantile, &dto.Quantile{Quantile: ptr(qv), Value: ptr(val)})
		}
	}
}

func (g *grouped) family(name string) *dto.MetricFamily {
	typ := dto.MetricType_HISTOGRAM
	if g.kind == promsource.Summary {
		typ = dto.MetricType_SUMMARY
	}
	mf := &dto.MetricFamily{Name: ptr(name), Type: typ.Enum()}
	for _, k := range slices.Sorted(maps.Keys(g.sets)) {
		mf.Metric = append(mf.Metric, g.sets[k])
	}
	return mf
}

// labelPairs are a series' labels without its name, sorted.
func labelPairs(m model.Metric) []*dto.LabelPair {
	var out []*dto.LabelPair
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == model.MetricNameLabel {
			continue
		}
		out = append(out, &dto.LabelPair{Name: ptr(string(k)), Value: ptr(string(m[k]))})
	}
	return out
}

func ptr[T any](v T) *T { return &v }
