package swarm

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// fileAt is a metrics file of a server whose tick histogram l has run 60
// more ticks of ms each, by uptime, having spent cpuS seconds of CPU.
func fileAt(t *testing.T, l *stats.LogLinear, uptime, ms, cpuS float64, entities int, marks int64) (*report.ServerTick, map[string]json.RawMessage) {
	t.Helper()
	for range 60 {
		l.Record(ms)
	}
	c := &report.Cumulative{UptimeS: uptime, Ticks: int64(l.Count()), TickMs: l.Snapshot(), CPUS: &cpuS,
		SendQueueHWM: ptrTo(int64(9)), MarksReset: &marks}
	b, _ := json.Marshal(map[string]any{"schema_version": 6, "transport": "enet", "rss_kb": 1000, "entities": entities,
		"tick_ms": map[string]any{"min": 1, "mean": 1, "max": 1, "p95": 1, "p99": 1}, "send_queue_max": 2, "cumulative": c})
	st, raw, err := report.ParseServerTick(b)
	if err != nil {
		t.Fatal(err)
	}
	return st, raw
}

func ptrTo[T any](v T) *T { return &v }

// TestFileWindowHold: readings before the hold are left out, the hold's
// first reading asks the server for a reset, the gauges' extremes and the
// busiest second cover the hold only, and the block says so.
func TestFileWindowHold(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.json")
	start := time.Unix(1000, 0)
	cfg := &Config{Clients: 3, Ramp: time.Second, ServerMetrics: path} // the hold starts at 2 s
	w := newFileWindow(cfg, start)
	at := func(s float64) time.Time { return start.Add(time.Duration(s * float64(time.Second))) }

	l := stats.NewLogLinear()
	st, raw := fileAt(t, l, 1, 30, 0.9, 3, 0) // the ramp: slow and busy
	w.observe(at(1), st, raw, true)
	if _, err := os.Stat(path + report.ResetRequestSuffix); !os.IsNotExist(err) {
		t.Fatal("a reset asked for before the hold")
	}
	st, raw = fileAt(t, l, 2, 30, 1.8, 500, 0) // the hold's first reading
	w.observe(at(2), st, raw, true)
	b, err := os.ReadFile(path + report.ResetRequestSuffix)
	if err != nil {
		t.Fatalf("no reset request at the hold's start: %v", err)
	}
	token, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if token != w.token || token <= 0 {
		t.Fatalf("request %q, token %d", b, w.token)
	}
	st, raw = fileAt(t, l, 3, 2, 1.85, 640, token) // healthy, and the busiest second of the hold is 5 %
	step := w.observe(at(3), st, raw, true)
	if step.TickHist == nil || step.TickHist.Count != 60 || step.CPUPct == nil {
		t.Fatalf("step %+v", step)
	}
	st, raw = fileAt(t, l, 4, 2, 1.88, 600, token)
	block, warns := w.hold(at(4), st, raw)
	if len(warns) != 0 {
		t.Errorf("warnings %v", warns)
	}
	var h serverwindow.Info
	if err := json.Unmarshal(block[serverwindow.Key], &h); err != nil {
		t.Fatal(err)
	}
	if !h.Hold || h.FromS != 2 || h.ToS != 4 || h.Readings != 3 {
		t.Errorf("hold %+v", h)
	}
	if e := h.Extremes["entities"]; e.Min != 500 || e.Max != 640 {
		t.Errorf("entities over the hold %+v: the ramp's 3 must not count", e)
	}
	var cpuMax, queue float64
	_ = json.Unmarshal(block["cpu_pct_max"], &cpuMax)
	_ = json.Unmarshal(block["send_queue_max"], &queue)
	if cpuMax < 4.9 || cpuMax > 5.1 {
		t.Errorf("busiest second %g, want 5 (the ramp's 90 %% is not the hold's)", cpuMax)
	}
	if queue != 9 {
		t.Errorf("send_queue_max %g, want the mark since the reset, 9", queue)
	}
	w.removeResetRequest()
	if _, err := os.Stat(path + report.ResetRequestSuffix); !os.IsNotExist(err) {
		t.Error("the reset request was left behind")
	}
}

// TestFileWindowNoHoldReading: a run that ends before any reading in the
// hold spans the run, ramp included, and says so.
func TestFileWindowNoHoldReading(t *testing.T) {
	start := time.Unix(1000, 0)
	w := newFileWindow(&Config{Clients: 100, Ramp: time.Second, ServerMetrics: filepath.Join(t.TempDir(), "m.json")}, start)
	l := stats.NewLogLinear()
	st, raw := fileAt(t, l, 1, 3, 0.1, 3, 0)
	w.observe(start.Add(time.Second), st, raw, true)
	st, raw = fileAt(t, l, 2, 3, 0.2, 3, 0)
	block, warns := w.hold(start.Add(2*time.Second), st, raw)
	var h serverwindow.Info
	_ = json.Unmarshal(block[serverwindow.Key], &h)
	if h.Hold || len(warns) != 1 || !strings.Contains(warns[0], "ramp included") {
		t.Errorf("hold %+v, warnings %v", h, warns)
	}
}
