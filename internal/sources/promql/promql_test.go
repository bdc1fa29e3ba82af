package promql

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/common/model"

	"github.com/scalegate/scalegate/internal/sources/promsource"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{VarLeg: "weave", VarPod: "game-0"}
	for _, tc := range []struct {
		in, want, err string
		vars          map[string]string
	}{
		{in: "{leg}", want: "weave", vars: vars},
		{in: "x-{pod}-{leg}", want: "x-game-0-weave", vars: vars},
		{in: "plain", want: "plain", vars: vars},
		{in: "{job}", err: "unknown placeholder {job}", vars: vars},
		{in: "{pod}", err: "{pod} has no value (set server.metrics.pod)", vars: map[string]string{VarLeg: "l"}},
		{in: "{pod}", err: "{pod} has no value", vars: map[string]string{VarLeg: "l", VarPod: ""}},
	} {
		got, err := Expand(tc.in, tc.vars)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Expand(%q) error %v, want %q", tc.in, err, tc.err)
		case tc.err == "" && (err != nil || got != tc.want):
			t.Errorf("Expand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestResolveNamesEachLabel(t *testing.T) {
	m := promsource.Map{"peers": {Gauge: "game_players", Labels: map[string]string{"state": "joined", "pod": "{pod}"}}}
	out, labels, err := Resolve(m, map[string]string{"scalegate_leg": "{leg}"}, map[string]string{VarLeg: "weave", VarPod: "g0"})
	if err != nil || out["peers"].Labels["pod"] != "g0" || out["peers"].Labels["state"] != "joined" || labels["scalegate_leg"] != "weave" {
		t.Fatalf("Resolve: %v %v %v", out, labels, err)
	}
	if m["peers"].Labels["pod"] != "{pod}" {
		t.Errorf("Resolve changed its input: %v", m["peers"].Labels)
	}
	_, _, err = Resolve(m, map[string]string{"job": "{jb}"}, map[string]string{VarLeg: "weave"})
	for _, want := range []string{"labels.job: unknown placeholder {jb}", "queries.peers.labels.pod: {pod} has no value"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Resolve error %v, want %q", err, want)
		}
	}
}

// TestUnionSelector: one selector for every series, with only the
// matchers all share (a per-figure label is applied to the answer).
func TestUnionSelector(t *testing.T) {
	plan := []promsource.Series{
		{Kind: promsource.Histogram, Metric: "game_tick_seconds", Labels: map[string]string{"pod": "g0"}},
		{Kind: promsource.Gauge, Metric: "game_players", Labels: map[string]string{"pod": "g0", "state": "joined"}},
		{Kind: promsource.Summary, Metric: "game_rtt", Labels: map[string]string{"pod": "g0"}},
	}
	want := `{__name__=~"game_players|game_rtt|game_rtt_count|game_rtt_sum|game_tick_seconds_bucket|game_tick_seconds_count|game_tick_seconds_sum",pod="g0"}`
	if got := unionSelector(plan); got != want {
		t.Errorf("unionSelector:\n got %s\nwant %s", got, want)
	}
}

func sample(value float64, labels ...string) *model.Sample {
	m := model.Metric{}
	for i := 0; i+1 < len(labels); i += 2 {
		m[model.LabelName(labels[i])] = model.LabelValue(labels[i+1])
	}
	return &model.Sample{Metric: m, Value: model.SampleValue(value)}
}

// TestFamiliesReadAsAScrape: an instant query's answer, laid out as
// families, is read by the mapping as the endpoint's own exposition
// would be: a histogram from its buckets, _sum and _count; a summary from
// its quantiles; a gauge from an untyped series; labels selecting one.
func TestFamiliesReadAsAScrape(t *testing.T) {
	m := promsource.Map{
		"tick_ms":  {Histogram: "game_tick_seconds", Scale: ptr(1000.0)},
		"peers":    {Gauge: "game_players", Labels: map[string]string{"state": "joined"}},
		"other_ms": {Summary: "game_rtt"},
	}
	s := NewSeries(&Client{url: "http://p"}, promsource.Plan(promsource.Config{Map: m}))
	v := model.Vector{
		sample(90, "__name__", "game_tick_seconds_bucket", "le", "0.001", "pod", "g0"),
		sample(100, "__name__", "game_tick_seconds_bucket", "le", "+Inf", "pod", "g0"),
		sample(0.05, "__name__", "game_tick_seconds_sum", "pod", "g0"),
		sample(100, "__name__", "game_tick_seconds_count", "pod", "g0"),
		sample(7, "__name__", "game_players", "state", "joined"),
		sample(2, "__name__", "game_players", "state", "joining"),
		sample(0.004, "__name__", "game_rtt", "quantile", "0.99"),
		sample(1.5, "__name__", "game_rtt_sum"),
		sample(300, "__name__", "game_rtt_count"),
	}
	fams := s.families(v)
	if err := promsource.Ready(context.Background(), staticFetcher{fams}, m); err != nil {
		t.Fatalf("the answer does not read as a scrape: %v", err)
	}
	h := fams["game_tick_seconds"].GetMetric()[0].GetHistogram()
	if len(h.GetBucket()) != 2 || h.GetSampleCountFloat() != 100 || h.GetSampleSum() != 0.05 {
		t.Errorf("histogram %v", h)
	}
	if q := fams["game_rtt"].GetMetric()[0].GetSummary().GetQuantile(); len(q) != 1 || q[0].GetValue() != 0.004 {
		t.Errorf("summary quantiles %v", q)
	}
	if got := len(fams["game_players"].GetMetric()); got != 2 {
		t.Errorf("game_players: %d series, want both (the mapping's labels pick one)", got)
	}
}

type staticFetcher struct{ f promsource.Families }

func (s staticFetcher) Fetch(context.Context) (promsource.Families, string, error) {
	return s.f, "test", nil
}
func (s staticFetcher) Origin() string { return "static" }

// TestQueryRefusesWhatIsNotAVector: a Prometheus answer that is an
// error, another result type, a redirect or not JSON is an error naming
// the server, never an empty reading.
func TestQueryRefusesWhatIsNotAVector(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
		status           int
	}{
		{"scalar", `{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}`, "gave a scalar, not an instant vector", 200},
		{"bad query", `{"status":"error","errorType":"bad_data","error":"parse error: unexpected end"}`, "parse error: unexpected end", 400},
		{"garbage", `<html>hi</html>`, "prometheus http://", 200},
		{"redirect", ``, "redirect refused", http.StatusFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.status == http.StatusFound {
					http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c, err := New(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Query(context.Background(), "up", srvTime)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), srv.URL) {
				t.Errorf("error %v, want one naming %s with %q", err, srv.URL, tc.want)
			}
		})
	}
	if _, err := New("prometheus:9090"); err == nil {
		t.Error("a URL without a scheme was taken")
	}
}

var srvTime = model.Time(1_700_000_000_000).Time()
