package gatetable

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/report"
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
