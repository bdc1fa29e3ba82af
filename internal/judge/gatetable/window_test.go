package gatetable

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// block is a server_tick of a file whose figures over the hold the swarm
// computed (hold given), or an old file's (hold nil).
func block(t *testing.T, fields map[string]any, hold *serverwindow.Info) *Metrics {
	t.Helper()
	if hold != nil {
		fields[serverwindow.Key] = hold
	}
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	r := &report.Report{ServerTick: b, ServerMetricsPath: "m.json"}
	return FromReport(r)
}

func gateOf(t *testing.T, name string) Gate {
	t.Helper()
	g, ok := Lookup(name)
	if !ok {
		t.Fatalf("no gate %s", name)
	}
	return g
}

// TestGaugesReadTheHoldsExtremes: a floor reads the lowest reading of the
// hold and a ceiling the highest, never the value at the last read; a
// block without extremes is read as it stands.
func TestGaugesReadTheHoldsExtremes(t *testing.T) {
	hold := &serverwindow.Info{FromS: 2, ToS: 60, Hold: true, Cumulative: true,
		Extremes: map[string]serverwindow.MinMax{"entities": {Min: 500, Max: 640, N: 58}, "load_factor": {Min: 0.4, Max: 1, N: 58}}}
	m := block(t, map[string]any{"entities": 640, "load_factor": 0.5}, hold)
	for _, tc := range []struct {
		gate string
		thr  float64
		pass bool
		read float64
	}{
		{"entities_min", 640, false, 500}, // 640 at the end, 500 during the hold
		{"entities_min", 500, true, 500},
		{"load_factor_max", 0.99, false, 1}, // engaged at the end, recovered during the hold
	} {
		o := gateOf(t, tc.gate).Evaluate(m, tc.thr)
		if o.Err != nil || o.Pass != tc.pass || *o.Measured != tc.read {
			t.Errorf("%s ≷ %g: %+v (measured %v), want pass %v reading %g", tc.gate, tc.thr, o, o.Measured, tc.pass, tc.read)
		}
	}
	if w := gateOf(t, "entities_min").WindowRead(m); !strings.Contains(w, "lowest of 58 readings over the hold (t=2.0–60.0 s)") {
		t.Errorf("window %q", w)
	}
	if w := gateOf(t, "load_factor_max").WindowRead(m); !strings.HasPrefix(w, "highest of 58 readings") {
		t.Errorf("window %q", w)
	}
	old := block(t, map[string]any{"entities": 640}, nil)
	if v, err := Entities.Read(old); err != nil || v != 640 {
		t.Errorf("an old block's entities %v %v", v, err)
	}
	if w := gateOf(t, "entities_min").WindowRead(old); !strings.Contains(w, "final reading") {
		t.Errorf("old window %q", w)
	}
}

// TestServerWindowRead: the summary says the hold for a figure computed
// over it and the file's own window for one that was not.
func TestServerWindowRead(t *testing.T) {
	tick := map[string]any{"min": 1, "mean": 2, "max": 9, "p95": 5, "p99": 8}
	held := block(t, map[string]any{"tick_ms": tick, "cpu_pct": 40.0, "warmup_pending": true},
		&serverwindow.Info{FromS: 4.2, ToS: 90.1, Hold: true, Cumulative: true, Figures: []string{"cpu_pct", "tick_ms"}})
	if w := gateOf(t, "tick_ms_p99_max").WindowRead(held); w != "the hold (t=4.2–90.1 s)" {
		t.Errorf("window %q", w)
	}
	// warmup_pending describes the file's own tick window: a figure over the
	// hold (which starts after the warm-up) is read all the same.
	if v, err := TickMsP99.Read(held); err != nil || v != 8 {
		t.Errorf("p99 over the hold %v %v", v, err)
	}
	old := block(t, map[string]any{"tick_ms": tick, "ticks_sampled": 600, "window_s": 10.0, "cpu_pct": 40.0}, nil)
	if w := gateOf(t, "tick_ms_p99_max").WindowRead(old); w != "the file's own window: tick_ms over its last 600 ticks (10.0 s) (no cumulative state)" {
		t.Errorf("old window %q", w)
	}
	if w := gateOf(t, "server_cpu_pct_max").WindowRead(old); !strings.Contains(w, "cpu_pct over its last metrics write") {
		t.Errorf("old cpu window %q", w)
	}
	if w := gateOf(t, "kbs_max").WindowRead(old); w != "" {
		t.Errorf("a swarm figure's window needs no saying: %q", w)
	}
}

// TestHoldMissingIsNamed: a figure the hold should have but cannot (the
// server restarted) is unevaluable with the hold's reason.
func TestHoldMissingIsNamed(t *testing.T) {
	m := block(t, map[string]any{}, &serverwindow.Info{Cumulative: true, Figures: []string{},
		Missing: map[string]string{"tick_ms": "the server's cumulative state went back: it restarted within the window"}})
	_, err := TickMsP99.Read(m)
	if err == nil || !strings.Contains(err.Error(), "restarted within the window") {
		t.Errorf("err %v", err)
	}
}

// TestWorstWindowGate: the worst-window gate reads the timeline's tick
// histograms over the hold the block names, with the window its spec
// gives, and is unevaluable without them.
func TestWorstWindowGate(t *testing.T) {
	tl := make([]report.TimelinePoint, 60)
	for i := range tl {
		l := stats.NewLogLinear()
		ms := 2.0
		if i >= 20 && i < 30 {
			ms = 25
		}
		for range 60 {
			l.Record(ms)
		}
		tl[i] = report.TimelinePoint{TS: float64(i + 1), TickHist: l.Snapshot()}
	}
	b, _ := json.Marshal(map[string]any{serverwindow.Key: serverwindow.Info{FromS: 0, ToS: 60, Hold: true, Cumulative: true}})
	m := FromReport(&report.Report{ServerTick: b, ServerMetricsPath: "m.json", Timeline: tl})
	g := gateOf(t, TickP99WorstGate)
	if !g.Windowed || g.Flag != "" {
		t.Fatalf("%s: windowed %v, flag %q: it takes window_s and is not forwarded to the swarm", g.Name, g.Windowed, g.Flag)
	}
	if o := g.Evaluate(m, 16.6); o.Err == nil {
		t.Errorf("no window_s: %+v", o)
	}
	o := g.Evaluate(m.WithWindow(10), 16.6)
	if o.Err != nil || o.Pass || *o.Measured < 24.5 {
		t.Fatalf("%+v", o)
	}
	if w := g.WindowRead(m.WithWindow(10)); !strings.HasPrefix(w, "worst 10 s window: t=20.0–30.0 s (600 ticks") {
		t.Errorf("window %q", w)
	}
	if o := g.Evaluate(m.WithWindow(120), 16.6); o.Err == nil || !strings.Contains(o.Err.Error(), "less than the 120 s window") {
		t.Errorf("a hold shorter than the window: %+v", o)
	}
	bare := FromReport(&report.Report{ServerTick: []byte(`{"tick_ms": {}}`), ServerMetricsPath: "m.json", Timeline: tl})
	if o := g.Evaluate(bare.WithWindow(10), 16.6); o.Err == nil || !strings.Contains(o.Err.Error(), "server_tick.hold missing") {
		t.Errorf("a report without a hold: %+v", o)
	}
}
