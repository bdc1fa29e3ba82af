//go:build unix

package server

import (
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
