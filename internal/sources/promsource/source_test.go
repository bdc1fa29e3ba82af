package promsource

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// state is one scrape's worth of a fake game server's metrics.
type state struct {
	cum      [5]float64 // game_tick_duration_seconds buckets le 0.005, 0.010, 0.015, 0.020, +Inf
	sum      float64
	bytes    float64 // game_net_bytes_sent_total
	players  float64 // game_players{state="joined"}
	joining  float64 // game_players{state="joining"}
	entities float64
	rss      float64 // process_resident_memory_bytes
	cpu      float64 // process_cpu_seconds_total
	omitTick bool    // leave the tick histogram out (a renamed series)
}

var les = []string{"0.005", "0.01", "0.015", "0.02", "+Inf"}

// expose renders st in the text format ("text") or OpenMetrics.
func expose(format string, st state) string {
	var b strings.Builder
	om := format == FormatOpenMetrics
	if !st.omitTick {
		b.WriteString("# HELP game_tick_duration_seconds Tick work.\n# TYPE game_tick_duration_seconds histogram\n")
		for i, le := range les {
			fmt.Fprintf(&b, "game_tick_duration_seconds_bucket{le=%q} %g\n", le, st.cum[i])
		}
		fmt.Fprintf(&b, "game_tick_duration_seconds_sum %g\ngame_tick_duration_seconds_count %g\n", st.sum, st.cum[4])
	}
	if om {
		b.WriteString("# TYPE game_net_bytes_sent counter\n")
	} else {
		b.WriteString("# TYPE game_net_bytes_sent_total counter\n")
	}
	fmt.Fprintf(&b, "game_net_bytes_sent_total %g\n", st.bytes)
	fmt.Fprintf(&b, "# TYPE game_players gauge\ngame_players{state=\"joined\"} %g\ngame_players{state=\"joining\"} %g\n", st.players, st.joining)
	fmt.Fprintf(&b, "# TYPE game_entities gauge\ngame_entities %g\n", st.entities)
	fmt.Fprintf(&b, "# TYPE game_info gauge\ngame_info{transport=\"enet\",version=\"1.2\"} 1\n")
	fmt.Fprintf(&b, "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %g\n", st.rss)
	if om {
		b.WriteString("# TYPE process_cpu_seconds counter\n")
	} else {
		b.WriteString("# TYPE process_cpu_seconds_total counter\n")
	}
	fmt.Fprintf(&b, "process_cpu_seconds_total %g\n", st.cpu)
	if om {
		b.WriteString("# EOF\n")
	}
	return b.String()
}

var contentTypes = map[string]string{
	FormatText:        "text/plain; version=0.0.4; charset=utf-8",
	FormatOpenMetrics: "application/openmetrics-text; version=1.0.0; charset=utf-8",
}

// fakeEndpoint serves the current state in the given format.
type fakeEndpoint struct {
	format string
	cur    atomic.Pointer[state]
	srv    *httptest.Server
}

func newEndpoint(t *testing.T, format string) *fakeEndpoint {
	e := &fakeEndpoint{format: format}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentTypes[e.format])
		fmt.Fprint(w, expose(e.format, *e.cur.Load()))
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func scale(v float64) *float64 { return &v }

// gameMap is the example mapping.
var gameMap = Map{
	"tick_ms":      {Histogram: "game_tick_duration_seconds", Scale: scale(1000)},
	"entities":     {Gauge: "game_entities"},
	"peers":        {Gauge: "game_players", Labels: map[string]string{"state": "joined"}},
	"wire_out_kbs": {CounterRate: "game_net_bytes_sent_total", Scale: scale(0.001)},
	"transport":    {Info: "game_info", Label: "transport"},
}

// The scrapes of TestWindowFigures: one before the hold, then a hold of
// 4 s in which the server restarts between t=2 and t=3 (every counter and
// bucket starts again from zero).
var windowScrapes = []struct {
	at     float64
	inHold bool
	st     state
}{
	{0, false, state{cum: [5]float64{1, 1, 1, 1, 1}, sum: 0.001, bytes: 100, players: 0, entities: 10, rss: 50 << 20, cpu: 0.5}},
	{1, true, state{cum: [5]float64{10, 20, 20, 20, 20}, sum: 0.1, bytes: 1000, players: 3, joining: 1, entities: 13, rss: 60 << 20, cpu: 1}},
	{2, true, state{cum: [5]float64{50, 90, 95, 100, 100}, sum: 0.7, bytes: 6000, players: 5, entities: 15, rss: 61 << 20, cpu: 1.5}},
	{3, true, state{cum: [5]float64{5, 8, 10, 10, 10}, sum: 0.08, bytes: 500, players: 2, entities: 12, rss: 40 << 20, cpu: 0.1}},
	{5, true, state{cum: [5]float64{25, 48, 58, 60, 60}, sum: 0.45, bytes: 2500, players: 4, entities: 14, rss: 44 << 20, cpu: 0.6}},
}

// TestWindowFigures checks every kind against figures computed by hand,
// in both exposition formats, through the HTTP scraper.
//
// Over the hold (t=1..5 s, 4 s), the tick buckets grew 40, 70, 75, 80, 80
// until t=2, restarted at 5, 8, 10, 10, 10 and grew 20, 40, 48, 50, 50:
// increases 65, 118, 133, 140, 140 (140 ticks); _sum grew 0.6 + 0.08 +
// 0.37 = 1.05 s.
//   - mean = 1.05 / 140 s = 7.5 ms
//   - p99: rank 138.6 lies in (15, 20] ms (133 → 140): 15 + 5·5.6/7 = 19 ms
//   - p95: rank 133 is the top of (10, 15] ms: 15 ms
//   - p50: rank 70 in (5, 10] ms (65 → 118): 5 + 5·5/53 ms
//   - max: the highest bucket that grew is (15, 20]: 20 ms
//
// Bytes: 5000 + 500 (reset) + 2000 = 7500 B over 4 s = 1.875 KB/s.
// CPU: 0.5 + 0.1 (reset) + 0.5 = 1.1 s over 4 s = 27.5 %.
// Peers (joined) over the hold: 3, 5, 2, 4: end 4, min 2 (wire_peers), max 5.
// RSS at the end 44 MiB = 45056 KiB; at the first scrape 50 MiB = 51200 KiB.
func TestWindowFigures(t *testing.T) {
	for _, format := range []string{FormatText, FormatOpenMetrics} {
		t.Run(format, func(t *testing.T) {
			e := newEndpoint(t, format)
			start := time.Unix(1000, 0)
			src, err := New(Config{Scraper: Scraper{URL: e.srv.URL}, Map: gameMap, Start: start})
			if err != nil {
				t.Fatal(err)
			}
			for _, sc := range windowScrapes {
				st := sc.st
				e.cur.Store(&st)
				at := start.Add(time.Duration(sc.at * float64(time.Second)))
				if err := src.Sample(context.Background(), at, sc.inHold); err != nil {
					t.Fatal(err)
				}
			}
			b := src.Final()
			if len(b.Missing) != 0 {
				t.Fatalf("missing: %v", b.Missing)
			}
			approx := func(what string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			tick := b.Phases["tick_ms"]
			approx("tick_ms.mean", tick["mean"], 7.5)
			approx("tick_ms.p99", tick["p99"], 19)
			approx("tick_ms.p95", tick["p95"], 15)
			approx("tick_ms.p50", tick["p50"], 5+5*5.0/53)
			approx("tick_ms.max", tick["max"], 20)
			if _, ok := tick["min"]; ok {
				t.Error("a histogram cannot give tick_ms.min, yet it is there")
			}
			d := b.Details["tick_ms"]
			if d.Bounds["p99"] != [2]float64{15, 20} || d.Error["p99"] != 5 || d.Resets != 1 || *d.Observations != 140 {
				t.Errorf("tick_ms detail %+v", d)
			}
			approx("wire_out_kbs", b.Numbers["wire_out_kbs"], 1.875)
			approx("cpu_pct", b.Numbers["cpu_pct"], 27.5)
			approx("peers", b.Numbers["peers"], 4)
			approx("wire_peers", b.Numbers["wire_peers"], 2)
			approx("wire_out_kbs_per_client", b.Numbers["wire_out_kbs_per_client"], 1.875/2)
			if pd := b.Details["peers"]; *pd.Min != 2 || *pd.Max != 5 {
				t.Errorf("peers min/max %v/%v, want 2/5 (the t=0 scrape is before the hold)", *pd.Min, *pd.Max)
			}
			approx("entities", b.Numbers["entities"], 14)
			approx("rss_kb", b.Numbers["rss_kb"], 45056)
			approx("rss_startup_kb", b.Numbers["rss_startup_kb"], 51200)
			approx("ticks_sampled", b.Numbers["ticks_sampled"], 140)
			approx("ticks_total", b.Numbers["ticks_total"], 60)
			approx("tick_hz", b.Numbers["tick_hz"], 35)
			if b.Strings["transport"] != "enet" || b.Window != (WindowInfo{FromS: 1, ToS: 5, SpanS: 4, Hold: true}) || b.Format != format {
				t.Errorf("transport %q window %+v format %q", b.Strings["transport"], b.Window, b.Format)
			}
			// The block is a server_tick object, name-keyed like the file.
			raw, err := json.Marshal(b)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			for k, want := range map[string]string{"schema_version": strconv.Itoa(report.ServerTickSchemaVersion), "source": `"prometheus"`, "entities": "14", "rss_kb": "45056", "transport": `"enet"`} {
				if string(m[k]) != want {
					t.Errorf("%s = %s, want %s", k, m[k], want)
				}
			}
		})
	}
}

// TestMissingSeries: a series the scrape lacks, or a selector that
// matches none or several, leaves the figure out and names the metric and
// selector; the rest are still computed.
func TestMissingSeries(t *testing.T) {
	m := Map{
		"tick_ms":  {Histogram: "game_tick_duration_seconds", Scale: scale(1000)},
		"peers":    {Gauge: "game_players", Labels: map[string]string{"state": "playing"}},
		"entities": {Gauge: "game_players"}, // two series: ambiguous
		"kicked":   {Gauge: "game_net_bytes_sent"},
	}
	src, err := New(Config{Scraper: Scraper{URL: "unused"}, Map: m, Start: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	for i, sc := range windowScrapes[1:3] {
		st := sc.st
		st.omitTick = i == 1 // renamed between the scrapes
		fams, err := Parse(strings.NewReader(expose(FormatText, st)), textFormat)
		if err != nil {
			t.Fatal(err)
		}
		src.Record(time.Unix(int64(sc.at), 0), fams, true)
	}
	b := src.Final()
	for path, want := range map[string]string{
		"tick_ms":  "game_tick_duration_seconds not found",
		"peers":    `game_players{state="playing"} not found: no series of game_players has those labels (it has {state="joined"}, {state="joining"})`,
		"entities": "game_players matches 2 series",
		"kicked":   "(the scrape has game_net_bytes_sent_total: counters are named with _total)",
	} {
		if !strings.Contains(b.Missing[path], want) {
			t.Errorf("missing[%s] = %q, want it to contain %q", path, b.Missing[path], want)
		}
	}
	for _, k := range []string{"tick_ms", "peers", "entities", "kicked", "wire_peers"} {
		if _, ok := b.Numbers[k]; ok {
			t.Errorf("%s present though missing", k)
		}
		if _, ok := b.Phases[k]; ok {
			t.Errorf("%s present though missing", k)
		}
	}
	if _, ok := b.Numbers["rss_kb"]; !ok {
		t.Error("rss_kb (a default) should still be there")
	}
}

// TestHistogramEdges: a quantile above the highest finite bucket is
// missing (never the highest bound, which would understate it), and a
// window without observations leaves the figure out.
func TestHistogramEdges(t *testing.T) {
	src, err := New(Config{Map: Map{"tick_ms": {Histogram: "game_tick_duration_seconds", Scale: scale(1000)}}, Start: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	feed := func(at int64, st state) {
		fams, err := Parse(strings.NewReader(expose(FormatText, st)), textFormat)
		if err != nil {
			t.Fatal(err)
		}
		src.Record(time.Unix(at, 0), fams, true)
	}
	feed(0, state{cum: [5]float64{0, 0, 0, 0, 0}})
	feed(1, state{cum: [5]float64{0, 0, 0, 0, 0}})
	if b := src.Final(); !strings.Contains(b.Missing["tick_ms"], "no observations in the window") {
		t.Fatalf("empty window: %v", b.Missing)
	}
	// 100 ticks, 3 of them above 20 ms: p99 and max are unbounded, p95 is not.
	feed(2, state{cum: [5]float64{90, 95, 96, 97, 100}, sum: 2})
	b := src.Final()
	if !strings.Contains(b.Missing["tick_ms.p99"], "above the highest finite bucket bound 0.02") ||
		!strings.Contains(b.Missing["tick_ms.max"], "unbounded") {
		t.Fatalf("missing %v", b.Missing)
	}
	if _, ok := b.Phases["tick_ms"]["p99"]; ok {
		t.Fatal("p99 reported though above the finite buckets")
	}
	if v := b.Phases["tick_ms"]["p95"]; v != 10 {
		t.Fatalf("p95 = %v, want 10 (rank 95 is the top of (5, 10] ms)", v)
	}
}

// TestSummary: quantiles as exported, mean over the window; a quantile the
// summary does not export is missing with what it has.
func TestSummary(t *testing.T) {
	m := Map{"tick_ms": {Summary: "rpc_seconds", Scale: scale(1000), Quantiles: []string{"mean", "p99", "max"}}}
	src, err := New(Config{Map: m, Start: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	for i, body := range []string{
		"# TYPE rpc_seconds summary\nrpc_seconds{quantile=\"0.5\"} 0.002\nrpc_seconds{quantile=\"0.99\"} 0.009\nrpc_seconds_sum 1\nrpc_seconds_count 100\n",
		"# TYPE rpc_seconds summary\nrpc_seconds{quantile=\"0.5\"} 0.003\nrpc_seconds{quantile=\"0.99\"} 0.012\nrpc_seconds_sum 1.5\nrpc_seconds_count 200\n",
	} {
		fams, err := Parse(strings.NewReader(body), textFormat)
		if err != nil {
			t.Fatal(err)
		}
		src.Record(time.Unix(int64(i), 0), fams, true)
	}
	b := src.Final()
	if got := b.Phases["tick_ms"]; math.Abs(got["mean"]-5) > 1e-9 || got["p99"] != 12 {
		t.Fatalf("summary figures %v (want mean 0.5 s/100 = 5 ms, p99 12 ms)", got)
	}
	if !strings.Contains(b.Missing["tick_ms.max"], "exports no quantile 1") {
		t.Fatalf("missing %v", b.Missing)
	}
}

// TestRecent: the timeline's figures cover the trailing 10 s.
func TestRecent(t *testing.T) {
	src, err := New(Config{Map: gameMap, Start: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	feed := func(at int64, st state) {
		fams, err := Parse(strings.NewReader(expose(FormatText, st)), textFormat)
		if err != nil {
			t.Fatal(err)
		}
		src.Record(time.Unix(at, 0), fams, true)
	}
	// Slow ticks early (all in (15, 20]), fast ones after t=10.
	feed(0, state{})
	feed(5, state{cum: [5]float64{0, 0, 0, 100, 100}})
	feed(15, state{cum: [5]float64{100, 100, 100, 200, 200}})
	feed(20, state{cum: [5]float64{200, 200, 200, 300, 300}})
	// At t=20 the trailing window starts at t=5 (the newest scrape at or
	// before t=10): 200 fast ticks, p99 = 5·198/200 = 4.95 ms. Over the
	// whole run a third of the ticks are slow and p99 is in (15, 20].
	if p99, ok := src.Recent().Phase("tick_ms", "p99"); !ok || math.Abs(p99-4.95) > 1e-9 {
		t.Fatalf("recent p99 %v %v, want 4.95", p99, ok)
	}
	if p99, _ := src.Final().Phase("tick_ms", "p99"); p99 < 15 {
		t.Fatalf("whole-run p99 %v, want in (15, 20]", p99)
	}
}

var textFormat, _, _ = ChooseFormat("text/plain; version=0.0.4", "")

// TestCounterOverTheWindow: a counter mapped as counter is its increase
// over the hold (the ramp's ticks before it left out), a degraded share
// derives from it and the tick histogram's observations, and the last
// step is the histogram's increase between the two latest scrapes.
func TestCounterOverTheWindow(t *testing.T) {
	exposition := func(dropped, degraded, ticks, slowTicks float64) Families {
		body := fmt.Sprintf(`# TYPE dropped counter
dropped %g
# TYPE degraded counter
degraded %g
# TYPE tick histogram
tick_bucket{le="0.005"} %g
tick_bucket{le="0.02"} %g
tick_bucket{le="+Inf"} %g
tick_sum %g
tick_count %g
`, dropped, degraded, ticks-slowTicks, ticks, ticks, ticks*0.004, ticks)
		fams, err := Parse(strings.NewReader(body), FormatText)
		if err != nil {
			t.Fatal(err)
		}
		return fams
	}
	m := Map{"dropped_ticks": {Counter: "dropped"}, "degraded_ticks": {Counter: "degraded"}, "tick_ms": {Histogram: "tick", Scale: ptr(1000.0)}}
	start := time.Unix(1000, 0)
	src, err := New(Config{Map: m, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	src.Record(start, exposition(50, 60, 60, 0), false)                      // the ramp: 50 dropped already
	src.Record(start.Add(time.Second), exposition(50, 120, 120, 0), true)    // the hold's first scrape
	src.Record(start.Add(11*time.Second), exposition(53, 420, 720, 6), true) // 600 ticks later
	b := src.Final()
	for _, f := range []string{"dropped_ticks", "degraded_ticks", "degraded_ticks_share", "tick_ms"} {
		if why, ok := b.Missing[f]; ok {
			t.Fatalf("%s missing: %s", f, why)
		}
	}
	if b.Numbers["dropped_ticks"] != 3 || !b.Counts["dropped_ticks"] {
		t.Errorf("dropped over the hold %v, want 3 (the ramp's 50 left out)", b.Numbers["dropped_ticks"])
	}
	if got := b.Numbers["degraded_ticks_share"]; got != 0.5 {
		t.Errorf("degraded share %v, want 300/600", got)
	}
	step := src.LastStep("tick_ms")
	if step == nil || step.Count != 600 || step.N[len(step.N)-1] != 6 || step.Hi[len(step.Hi)-1] != 20 {
		t.Fatalf("last step %+v", step)
	}
	if src.LastStep("dropped_ticks") != nil {
		t.Error("a step of a counter")
	}
}

// TestFreezeKeepsTheHoldsGauges: after Freeze (the swarm's bots leave
// before its final scrape) the frozen gauges read as the hold left them,
// value and extremes, while counters, histograms and the gauges not named
// move to the final scrape; without Freeze the departure is in the block
// (the per-client wire rate is then not computable: the case Freeze is for).
func TestFreezeKeepsTheHoldsGauges(t *testing.T) {
	left := windowScrapes[4].st
	left.players, left.entities, left.bytes = 0, 0, 2600 // every player left; 100 B more sent
	left.rss = 45 << 20
	for _, tc := range []struct {
		name                      string
		freeze                    []string
		peers, min, entities, rss float64
		perClient                 bool
	}{
		{"frozen", []string{"peers", "entities", "bogus", "wire_out_kbs"}, 4, 2, 14, 46080, true},
		{"not frozen", nil, 0, 0, 0, 46080, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := New(Config{Scraper: Scraper{URL: "unused"}, Map: gameMap, Start: time.Unix(1000, 0)})
			if err != nil {
				t.Fatal(err)
			}
			record := func(at float64, inHold bool, st state) {
				fams, err := Parse(strings.NewReader(expose(FormatText, st)), textFormat)
				if err != nil {
					t.Fatal(err)
				}
				src.Record(time.Unix(1000, 0).Add(time.Duration(at*float64(time.Second))), fams, inHold)
			}
			for _, sc := range windowScrapes {
				record(sc.at, sc.inHold, sc.st)
			}
			if tc.freeze != nil {
				src.Freeze(tc.freeze)
			}
			record(6, true, left)
			b := src.Final()
			if b.Numbers["peers"] != tc.peers || *b.Details["peers"].Min != tc.min || b.Numbers["entities"] != tc.entities {
				t.Errorf("peers %v (min %v), entities %v; want %v (min %v), %v",
					b.Numbers["peers"], *b.Details["peers"].Min, b.Numbers["entities"], tc.peers, tc.min, tc.entities)
			}
			// Counters reach the final scrape either way: 7600 B over 5 s.
			if got := b.Numbers["wire_out_kbs"]; math.Abs(got-7.6/5) > 1e-9 || b.Window.ToS != 6 {
				t.Errorf("wire_out_kbs %v over the window to %v s, want %v to 6 s", got, b.Window.ToS, 7.6/5)
			}
			if b.Numbers["rss_kb"] != tc.rss {
				t.Errorf("rss_kb %v, want %v: a gauge not frozen reads the final scrape", b.Numbers["rss_kb"], tc.rss)
			}
			if _, ok := b.Numbers["wire_out_kbs_per_client"]; ok != tc.perClient {
				t.Errorf("wire_out_kbs_per_client present %v, want %v (missing: %q)", ok, tc.perClient, b.Missing["wire_out_kbs_per_client"])
			}
		})
	}
}
