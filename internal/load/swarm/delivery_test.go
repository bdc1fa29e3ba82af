package swarm

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// A server that stops sending state after its first second: the clients'
// largest gap counts the silence from their last update to the run's end
// (the between-updates gap does not see it), their rate is over their
// whole joined time, and the delivery rule names the gap.
func TestDeliveryCountsTheTrailingSilence(t *testing.T) {
	srv := startFake(t, &fakeServer{bodyFormat: BodyFormatOpaque, quiet: func(since time.Duration) bool { return since > time.Second }})
	cfg := Config{Addr: srv.addr, Clients: 2, Duration: 3500 * time.Millisecond, Threads: 1,
		Delivery: gatetable.DeliveryPolicy{MaxGapMs: 1500}}
	res := runSwarm(t, context.Background(), cfg, 60*time.Second)
	r := res.Report
	if r.ClientsConnected != 2 || r.ClientsDisconnected != 0 {
		t.Fatalf("admitted %d, lost %d %v: PeerDelay keeps the clients from going silent", r.ClientsConnected, r.ClientsDisconnected, r.DisconnectedByReason)
	}
	for _, p := range r.Players {
		if p.MaxStateGapMs == nil || *p.MaxStateGapMs < 1800 {
			t.Errorf("client %d: max_state_gap_ms %v, want the ~2.5 s after the server stopped", p.Index, p.MaxStateGapMs)
		}
		if p.MaxSnapshotGapMs == nil || *p.MaxSnapshotGapMs >= 1800 {
			t.Errorf("client %d: max_snapshot_gap_ms %v: between two updates, the silence after the last is not in it", p.Index, p.MaxSnapshotGapMs)
		}
		// ~60 updates over ~3.5 s joined.
		if p.UpdatesPerS == nil || *p.UpdatesPerS < 5 || *p.UpdatesPerS > 40 {
			t.Errorf("client %d: updates_per_s %v, want ~17 (one second of 60 Hz over 3.5 s)", p.Index, p.UpdatesPerS)
		}
	}
	d := r.Delivery
	if d == nil || d.AnnouncedHz == nil || *d.AnnouncedHz != 60 || d.Clients != 2 || d.MaxGapMs == nil || *d.MaxGapMs < 1800 {
		t.Fatalf("delivery %+v: want the Welcome's 60 Hz, 2 clients, the trailing gap", d)
	}
	if got := gatetable.Delivered(r, res.Delivery); got.OK() || !strings.Contains(got.Why(), "without a state update, over 1500 ms") {
		t.Fatalf("delivery judged %q, want the gap named", got.Why())
	}
	if r.Passed {
		t.Error("report passed although delivery failed")
	}
}

// The warm-up leaves a stall at the start out of every windowed figure
// (the gap, the rate, the intervals) and keeps it in the counts; the same
// run without a warm-up shows it.
func TestWarmupLeavesOutTheStart(t *testing.T) {
	stall := func(since time.Duration) bool { return since > 200*time.Millisecond && since < 1700*time.Millisecond }
	run := func(t *testing.T, warmup time.Duration) *report.Report {
		srv := startFake(t, &fakeServer{bodyFormat: BodyFormatOpaque, quiet: stall})
		cfg := Config{Addr: srv.addr, Clients: 2, Duration: 4500 * time.Millisecond, Threads: 1, Warmup: warmup}
		return runSwarm(t, context.Background(), cfg, 60*time.Second).Report
	}
	// The two runs go side by side, each against its own fake server: two
	// clients apiece, too few for one to move the other's rates, and the
	// package's sequential tests are the longest stretch of its race run.
	var warm, cold *report.Report
	t.Run("runs", func(t *testing.T) {
		t.Run("warm-up", func(t *testing.T) { t.Parallel(); warm = run(t, 2*time.Second) })
		t.Run("none", func(t *testing.T) { t.Parallel(); cold = run(t, 0) })
	})
	if warm == nil || cold == nil {
		t.FailNow() // a run failed; its subtest says how
	}
	if warm.WarmupS != 2 || warm.WarmupEndS == nil || *warm.WarmupEndS != 2 || cold.WarmupEndS != nil {
		t.Fatalf("warmup_s %v end %v (without: %v)", warm.WarmupS, warm.WarmupEndS, cold.WarmupEndS)
	}
	for _, p := range warm.Players {
		if p.MaxStateGapMs == nil || *p.MaxStateGapMs >= 1000 {
			t.Errorf("client %d after the warm-up: max_state_gap_ms %v, the stall is in the warm-up", p.Index, p.MaxStateGapMs)
		}
		if p.UpdatesPerS == nil || *p.UpdatesPerS < 40 {
			t.Errorf("client %d after the warm-up: updates_per_s %v, want ~60", p.Index, p.UpdatesPerS)
		}
		if si := p.StateIntervalMs; si == nil || si.P50 < 10 || si.P50 > 30 {
			t.Errorf("client %d: state_interval_ms %+v, want p50 near 16.7", p.Index, si)
		}
		// snapshots counts every update, the warm-up's too: ~0.2 s + 2.8 s at 60 Hz.
		if p.Snapshots < 100 {
			t.Errorf("client %d: %d snapshots counted", p.Index, p.Snapshots)
		}
	}
	if warm.StateIntervalMs == nil || warm.StateIntervalMs.Max >= 1000 || warm.Histograms.StateIntervalMs == nil {
		t.Errorf("pooled state_interval_ms %+v after the warm-up", warm.StateIntervalMs)
	}
	for _, p := range cold.Players {
		if p.MaxStateGapMs == nil || *p.MaxStateGapMs < 1300 {
			t.Errorf("client %d without a warm-up: max_state_gap_ms %v, want the 1.5 s stall", p.Index, p.MaxStateGapMs)
		}
	}
}

// The per-client interval buckets: each value lands in the bucket whose
// bounds hold it, and a percentile is its bucket's upper bound.
func TestIntervalBuckets(t *testing.T) {
	for _, tc := range []struct {
		ms       float64
		lo, hi   float64
		wantLast bool
	}{{0, 0, 0.25, false}, {16.67, 16.5, 16.75, false}, {20, 20, 20.5, false}, {99.9, 99, 100, false}, {1234, 1000, 1250, false}, {25000, 10000, 0, true}} {
		i := intervalBucket(tc.ms)
		if tc.wantLast {
			if i != len(intervalBounds)-2 {
				t.Errorf("%v ms: bucket %d, want the last", tc.ms, i)
			}
			continue
		}
		if intervalBounds[i] != tc.lo || intervalBounds[i+1] != tc.hi {
			t.Errorf("%v ms: bucket [%v, %v), want [%v, %v)", tc.ms, intervalBounds[i], intervalBounds[i+1], tc.lo, tc.hi)
		}
	}
	c := &client{}
	c.intervals = make([]uint64, len(intervalBounds)-1)
	for range 98 {
		c.intervals[intervalBucket(16.7)]++
	}
	c.intervals[intervalBucket(40)]++
	c.intervals[intervalBucket(120)]++
	s := c.intervalSummary()
	if s.P50 != 16.75 || s.P95 != 16.75 || s.P99 != 40.5 {
		t.Fatalf("summary %+v, want p50 16.75, p95 16.75, p99 40.5 (the buckets' upper bounds)", s)
	}
}
