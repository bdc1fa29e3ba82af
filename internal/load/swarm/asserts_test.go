package swarm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
)

const metricsFile = `{"schema_version":6,"tick_hz":60,"peers":8,"entities":40,"load_factor":1,
"dropped_ticks":3,"rss_kb":50000,"rss_startup_kb":42000,"wire_peers":8,"wire_out_kbs_per_client":21.5,
"transport":"enet","tick_ms":{"min":0.1,"mean":0.5,"max":4,"p95":1.5,"p99":2.5}}`

// resultWith is a finished run's result: the given client figures and, when
// metrics is non-empty, a parsed server metrics file.
func resultWith(t *testing.T, metrics string) *Result {
	t.Helper()
	r := &report.Report{
		Clients: 8, ClientsConnected: 8, SnapshotsReceived: 960,
		ObservedServerTickHz:   &report.MinMeanMax{Min: 59.5, Mean: 59.9, Max: 60},
		DownstreamKBsPerClient: &report.MeanMax{Mean: 10, Max: 12},
		Delivery:               healthyDelivery(),
	}
	res := &Result{Report: r}
	if metrics != "" {
		st, raw, err := report.ParseServerTick([]byte(metrics))
		if err != nil {
			t.Fatal(err)
		}
		res.ServerTick, res.ServerTickRaw = st, raw
		r.ServerMetricsPath = "metrics.json"
		r.ServerTick = json.RawMessage(metrics)
	}
	return res
}

// healthyDelivery is the delivery of 8 clients at 60 Hz.
func healthyDelivery() *report.Delivery {
	hz, gap := 60.0, 40.0
	return &report.Delivery{AnnouncedHz: &hz, UpdatesPerS: &report.MinMeanMax{Min: 59, Mean: 59.8, Max: 60}, Clients: 8, MaxGapMs: &gap}
}

func TestEvaluateAsserts(t *testing.T) {
	slope := 12.0
	tests := []struct {
		name     string
		metrics  string
		set      func(Asserts)
		mutate   func(*report.Report)
		wantFail []string
		missing  bool // the failing assert's metric is missing
	}{
		{"all off passes", metricsFile, func(Asserts) {}, nil, nil, false},
		{"tick-hz at threshold passes", metricsFile, func(a Asserts) { a["tick_hz_min"] = 59.5 }, nil, nil, false},
		{"tick-hz below fails", metricsFile, func(a Asserts) { a["tick_hz_min"] = 59.6 }, nil, []string{"assert-min-tick-hz"}, false},
		{"tick-hz missing fails", metricsFile, func(a Asserts) { a["tick_hz_min"] = 0 },
			func(r *report.Report) { r.ObservedServerTickHz = nil }, []string{"assert-min-tick-hz"}, true},
		{"kbs over fails", metricsFile, func(a Asserts) { a["kbs_max"] = 11.9 }, nil, []string{"assert-max-kbs"}, false},
		{"tick-ms p99 within", metricsFile, func(a Asserts) { a["tick_ms_p99_max"] = 2.5 }, nil, nil, false},
		{"tick-ms p99 over", metricsFile, func(a Asserts) { a["tick_ms_p99_max"] = 2.4 }, nil, []string{"assert-max-tick-ms"}, false},
		{"tick-ms without metrics fails", "", func(a Asserts) { a["tick_ms_p99_max"] = 100 }, nil, []string{"assert-max-tick-ms"}, true},
		{"entities", metricsFile, func(a Asserts) { a["entities_min"] = 41 }, nil, []string{"assert-min-entities"}, false},
		{"rss growth 8000 ≤ 8000", metricsFile, func(a Asserts) { a["rss_growth_kb_max"] = 8000 }, nil, nil, false},
		{"rss growth over", metricsFile, func(a Asserts) { a["rss_growth_kb_max"] = 7999 }, nil, []string{"assert-max-rss-growth-kb"}, false},
		{"rss slope null fails", metricsFile, func(a Asserts) { a["rss_slope_kb_per_min_max"] = 1000 }, nil, []string{"assert-max-rss-slope-kb-per-min"}, true},
		{"rss slope within", metricsFile, func(a Asserts) { a["rss_slope_kb_per_min_max"] = 12 },
			func(r *report.Report) { r.RSSSlopeKBPerMin = &slope }, nil, false},
		{"load factor 1 > 0.99 fails", metricsFile, func(a Asserts) { a["load_factor_max"] = 0.99 }, nil, []string{"assert-max-load-factor"}, false},
		{"dropped ticks 0 threshold", metricsFile, func(a Asserts) { a["dropped_ticks_max"] = 0 }, nil, []string{"assert-max-dropped-ticks"}, false},
		{"wire within", metricsFile, func(a Asserts) { a["wire_kbs_max"] = 150 }, nil, nil, false},
		{"wire over", metricsFile, func(a Asserts) { a["wire_kbs_max"] = 20 }, nil, []string{"assert-max-wire-kbs"}, false},
		{"congestion field absent fails", metricsFile, func(a Asserts) { a["congestion_engaged_hz"] = 30 }, nil, []string{"assert-congestion-engaged-hz"}, true},
		{"admission passes", metricsFile, func(a Asserts) { a["admission"] = 0 }, nil, nil, false},
		{"admission with a refusal fails", metricsFile, func(a Asserts) { a["admission"] = 0 },
			func(r *report.Report) {
				r.ClientsConnected, r.ClientsRefused = 7, 1
				r.RefusedByReason = map[string]int{"server_full": 1}
			}, []string{"assert-admission"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := resultWith(t, tc.metrics)
			if tc.mutate != nil {
				tc.mutate(res.Report)
			}
			a := NoAsserts()
			tc.set(a)
			failed := Evaluate(a, res)
			var names []string
			for _, f := range failed {
				names = append(names, f.Name)
				line := FailureLine(f)
				if !strings.Contains(line, f.Name) || !strings.Contains(line, "threshold") || !strings.Contains(line, "measured") {
					t.Errorf("failure line %q does not name the assert, threshold and measured value", line)
				}
				if tc.missing != (f.Measured == nil) {
					t.Errorf("%s: measured %v, want missing=%v", f.Name, f.Measured, tc.missing)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.wantFail, ",") {
				t.Errorf("failed = %v, want %v", names, tc.wantFail)
			}
			if want := len(tc.wantFail) == 0; res.Report.Passed != want {
				t.Errorf("passed = %v, want %v", res.Report.Passed, want)
			}
		})
	}
}

func TestPassedRequiresAHealthyRun(t *testing.T) {
	res := resultWith(t, "")
	res.Report.ClientsDisconnected = 1
	Evaluate(NoAsserts(), res)
	if res.Report.Passed {
		t.Error("a run that lost a client passed")
	}
	res = resultWith(t, "")
	res.Report.Aborted = "interrupted"
	Evaluate(NoAsserts(), res)
	if res.Report.Passed {
		t.Error("an aborted run passed")
	}
	res = resultWith(t, "")
	res.Report.SnapshotsReceived = 0
	Evaluate(NoAsserts(), res)
	if res.Report.Passed {
		t.Error("a run in which no snapshot arrived passed")
	}
}

func TestPercentilesSharedImplementation(t *testing.T) {
	if percentiles(nil) != nil {
		t.Error("no samples must be a missing metric, not zeros")
	}
	v := make([]float64, 100)
	for i := range v {
		v[len(v)-1-i] = float64(i + 1) // 100..1, unsorted
	}
	p := percentiles(append(v, math.NaN()))
	// Type-7: rank = p/100·(n−1); p95 → 94.05 → 95 + 0.05·1.
	want := report.Percentiles{Min: 1, Mean: 50.5, P50: 50.5, P95: 95.05, P99: 99.01, Max: 100}
	for _, f := range []struct {
		name      string
		got, want float64
	}{{"min", p.Min, want.Min}, {"mean", p.Mean, want.Mean}, {"p50", p.P50, want.P50}, {"p95", p.P95, want.P95}, {"p99", p.P99, want.P99}, {"max", p.Max, want.Max}} {
		if math.Abs(f.got-f.want) > 1e-9 {
			t.Errorf("%s = %v, want %v", f.name, f.got, f.want)
		}
	}
}

func TestClientRates(t *testing.T) {
	base := time.Unix(1000, 0)
	c := testClient(0, "weave", nil, base)
	if !math.IsNaN(c.tickHz()) || !math.IsNaN(c.kbs()) {
		t.Fatal("a client without snapshots must have missing rates")
	}
	// Updates without a tick: bytes are a rate, the tick rate is missing.
	c.snaps, c.firstSnapAt, c.lastSnapAt = 121, base, base.Add(2*time.Second)
	c.snapBytes, c.firstBytes = 100+120*250, 100
	if got := c.kbs(); got != 15 {
		t.Errorf("kbs = %v, want 15 (30000 B over 2 s)", got)
	}
	if !math.IsNaN(c.tickHz()) {
		t.Errorf("tickHz = %v with no tick carried, want missing", c.tickHz())
	}
	// Ticks wrap through 2^32: 4294967290 → 4294967290+120 (mod 2^32) over 2 s.
	c.ticks, c.firstTick, c.lastTick = 121, 4294967290, 114 // 4294967290+120 mod 2^32
	c.firstTickAt, c.lastTickAt = base, base.Add(2*time.Second)
	if got := c.tickHz(); got != 60 {
		t.Errorf("tickHz = %v, want 60", got)
	}
}

func TestReportEncoding(t *testing.T) {
	cfg := Config{Clients: 3, RateHz: 60, Mix: Mix{{Name: "weave", Weight: 2}, {Name: "idle", Weight: 1}}}
	w := newWorker(0, &cfg, nil, time.Second/60)
	start := time.Unix(2000, 0)
	for i := 0; i < 3; i++ {
		w.add(newClient(i, cfg.Mix.Assign(i, 3), nil, start, w.proto.NewBot(i)))
	}
	w.clients[0].end(phaseRefused, "server_full", start)
	w.clients[1].end(phaseFailed, failConnectTimeout, start)
	r := buildReport(&cfg, []*worker{w}, start, start.Add(3*time.Second))
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("report does not encode: %v", err)
	}
	for _, key := range []string{`"rtt_ms":null`, `"observed_server_tick_hz":null`, `"rss_slope_kb_per_min":null`,
		`"refused_by_reason":{"server_full":1}`, `"never_connected_by_reason":{"connect_timeout":1}`,
		`"pattern":"weave:2,idle:1"`, `"pattern_counts":{"idle":1,"weave":2}`, fmt.Sprintf(`"schema_version":%d`, report.ReportSchemaVersion)} {
		if !bytes.Contains(b, []byte(key)) {
			t.Errorf("report JSON lacks %s:\n%s", key, b)
		}
	}
	back, err := report.ParseReport(b)
	if err != nil {
		t.Fatal(err)
	}
	if back.ClientsRefused != 1 || back.ClientsNeverConnected != 1 || back.ObservedServerTickHz != nil {
		t.Errorf("round trip lost data: %+v", back)
	}
}

func FuzzParseMix(f *testing.F) {
	for _, s := range []string{"weave:80,aggressive:20", "idle:1", "", "a:b:c", "weave:99999999999999999999"} {
		f.Add(s, 17)
	}
	f.Fuzz(func(t *testing.T, spec string, n int) {
		m, err := ParseMix(spec)
		if err != nil || n <= 0 || n > 5000 {
			return
		}
		total := 0
		for _, c := range m.Counts(n) {
			total += c
		}
		if total != n {
			t.Fatalf("counts of %q over %d sum to %d", spec, n, total)
		}
	})
}
