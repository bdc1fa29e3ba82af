package swarm

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestTestBusySpins: the knob spins at least its time and hands back the
// clock after it; off, it returns at once with the time it was given.
func TestTestBusySpins(t *testing.T) {
	for _, busy := range []time.Duration{0, 2 * time.Millisecond} {
		w := &worker{cfg: &Config{TestBusy: busy}}
		start := time.Now()
		after := w.testBusy(start)
		if busy == 0 && !after.Equal(start) {
			t.Errorf("busy 0: returned %s after the time given", after.Sub(start))
		}
		if got := after.Sub(start); got < busy || time.Since(start) < busy {
			t.Errorf("busy %s: spun %s", busy, got)
		}
	}
}

// TestTestBusyDelaysService: a worker spinning 10 ms per client over 4
// clients takes ≥ 40 ms an iteration, so each joined client's host is
// serviced about every 40 ms, not every 16.7 ms period — in both loops.
func TestTestBusyDelaysService(t *testing.T) {
	for _, perClient := range []bool{false, true} {
		srv := startFakeServer(t, BodyFormatOpaque, make([]byte, 200), 0)
		cfg := Config{Addr: srv.addr, Clients: 4, Duration: 2 * time.Second, Ramp: 10 * time.Millisecond,
			Threads: 1, TestBusy: 10 * time.Millisecond, PerClientService: perClient}
		r := runSwarm(t, context.Background(), cfg, 60*time.Second).Report
		si := r.ServiceIntervalMs
		if si == nil || r.ClientsConnected != 4 {
			t.Fatalf("per-client service %v: connected %d, service interval %+v", perClient, r.ClientsConnected, si)
		}
		// The spin alone makes an iteration ≥ 40 ms; 30 leaves room for the
		// clients that joined part-way through an iteration.
		if si.Mean < 30 || si.P50 < 30 {
			t.Errorf("per-client service %v: service interval mean %.2f p50 %.2f ms, want ≥ 30 (4 × 10 ms spin)", perClient, si.Mean, si.P50)
		}
	}
}

func TestTestBusyValidated(t *testing.T) {
	cfg := Config{Addr: "127.0.0.1:1", Clients: 1, Duration: time.Second, RateHz: 60, TestBusy: -time.Microsecond}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "test busy time must be ≥ 0") {
		t.Errorf("negative TestBusy: %v", err)
	}
}
