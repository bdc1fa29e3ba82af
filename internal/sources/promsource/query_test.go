package promsource

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// fakeQuerier answers each expression by its first match in answers
// (a prefix of the expression); anything else is an empty vector.
type fakeQuerier struct {
	answers []struct {
		prefix string
		v      model.Vector
		err    error
	}
	asked []string
}

func (f *fakeQuerier) on(prefix string, v model.Vector, err error) *fakeQuerier {
	f.answers = append(f.answers, struct {
		prefix string
		v      model.Vector
		err    error
	}{prefix, v, err})
	return f
}

func (f *fakeQuerier) Query(_ context.Context, expr string, _ time.Time) (model.Vector, error) {
	f.asked = append(f.asked, expr)
	for _, a := range f.answers {
		if strings.HasPrefix(expr, a.prefix) {
			return a.v, a.err
		}
	}
	return nil, nil
}

func vec(values ...float64) model.Vector {
	var v model.Vector
	for i, x := range values {
		v = append(v, &model.Sample{Metric: model.Metric{"i": model.LabelValue(rune('a' + i))}, Value: model.SampleValue(x)})
	}
	return v
}

func buckets(pairs ...float64) model.Vector {
	var v model.Vector
	for i := 0; i+1 < len(pairs); i += 2 {
		le := model.LabelValue("+Inf")
		if !math.IsInf(pairs[i], 1) {
			le = model.LabelValue(strings.TrimRight(strings.TrimRight(model.SampleValue(pairs[i]).String(), "0"), "."))
		}
		v = append(v, &model.Sample{Metric: model.Metric{"le": le}, Value: model.SampleValue(pairs[i+1])})
	}
	return v
}

// TestFinalQueryFigures: each kind is read from Prometheus's answers as
// Final reads its scrapes, and every answer that cannot be a figure
// leaves it missing with the expression named, never zero.
func TestFinalQueryFigures(t *testing.T) {
	m := Map{
		"tick_ms":       {Histogram: "t", Scale: ptr(1000.0)},
		"peers":         {Gauge: "p"},
		"wire_out_kbs":  {CounterRate: "w", Scale: ptr(0.001)},
		"dropped_ticks": {Counter: "d"},
		"transport":     {Info: "i", Label: "transport"},
	}
	for _, tc := range []struct {
		name  string
		q     *fakeQuerier
		check func(t *testing.T, b *Block)
	}{
		{"every kind", (&fakeQuerier{}).
			on("increase(t_bucket", buckets(0.001, 90, 0.002, 99, math.Inf(1), 100), nil).
			on("histogram_quantile(0.99,", vec(0.002), nil).
			on("histogram_quantile(0.95,", vec(0.0015), nil).
			on("histogram_quantile(", vec(0.0005), nil).
			on("increase(t_sum", vec(0.1), nil).on("increase(t_count", vec(100), nil).
			on("last_over_time(p", vec(16), nil).on("min_over_time(p", vec(15), nil).on("max_over_time(p", vec(16), nil).on("count_over_time(p", vec(7), nil).
			on("rate(w", vec(50000), nil).on("increase(w", vec(300000), nil).
			on("increase(d", vec(2.4), nil).
			on("last_over_time(i", model.Vector{{Metric: model.Metric{"transport": "enet"}, Value: 1}}, nil),
			func(t *testing.T, b *Block) {
				if v, _ := b.Phase("tick_ms", "p99"); v != 2 {
					t.Errorf("tick_ms.p99 %v, want Prometheus's 0.002 s as 2 ms", v)
				}
				if v, _ := b.Phase("tick_ms", "mean"); v != 1 {
					t.Errorf("tick_ms.mean %v, want 0.1/100 s as 1 ms", v)
				}
				if e := b.Details["tick_ms"].Error["p99"]; e != 1 {
					t.Errorf("tick_ms.p99's bucket width %v, want (1, 2] ms", e)
				}
				if v, _ := b.Number("peers"); v != 16 || *b.Details["peers"].Min != 15 {
					t.Errorf("peers %v min %v", v, *b.Details["peers"].Min)
				}
				if v, _ := b.Number("wire_peers"); v != 15 {
					t.Errorf("wire_peers %v, want the hold's minimum 15", v)
				}
				if v, _ := b.Number("wire_out_kbs"); v != 50 {
					t.Errorf("wire_out_kbs %v", v)
				}
				if v, _ := b.Number("dropped_ticks"); v != 2 || !b.Counts["dropped_ticks"] {
					t.Errorf("dropped_ticks %v, want a count", v)
				}
				if b.Strings["transport"] != "enet" || b.Format != FormatPromQL {
					t.Errorf("transport %q format %q", b.Strings["transport"], b.Format)
				}
			}},
		{"several series", (&fakeQuerier{}).on("last_over_time(p", vec(1, 2), nil), func(t *testing.T, b *Block) {
			wantMissing(t, b, "peers", "gave 2 series", "add labels to select one")
		}},
		{"no series", &fakeQuerier{}, func(t *testing.T, b *Block) {
			wantMissing(t, b, "wire_out_kbs", "increase(w[", "gave no series")
			wantMissing(t, b, "tick_ms", "t_bucket", "gave no series")
		}},
		{"a refused query", (&fakeQuerier{}).on("rate(w", nil, errors.New("bad_data: boom")).on("increase(w", vec(1), nil), func(t *testing.T, b *Block) {
			wantMissing(t, b, "wire_out_kbs", "rate(w[", "boom")
		}},
		{"NaN", (&fakeQuerier{}).on("last_over_time(p", vec(math.NaN()), nil), func(t *testing.T, b *Block) {
			wantMissing(t, b, "peers", "not a measurement")
		}},
		{"negative count", (&fakeQuerier{}).on("last_over_time(p", vec(-3), nil), func(t *testing.T, b *Block) {
			wantMissing(t, b, "peers", "a count is never negative")
		}},
		{"two histograms", (&fakeQuerier{}).on("increase(t_bucket", append(buckets(0.001, 1, math.Inf(1), 2), buckets(0.001, 1)...), nil), func(t *testing.T, b *Block) {
			wantMissing(t, b, "tick_ms", "two series with le=0.001")
		}},
		{"no +Inf bucket", (&fakeQuerier{}).on("increase(t_bucket", buckets(0.001, 1), nil), func(t *testing.T, b *Block) {
			wantMissing(t, b, "tick_ms", `no le="+Inf" bucket`)
		}},
		{"p99 above the finite buckets", (&fakeQuerier{}).
			on("increase(t_bucket", buckets(0.001, 50, math.Inf(1), 100), nil).
			on("histogram_quantile(", vec(0.001), nil).
			on("increase(t_sum", vec(9), nil).on("increase(t_count", vec(100), nil), func(t *testing.T, b *Block) {
			wantMissing(t, b, "tick_ms.p99", "unbounded")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := New(Config{Scraper: Scraper{URL: "unused"}, Map: m, Start: time.Unix(1000, 0)})
			if err != nil {
				t.Fatal(err)
			}
			src.Record(time.Unix(1001, 0), Families{}, true)
			src.Record(time.Unix(1011, 0), Families{}, true)
			b := src.FinalQuery(context.Background(), tc.q)
			if b.Window.SpanS != 10 {
				t.Errorf("window %+v, want the 10 s between the scrapes", b.Window)
			}
			tc.check(t, b)
		})
	}
}

func wantMissing(t *testing.T, b *Block, path string, parts ...string) {
	t.Helper()
	why, ok := b.Missing[path]
	if !ok {
		t.Fatalf("%s not missing (missing: %v)", path, b.Missing)
	}
	for _, p := range parts {
		if !strings.Contains(why, p) {
			t.Errorf("%s missing as %q, want it to say %q", path, why, p)
		}
	}
}
