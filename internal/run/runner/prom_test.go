package runner

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/sources/promql"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// TestReadyWaitsForPromQLSeries: a PromQL leg is not ready while its
// Prometheus holds none of its server's series (it answers before it has
// found or scraped the server), nor while a mapped or own figure's series
// is still absent; it is once every one is there.
func TestReadyWaitsForPromQLSeries(t *testing.T) {
	answers := []string{
		``, // Prometheus up, the server not scraped yet
		`{"metric":{"__name__":"game_entities","scalegate_leg":"weave"},"value":[1,"4"]}`,
		`{"metric":{"__name__":"game_entities","scalegate_leg":"weave"},"value":[1,"4"]},` +
			`{"metric":{"__name__":"physics_seconds_bucket","le":"+Inf","scalegate_leg":"weave"},"value":[1,"9"]},` +
			`{"metric":{"__name__":"physics_seconds_sum","scalegate_leg":"weave"},"value":[1,"0.1"]},` +
			`{"metric":{"__name__":"physics_seconds_count","scalegate_leg":"weave"},"value":[1,"9"]}`,
	}
	var step atomic.Int32
	var lastQuery atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		lastQuery.Store(r.Form.Get("query"))
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[%s]}}`, answers[step.Load()])
	}))
	defer srv.Close()
	c, err := promql.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	r := &legRun{o: Options{Progress: io.Discard}, leg: profile.Leg{ID: "weave"}, prom: &promLeg{
		url: srv.URL, client: c, labels: map[string]string{"scalegate_leg": "weave"},
		m:   promsource.Map{"entities": {Gauge: "game_entities"}},
		own: promsource.Map{"physics_ms": {Histogram: "physics_seconds", Scale: ptrF(1000)}},
	}}
	ready := r.ready()
	for i, want := range []string{"holds no series of the leg's server yet", "physics_seconds", ""} {
		step.Store(int32(i))
		err := ready(context.Background())
		switch {
		case want == "" && err != nil:
			t.Errorf("step %d: not ready: %v", i, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("step %d: ready error %v, want one naming %q", i, err, want)
		}
	}
	q, _ := lastQuery.Load().(string)
	if !strings.Contains(q, `scalegate_leg="weave"`) || !strings.Contains(q, "physics_seconds_bucket") {
		t.Errorf("the readiness query %q does not ask for the leg's series and the own figure's", q)
	}
}

func ptrF(v float64) *float64 { return &v }
