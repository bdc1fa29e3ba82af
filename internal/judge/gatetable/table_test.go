package gatetable

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
)

func metricsWith(tick string, mutate func(*report.Report)) *Metrics {
	r := &report.Report{Clients: 4, ClientsConnected: 4, ServerMetricsPath: "m.json",
		ObservedServerTickHz:   &report.MinMeanMax{Min: 59, Mean: 60, Max: 60},
		DownstreamKBsPerClient: &report.MeanMax{Mean: 50, Max: 55}}
	if tick != "" {
		r.ServerTick = json.RawMessage(tick)
	}
	if mutate != nil {
		mutate(r)
	}
	return FromReport(r)
}

const tickJSON = `{"transport":"enet","rss_kb":3000,"rss_startup_kb":1000,"wire_peers":4,"wire_out_kbs_per_client":70,
"entities":12,"nothing":null,"tick_ms":{"p99":4.5}}`

func ptr(v float64) *float64 { return &v }

func gate(t *testing.T, name string) Gate {
	t.Helper()
	g, ok := Lookup(name)
	if !ok {
		t.Fatalf("no gate %s", name)
	}
	return g
}

// Each rule the gate and the swarm share, at its edges.
func TestEvaluateRules(t *testing.T) {
	cases := []struct {
		name, gate string
		tick       string
		mutate     func(*report.Report)
		thr        float64
		pass       bool
		missing    string // substring of the unevaluable reason; "" = evaluable
	}{
		{"wire within", "wire_kbs_max", tickJSON, nil, 70, true, ""},
		{"wire over", "wire_kbs_max", tickJSON, nil, 69.9, false, ""},
		{"wire_peers 0", "wire_kbs_max", strings.Replace(tickJSON, `"wire_peers":4`, `"wire_peers":0`, 1), nil, 150, false, "wire_peers is 0"},
		{"wire_peers absent", "wire_kbs_max", strings.Replace(tickJSON, `"wire_peers":4,`, ``, 1), nil, 150, false, "wire_peers missing"},
		{"rss growth", "rss_growth_kb_max", tickJSON, nil, 2000, true, ""},
		{"rss growth over", "rss_growth_kb_max", tickJSON, nil, 1999, false, ""},
		{"rss 0 unavailable", "rss_growth_kb_max", strings.Replace(tickJSON, `"rss_kb":3000`, `"rss_kb":0`, 1), nil, 1e9, false, "unavailable"},
		{"rss negative unavailable", "rss_growth_kb_max", strings.Replace(tickJSON, `"rss_startup_kb":1000`, `"rss_startup_kb":-1`, 1), nil, 1e9, false, "unavailable"},
		{"tick p99 nested", "tick_ms_p99_max", tickJSON, nil, 4.5, true, ""},
		{"no server block", "entities_min", "", func(r *report.Report) { r.ServerMetricsPath = "" }, 1, false, "without --server-metrics"},
		{"null field is missing", "load_factor_max", strings.Replace(tickJSON, `"nothing":null`, `"load_factor":null`, 1), nil, 1, false, "load_factor missing"},
		{"tick-Hz min at threshold", "tick_hz_min", tickJSON, nil, 59, true, ""},
		{"tick-Hz without snapshots", "tick_hz_min", tickJSON, func(r *report.Report) { r.ObservedServerTickHz = nil }, 30, false, "two snapshots"},
		{"admission", "admission", tickJSON, nil, 4, true, ""},
		{"admission: fewer clients than asked", "admission", tickJSON, nil, 8, false, ""},
		{"admission: refused", "admission", tickJSON, func(r *report.Report) { r.ClientsConnected, r.ClientsRefused = 3, 1 }, 4, false, ""},
		{"slope null", "rss_slope_kb_per_min_max", tickJSON, nil, 100, false, "too short"},
		{"cpu within", "server_cpu_pct_max", strings.Replace(tickJSON, `"nothing":null`, `"cpu_pct":61`, 1), nil, 61, true, ""},
		{"cpu over", "server_cpu_pct_max", strings.Replace(tickJSON, `"nothing":null`, `"cpu_pct":61`, 1), nil, 60, false, ""},
		{"cpu not written", "server_cpu_pct_max", tickJSON, nil, 1000, false, "cpu_pct missing"},
		{"despawns at threshold", "despawns_min", strings.Replace(tickJSON, `"nothing":null`, `"despawns_total":1000`, 1), nil, 1000, true, ""},
		{"no churn ran", "despawns_min", strings.Replace(tickJSON, `"nothing":null`, `"despawns_total":0`, 1), nil, 1, false, ""},
		{"despawns not written", "despawns_min", tickJSON, nil, 1, false, "despawns_total missing"},
		// Percentile budgets: each statistic its own gate; p50 is additive,
		// so a file without it is unevaluable, never 0.
		{"tick p50 within", "tick_ms_p50_max", strings.Replace(tickJSON, `{"p99":4.5}`, `{"p50":1.2,"p95":3,"p99":4.5,"max":9}`, 1), nil, 1.2, true, ""},
		{"tick p95 over", "tick_ms_p95_max", strings.Replace(tickJSON, `{"p99":4.5}`, `{"p50":1.2,"p95":3,"p99":4.5,"max":9}`, 1), nil, 2.9, false, ""},
		{"tick max over", "tick_ms_max_max", strings.Replace(tickJSON, `{"p99":4.5}`, `{"p50":1.2,"p95":3,"p99":4.5,"max":9}`, 1), nil, 8.9, false, ""},
		{"tick p50 not written", "tick_ms_p50_max", tickJSON, nil, 100, false, "tick_ms.p50 missing"},
		{"tick stats still in the warm-up", "tick_ms_p99_max", strings.Replace(tickJSON, `"nothing":null`, `"warmup_pending":true`, 1), nil, 100, false, "warmup_pending is true"},
		{"tick stats after the warm-up", "tick_ms_p99_max", strings.Replace(tickJSON, `"nothing":null`, `"warmup_pending":false`, 1), nil, 4.5, true, ""},
		{"state interval p95 within", "state_interval_ms_p95_max", tickJSON, func(r *report.Report) {
			r.StateIntervalMs = &report.Percentiles{P50: 16.7, P95: 18, P99: 33, Max: 50}
		}, 18, true, ""},
		{"state interval p99 over", "state_interval_ms_p99_max", tickJSON, func(r *report.Report) {
			r.StateIntervalMs = &report.Percentiles{P50: 16.7, P95: 18, P99: 33, Max: 50}
		}, 32.9, false, ""},
		{"state interval missing", "state_interval_ms_p50_max", tickJSON, nil, 100, false, "no client received two state updates"},
		{"snapshot gap over", "max_snapshot_gap_ms_max", tickJSON, func(r *report.Report) { r.MaxSnapshotGapMs = ptr(4500) }, 250, false, ""},
		{"snapshot gap missing", "max_snapshot_gap_ms_max", tickJSON, nil, 250, false, "no client received two snapshots"},
		{"fused at threshold", "fused_contacts_min", strings.Replace(tickJSON, `"nothing":null`, `"contacts":900,"fused_contacts":400`, 1), nil, 400, true, ""},
		{"datalink fused nothing", "fused_contacts_min", strings.Replace(tickJSON, `"nothing":null`, `"contacts":500,"fused_contacts":0`, 1), nil, 1, false, ""},
		{"fused not written", "fused_contacts_min", strings.Replace(tickJSON, `"nothing":null`, `"contacts":500`, 1), nil, 1, false, "fused_contacts missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := gate(t, tc.gate).Evaluate(metricsWith(tc.tick, tc.mutate), tc.thr)
			if tc.missing != "" {
				if o.Err == nil || !strings.Contains(o.Err.Error(), tc.missing) || o.Measured != nil {
					t.Fatalf("want unevaluable (%q), got %+v", tc.missing, o)
				}
				return
			}
			if o.Err != nil || o.Pass != tc.pass {
				t.Fatalf("got %+v (err %v), want pass=%v", o, o.Err, tc.pass)
			}
		})
	}
}

func TestBoundAndUsage(t *testing.T) {
	if got := gate(t, "wire_kbs_max").Bound(150); got != "≤ 150 KB/s" {
		t.Errorf("bound %q", got)
	}
	if got := gate(t, "tick_hz_min").Bound(30.5); got != "≥ 30.50 Hz" {
		t.Errorf("bound %q", got)
	}
	if got := gate(t, "admission").Bound(64); got != "64/64 connected, 0 refused, 0 dropped" {
		t.Errorf("bound %q", got)
	}
	if u := gate(t, "congestion_engaged_hz").SwarmUsage(); !strings.Contains(u, "0 = off") {
		t.Errorf("usage %q", u)
	}
	if g, ok := ByFlag("--assert-no-refused"); !ok || g.Name != "admission" {
		t.Errorf("alias lookup: %+v %v", g, ok)
	}
}

func TestFormatNumber(t *testing.T) {
	for v, want := range map[float64]string{60: "60", 71.2245: "71.22", 150.25: "150.2", -3: "-3", 1e13: "10000000000000.0"} {
		if got := FormatNumber(v); got != want {
			t.Errorf("FormatNumber(%v) = %q, want %q", v, got, want)
		}
	}
}

// A phase-scoped gate reads the stretch's own figures: the state interval
// and the snapshot gap of "burst", never the whole run's, and a stretch
// without them is missing.
func TestNarrowStateFigures(t *testing.T) {
	m := metricsWith(tickJSON, func(r *report.Report) {
		r.StateIntervalMs = &report.Percentiles{P50: 16.7, P95: 17, P99: 20, Max: 30}
		r.MaxSnapshotGapMs = ptr(30)
		r.Phases = []report.Stretch{
			{Name: "before", StateIntervalMs: &report.Percentiles{P50: 16.7, P95: 17, P99: 18, Max: 20}, MaxSnapshotGapMs: ptr(20)},
			{Name: "burst", StateIntervalMs: &report.Percentiles{P50: 33, P95: 80, P99: 120, Max: 300}, MaxSnapshotGapMs: ptr(300)},
			{Name: "after"},
		}
	})
	burst, err := m.Narrow("burst")
	if err != nil {
		t.Fatal(err)
	}
	if o := gate(t, "state_interval_ms_p95_max").Evaluate(burst, 50); o.Err != nil || o.Pass || *o.Measured != 80 {
		t.Errorf("state interval p95 in burst: %+v, want 80 failing 50", o)
	}
	if o := gate(t, "max_snapshot_gap_ms_max").Evaluate(burst, 250); o.Err != nil || o.Pass || *o.Measured != 300 {
		t.Errorf("snapshot gap in burst: %+v, want 300 failing 250", o)
	}
	after, err := m.Narrow("after")
	if err != nil {
		t.Fatal(err)
	}
	if o := gate(t, "state_interval_ms_p50_max").Evaluate(after, 100); o.Err == nil || !strings.Contains(o.Err.Error(), "in phase after") {
		t.Errorf("state interval of a stretch without one: %+v, want missing naming the phase", o)
	}
}

// TestNamedGatesExist: every gate name code looks up by constant is an
// entry of the table, so a reader that draws or describes a gate by name
// (the HTML report's threshold lines) cannot silently find nothing.
func TestNamedGatesExist(t *testing.T) {
	for _, name := range namedGates() {
		if _, ok := Lookup(name); !ok {
			t.Errorf("gate constant %q names no entry of the gate table", name)
		}
	}
}

// TestMustLookup: a named gate is its table entry; a name the table does
// not hold panics, so a caller holding a misspelt name fails the first
// test that reaches it instead of drawing or checking nothing.
func TestMustLookup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		panic bool
	}{
		{KBsMaxGate, false},
		{TickP99WorstGate, false},
		{"kbs_maxx", true},
		{"", true},
	} {
		func() {
			defer func() {
				if r := recover(); (r != nil) != tc.panic {
					t.Errorf("MustLookup(%q): panic %v, want a panic: %v", tc.name, r, tc.panic)
				}
			}()
			if g := MustLookup(tc.name); g.Name != tc.name {
				t.Errorf("MustLookup(%q) = %q", tc.name, g.Name)
			}
		}()
	}
}

// TestBuiltinChecksAreNotGates: a built-in check ID never shadows a
// declarable gate or a baseline check, so summary.json's "gate" field names
// one thing.
func TestBuiltinChecksAreNotGates(t *testing.T) {
	seen := map[string]bool{CheckBaselineKBs: true, CheckBaselineWireKBs: true, CheckBaselineBytesPerEntity: true}
	for _, id := range BuiltinChecks() {
		if _, ok := Lookup(id); ok {
			t.Errorf("built-in check %q is also a gate of the table", id)
		}
		if seen[id] {
			t.Errorf("built-in check %q declared twice", id)
		}
		seen[id] = true
	}
}

// TestIdleFloor: the idle floor is the wire rate of a leg whose every
// client flew the stationary pattern, and missing (saying why) on any
// other leg, mixed ones included.
func TestIdleFloor(t *testing.T) {
	cases := []struct {
		name     string
		patterns map[string]int
		want     float64 // 0: missing
	}{
		{"every bot level", map[string]int{"level": 8}, 70},
		{"weave", map[string]int{"weave": 8}, 0},
		{"level and weave", map[string]int{"level": 4, "weave": 4}, 0},
		{"no pattern counts", nil, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := metricsWith(tickJSON, func(r *report.Report) { r.PatternCounts = c.patterns })
			v, err := IdleFloor.Read(m)
			switch {
			case c.want == 0 && (err == nil || !strings.Contains(err.Error(), "stationary")):
				t.Errorf("read %v (%v), want missing naming the stationary pattern", v, err)
			case c.want != 0 && (err != nil || v != c.want):
				t.Errorf("read %v (%v), want %v", v, err, c.want)
			}
		})
	}
}
