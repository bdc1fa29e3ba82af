//go:build unix

package server

import (
	"path/filepath"
	"testing"
	"time"
)

// cpu_pct is the process's CPU over the write window: a window spent
// spinning reads higher than one spent asleep.
func TestCPUPctFollowsWork(t *testing.T) {
	d := newDiag(time.Now())
	// The sleep is the idle window under measurement, not a wait for
	// anything: a process asleep for 50 ms reads near 0 % CPU.
	time.Sleep(50 * time.Millisecond)
	idle, _ := d.cpuWindow(time.Now())
	start, _ := cpuTime()
	for cur := start; cur-start < 50*time.Millisecond; cur, _ = cpuTime() {
		busyWork(time.Millisecond)
	}
	busy, _ := d.cpuWindow(time.Now())
	if busy <= 2*idle || busy < 1 {
		t.Fatalf("cpu_pct: busy window %.1f%%, idle window %.1f%%", busy, idle)
	}
	t.Logf("cpu_pct: busy %.1f%%, idle %.1f%%", busy, idle)
}

// A running server writes cpu_pct_mean and cpu_pct_max once its window
// holds two samples a second apart; the file written before that (at bind)
// leaves them out rather than writing 0.
func TestCPUWindowInMetrics(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Metrics.TickJSONPath = filepath.Join(t.TempDir(), "m.json") })
	raw := writeAndRead(t, ts)
	for _, k := range []string{"cpu_pct_mean", "cpu_pct_max"} {
		if _, ok := raw[k]; ok {
			t.Fatalf("the write at bind carries %s: %s", k, raw[k])
		}
	}
	for i := 0; i < 2*TickHz+1; i++ { // two simulated seconds: three samples
		ts.step()
	}
	raw = writeAndRead(t, ts)
	mean, peak := num(t, raw, "cpu_pct_mean"), num(t, raw, "cpu_pct_max")
	if mean < 0 || peak < mean-1e-9 {
		t.Fatalf("cpu_pct_mean %v, cpu_pct_max %v", mean, peak)
	}
}
