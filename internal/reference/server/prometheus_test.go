package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reference/server/exposition"
	"github.com/scalegate/scalegate/internal/sources/promsource"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// promServer is a test server on a fake host with the Prometheus endpoint
// on an ephemeral loopback port and n joined peers.
func promServer(t *testing.T, n int) (*testServer, *promsource.Scraper) {
	t.Helper()
	ts := newTestServer(t, func(c *Config) {
		c.World.TestSpawnAICount = 20
		c.Security.MaxConnectionsPerIP = 0
	})
	ts.prom = newPromExport(ts.reported)
	if err := ts.prom.listen("0", defaultPromLimits); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.prom.stop)
	for p := transport.PeerID(1); p <= transport.PeerID(n); p++ {
		ts.h.connect(p, "127.0.0.1", proto.ConnectData)
		ts.h.recv(p, joinMsg(t, "builtin:debug-entity"))
	}
	return ts, &promsource.Scraper{URL: ts.PrometheusURL()}
}

// realTick runs one tick timed on the real clock (step's fake clock would
// make every tick's work decades long).
func (ts *testServer) realTick() {
	ts.runTick(time.Now(), 0)
	ts.now = ts.now.Add(time.Second / TickHz)
}

// TestPrometheusMatchesFile ticks the server by hand and reads both
// sources at the same moment (between two ticks, on the test goroutine):
// every figure the exposition carries equals the metrics file's, and the
// tick p99 estimated from the histogram is within the bucket holding it
// of the file's exact p99 over the same ticks.
func TestPrometheusMatchesFile(t *testing.T) {
	ts, sc := promServer(t, 8)
	if !strings.HasPrefix(sc.URL, "http://127.0.0.1:") {
		t.Fatalf("a bare port must bind loopback, got %s", sc.URL)
	}
	src, err := promsource.New(promsource.Config{Scraper: *sc, Map: exposition.Map(), Start: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := src.Sample(ctx, time.Now(), true); err != nil { // zero ticks: the window's base
		t.Fatal(err)
	}
	for range 300 { // < WindowTicks: the file's window holds every tick
		ts.realTick()
	}
	if err := src.Sample(ctx, time.Now(), true); err != nil {
		t.Fatal(err)
	}
	st := ts.met.build(snapshotInputs{cc: ts.cc, peers: len(ts.viewers), entities: ts.sim.World.Len(),
		dropped: ts.droppedTicks(), transport: ts.reported, gov: ts.gov,
		world: worldFigures{contacts: ts.sim.ContactEntries, projectiles: ts.sim.ProjectilesLive(), weapons: ts.sim.Weapons}})
	b := src.Final()
	if st.TicksSampled != 300 || st.Peers != 8 {
		t.Fatalf("file: %d ticks, %d peers", st.TicksSampled, st.Peers)
	}
	for name, want := range map[string]float64{
		"peers": float64(st.Peers), "entities": float64(st.Entities), "contacts": float64(st.Contacts),
		"shots_fired_total": float64(st.ShotsFiredTotal), "despawns_total": float64(st.DespawnsTotal),
		"dropped_ticks": float64(st.DroppedTicks), "load_factor": st.LoadFactor,
		"congestion_min_send_hz": st.CongestionMinSendHz, "congestion_recovered_send_hz": st.CongestionRecoveredSendHz,
		"ticks_sampled": float64(st.TicksSampled), "ticks_total": float64(st.TicksTotal),
		"projectiles_live": float64(st.ProjectilesLive), "hits_total": float64(st.HitsTotal),
		"stores_released_total": float64(st.StoresReleasedTotal), "slow_ticks": float64(st.SlowTicks),
		"inputs_accepted": float64(*st.InputsAccepted), "kicked": float64(st.Kicked),
		"interest_scale": st.InterestScale, "degraded_ticks": float64(st.DegradedTicks),
		"congestion_max_loss": st.CongestionMaxLoss,
	} {
		if got, ok := b.Number(name); !ok || got != want {
			t.Errorf("%s: prometheus %v (%v), file %v", name, got, ok, want)
		}
	}
	if b.Strings["transport"] != st.Transport {
		t.Errorf("transport %q vs %q", b.Strings["transport"], st.Transport)
	}
	// With the export on, the wire is sampled every tick: 300 samples of
	// the fake host's 64,000 B/s over a 1 s interval are 19.2 MB sent, and
	// the file, summing the same samples over 30-tick intervals, still
	// reads 64 KB/s.
	if d := b.Details["wire_out_kbs"]; d.Increase == nil || *d.Increase != 300*64000 {
		t.Errorf("wire bytes %v, want %d", d.Increase, 300*64000)
	}
	if st.WireOutKBs != 64 || st.WirePeers != 8 {
		t.Errorf("file wire %v KB/s at %d peers, want 64 at 8", st.WireOutKBs, st.WirePeers)
	}
	p99, ok := b.Phase("tick_ms", "p99")
	bounds := b.Details["tick_ms"].Bounds["p99"]
	if !ok || b.Details["tick_ms"].Error["p99"] > 0.25+1e-9 && bounds[1] <= 20 {
		t.Fatalf("tick p99 %v %v, bounds %v", p99, ok, bounds)
	}
	lo, hi := fileP99Span(ts.met.tick, 0.99)
	if st.TickMs.P99 < lo || st.TickMs.P99 > hi {
		t.Fatalf("file p99 %v outside its own order statistics [%v, %v]", st.TickMs.P99, lo, hi)
	}
	tol := math.Max(hi, bounds[1]) - math.Min(lo, bounds[0])
	t.Logf("tick p99: file %.4f ms, prometheus %.4f ms (bucket [%.4f, %.4f]); mean file %.4f, prometheus %.4f",
		st.TickMs.P99, p99, bounds[0], bounds[1], st.TickMs.Mean, b.Phases["tick_ms"]["mean"])
	if math.Abs(p99-st.TickMs.P99) > tol {
		t.Errorf("tick p99: prometheus %.4f ms (bucket [%.4f, %.4f]), file %.4f ms: differ by more than %.4f ms",
			p99, bounds[0], bounds[1], st.TickMs.P99, tol)
	}
	if mean, _ := b.Phase("tick_ms", "mean"); math.Abs(mean-st.TickMs.Mean) > 1e-6*st.TickMs.Mean+1e-9 {
		t.Errorf("tick mean: prometheus %v, file %v (both exact)", mean, st.TickMs.Mean)
	}
}

// fileP99Span is the pair of order statistics the file's type-7 quantile
// interpolates between, in ms.
func fileP99Span(w *stats.Window, q float64) (lo, hi float64) {
	v := w.Values()
	slices.Sort(v)
	h := q * float64(len(v)-1)
	return v[int(math.Floor(h))], v[int(math.Ceil(h))]
}

// TestPrometheusEndpointBounds: the endpoint serves at most maxConns
// connections at once through boundedhttp (the metrics document's
// endpoint's own bounds): clients that hold the slots without finishing a
// request cannot lock a real scraper out (the longest-silent one is
// evicted), and a client that never finishes its request headers is cut
// off.
func TestPrometheusEndpointBounds(t *testing.T) {
	ts := newTestServer(t, nil)
	ts.prom = newPromExport(ts.reported)
	lim := defaultPromLimits
	lim.maxConns, lim.readHeader = 2, time.Minute // no slot frees by itself during the test
	if err := ts.prom.listen("127.0.0.1:0", lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts.prom.stop)
	addr := ts.prom.srv.Addr()
	url := ts.PrometheusURL()
	hold := func() net.Conn {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprint(c, "GET /metrics HTTP/1.1\r\nHost: x\r\n") // headers never finished
		return c
	}
	a, b := hold(), hold()
	defer a.Close()
	defer b.Close()
	// Both slots are held by silent clients: a real scrape is still served.
	if resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(url); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a scrape beside two silent connections at the cap: %v", err)
	} else {
		resp.Body.Close()
	}
	if st := ts.prom.srv.Stats(); st.Evicted < 1 {
		t.Errorf("stats %+v: a silent connection should have been evicted for the scrape", st)
	}

	// A short header timeout cuts a trickling client off.
	ts2 := newTestServer(t, nil)
	ts2.prom = newPromExport(ts2.reported)
	lim = defaultPromLimits
	lim.readHeader = 200 * time.Millisecond
	if err := ts2.prom.listen("127.0.0.1:0", lim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ts2.prom.stop)
	c, err := net.DialTimeout("tcp", ts2.prom.srv.Addr(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET /metrics HTTP/1.1\r\n")
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = io.ReadAll(c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("a client that never finished its headers was still connected 30 s later")
	}
}

// TestPrometheusOnlyServer: with prometheus_listen and no metrics file the
// server writes no file and the endpoint is ready under the reference map.
func TestPrometheusOnlyServer(t *testing.T) {
	ts, sc := promServer(t, 2)
	if ts.cfg.Metrics.TickJSONPath != "" || ts.http != nil {
		t.Fatal("test server has a JSON source")
	}
	if err := ts.WriteMetrics(); err != nil {
		t.Fatal(err)
	}
	for range 31 {
		ts.realTick()
	}
	if err := promsource.Ready(context.Background(), sc, exposition.Map()); err != nil {
		t.Fatal(err)
	}
}

func TestPrometheusListenConfig(t *testing.T) {
	c := DefaultConfig()
	c.Metrics.PrometheusListen = "nope"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "metrics.prometheus_listen") {
		t.Fatalf("bad prometheus_listen: %v", err)
	}
	c.Metrics.PrometheusListen = ":9464"
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkRunTickPrometheus is one whole tick of the server (32 joined
// peers, 200 AI, fake transport) without and with the Prometheus export:
// the difference is what the export costs a tick.
func BenchmarkRunTickPrometheus(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("prometheus=%v", on), func(b *testing.B) {
			ts := newTestServer(b, func(c *Config) {
				c.World.TestSpawnAICount = 200
				c.Security.MaxConnectionsPerIP = 0
			})
			if on {
				ts.prom = newPromExport(ts.reported)
			}
			for p := transport.PeerID(1); p <= 32; p++ {
				ts.h.connect(p, "127.0.0.1", proto.ConnectData)
				ts.h.recv(p, joinMsg(b, "builtin:debug-entity"))
			}
			ts.realTick()
			b.ReportAllocs()
			for b.Loop() {
				ts.realTick()
				for p := range ts.h.sent {
					ts.h.sent[p] = ts.h.sent[p][:0]
				}
			}
		})
	}
}

// BenchmarkPromPublish is the export's whole per-tick cost on the loop:
// one observation of the tick and of each phase, and the atomic stores of
// the loop's figures.
func BenchmarkPromPublish(b *testing.B) {
	ts := newTestServer(b, nil)
	p := newPromExport(ts.reported)
	d := 3 * time.Millisecond
	var ph [numPhases]time.Duration
	for i := range ph {
		ph[i] = d / time.Duration(numPhases)
	}
	b.ReportAllocs()
	for b.Loop() {
		p.publish(ts.Server, d, &ph)
	}
}
