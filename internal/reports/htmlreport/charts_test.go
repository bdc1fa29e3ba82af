package htmlreport

import (
	"math"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// TestKBsChartFollowsTheGate: the payload chart reads a second as the
// kbs_max gate does where the timeline carries the clients each mean is
// over: a second with none (nobody connected, or a client that joined
// and has no two updates yet) is a gap, never a rate of 0. A timeline
// without the count can only tell a second with nobody connected.
func TestKBsChartFollowsTheGate(t *testing.T) {
	counted := report.TimelinePoint{Connected: 4, KBs: 71.9, KBsClients: 4} // makes the timeline carry counts
	for _, tc := range []struct {
		name    string
		p       report.TimelinePoint
		counted bool    // the leg's timeline carries kbs_clients
		want    float64 // NaN: no reading
	}{
		{"nobody connected", report.TimelinePoint{Connected: 0, KBs: 0}, true, math.NaN()},
		{"joined this second, no reading yet", report.TimelinePoint{Connected: 4, KBs: 0, KBsClients: 0}, true, math.NaN()},
		{"connected, idle link", report.TimelinePoint{Connected: 4, KBs: 0, KBsClients: 4}, true, 0},
		{"connected", report.TimelinePoint{Connected: 4, KBs: 71.9, KBsClients: 3}, true, 71.9},
		{"no counts: nobody connected", report.TimelinePoint{Connected: 0, KBs: 0}, false, math.NaN()},
		{"no counts: connected", report.TimelinePoint{Connected: 4, KBs: 0}, false, 0},
		{"no counts: connected, a rate", report.TimelinePoint{Connected: 4, KBs: 71.9}, false, 71.9},
	} {
		l := &Leg{Timeline: []report.TimelinePoint{tc.p}}
		if tc.counted {
			l.Timeline = append(l.Timeline, counted)
		}
		got := kbsSecond(l)(tc.p)
		if math.IsNaN(tc.want) != math.IsNaN(got) || (!math.IsNaN(got) && got != tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if !tc.counted {
			continue
		}
		v, ok := gatetable.MustLookup(gatetable.KBsMaxGate).PerSecond(tc.p)
		if ok == math.IsNaN(got) || ok && v != got {
			t.Errorf("%s: chart %v, the gate's second %v (reading %v): they must agree", tc.name, got, v, ok)
		}
	}
}

// TestEveryChartGateDrawsItsLine: each chart that reads a gate's figure
// draws that gate's threshold when the profile declares it, the profile's
// own figures included: the charts hold gates of the table, not names, so
// none can look up a gate that does not exist and draw nothing.
func TestEveryChartGateDrawsItsLine(t *testing.T) {
	dir := copyRun(t, fixture)
	withDiagnostics(t, dir)
	editReport(t, dir, func(r map[string]any) {
		for i, row := range r["timeline"].([]any) {
			m := row.(map[string]any)
			m["input_latency_p95_ms"] = 20 + float64(i%3)
			m["own"] = map[string]any{"physics_ms.p99": 1.5}
		}
	})
	editSummary(t, dir, func(sum map[string]any) {
		p := sum["profile"].(map[string]any)
		gates := p["gates"].(map[string]any)
		gates[gatetable.ServerCPUGate] = map[string]any{"threshold": 90, "level": "advisory"}
		gates[gatetable.InputLatencyP95Gate] = map[string]any{"threshold": 50, "level": "hard"}
		gates["physics_ms_p99_max"] = map[string]any{"threshold": 4, "level": "hard"}
		p["figures"] = map[string]any{"physics_ms": map[string]any{"unit": "ms", "better": "lower", "file": map[string]any{"histogram": "physics_ms"}}}
	})
	page := render(t, dir)
	lines := []string{
		"dashed red line: tick_hz_min ≥ 30 (hard)",
		"dashed red line: tick_ms_p99_max ≤ 16.60 (advisory)",
		"dashed red line: wire_kbs_max ≤ 150 (hard)",
		"dashed red line: server_cpu_pct_max ≤ 90 % (advisory)",
		"dashed red line: input_latency_ms_p95_max ≤ 50 ms (hard)",
		"dashed red line: physics_ms_p99_max ≤ 4 ms (hard)",
	}
	for _, want := range lines {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(strings.ToLower(page), "stroke:#c01030;stroke-width:1.2;stroke-dasharray:6,3"); n != len(lines) {
		t.Errorf("%d dashed threshold lines, want %d", n, len(lines))
	}
}
