package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// growingEndpoint is a Prometheus endpoint whose counters grow with wall
// time from its creation: 60 ticks a second, every one in (15, 20] ms,
// 1000 bytes sent a second, a quarter of a CPU second a second; RSS
// 50,000 KiB; one joined player.
//
// Over any window the tick p99 is then rank 0.99·n of the n ticks, all in
// the (15, 20] ms bucket: 15 + 5·0.99 = 19.95 ms.
type growingEndpoint struct {
	start time.Time
	mu    sync.Mutex
	hits  int
	// noProcess leaves out the process collector's series, as a server
	// without one does.
	noProcess bool
}

func (e *growingEndpoint) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	e.mu.Lock()
	e.hits++
	e.mu.Unlock()
	s := time.Since(e.start).Seconds()
	ticks := math.Floor(s * 60)
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintf(w, "# TYPE game_tick_duration_seconds histogram\n")
	for _, b := range []struct {
		le string
		n  float64
	}{{"0.005", 0}, {"0.01", 0}, {"0.015", 0}, {"0.02", ticks}, {"+Inf", ticks}} {
		fmt.Fprintf(w, "game_tick_duration_seconds_bucket{le=%q} %g\n", b.le, b.n)
	}
	fmt.Fprintf(w, "game_tick_duration_seconds_sum %g\ngame_tick_duration_seconds_count %g\n", ticks*0.0175, ticks)
	fmt.Fprintf(w, "# TYPE game_net_bytes_sent_total counter\ngame_net_bytes_sent_total %g\n", s*1000)
	fmt.Fprintf(w, "# TYPE game_players gauge\ngame_players{state=\"joined\"} 1\n")
	if e.noProcess {
		return
	}
	fmt.Fprintf(w, "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %d\n", 50000*1024)
	fmt.Fprintf(w, "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %g\n", s*0.25)
}

func f64(v float64) *float64 { return &v }

// TestPrometheusSampledAndEmbedded: with --server-metrics-prometheus the
// monitor scrapes every second: timeline rows carry the trailing window's
// tick p99 and the RSS, the RSS series fills, and the report embeds the
// figures over the hold as server_tick, read by the asserts like the
// file's. A mapped series the endpoint lacks is missing, named.
func TestPrometheusSampledAndEmbedded(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, nil, 0)
	ep := &growingEndpoint{start: time.Now()}
	hs := httptest.NewServer(ep)
	defer hs.Close()
	m := promsource.Map{
		"tick_ms":      {Histogram: "game_tick_duration_seconds", Scale: f64(1000)},
		"peers":        {Gauge: "game_players", Labels: map[string]string{"state": "joined"}},
		"wire_out_kbs": {CounterRate: "game_net_bytes_sent_total", Scale: f64(0.001)},
		"entities":     {Gauge: "game_entities"}, // not exported: missing
	}
	cfg := Config{Addr: srv.addr, Clients: 1, Duration: 3500 * time.Millisecond, RSSSampleInterval: time.Second,
		ServerMetricsPrometheus: hs.URL + "/metrics", ServerMetricsMap: m}
	res := runSwarm(t, context.Background(), cfg, 60*time.Second)
	r := res.Report
	if r.ServerMetricsError != "" || len(r.ServerTick) == 0 || r.ServerMetricsPath != cfg.ServerMetricsPrometheus {
		t.Fatalf("server_tick not embedded: %q", r.ServerMetricsError)
	}
	var st struct {
		Source         string             `json:"source"`
		TickMs         map[string]float64 `json:"tick_ms"`
		RSSKB          *int64             `json:"rss_kb"`
		RSSStartupKB   *int64             `json:"rss_startup_kb"`
		CPUPct         *float64           `json:"cpu_pct"`
		PerClient      *float64           `json:"wire_out_kbs_per_client"`
		WirePeers      *int               `json:"wire_peers"`
		Entities       *int               `json:"entities"`
		SchemaVersion  int                `json:"schema_version"`
		PrometheusInfo struct {
			Missing map[string]string `json:"missing"`
			Window  struct {
				SpanS float64 `json:"span_s"`
				Hold  bool    `json:"hold"`
			} `json:"window"`
		} `json:"prometheus"`
	}
	if err := json.Unmarshal(r.ServerTick, &st); err != nil {
		t.Fatal(err)
	}
	if st.Source != "prometheus" || st.SchemaVersion != report.ServerTickSchemaVersion || math.Abs(st.TickMs["p99"]-19.95) > 1e-9 {
		t.Errorf("source %q schema %d tick_ms %v (want p99 19.95)", st.Source, st.SchemaVersion, st.TickMs)
	}
	if _, ok := st.TickMs["min"]; ok {
		t.Error("tick_ms.min from a histogram")
	}
	if st.RSSKB == nil || *st.RSSKB != 50000 || st.RSSStartupKB == nil || *st.RSSStartupKB != 50000 {
		t.Errorf("rss %v startup %v", st.RSSKB, st.RSSStartupKB)
	}
	// Rates over a window of ≥ 2 s whose edges are scrape times: the
	// endpoint's clock and the swarm's differ by the request's latency.
	if st.CPUPct == nil || math.Abs(*st.CPUPct-25) > 2 || st.PerClient == nil || math.Abs(*st.PerClient-1) > 0.08 || st.WirePeers == nil || *st.WirePeers != 1 {
		t.Errorf("cpu_pct %v (want 25), wire per client %v (want 1), wire_peers %v", st.CPUPct, st.PerClient, st.WirePeers)
	}
	if st.Entities != nil || !strings.Contains(st.PrometheusInfo.Missing["entities"], "game_entities not found") {
		t.Errorf("entities %v, missing %v", st.Entities, st.PrometheusInfo.Missing)
	}
	if !st.PrometheusInfo.Window.Hold || st.PrometheusInfo.Window.SpanS < 2 {
		t.Errorf("window %+v: the hold starts at the first scrape after the single client's slot", st.PrometheusInfo.Window)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "entities missing: game_entities not found") {
		t.Errorf("warnings %q lack the missing series", r.Warnings)
	}
	if len(r.RSSSeries) < 2 || r.RSSSeries[0].RSSKB != 50000 {
		t.Errorf("rss_series %+v", r.RSSSeries)
	}
	rows := 0
	for _, p := range r.Timeline {
		if p.TickMsP99 != nil && math.Abs(*p.TickMsP99-19.95) < 1e-9 && p.RSSKB != nil && *p.RSSKB == 50000 {
			rows++
		}
	}
	if rows < 2 {
		t.Errorf("%d timeline rows carry the endpoint's tick p99 and RSS: %+v", rows, r.Timeline)
	}
	// The wire rate per client of each second (what wire_kbs_max's early
	// abort reads) comes from the endpoint too, by the gate's rule.
	wire := 0
	for _, p := range r.Timeline {
		if w := p.WireKBsPerClient; w != nil && math.Abs(*w-1) < 0.2 {
			wire++
		}
	}
	if wire < 1 {
		t.Errorf("no timeline row carries the endpoint's wire KB/s per client: %+v", r.Timeline)
	}
	// The asserts read the embedded block like the file's.
	a := NoAsserts()
	a["tick_ms_p99_max"] = 16
	a["entities_min"] = 1
	a["server_cpu_pct_max"] = 50
	failed := Evaluate(a, res)
	if len(failed) != 2 || failed[0].Name != "assert-max-tick-ms" || math.Abs(*failed[0].Measured-19.95) > 1e-9 ||
		failed[1].Name != "assert-min-entities" || failed[1].Measured != nil {
		t.Errorf("asserts: %+v", failed)
	}
}

// TestPrometheusDefaultsMissingQuietly: a server without a process
// collector lacks rss_kb and cpu_pct, which the profile never named. That
// is no news on every run, so no warning; the block still lists them as
// missing, and a gate that reads one is unevaluable, never passed.
func TestPrometheusDefaultsMissingQuietly(t *testing.T) {
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, nil, 0)
	hs := httptest.NewServer(&growingEndpoint{start: time.Now(), noProcess: true})
	defer hs.Close()
	m := promsource.Map{
		"tick_ms":  {Histogram: "game_tick_duration_seconds", Scale: f64(1000)},
		"peers":    {Gauge: "game_players", Labels: map[string]string{"state": "joined"}},
		"entities": {Gauge: "game_entities"}, // named and not exported: warned
	}
	cfg := Config{Addr: srv.addr, Clients: 1, Duration: 2500 * time.Millisecond,
		ServerMetricsPrometheus: hs.URL + "/metrics", ServerMetricsMap: m}
	res := runSwarm(t, context.Background(), cfg, 60*time.Second)
	r := res.Report
	warned := strings.Join(r.Warnings, "\n")
	if strings.Contains(warned, "rss_kb") || strings.Contains(warned, "rss_startup_kb") || strings.Contains(warned, "cpu_pct") {
		t.Errorf("a default the server does not export was warned about: %q", r.Warnings)
	}
	if !strings.Contains(warned, "entities missing") {
		t.Errorf("a named series the server lacks was not warned about: %q", r.Warnings)
	}
	var st struct {
		Prometheus struct {
			Missing map[string]string `json:"missing"`
		} `json:"prometheus"`
	}
	if err := json.Unmarshal(r.ServerTick, &st); err != nil {
		t.Fatal(err)
	}
	if st.Prometheus.Missing["rss_kb"] == "" || st.Prometheus.Missing["cpu_pct"] == "" {
		t.Errorf("missing %v: the defaults must stay listed for the gates", st.Prometheus.Missing)
	}
	a := NoAsserts()
	a["server_cpu_pct_max"] = 50
	if failed := Evaluate(a, res); len(failed) != 1 || failed[0].Measured != nil {
		t.Errorf("server_cpu_pct_max without cpu_pct: %+v, want unevaluable", failed)
	}
}

// TestPrometheusUnreachable: an endpoint that never answers leaves the
// report without server_tick and says why; every server-side assert is
// then unevaluable, never passed.
func TestPrometheusUnreachable(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, nil, 0)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "down", http.StatusServiceUnavailable) }))
	defer hs.Close()
	cfg := Config{Addr: srv.addr, Clients: 1, Duration: 1500 * time.Millisecond, ServerMetricsPrometheus: hs.URL + "/metrics"}
	res := runSwarm(t, context.Background(), cfg, 60*time.Second)
	r := res.Report
	if len(r.ServerTick) != 0 || !strings.Contains(r.ServerMetricsError, "status 503") || !strings.Contains(r.ServerMetricsError, hs.URL) {
		t.Fatalf("server_tick %s, error %q", r.ServerTick, r.ServerMetricsError)
	}
	a := NoAsserts()
	a["server_cpu_pct_max"] = 1000
	if failed := Evaluate(a, res); len(failed) != 1 || failed[0].Measured != nil {
		t.Errorf("asserts %+v", failed)
	}
}

func TestPrometheusConfigValidate(t *testing.T) {
	base := Config{Addr: "127.0.0.1:1", Clients: 1, Duration: time.Second, RateHz: 60}
	for name, c := range map[string]struct {
		mut  func(*Config)
		want string
	}{
		"both sources": {func(c *Config) { c.ServerMetrics, c.ServerMetricsPrometheus = "m.json", "http://x/metrics" }, "not both"},
		"not a URL":    {func(c *Config) { c.ServerMetricsPrometheus = "x:9000/metrics" }, "not an http(s) URL"},
		"bad map": {func(c *Config) {
			c.ServerMetricsPrometheus, c.ServerMetricsMap = "http://x/m", promsource.Map{"bogus": {}}
		}, "map.bogus"},
		"bad fallback":    {func(c *Config) { c.ServerMetricsFallback = "json" }, `fallback format "json"`},
		"prometheus fine": {func(c *Config) { c.ServerMetricsPrometheus = "http://127.0.0.1:9464/metrics" }, ""},
	} {
		cfg := base
		c.mut(&cfg)
		err := cfg.Validate()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
	}
}

// TestCaptureFinalNotHeldBySlowScrape: the monitor's scrape is stuck on
// its endpoint (the first request does not answer until the test lets
// it) while the end of the run takes its final scrape. The final scrape
// is answered and recorded at once; when the sampler fetched under its
// lock, the final scrape waited behind the stuck one, which the test
// releases only after the final scrape returns: the watchdog ends that
// as a failure.
func TestCaptureFinalNotHeldBySlowScrape(t *testing.T) {
	ge := &growingEndpoint{start: time.Now()}
	firstIn, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		first := false
		once.Do(func() { first = true })
		if first {
			close(firstIn)
			<-release
		}
		ge.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg, start := tickOnlyConfig(srv.URL), time.Now()
	p := mustPromSampler(t, cfg, start)
	stuck := make(chan error, 1)
	go func() {
		_, err := p.sample(context.Background(), start)
		stuck <- err
	}()
	<-firstIn
	done := make(chan struct{})
	go func() {
		p.captureFinal(start.Add(time.Second))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		close(release)
		t.Fatal("the final scrape waited behind the stuck one")
	}
	close(release)
	if err := <-stuck; err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.final == nil || p.finalErr != nil {
		t.Fatalf("final %v, err %v", p.final, p.finalErr)
	}
}

// tickOnlyConfig is a swarm config scraping url for the tick histogram alone.
func tickOnlyConfig(url string) *Config {
	return &Config{ServerMetricsPrometheus: url, ServerMetricsMap: promsource.Map{
		"tick_ms": {Histogram: "game_tick_duration_seconds", Scale: f64(1000)},
	}}
}

// mustPromSampler is newPromSampler, the test failing on its error.
func mustPromSampler(t *testing.T, cfg *Config, start time.Time) *promSampler {
	t.Helper()
	p, err := newPromSampler(cfg, start)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLoopEndsWithoutWaitingOnScrape: the monitor loop's scrape is stuck
// on a silent endpoint when every worker is done. The loop cancels it and
// returns, so the run ends at once instead of waiting out the scrape's
// deadline (and, half the time, starting another: select picks between a
// ready ticker and done at random, which made 4 s runs take 13 s). The
// test tells the two apart by the scrape's error, not by a clock: a
// cancelled scrape says "context canceled", one that ran out its deadline
// says "deadline exceeded"; and the endpoint is asked exactly once.
func TestLoopEndsWithoutWaitingOnScrape(t *testing.T) {
	var asked atomic.Int32
	firstIn := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		once.Do(func() { close(firstIn) })
		<-r.Context().Done() // silent until the client gives up
	}))
	defer srv.Close()
	cfg, start := tickOnlyConfig(srv.URL), time.Now()
	p := mustPromSampler(t, cfg, start)
	m := newMonitor(cfg, nil, start)
	m.prom = p
	done, returned := make(chan struct{}), make(chan struct{})
	go func() { m.loop(done); close(returned) }()
	<-firstIn
	close(done)
	<-returned
	if m.srvErr == nil || !strings.Contains(m.srvErr.Error(), "context canceled") {
		t.Fatalf("the stuck scrape ended with %v, want it cancelled when the workers were done", m.srvErr)
	}
	if n := asked.Load(); n != 1 {
		t.Fatalf("the endpoint was asked %d times, want 1 (no scrape after done)", n)
	}
}
