package promsource_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/config/catalog"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// TestBlockMatchesSchema: the block a Prometheus source renders is a
// #PrometheusServerTick (schema/server_tick.cue), and a swarm report
// embedding it passes #Report, the gate's hard report_schema check; a
// block without its prometheus object does not.
func TestBlockMatchesSchema(t *testing.T) {
	src, err := promsource.New(promsource.Config{Map: promsource.Map{
		"tick_ms": {Histogram: "h_seconds", Scale: ptr(1000)},
		"peers":   {Gauge: "p"},
	}, Start: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range []string{
		"# TYPE h_seconds histogram\nh_seconds_bucket{le=\"0.01\"} 5\nh_seconds_bucket{le=\"+Inf\"} 5\nh_seconds_sum 0.02\nh_seconds_count 5\n# TYPE p gauge\np 3\n",
		"# TYPE h_seconds histogram\nh_seconds_bucket{le=\"0.01\"} 9\nh_seconds_bucket{le=\"+Inf\"} 10\nh_seconds_sum 0.2\nh_seconds_count 10\n# TYPE p gauge\np 4\n",
	} {
		f, _, _ := promsource.ChooseFormat("text/plain", "")
		fams, err := promsource.Parse(strings.NewReader(body), f)
		if err != nil {
			t.Fatal(err)
		}
		src.Record(time.Unix(int64(i), 0), fams, true)
	}
	b, err := json.Marshal(src.Final())
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.ValidateJSON("#PrometheusServerTick", "block.json", b); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	rep := `{"schema_version":6,"transport":"enet","clients":1,"clients_connected":1,"asserts":[],"passed":true,"server_tick":` + string(b) + `}`
	if err := catalog.ValidateJSON("#Report", "report.json", []byte(rep)); err != nil {
		t.Fatalf("report embedding the block: %v", err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	delete(m, "prometheus")
	bad, _ := json.Marshal(m)
	if err := catalog.ValidateJSON("#Report", "report.json", []byte(`{"schema_version":6,"transport":"enet","clients":1,"clients_connected":1,"asserts":[],"passed":true,"server_tick":`+string(bad)+`}`)); err == nil {
		t.Fatal("a prometheus-sourced block without its prometheus object passed #Report")
	}
}

func ptr(v float64) *float64 { return &v }

// TestServerMetricsSchema: schema/server_metrics.cue's #ServerMetrics (for
// a profile's server.metrics block) takes the reference map and the file
// default, and refuses what Map.Validate would refuse by shape.
func TestServerMetricsSchema(t *testing.T) {
	refMap, err := json.Marshal(map[string]any{"tick_ms": map[string]any{"histogram": "game_tick_duration_seconds", "scale": 1000, "quantiles": []string{"p95", "p99"}},
		"peers": map[string]any{"gauge": "game_players", "labels": map[string]string{"state": "joined"}}, "transport": map[string]any{"info": "i", "label": "transport"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		doc string
		ok  bool
	}{
		{`{"source": "prometheus", "url": "http://127.0.0.1:{metrics_port}/metrics", "map": ` + string(refMap) + `}`, true},
		{`{}`, true},
		{`{"source": "file"}`, true},
		{`{"source": "prometheus", "url": "ftp://x"}`, false},
		// The reference server needs no url; a custom server's missing url,
		// and url or map under source "file", are vet's (catalog) to refuse.
		{`{"source": "prometheus"}`, true},
		{`{"source": "prometheus", "url": "http://x", "map": {"peers": {"gauge": "a", "counter_rate": "b"}}}`, false},
		{`{"source": "prometheus", "url": "http://x", "map": {"peers": {"labels": {"a": "b"}}}}`, false},
		{`{"source": "prometheus", "url": "http://x", "map": {"peers": {"gauge": "a-b"}}}`, false},
		{`{"source": "prometheus", "url": "http://x", "map": {"peers": {"gauge": "a", "scale": 0}}}`, false},
		{`{"source": "prometheus", "url": "http://x", "map": {"peers": {"gauge": "a", "labels": {"le": "1"}}}}`, false},
		{`{"source": "prometheus", "url": "http://x", "map": {"peers": {"gauge": "a", "bogus": 1}}}`, false},
		{`{"source": "prometheus", "url": "http://x", "map": {"tick_ms": {"histogram": "a", "quantiles": ["p42"]}}}`, false},
		{`{"source": "prometheus", "url": "http://x", "fallback_format": "json"}`, false},
		{`{"source": "file", "url": "http://x"}`, true},
	} {
		err := catalog.ValidateJSON("#ServerMetrics", "metrics.json", []byte(c.doc))
		if (err == nil) != c.ok {
			t.Errorf("%s: %v, want ok=%v", c.doc, err, c.ok)
		}
	}
}
