package server

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/config/catalog"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

var diagFields = []string{"cpu_pct", "gc_pause_ms", "gc_count", "send_queue_max", "slow_sends"}

// writeAndRead writes the metrics file and returns it, checked against the
// published schema.
func writeAndRead(t *testing.T, ts *testServer) map[string]json.RawMessage {
	t.Helper()
	if err := ts.WriteMetrics(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(ts.cfg.Metrics.TickJSONPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := catalog.ValidateJSON("#ServerTick", "metrics.json", b); err != nil {
		t.Fatal(err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

func num(t *testing.T, raw map[string]json.RawMessage, path ...string) float64 {
	t.Helper()
	cur := raw
	for i, k := range path {
		v, ok := cur[k]
		if !ok {
			t.Fatalf("metrics file lacks %s", strings.Join(path, "."))
		}
		if i == len(path)-1 {
			var f float64
			if err := json.Unmarshal(v, &f); err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			return f
		}
		cur = nil
		if err := json.Unmarshal(v, &cur); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
	}
	return 0
}

// Every write carries the diagnostics — the one at bind, before any tick,
// included — and they pass the schema. The backlog is the deepest a peer's
// transport reported over the write window, and starts again after each
// write; a failed Send is a slow send.
func TestDiagnosticsInEveryWrite(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Metrics.TickJSONPath = filepath.Join(t.TempDir(), "m.json") })
	raw := writeAndRead(t, ts)
	for _, k := range diagFields {
		if _, ok := raw[k]; !ok {
			t.Fatalf("the write at bind lacks %s", k)
		}
	}
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "x"))
	ts.step()
	ts.h.queued[1] = 7
	ts.step()
	ts.h.queued[1] = 2
	ts.step()
	raw = writeAndRead(t, ts)
	if q := num(t, raw, "send_queue_max"); q != 7 {
		t.Fatalf("send_queue_max %v, want 7 (the deepest backlog of the window)", q)
	}
	if n := num(t, raw, "slow_sends"); n != 0 {
		t.Fatalf("slow_sends %v with every send accepted at once", n)
	}
	ts.h.sendErr = errors.New("refused")
	ts.step()
	ts.step()
	raw = writeAndRead(t, ts)
	if q := num(t, raw, "send_queue_max"); q != 2 {
		t.Fatalf("send_queue_max %v after the write, want 2 (a new window)", q)
	}
	if n := num(t, raw, "slow_sends"); n != 2 {
		t.Fatalf("slow_sends %v after two ticks of refused snapshot sends, want 2", n)
	}
	for _, k := range diagFields {
		if _, ok := raw[k]; !ok {
			t.Fatalf("a later write lacks %s", k)
		}
	}
}

// The schema refuses what no server can measure.
func TestDiagnosticsSchemaRejects(t *testing.T) {
	base := `{"schema_version":6,"transport":"enet","rss_kb":1,"tick_ms":{"min":0,"mean":0,"max":0,"p95":0,"p99":0},`
	for _, bad := range []string{`"cpu_pct":-1}`, `"gc_pause_ms":{"max":1,"p99":2}}`, `"gc_count":1.5}`, `"send_queue_max":-3}`, `"slow_sends":-1}`} {
		if err := catalog.ValidateJSON("#ServerTick", "m.json", []byte(base+bad)); err == nil {
			t.Errorf("schema accepted %s", bad)
		}
	}
	if err := catalog.ValidateJSON("#ServerTick", "m.json", []byte(base+`"cpu_pct":140.5,"gc_pause_ms":{"max":2,"p99":1},"gc_count":3,"send_queue_max":0,"slow_sends":0}`)); err != nil {
		t.Errorf("schema refused valid diagnostics: %v", err)
	}
}

// The alloc_churn_mb_per_s fault makes the collector run: gc_count and
// gc_pause_ms move with it on, where the same ticks without it leave them
// (nearly) still.
func TestAllocChurnMovesGC(t *testing.T) {
	run := func(mbPerS float64) (count, pauseMax float64) {
		ts := newTestServer(t, func(c *Config) {
			c.Metrics.TickJSONPath = filepath.Join(t.TempDir(), "m.json")
			c.Faults.AllocChurnMBPerS = mbPerS
		})
		for i := 0; i < TickHz; i++ { // one simulated second
			ts.step()
		}
		raw := writeAndRead(t, ts)
		return num(t, raw, "gc_count"), num(t, raw, "gc_pause_ms", "max")
	}
	quietCount, _ := run(0)
	count, pause := run(512)
	if count < 8 || count < 4*quietCount || pause <= 0 {
		t.Fatalf("512 MB/s of churn for 60 ticks: gc_count %v (without churn %v), gc_pause_ms.max %v", count, quietCount, pause)
	}
	t.Logf("gc_count %v with churn, %v without; pause max %.3f ms", count, quietCount, pause)
}

// The window CPU figures: the mean is the CPU between the first and last
// sample in the window over their wall time, the max the busiest interval,
// samples before the window are left out, and fewer than two samples in
// it is no figure at all.
func TestCPURingWindow(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	cpu := func(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
	cases := []struct {
		name       string
		samples    [][2]float64 // wall s, cpu s
		since      float64
		mean, peak float64
		ok         bool
	}{
		{"none", nil, 0, 0, 0, false},
		{"one", [][2]float64{{0, 0}}, 0, 0, 0, false},
		{"steady half core", [][2]float64{{0, 0}, {1, 0.5}, {2, 1}, {3, 1.5}}, 0, 50, 50, true},
		{"one busy second", [][2]float64{{0, 0}, {1, 0.2}, {2, 1.2}, {3, 1.4}}, 0, 140.0 / 3, 100, true},
		{"two threads", [][2]float64{{0, 0}, {1, 1.8}}, 0, 180, 180, true},
		{"before the window left out", [][2]float64{{0, 0}, {1, 1}, {2, 1.1}, {3, 1.2}}, 1.5, 10, 10, true},
		{"one sample in the window", [][2]float64{{0, 0}, {1, 1}, {2, 1.1}}, 1.5, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var r cpuRing
			for _, s := range tc.samples {
				r.add(at(s[0]), cpu(s[1]))
			}
			mean, peak, ok := r.window(at(tc.since))
			if ok != tc.ok || math.Abs(mean-tc.mean) > 1e-9 || math.Abs(peak-tc.peak) > 1e-9 {
				t.Fatalf("window: mean %v peak %v ok %v; want %v %v %v", mean, peak, ok, tc.mean, tc.peak, tc.ok)
			}
		})
	}
}

// The ring keeps the newest cpuRingLen samples.
func TestCPURingWraps(t *testing.T) {
	var r cpuRing
	t0 := time.Unix(1000, 0)
	for i := 0; i < 3*cpuRingLen; i++ {
		r.add(t0.Add(time.Duration(i)*time.Second), time.Duration(i)*time.Second/4)
	}
	if r.n != cpuRingLen {
		t.Fatalf("kept %d samples", r.n)
	}
	last, _ := r.last()
	if want := t0.Add(time.Duration(3*cpuRingLen-1) * time.Second); !last.at.Equal(want) {
		t.Fatalf("newest %v, want %v", last.at, want)
	}
	mean, _, ok := r.window(time.Time{})
	if !ok || math.Abs(mean-25) > 1e-9 {
		t.Fatalf("mean %v ok %v, want 25", mean, ok)
	}
}
