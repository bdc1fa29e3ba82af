package htmlreport

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// testdata/pr is the artifact set of a real `pr` run (64 clients, weave,
// ENet, 20 s): summary.json, metadata.json and the leg's report.json,
// server_metrics.json, timeline.csv and players.csv.
const fixture = "testdata/pr"

// copyRun copies a run directory into a temporary one the test may edit.
func copyRun(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// editReport rewrites the weave leg's report.json through edit.
func editReport(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "weave", "report.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r map[string]any
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	edit(r)
	b, _ = json.Marshal(r)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// editSummary rewrites dir/summary.json through edit.
func editSummary(t *testing.T, dir string, edit func(map[string]any)) {
	t.Helper()
	path := filepath.Join(dir, "summary.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sum map[string]any
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	edit(sum)
	b, _ = json.Marshal(sum)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// render writes dir/report.html and returns it.
func render(t *testing.T, dir string) string {
	t.Helper()
	if err := Write(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRenderRealRun(t *testing.T) {
	page := render(t, copyRun(t, fixture))
	verdict := strings.Index(page, `<div class="big">PASSED</div>`)
	gates := strings.Index(page, `<table class="gates">`)
	if verdict < 0 || gates < 0 || verdict > gates {
		t.Errorf("the verdict must come first (verdict at %d, gate table at %d)", verdict, gates)
	}
	if n := strings.Count(page, `<svg class="chart"`); n != 7 {
		t.Errorf("%d charts, want 7 (clients, tick-Hz, KB/s, tick p99, phases, RSS, worker dt)", n)
	}
	if n := strings.Count(page, `<tr class="st-`); n != 11 {
		t.Errorf("%d gate rows, want the 11 checks of summary.json", n)
	}
	for _, want := range []string{
		`<td class="num">71.22 (-1.4%)</td>`,           // baseline delta
		`<tr class="st-pass"><td>wire KB/s per client`, // verdict colour class
		"players.csv: 64 rows (connected 64 )",
		"300bfd1505dfa036057886e657420b8e420eb037", // git head from metadata.json
		"Swarm worker loop dt p99",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// Self-contained: nothing to fetch, nothing to run.
	if m := regexp.MustCompile(`<script|<link|<img|src=|href="?https?:|@import|url\(`).FindString(page); m != "" {
		t.Errorf("page references something outside itself: %q", m)
	}
}

// TestPhasesShaded: impairment phases listed in the report are shaded on
// every timeline chart, labelled, and listed above the charts.
func TestPhasesShaded(t *testing.T) {
	dir := copyRun(t, fixture)
	editReport(t, dir, func(r map[string]any) {
		r["phases"] = []any{map[string]any{"name": "loss 5%", "start_s": 6, "end_s": 11}}
	})
	page := render(t, dir)
	if !strings.Contains(page, "impairment phases (shaded): loss 5% 6.0–11.0 s") {
		t.Error("phase not listed")
	}
	// Six time-axis charts (all but the phase bars) carry the band.
	if n := strings.Count(page, "loss 5%</text>"); n != 6 {
		t.Errorf("phase label drawn on %d charts, want 6", n)
	}
	// The band: a translucent amber fill (vgsvg writes the colour
	// un-premultiplied, give or take rounding, and the alpha apart).
	if n := len(regexp.MustCompile(`fill:#(EF|F0)(AF|B0)(2F|30);fill-opacity:0.25`).FindAllString(page, -1)); n != 6 {
		t.Errorf("%d phase bands in the SVG, want 6", n)
	}

	editReport(t, dir, func(r map[string]any) {
		r["phases"] = []any{map[string]any{"name": "backwards", "start_s": 9, "end_s": 2}}
	})
	page = render(t, dir)
	if !strings.Contains(page, "phases[0] &#34;backwards&#34;: end_s 2 before start_s 9") {
		t.Error("an inverted phase must be reported, not drawn")
	}
}

// TestWarmupShaded: a report with a warm-up shades it, grey and labelled,
// on every timeline chart and says what it is above them; a report without
// one shades nothing.
func TestWarmupShaded(t *testing.T) {
	dir := copyRun(t, fixture)
	editReport(t, dir, func(r map[string]any) {
		r["warmup_s"] = 3.0
		r["warmup_end_s"] = 4.5
	})
	page := render(t, dir)
	if !strings.Contains(page, "warm-up (shaded grey): 0.0–4.5 s") {
		t.Error("warm-up not listed")
	}
	if n := strings.Count(page, ">warm-up</text>"); n != 6 {
		t.Errorf("warm-up label drawn on %d charts, want 6", n)
	}
	if n := len(regexp.MustCompile(`fill:#(7F|80)(7F|80)(7F|80);fill-opacity:0.18`).FindAllString(page, -1)); n != 6 {
		t.Errorf("%d warm-up bands in the SVG, want 6", n)
	}
	page = render(t, copyRun(t, fixture))
	if strings.Contains(page, "warm-up") {
		t.Error("a run without a warm-up shades one")
	}
}

// TestRSSFitAndStepMarked: with a fitted slope and a step in the report,
// the RSS chart draws the fit line and marks the step, and says both.
func TestRSSFitAndStepMarked(t *testing.T) {
	dir := copyRun(t, fixture)
	editReport(t, dir, func(r map[string]any) {
		var series []any
		for i := 0; i <= 40; i++ {
			kb := 30000 + 50*i
			if i >= 30 {
				kb += 8000
			}
			series = append(series, map[string]any{"t_s": float64(i) * 0.5, "rss_kb": kb})
		}
		r["rss_series"] = series
		r["rss_slope_kb_per_min"] = 6000.0
		r["rss_slope_method"] = "bucket-median"
		r["rss_step_max_kb"] = 8050.0
		r["rss_step_at_s"] = 15.0
	})
	page := render(t, dir)
	for _, want := range []string{"fitted slope 6000.0 KB/min (bucket-median, from 10 s)", "largest step 8050 KB at 15.0 s (red line)"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if !strings.Contains(strings.ToLower(page), "stroke:#d06000") || !strings.Contains(strings.ToLower(page), "stroke:#c01030") {
		t.Error("fit line or step marker not drawn")
	}
}

// TestSwarmHealthCharts: the swarm's per-second service interval mean is
// drawn beside worker dt, from report.json and, when the report is
// unreadable, from a timeline.csv that rundir.WriteTimelineCSV wrote.
func TestSwarmHealthCharts(t *testing.T) {
	dir := copyRun(t, fixture)
	editReport(t, dir, func(r map[string]any) {
		for i, row := range r["timeline"].([]any) {
			row.(map[string]any)["service_interval_mean_ms"] = 16.6 + float64(i%3)/10
		}
	})
	page := render(t, dir)
	if n := strings.Count(page, `<svg class="chart"`); n != 8 {
		t.Errorf("%d charts, want 8 (the 7 of a real run and the service interval)", n)
	}
	if !strings.Contains(page, "Swarm service interval mean per client") {
		t.Error("service interval chart missing")
	}
	rep, err := report.ReadReport(filepath.Join(dir, "weave", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	csvPath := filepath.Join(dir, "weave", "timeline.csv")
	if err := rundir.WriteTimelineCSV(csvPath, rep.Timeline); err != nil {
		t.Fatal(err)
	}
	back, err := rundir.ReadTimelineCSV(csvPath)
	if err != nil || len(back) != len(rep.Timeline) {
		t.Fatalf("timeline.csv read back: %d rows (want %d), %v", len(back), len(rep.Timeline), err)
	}
	for i, p := range back {
		w := rep.Timeline[i]
		if p.WorkerDtP99 != w.WorkerDtP99 || p.ServiceIntervalMeanMs == nil || *p.ServiceIntervalMeanMs != *w.ServiceIntervalMeanMs {
			t.Fatalf("row %d: dt %v service %v, report %v %v", i, p.WorkerDtP99, p.ServiceIntervalMeanMs, w.WorkerDtP99, *w.ServiceIntervalMeanMs)
		}
	}
	os.Remove(filepath.Join(dir, "weave", "report.json"))
	page = render(t, dir)
	if n := strings.Count(page, `<svg class="chart"`); n != 8 {
		t.Errorf("%d charts from timeline.csv and server_metrics.json, want all 8", n)
	}
	if strings.Contains(page, "not in timeline.csv") {
		t.Error("a timeline.csv with the swarm's columns must draw them")
	}
}

// TestMissingArtifacts: what cannot be read is said, never drawn as empty.
func TestMissingArtifacts(t *testing.T) {
	dir := copyRun(t, fixture)
	os.Remove(filepath.Join(dir, "weave", "report.json"))
	os.Remove(filepath.Join(dir, "weave", "server_metrics.json"))
	page := render(t, dir)
	if n := strings.Count(page, `<svg class="chart"`); n != 5 {
		t.Errorf("%d charts from timeline.csv, want 5 (no phases, no worker dt, no service interval)", n)
	}
	for _, want := range []string{"(from timeline.csv)", "not in timeline.csv, and report.json is unreadable", "not drawn: server metrics: read server metrics: open", "report.json: read report: open"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	os.Remove(filepath.Join(dir, "weave", "timeline.csv"))
	os.Remove(filepath.Join(dir, "metadata.json"))
	page = render(t, dir)
	if strings.Contains(page, `<svg class="chart"`) || !strings.Contains(page, "not drawn: no timeline") || !strings.Contains(page, "metadata.json: read metadata.json: open") {
		t.Error("without timeline or metadata the page must say so")
	}
	os.Remove(filepath.Join(dir, "summary.json"))
	if err := Write(dir); err == nil || !strings.Contains(err.Error(), "summary.json") {
		t.Errorf("no summary.json: %v", err)
	}
}

// withCapacity adds a capacity curve to the fixture's summary.json: three
// counts, the knee at 128, the tick p99 missing at 32.
func withCapacity(t *testing.T, dir string) {
	t.Helper()
	pt := func(n int, v string, hz, p99 any, failed ...string) map[string]any {
		return map[string]any{"clients": n, "leg": fmt.Sprintf("weave_c%d", n), "verdict": v, "tick_hz_min": hz,
			"tick_ms_p99": p99, "kbs_mean": 70.1, "cpu_pct_mean": 55.5, "worker_dt_p99_ms": 3.5, "service_interval_p99_ms": 21.25, "failed": failed, "harness_bound": false}
	}
	capacity := []any{map[string]any{"group": "weave", "knee": 128, "harness_limit": nil,
		"verdict": "knee at 128 clients: tick_hz_min (last count that held: 64)",
		"points":  []any{pt(32, "passed", 60.0, nil), pt(64, "passed", 59.8, 9.1), pt(128, "failed", 24.0, 41.0, "tick_hz_min")}}}
	editSummary(t, dir, func(sum map[string]any) { sum["capacity"] = capacity })
}

func TestCapacityCurve(t *testing.T) {
	dir := copyRun(t, fixture)
	withCapacity(t, dir)
	page := render(t, dir)
	for _, want := range []string{
		"<h3>weave: knee at 128 clients: tick_hz_min (last count that held: 64)</h3>",
		`<td class="num">128</td>`, `<td class="num">missing</td>`, // tick p99 not measured at 32
		"weave: Observed tick-Hz (min) vs clients", "knee at 128 clients (red)",
		"weave: Per-client service interval p99 vs clients", `<td class="num">21.25</td>`,
		"weave: Server CPU % of one core (tick-window mean) vs clients", `<td class="num">55.50</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n := strings.Count(page, `<svg class="chart"`); n != 7+6 {
		t.Errorf("%d charts, want the leg's 7 and the curve's 6", n)
	}
	if c := strings.Index(page, "<h2>Capacity</h2>"); c < 0 || c > strings.Index(page, `<section class="leg"`) {
		t.Error("the capacity curve must come before the legs")
	}
}

// withDiagnostics adds the server's per-second diagnostics to the
// fixture's timeline, as a swarm that samples them writes them: CPU and
// wire rate as read, cumulative counters (slow ticks 3 at 5 s, one GC cycle
// every 2 s), a backlog at 9 s; slow_sends left out (the server did not
// write it).
func withDiagnostics(t *testing.T, dir string) {
	t.Helper()
	editReport(t, dir, func(r map[string]any) {
		for i, row := range r["timeline"].([]any) {
			m := row.(map[string]any)
			m["server_cpu_pct"] = 40 + float64(i%4)
			m["wire_kbs_per_client"] = 70.5
			m["slow_ticks"] = map[bool]float64{false: 0, true: 3}[i >= 5]
			m["gc_count"] = float64(i / 2)
			m["gc_pause_p99_ms"] = 0.4
			m["send_queue_max"] = map[bool]float64{false: 0, true: 12}[i == 9]
		}
	})
}

// TestDiagnosticCharts: the server's diagnostics are drawn against run
// time beside the swarm's figures, the declared gates' thresholds are
// dashed lines with their bound in the note, and a figure the server did
// not write is said, not drawn.
func TestDiagnosticCharts(t *testing.T) {
	dir := copyRun(t, fixture)
	withDiagnostics(t, dir)
	page := render(t, dir)
	if n := strings.Count(page, `<svg class="chart"`); n != 7+5 {
		t.Errorf("%d charts, want the 7 of the fixture and 5 diagnostics (slow sends not written)", n)
	}
	for _, want := range []string{
		"Server CPU % of one core", "Server slow ticks per second", "Server GC cycles per second",
		"Server send queue max", "Server wire KB/s per client",
		// the bound as the leg's check showed it (this run's summary wrote no unit)
		"dashed red line: tick_hz_min ≥ 30 (hard)",
		"dashed red line: tick_ms_p99_max ≤ 16.60 (advisory)",
		"dashed red line: wire_kbs_max ≤ 150 (hard)",
		"tick-window CPU (cpu_pct_mean, cpu_pct_max): not reported", // the fixture's server predates them
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if !regexp.MustCompile(`Server slow sends per second</figcaption>\s*<div class="missing">not drawn: not measured in this run`).MatchString(page) {
		t.Error("slow sends, never written, must be said missing")
	}
	// Three threshold lines, in the threshold colour, dashed.
	if n := strings.Count(strings.ToLower(page), "stroke:#c01030;stroke-width:1.2;stroke-dasharray:6,3"); n != 3 {
		t.Errorf("%d dashed threshold lines, want 3", n)
	}
}

// A counter's per-second rate: the difference of two reads over their
// time apart; a missing read or a counter that went down is a gap.
func TestRate(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tl := []report.TimelinePoint{{TS: 1}, {TS: 2}, {TS: 3}, {TS: 5}, {TS: 6}, {TS: 7}}
	vals := []*float64{f(0), f(2), f(2), f(8), nil, f(1)}
	for i := range tl {
		tl[i].SlowTicks = vals[i]
	}
	got := rate(tl, func(p report.TimelinePoint) *float64 { return p.SlowTicks })
	want := []float64{math.NaN(), 2, 0, 3, math.NaN(), math.NaN()}
	for i := range want {
		if got[i].X != tl[i].TS || !(got[i].Y == want[i] || math.IsNaN(got[i].Y) && math.IsNaN(want[i])) {
			t.Errorf("row %d: %v, want %v at %v", i, got[i], want[i], tl[i].TS)
		}
	}
}

// The sweep matrix of summary.json is a table before the legs: a row per
// leg with its axes and figures, "missing" where the leg had none.
func TestSweepMatrix(t *testing.T) {
	dir := copyRun(t, fixture)
	editSummary(t, dir, func(sum map[string]any) {
		sum["matrix"] = map[string]any{"axes": []string{"entity_count", "sim_worker_threads"},
			"columns": []any{map[string]any{"name": "ai_ms_mean", "title": "ai", "unit": "ms"}, map[string]any{"name": "cpu_pct_mean", "title": "server CPU %", "unit": "%"}},
			"rows":    []any{map[string]any{"leg": "weave", "pattern": "weave", "point": []string{"2000", "1"}, "verdict": "passed", "values": []any{0.61, nil}}}}
	})
	page := render(t, dir)
	want := `<tr><td><a href="#leg-weave">weave</a></td><td class="num">2000</td><td class="num">1</td><td class="num">0.61</td><td class="num">missing</td>`
	for _, w := range []string{"<h2>Sweep matrix</h2>", "<th>ai ms</th>", "<th>server CPU %</th>", want} {
		if !strings.Contains(page, w) {
			t.Errorf("page lacks %q", w)
		}
	}
	if m := strings.Index(page, "<h2>Sweep matrix</h2>"); m > strings.Index(page, `<section class="leg"`) {
		t.Error("the matrix must come before the legs")
	}
}

// TestAbortShown: a leg that ended early says when and why at its head.
func TestAbortShown(t *testing.T) {
	dir := copyRun(t, fixture)
	editSummary(t, dir, func(sum map[string]any) {
		leg := sum["legs"].([]any)[0].(map[string]any)
		leg["aborted_at_s"], leg["abort_reason"] = 3.04, "server tick-Hz 4.1 below 30 for 3 s <of> 60"
	})
	page := render(t, dir)
	if want := "Ended early at 3.0 s: server tick-Hz 4.1 below 30 for 3 s &lt;of&gt; 60"; !strings.Contains(page, want) {
		t.Errorf("page lacks %q", want)
	}
	if strings.Contains(render(t, copyRun(t, fixture)), "Ended early") {
		t.Error("a leg that ran its course is not marked as ended early")
	}
}
