package promql

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// FuzzAnswer serves arbitrary bytes as a Prometheus server's answer to
// the swarm's instant query: whatever comes back is an error or families
// the mapping reads (each figure read or missing with a reason), never a
// panic.
func FuzzAnswer(f *testing.F) {
	for _, seed := range []string{
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"g_bucket","le":"+Inf"},"value":[1,"3"]},{"metric":{"__name__":"g_count"},"value":[1,"3"]},{"metric":{"__name__":"g_sum"},"value":[1,"0.1"]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"g_bucket","le":"NaN"},"value":[1,"-3"]},{"metric":{"__name__":"p"},"value":[1,"Inf"]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"__name__":"r","quantile":"x"},"value":[1,"1"]},{"metric":{"__name__":"r_count"},"value":[1,"-1"]}]}}`,
		`{"status":"error","error":"x"}`,
		`{}`,
	} {
		f.Add([]byte(seed))
	}
	m := promsource.Map{
		"tick_ms":  {Histogram: "g"},
		"peers":    {Gauge: "p"},
		"other_ms": {Summary: "r"},
	}
	// One server for every input: a server per input spends seconds in
	// Close, waiting on the client's idle connections.
	var answer atomic.Pointer[[]byte]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(*answer.Load())
	}))
	f.Cleanup(srv.Close)
	c, err := New(srv.URL)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		answer.Store(&body)
		s := NewSeries(c, promsource.Plan(promsource.Config{Map: m}))
		_ = promsource.Ready(context.Background(), s, m)
		src, err := promsource.New(promsource.Config{Fetcher: s, Map: m, Start: srvTime})
		if err != nil {
			t.Fatal(err)
		}
		_ = src.Sample(context.Background(), srvTime, true)
		_ = src.Sample(context.Background(), srvTime.Add(1e9), true)
		if b := src.FinalQuery(context.Background(), c); b != nil {
			if _, err := b.MarshalJSON(); err != nil {
				t.Fatalf("block does not render: %v", err)
			}
		}
	})
}
