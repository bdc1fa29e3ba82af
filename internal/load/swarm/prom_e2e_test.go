//go:build linux

package swarm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reference/server"
	"github.com/scalegate/scalegate/internal/reference/server/exposition"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// matched is one moment at which both sources were read a few ticks
// apart at most: the metrics file just written after tick T and the
// first scrape that counted T ticks or more (skew more).
type matched struct {
	file  *report.ServerTick
	mtime time.Time
	at    time.Time // when the scrape was taken
	fams  promsource.Families
	skew  int64 // the scrape's tick count minus the file's ticks_total, ≥ 0
}

func (m matched) gauge(t *testing.T, name string) float64 {
	t.Helper()
	mf := m.fams[name]
	if mf == nil || len(mf.GetMetric()) != 1 {
		t.Fatalf("scrape has no single series %s", name)
	}
	x := mf.GetMetric()[0]
	switch {
	case x.Gauge != nil:
		return x.GetGauge().GetValue()
	case x.Counter != nil:
		return x.GetCounter().GetValue()
	}
	t.Fatalf("%s is neither gauge nor counter", name)
	return 0
}

// tickBuckets are the tick histogram's upper bounds (s) and cumulative
// counts in a scrape, +Inf last.
func (m matched) tickBuckets(t *testing.T) (upper, cum []float64) {
	t.Helper()
	h := m.fams["scalegate_tick_duration_seconds"].GetMetric()[0].GetHistogram()
	for _, b := range h.GetBucket() {
		upper, cum = append(upper, b.GetUpperBound()), append(cum, float64(b.GetCumulativeCount()))
	}
	if !math.IsInf(upper[len(upper)-1], 1) {
		upper, cum = append(upper, math.Inf(1)), append(cum, float64(h.GetSampleCount()))
	}
	return upper, cum
}

// bucketOf is the [lo, hi] (ms) of the bucket holding the j-th smallest
// observation (1-based).
func bucketOf(upper, cum []float64, j float64) (lo, hi float64) {
	for i := range cum {
		if cum[i] >= j {
			if i > 0 {
				lo = upper[i-1]
			}
			return lo * 1000, upper[i] * 1000
		}
	}
	return math.NaN(), math.NaN()
}

// fileP99Buckets is the range (ms) the file's tick p99 must lie in, read
// from the scrape's buckets: the file's p99 interpolates its order
// statistics ⌊h⌋ and ⌈h⌉ of T ticks, and a histogram that counts those T
// and skew ticks more holds the j-th smallest of the T between its own
// j-th and (j+skew)-th smallest.
func fileP99Buckets(upper, cum []float64, ticks, skew int64) (lo, hi float64) {
	h := 0.99*float64(ticks-1) + 1
	lo, _ = bucketOf(upper, cum, math.Floor(h))
	_, hi = bucketOf(upper, cum, math.Ceil(h)+float64(skew))
	return lo, hi
}

// TestPrometheusAgreesWithFile runs the reference server with both sources
// on (the metrics file and [metrics] prometheus_listen) and a swarm that
// reads only Prometheus, and compares the two in one run:
//
//   - at a moment both were read at most maxSkew ticks apart (the file's
//     ticks_total against the histogram's count, while the file's 600-tick
//     window still holds every tick), entities and peers are equal, RSS
//     agrees within 2 % (two reads of the kernel's figure a few ticks
//     apart), and the file's tick p99 lies within the histogram's buckets
//     holding the order statistics it interpolates, shifted by the ticks
//     one source counted and the other not (the bucket error, computed
//     from the scrape, not a constant);
//   - the process CPU over the stretch between two such moments, from
//     process_cpu_seconds_total, agrees with the file's cpu_pct over the
//     same writes within the clock-tick resolution (10 ms a reading) and
//     the time each scrape lies from its write;
//   - the swarm's server_tick (from Prometheus, over the hold) carries the
//     same entities, and a wire KB/s per client within 25 % of the file's:
//     the file keeps the peak peer count's 30-tick intervals, the swarm the
//     hold between two scrapes, and traffic drifts between them (0.1 % apart
//     on a quiet machine, 7 % with the race detector slowing the server to
//     70 ms ticks). This bound catches a unit or a division gone wrong; the
//     exact check of the byte counter is TestPrometheusMatchesFile.
//
// It logs both sources' figures side by side.
func TestPrometheusAgreesWithFile(t *testing.T) {
	const clients = 16
	dir := t.TempDir()
	srv := startRefServer(t, 64, func(c *server.Config) {
		// A write every 250 ms: only the first 600 ticks' versions can be
		// matched (the file's window then still holds every tick), and
		// under the race detector on a loaded machine only about one in
		// eight of them meets a scrape within maxSkew ticks (2 of 16 at a
		// 500 ms write interval failed the test in CI).
		c.Metrics.TickJSONIntervalMs = 250
		c.Metrics.PrometheusListen = "127.0.0.1:0"
	})
	metrics, promURL := srv.Metrics, srv.PromURL
	if promURL == "" {
		t.Fatal("the server never announced its Prometheus endpoint")
	}
	mapPath := filepath.Join(dir, "map.json")
	mb, err := json.Marshal(exposition.Map())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mapPath, mb, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := promsource.Ready(context.Background(), &promsource.Scraper{URL: promURL}, exposition.Map()); err != nil {
		t.Fatalf("readiness: %v", err)
	}

	// The reader scrapes without pause and keeps its last scrapes; every
	// file version is matched to the first kept scrape that reached its
	// tick, whether that came just before or just after the file was read.
	// Requiring the very same tick made the test a coin toss under the
	// race detector: a scrape there takes about two ticks, so half the
	// file's ticks fall between two scrapes.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type readResult struct{ pairs, versions []matched }
	results := make(chan readResult, 1)
	go func() {
		pairs, versions := readBothSources(ctx, metrics, promURL)
		results <- readResult{pairs, versions}
	}()

	code, rep, _ := swarmCLI(t, 120*time.Second, "127.0.0.1", srv.Port, "--clients", fmt.Sprint(clients), "--duration", "7", "--ramp-ms", "20",
		"--server-metrics-prometheus", promURL, "--server-metrics-map", mapPath, "--rss-sample-interval-s", "1")
	cancel()
	res := <-results
	pairs, versions := res.pairs, res.versions
	if code != 0 {
		t.Fatalf("swarm exit %d", code)
	}
	// Both sides must have every client connected: the reader keeps
	// scraping until the swarm has exited, so the file's last loaded
	// version can meet a scrape taken a few ticks later, after the
	// clients left (peers and entities 0 there, 16 in the file).
	var loaded []matched
	for _, p := range pairs {
		if p.file.Peers == clients && p.gauge(t, "scalegate_peers") == clients {
			loaded = append(loaded, p)
		}
	}
	if len(loaded) < 2 {
		t.Fatalf("%d moments with both sources read at most %d ticks apart and every client connected (%d matched, %d file versions): the run gave nothing to compare", len(loaded), maxSkew, len(pairs), len(versions))
	}
	t.Logf("%d of %d file versions matched to a scrape at most %d ticks away, %d with every client connected", len(pairs), len(versions), maxSkew, len(loaded))
	a, b := loaded[0], loaded[len(loaded)-1]

	// Nearly the same tick: counts equal, RSS within 2 %, tick p99 within
	// its buckets.
	for _, c := range []struct {
		name   string
		file   float64
		series string
	}{{"entities", float64(b.file.Entities), "scalegate_entities"}, {"peers", float64(b.file.Peers), "scalegate_peers"}} {
		if got := b.gauge(t, c.series); got != c.file {
			t.Errorf("%s: prometheus %v, file %v %d ticks apart", c.name, got, c.file, b.skew)
		}
	}
	promRSS := b.gauge(t, "process_resident_memory_bytes") / 1024
	if math.Abs(promRSS-float64(b.file.RSSKB)) > 0.02*float64(b.file.RSSKB) {
		t.Errorf("rss_kb: prometheus %.0f, file %d", promRSS, b.file.RSSKB)
	}
	upper, cum := b.tickBuckets(t)
	q := stats.HistogramQuantile(0.99, upper, cum)
	if b.file.TicksSampled != b.file.TicksTotal {
		t.Fatalf("the file's window holds %d of %d ticks: the p99s cover different ticks", b.file.TicksSampled, b.file.TicksTotal)
	}
	fileLo, fileHi := fileP99Buckets(upper, cum, b.file.TicksTotal, b.skew)
	promP99, promLo, promHi := q.Value*1000, q.Lo*1000, q.Hi*1000
	if !q.OK || b.file.TickMs.P99 < fileLo || b.file.TickMs.P99 > fileHi {
		t.Errorf("file p99 %.4f ms outside the buckets [%.4f, %.4f] its order statistics fall in %d ticks apart (prometheus %+v): the sources did not see the same ticks",
			b.file.TickMs.P99, fileLo, fileHi, b.skew, q)
	}
	tol := math.Max(fileHi, promHi) - math.Min(fileLo, promLo)
	if math.Abs(promP99-b.file.TickMs.P99) > tol {
		t.Errorf("tick p99: prometheus %.4f ms, file %.4f ms, more than the bucket error %.4f ms apart", promP99, b.file.TickMs.P99, tol)
	}

	// CPU between two moments: the file's cpu_pct of every write after a
	// up to b, each over its own write window, against the counter. The
	// pair is the widest whose writes were all seen (a reader starved for
	// over a write interval would miss one and mis-sum).
	fileCPUBetween := func(a, b matched) (float64, bool) {
		var sum float64
		prev := a.mtime
		for _, v := range versions {
			if !v.mtime.After(a.mtime) || v.mtime.After(b.mtime) {
				continue
			}
			if v.file.CPUPct == nil || v.mtime.Sub(prev) > 1500*time.Millisecond {
				return 0, false
			}
			sum += *v.file.CPUPct / 100 * v.mtime.Sub(prev).Seconds()
			prev = v.mtime
		}
		return sum, prev.Equal(b.mtime)
	}
	var fileCPU float64
	found := false
	for i := 0; i < len(loaded) && !found; i++ {
		for j := len(loaded) - 1; j > i; j-- {
			if cpu, ok := fileCPUBetween(loaded[i], loaded[j]); ok {
				a, b, fileCPU, found = loaded[i], loaded[j], cpu, true
				break
			}
		}
	}
	if !found {
		t.Fatalf("no two matched moments with every file write between them seen (%d moments, %d versions)", len(loaded), len(versions))
	}
	span := b.mtime.Sub(a.mtime).Seconds()
	promCPU := b.gauge(t, "process_cpu_seconds_total") - a.gauge(t, "process_cpu_seconds_total")
	// Each reading of process_cpu_seconds_total is whole clock ticks (10 ms
	// each end), and each scrape lies the measured time from its write,
	// during which the process may use its 2 cores.
	lagA, lagB := math.Abs(a.at.Sub(a.mtime).Seconds()), math.Abs(b.at.Sub(b.mtime).Seconds())
	cpuTol := 0.020 + 2*(lagA+lagB) + 0.005
	if math.Abs(promCPU-fileCPU) > cpuTol {
		t.Errorf("CPU over %.2f s: prometheus %.3f s, file %.3f s (tolerance %.3f s)", span, promCPU, fileCPU, cpuTol)
	}

	// The swarm's block (Prometheus, over the hold) against the file's last
	// loaded version.
	var blk struct {
		Source    string             `json:"source"`
		Entities  *float64           `json:"entities"`
		RSSKB     *float64           `json:"rss_kb"`
		CPUPct    *float64           `json:"cpu_pct"`
		PerClient *float64           `json:"wire_out_kbs_per_client"`
		TickMs    map[string]float64 `json:"tick_ms"`
		Prom      struct {
			Missing map[string]string `json:"missing"`
			Figures map[string]struct {
				Bounds map[string][2]float64 `json:"bounds"`
			} `json:"figures"`
			Window promsource.WindowInfo `json:"window"`
		} `json:"prometheus"`
	}
	if err := json.Unmarshal(rep.ServerTick, &blk); err != nil {
		t.Fatalf("server_tick: %v (%s)", err, rep.ServerMetricsError)
	}
	if blk.Source != "prometheus" || len(blk.Prom.Missing) != 0 || blk.Entities == nil || blk.PerClient == nil {
		t.Fatalf("swarm block: %s", rep.ServerTick)
	}
	last := loaded[len(loaded)-1].file
	if *blk.Entities != float64(last.Entities) {
		t.Errorf("entities: swarm block %v, file %d", *blk.Entities, last.Entities)
	}
	if math.Abs(*blk.PerClient-last.WireOutKBsPerClient) > 0.25*last.WireOutKBsPerClient {
		t.Errorf("wire KB/s per client: prometheus over the hold %.3f, file %.3f", *blk.PerClient, last.WireOutKBsPerClient)
	}

	var tbl bytes.Buffer
	fmt.Fprintf(&tbl, "\nnearly the same tick (the file's tick %d, the scrape %+d ticks from it, %d peers):\n", b.file.TicksTotal, b.skew, b.file.Peers)
	fmt.Fprintf(&tbl, "  %-26s %14s %14s\n", "figure", "file", "prometheus")
	fmt.Fprintf(&tbl, "  %-26s %14.3f %14.3f  (file's order statistics in [%.2f, %.2f], prometheus bucket [%.2f, %.2f])\n", "tick_ms p99", b.file.TickMs.P99, promP99, fileLo, fileHi, promLo, promHi)
	fmt.Fprintf(&tbl, "  %-26s %14d %14.0f\n", "rss_kb", b.file.RSSKB, promRSS)
	fmt.Fprintf(&tbl, "  %-26s %14d %14.0f\n", "entities", b.file.Entities, b.gauge(t, "scalegate_entities"))
	fmt.Fprintf(&tbl, "  %-26s %14.1f %14.1f  (over %.2f s, tolerance %.1f)\n", "cpu_pct", 100*fileCPU/span, 100*promCPU/span, span, 100*cpuTol/span)
	fmt.Fprintf(&tbl, "swarm's server_tick from Prometheus over the hold (t=%.1f-%.1f s of the run) vs the file's last loaded write:\n", blk.Prom.Window.FromS, blk.Prom.Window.ToS)
	fmt.Fprintf(&tbl, "  %-26s %14.3f %14.3f  (bucket %v)\n", "tick_ms p99", last.TickMs.P99, blk.TickMs["p99"], blk.Prom.Figures["tick_ms"].Bounds["p99"])
	fmt.Fprintf(&tbl, "  %-26s %14d %14.0f\n", "rss_kb", last.RSSKB, *blk.RSSKB)
	fmt.Fprintf(&tbl, "  %-26s %14.1f %14.1f\n", "cpu_pct", ptrOr(last.CPUPct), *blk.CPUPct)
	fmt.Fprintf(&tbl, "  %-26s %14d %14.0f\n", "entities", last.Entities, *blk.Entities)
	fmt.Fprintf(&tbl, "  %-26s %14.3f %14.3f\n", "wire_out_kbs_per_client", last.WireOutKBsPerClient, *blk.PerClient)
	t.Log(tbl.String())
}

// keptScrapes is how many of the latest scrapes the reader keeps for a
// file version to match: several ticks' worth at any scrape speed.
const keptScrapes = 32

// maxSkew is how many ticks a file version's scrape may count past it:
// the first scrape to reach a tick comes within one scrape's time of it,
// about two ticks under the race detector, and a preempted reader may
// take longer (a scrape of 7 ticks and more on a loaded CI machine). Every
// comparison counts the skew in: the p99 bounds shift by it, and the
// counts compared equal do not move under a constant load.
const maxSkew = 10

// readBothSources scrapes promURL in a loop until ctx ends, reads every
// version of the metrics file, and returns the versions matched to a kept
// scrape (matchPending; while the file's window still held every tick),
// and every version seen (file and mtime, no scrape).
func readBothSources(ctx context.Context, metrics, promURL string) (pairs, versions []matched) {
	sc := &promsource.Scraper{URL: promURL}
	var kept []matched // scrapes only: at, fams
	var pending []matched
	var last time.Time
	for ctx.Err() == nil {
		// A few scrapes a tick on a quiet machine: the reader (in the
		// swarm's process) must not cost the swarm its CPU.
		time.Sleep(4 * time.Millisecond)
		if fams, _, err := sc.Fetch(ctx); err == nil {
			kept = append(kept, matched{at: time.Now(), fams: fams})
			if len(kept) > keptScrapes {
				kept = kept[1:]
			}
		}
		if fi, err := os.Stat(metrics); err == nil && fi.ModTime().After(last) {
			if st, _, err := report.ReadServerTick(metrics); err == nil {
				last = fi.ModTime()
				v := matched{file: st, mtime: fi.ModTime()}
				versions = append(versions, v)
				if st.TicksTotal <= server.WindowTicks {
					pending = append(pending, v)
				}
			}
		}
		pending = matchPending(pending, kept, &pairs)
	}
	return pairs, versions
}

// matchPending decides each pending version a kept scrape has reached
// (counted its ticks or more): it is paired with the first kept scrape
// that reached it if that one counts at most maxSkew ticks more, else
// dropped. It returns the versions still waiting. A scrape behind the
// file is never taken: one that counts every tick the file does, and a
// few more, bounds each of the file's order statistics between two of its
// own (fileP99Buckets); one that lacks some of the file's ticks cannot
// bound the top ones.
func matchPending(pending, kept []matched, pairs *[]matched) []matched {
	var wait []matched
	for _, v := range pending {
		i := slices.IndexFunc(kept, func(k matched) bool { return tickCount(k.fams) >= v.file.TicksTotal })
		if i < 0 {
			wait = append(wait, v)
			continue
		}
		k := kept[i]
		if skew := tickCount(k.fams) - v.file.TicksTotal; skew <= maxSkew {
			*pairs = append(*pairs, matched{file: v.file, mtime: v.mtime, at: k.at, fams: k.fams, skew: skew})
		}
	}
	return wait
}

// tickCount is the tick histogram's count in a scrape, -1 without one.
func tickCount(fams promsource.Families) int64 {
	mf := fams["scalegate_tick_duration_seconds"]
	if mf == nil || len(mf.GetMetric()) != 1 {
		return -1
	}
	return int64(mf.GetMetric()[0].GetHistogram().GetSampleCount())
}

func ptrOr(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// TestPrometheusOnlySlowTickFails gates the reference server through its
// Prometheus endpoint alone (no metrics file at all): with the
// extra_tick_ms fault adding 20 ms of work to every tick, the swarm's
// --assert-max-tick-ms 16.6 fails on the histogram's p99, and a renamed
// series leaves its assert unevaluable — failed, with the selector named
// in the report.
func TestPrometheusOnlySlowTickFails(t *testing.T) {
	// Parallel: it judges counts and outcomes (a lower bound at most), not
	// rates, so another test beside it cannot change its verdict.
	t.Parallel()
	dir := t.TempDir()
	var defaultMetrics string
	srv := startRefServer(t, 64, func(c *server.Config) {
		defaultMetrics = c.Metrics.TickJSONPath
		c.Metrics.TickJSONPath = ""
		c.Metrics.PrometheusListen = "127.0.0.1:0"
		c.Faults.ExtraTickMs = 20
	})
	promURL := srv.PromURL
	if promURL == "" {
		t.Fatal("the server never announced its Prometheus endpoint")
	}
	if _, err := os.Stat(defaultMetrics); err == nil {
		t.Fatal("a metrics file was written")
	}
	m := promsource.Map{}
	for k, v := range exposition.Map() {
		m[k] = v
	}
	m["entities"] = promsource.Figure{Gauge: "scalegate_entities_renamed"}
	mb, _ := json.Marshal(m)
	mapPath := filepath.Join(dir, "map.json")
	if err := os.WriteFile(mapPath, mb, 0o644); err != nil {
		t.Fatal(err)
	}
	code, rep, _ := swarmCLI(t, 120*time.Second, "127.0.0.1", srv.Port, "--clients", "4", "--duration", "4",
		"--server-metrics-prometheus", promURL, "--server-metrics-map", mapPath,
		"--assert-max-tick-ms", "16.6", "--assert-min-entities", "1", "--assert-max-rss-growth-kb", "1000000")
	if code != 1 {
		t.Fatalf("swarm exit %d, want 1 (asserts failed)", code)
	}
	got := map[string]report.AssertResult{}
	for _, a := range rep.Asserts {
		got[a.Name] = a
	}
	tick, ent, rss := got["assert-max-tick-ms"], got["assert-min-entities"], got["assert-max-rss-growth-kb"]
	if tick.Passed || tick.Measured == nil || *tick.Measured < 20 {
		t.Errorf("tick assert %+v: want failed with p99 ≥ 20 ms", tick)
	}
	if ent.Passed || ent.Measured != nil {
		t.Errorf("entities assert %+v: want unevaluable", ent)
	}
	if !rss.Passed || rss.Measured == nil {
		t.Errorf("rss growth assert %+v: want passed from process_resident_memory_bytes", rss)
	}
	var blk struct {
		Prom struct {
			Missing map[string]string `json:"missing"`
		} `json:"prometheus"`
	}
	if err := json.Unmarshal(rep.ServerTick, &blk); err != nil || !strings.Contains(blk.Prom.Missing["entities"], "scalegate_entities_renamed not found") {
		t.Errorf("missing %v (%v)", blk.Prom.Missing, err)
	}
}
