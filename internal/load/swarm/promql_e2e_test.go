//go:build linux

package swarm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reference/server"
	"github.com/scalegate/scalegate/internal/reference/server/exposition"
	"github.com/scalegate/scalegate/internal/sources/promql"
	"github.com/scalegate/scalegate/internal/sources/promsource"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/testkit/promtest"
)

// tapped is one scrape Prometheus took through the tap: when it arrived
// and what it was given.
type tapped struct {
	at   time.Time
	fams promsource.Families
}

// scrapeTap stands between Prometheus and the server's /metrics and keeps
// every exposition it passes on, so a test can compute the direct scrape's
// figures from exactly the samples Prometheus stored.
type scrapeTap struct {
	mu   sync.Mutex
	got  []tapped
	errs []error
}

func newScrapeTap(t *testing.T, upstream string) (*httptest.Server, *scrapeTap) {
	tap := &scrapeTap{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, ctype, err := fetchText(r.Context(), upstream)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		format, _, err := promsource.ChooseFormat(ctype, "")
		var fams promsource.Families
		if err == nil {
			fams, err = promsource.Parse(bytes.NewReader(body), format)
		}
		tap.mu.Lock()
		if err != nil {
			tap.errs = append(tap.errs, err)
		} else {
			tap.got = append(tap.got, tapped{at: at, fams: fams})
		}
		tap.mu.Unlock()
		w.Header().Set("Content-Type", ctype)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv, tap
}

func (tp *scrapeTap) scrapes(t *testing.T) []tapped {
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if len(tp.errs) > 0 {
		t.Fatalf("the tap could not parse what it passed on: %v", tp.errs[0])
	}
	return append([]tapped(nil), tp.got...)
}

// fetchText asks upstream for the text format (the one the direct scrape
// prefers) and returns the body and its Content-Type.
func fetchText(ctx context.Context, upstream string) ([]byte, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, upstream, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil, "", fmt.Errorf("%s: status %d: %v", upstream, resp.StatusCode, err)
	}
	return b, resp.Header.Get("Content-Type"), nil
}

func gaugeOf(fams promsource.Families, name string) float64 {
	mf := fams[name]
	if mf == nil || len(mf.GetMetric()) != 1 {
		return math.NaN()
	}
	return mf.GetMetric()[0].GetGauge().GetValue()
}

// TestPromQLAgreesWithScrape gates one run of the reference server both
// ways: scraped directly, and through a real Prometheus (Debian's 2.42,
// 1 s scrape interval) queried with PromQL. Prometheus scrapes through a
// tap that keeps what it was given, so the direct figures are computed
// from the very samples Prometheus stored, over the stretch every client
// was connected; the PromQL figures are Prometheus's increase, rate and
// histogram_quantile over the same samples. They must agree: tick p99
// within its bucket's width, entities and peers exact, wire KB/s per
// client within 2 %.
//
// The swarm itself reads the server through the same Prometheus
// (--server-metrics-promql): its server_tick must carry every client and
// entity, and a wire KB/s within 25 % of the direct figure (its hold is
// its own, not the tap's stretch).
func TestPromQLAgreesWithScrape(t *testing.T) {
	// Parallel: it compares two readings of the same stored samples, not
	// either with a rate a busy machine moves; load only leaves fewer
	// scrapes with every client connected (it needs 5 of about 11), and
	// the swarm's own reading keeps its 25 % bound. Sequential, its 22 s
	// under the race detector were the longest stretch of this package's
	// sequential tests.
	t.Parallel()
	const clients = 16
	srv := startRefServer(t, 64, func(c *server.Config) { c.Metrics.PrometheusListen = "127.0.0.1:0" })
	if srv.PromURL == "" {
		t.Fatal("the server never announced its Prometheus endpoint")
	}
	tapSrv, tap := newScrapeTap(t, srv.PromURL)
	prom := promtest.Start(t, []promtest.Target{{Addr: strings.TrimPrefix(tapSrv.URL, "http://"), Labels: map[string]string{"pod": "reference"}}})
	client, err := promql.New(prom.URL)
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"pod": "reference"}
	plan := promsource.Plan(promsource.Config{Map: exposition.Map(), Labels: labels})
	series := promql.NewSeries(client, plan)
	var readyErr error
	livetest.Eventually(t, 60*time.Second, livetest.Holds("Prometheus holds every mapped series", func() bool {
		readyErr = promsource.Ready(context.Background(), series, exposition.Map())
		return readyErr == nil
	}))

	mapPath := filepath.Join(t.TempDir(), "map.json")
	mb, _ := json.Marshal(exposition.Map())
	if err := os.WriteFile(mapPath, mb, 0o644); err != nil {
		t.Fatal(err)
	}
	code, rep, _ := swarmCLI(t, 120*time.Second, "127.0.0.1", srv.Port, "--clients", fmt.Sprint(clients), "--duration", "12", "--ramp-ms", "20",
		"--server-metrics-promql", prom.URL, "--server-metrics-map", mapPath, "--server-metrics-label", "pod=reference")
	if code != 0 {
		t.Fatalf("swarm exit %d", code)
	}

	// The stretch of Prometheus's scrapes with every client connected.
	var loaded []tapped
	for _, s := range tap.scrapes(t) {
		if gaugeOf(s.fams, "scalegate_peers") == clients {
			loaded = append(loaded, s)
		} else if len(loaded) > 0 {
			break
		}
	}
	if len(loaded) < 5 {
		t.Fatalf("%d scrapes with all %d clients connected: too short a stretch to compare", len(loaded), clients)
	}
	start := loaded[0].at.Add(-time.Second)
	direct, err := promsource.New(promsource.Config{Scraper: promsource.Scraper{URL: tapSrv.URL}, Map: exposition.Map(), Start: start})
	if err != nil {
		t.Fatal(err)
	}
	viaProm, err := promsource.New(promsource.Config{Fetcher: series, Map: exposition.Map(), Labels: labels, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range loaded {
		direct.Record(s.at, s.fams, true)
	}
	// viaProm reads nothing but its run's first figures (rss_startup_kb)
	// from its own series; the rest QueryWindow asks of Prometheus.
	if err := viaProm.Sample(context.Background(), time.Now(), true); err != nil {
		t.Fatal(err)
	}
	d := direct.Final()
	// Prometheus stamps a sample when its scrape starts, a moment before
	// the tap saw it: the range opens half a scrape interval before the
	// first and closes at the last, holding exactly these samples.
	first, last := loaded[0].at, loaded[len(loaded)-1].at
	q := viaProm.QueryWindow(context.Background(), client, first.Add(-500*time.Millisecond), last)
	logBlocks(t, d, q)

	dp99, okD := d.Phase("tick_ms", "p99")
	qp99, okQ := q.Phase("tick_ms", "p99")
	width := d.Details["tick_ms"].Error["p99"]
	switch {
	case !okD || !okQ:
		t.Errorf("tick_ms.p99: direct %v (%v), promql %v (%v): missing %v", dp99, okD, qp99, okQ, q.Missing)
	case math.Abs(dp99-qp99) > width:
		t.Errorf("tick_ms.p99: direct %.3f, promql %.3f ms: %.3f apart, over the bucket width %.3f", dp99, qp99, math.Abs(dp99-qp99), width)
	}
	for _, name := range []string{"entities", "peers", "rss_kb"} {
		dv, okD := d.Number(name)
		qv, okQ := q.Number(name)
		if !okD || !okQ || dv != qv {
			t.Errorf("%s: direct %v (%v), promql %v (%v): want equal", name, dv, okD, qv, okQ)
		}
	}
	dk, _ := d.Number("wire_out_kbs_per_client")
	qk, okK := q.Number("wire_out_kbs_per_client")
	if !okK || !(dk > 0) || math.Abs(qk-dk) > 0.02*dk {
		t.Errorf("wire_out_kbs_per_client: direct %.3f, promql %.3f (%v): want within 2 %%", dk, qk, okK)
	}
	if dt, qt := d.Strings["transport"], q.Strings["transport"]; dt == "" || dt != qt {
		t.Errorf("transport: direct %q, promql %q", dt, qt)
	}

	// The swarm's own reading through Prometheus.
	var st struct {
		Peers      *float64 `json:"peers"`
		Entities   *float64 `json:"entities"`
		Wire       *float64 `json:"wire_out_kbs_per_client"`
		Prometheus struct {
			Format string `json:"format"`
			URL    string `json:"url"`
		} `json:"prometheus"`
		Tick map[string]float64 `json:"tick_ms"`
	}
	if err := json.Unmarshal(rep.ServerTick, &st); err != nil {
		t.Fatalf("report server_tick: %v (%s)", err, rep.ServerTick)
	}
	de, _ := d.Number("entities")
	switch {
	case st.Prometheus.Format != promsource.FormatPromQL || st.Prometheus.URL != prom.URL:
		t.Errorf("the swarm's server_tick came from %q (%s), want promql from %s", st.Prometheus.URL, st.Prometheus.Format, prom.URL)
	case st.Peers == nil || *st.Peers != clients || st.Entities == nil || *st.Entities != de:
		t.Errorf("the swarm's server_tick: peers %v, entities %v; want %d and %v", st.Peers, st.Entities, clients, de)
	case st.Wire == nil || math.Abs(*st.Wire-dk) > 0.25*dk:
		t.Errorf("the swarm's wire_out_kbs_per_client %v, direct %.3f: want within 25 %%", st.Wire, dk)
	case st.Tick["p99"] <= 0:
		t.Errorf("the swarm's tick_ms has no p99: %v", st.Tick)
	}
}

func logBlocks(t *testing.T, d, q *promsource.Block) {
	t.Helper()
	t.Logf("window: direct %.3f–%.3f s, promql %.3f–%.3f s", d.Window.FromS, d.Window.ToS, q.Window.FromS, q.Window.ToS)
	for _, name := range []string{"entities", "peers", "rss_kb", "wire_out_kbs", "wire_out_kbs_per_client", "tick_hz", "cpu_pct"} {
		dv, _ := d.Number(name)
		qv, _ := q.Number(name)
		t.Logf("%-24s direct %12.3f  promql %12.3f", name, dv, qv)
	}
	for _, f := range []string{"mean", "p95", "p99", "max"} {
		dv, _ := d.Phase("tick_ms", f)
		qv, _ := q.Phase("tick_ms", f)
		t.Logf("tick_ms.%-16s direct %12.3f  promql %12.3f", f, dv, qv)
	}
	if len(q.Missing) > 0 {
		t.Logf("promql missing: %v", q.Missing)
	}
}
