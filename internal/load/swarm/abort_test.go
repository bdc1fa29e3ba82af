package swarm

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
)

func abortRule(t *testing.T, name string, thr float64, afterS int, margin float64) gatetable.AbortRule {
	t.Helper()
	g, ok := gatetable.Lookup(name)
	if !ok {
		t.Fatalf("no gate %s", name)
	}
	return gatetable.AbortRule{Gate: g, Threshold: thr, AfterS: afterS, MarginPct: margin}
}

// A server whose simulation collapses to 10 Hz ends a 60 s run after the
// rule's 2 s under 15 Hz (30 Hz − 50 %): the report says when, why and on which gate, and is not
// marked interrupted. The same rule leaves a healthy server's run alone.
func TestRunAbortsOnTickHzCollapse(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	slow := startFakeServerTicking(t, BodyFormatOpaque, make([]byte, 100), 0, 6)
	cfg := Config{Addr: slow.addr, Clients: 4, Duration: 60 * time.Second, Ramp: 10 * time.Millisecond, Threads: 1,
		Abort: []gatetable.AbortRule{abortRule(t, "tick_hz_min", 30, 2, 50)}}
	begin := time.Now()
	r := runSwarm(t, context.Background(), cfg, 45*time.Second).Report
	took := time.Since(begin)
	if r.AbortedAtS == nil || r.AbortGate != "tick_hz_min" || r.Aborted != "" {
		t.Fatalf("aborted_at_s %v gate %q aborted %q, want an early end on tick_hz_min (timeline %+v)", r.AbortedAtS, r.AbortGate, r.Aborted, r.Timeline)
	}
	if !strings.Contains(r.AbortReason, "tick_hz_min: observed server tick-Hz (min)") || !strings.Contains(r.AbortReason, "under 15 Hz") ||
		!strings.Contains(r.AbortReason, "for 2 consecutive seconds") {
		t.Errorf("abort_reason %q", r.AbortReason)
	}
	// Two breaching rows after the first full second of ticks: the end is
	// seconds in, far from the 60 s duration.
	if *r.AbortedAtS < 2 || *r.AbortedAtS > 30 || took > 40*time.Second {
		t.Errorf("aborted at %.1fs, the run took %s", *r.AbortedAtS, took)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	failed := Evaluate(Asserts{"tick_hz_min": 10}, &Result{Report: r})
	if len(failed) != 1 || !strings.Contains(failed[0].Detail, "ended the run early") || r.Passed {
		t.Errorf("an assert the run ended early on must fail, even when its run-long figure (%+v) holds: %+v", r.ObservedServerTickHz, failed)
	}

	healthy := startFakeServer(t, BodyFormatOpaque, make([]byte, 100), 0)
	cfg.Addr, cfg.Duration = healthy.addr, 3*time.Second
	r = runSwarm(t, context.Background(), cfg, 45*time.Second).Report
	if r.AbortedAtS != nil || r.AbortReason != "" {
		t.Fatalf("a healthy 60 Hz server ended early: %v %q", *r.AbortedAtS, r.AbortReason)
	}
}

// A payload ceiling breached by more than the margin ends the run.
func TestRunAbortsOnPayloadCeiling(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, make([]byte, 1000), 0) // ~60 KB/s per client
	cfg := Config{Addr: srv.addr, Clients: 2, Duration: 60 * time.Second, Ramp: 10 * time.Millisecond, Threads: 1,
		Abort: []gatetable.AbortRule{abortRule(t, "kbs_max", 20, 2, 50)}}
	r := runSwarm(t, context.Background(), cfg, 45*time.Second).Report
	if r.AbortedAtS == nil || r.AbortGate != "kbs_max" || !strings.Contains(r.AbortReason, "over 30 KB/s") {
		t.Fatalf("aborted_at_s %v gate %q reason %q (timeline %+v)", r.AbortedAtS, r.AbortGate, r.AbortReason, r.Timeline)
	}
}

// Every client refused: the run ends when the last one does, and the
// report says so (the load check names it), without waiting out 60 s.
func TestRunRecordsEveryClientEnded(t *testing.T) {
	srv := startFakeServer(t, BodyFormatOpaque, nil, 1)
	cfg := Config{Addr: srv.addr, Clients: 4, Duration: 60 * time.Second, Ramp: 10 * time.Millisecond, Threads: 1}
	r := runSwarm(t, context.Background(), cfg, 45*time.Second).Report
	if r.AbortedAtS == nil || r.AbortGate != report.AbortLoad || *r.AbortedAtS > 30 {
		t.Fatalf("aborted_at_s %v gate %q", r.AbortedAtS, r.AbortGate)
	}
	if !strings.Contains(r.AbortReason, "every client ended by") || !strings.Contains(r.AbortReason, "4 refused (server_full 4)") {
		t.Errorf("abort_reason %q", r.AbortReason)
	}
}

// emfileBackend is ENet whose Dial fails with EMFILE from its n-th call
// on: a process out of descriptors, without lowering the test's own limit.
type emfileBackend struct {
	transport.Backend
	calls, okCalls atomic.Int64
}

func (b *emfileBackend) Name() string { return "enet-emfile" }

func (b *emfileBackend) Dial(opt transport.Options) (transport.Host, error) {
	if b.calls.Add(1) > b.okCalls.Load() {
		return nil, fmt.Errorf("enet: dial: %w", syscall.EMFILE)
	}
	return b.Backend.Dial(opt)
}

var emfile = func() *emfileBackend {
	enet, err := transport.Lookup("enet")
	if err != nil {
		panic(err)
	}
	b := &emfileBackend{Backend: enet}
	transport.Register(b)
	return b
}()

// Clients whose socket the harness could not open are harness errors,
// counted by kind with the first error, beside the descriptor limit.
func TestRunCountsHarnessErrors(t *testing.T) {
	srv := startFakeServer(t, BodyFormatOpaque, make([]byte, 100), 0)
	emfile.calls.Store(0)
	emfile.okCalls.Store(2)
	cfg := Config{Addr: srv.addr, Transport: "enet-emfile", Clients: 6, Duration: 2 * time.Second, Ramp: 10 * time.Millisecond, Threads: 1}
	res := runSwarm(t, context.Background(), cfg, 45*time.Second)
	r := res.Report
	h := r.HarnessErrors
	if h == nil || h.Socket != 4 || h.Dial != 0 || h.FDExhausted != 4 || !strings.Contains(h.FirstError, "too many open files") {
		t.Fatalf("harness errors %+v", h)
	}
	if r.ClientsConnected != 2 || r.NeverConnectedByReason[failDial] != 4 {
		t.Errorf("connected %d, never connected %v", r.ClientsConnected, r.NeverConnectedByReason)
	}
	if l := h.FDLimit; l == nil || l.Clients != 6 || l.PerClient != 1 || l.Needed != 6+fdSpare || l.Hard < l.Soft {
		t.Errorf("fd limit %+v", l)
	}
	why, excused := gatetable.HarnessShort(r)
	if !excused || !strings.Contains(why, "could not start 4 of 6 clients itself") {
		t.Errorf("HarnessShort = %q, %v", why, excused)
	}
}

// CheckFileLimit raises a soft limit below the need up to it (not past
// the hard limit) and reports where it started.
func TestCheckFileLimitRaisesTheSoftLimit(t *testing.T) {
	soft, hard, ok := fileLimit()
	if !ok {
		t.Fatal("RLIMIT_NOFILE unreadable on this platform")
	}
	t.Cleanup(func() { _ = setSoftFileLimit(soft) })
	cfg := &Config{Addr: "127.0.0.1:1", Clients: 200, Duration: time.Second}
	_, need := fdNeed(cfg)
	if hard < need {
		t.Fatalf("hard limit %d below the test's need %d", hard, need)
	}
	low := need - 100
	if err := setSoftFileLimit(low); err != nil {
		t.Fatal(err)
	}
	l := CheckFileLimit(cfg)
	if l.SoftBefore != low || l.Soft != need || l.Hard != hard || l.Short() {
		t.Fatalf("limit %+v, want raised from %d to %d", l, low, need)
	}
	if s, _, _ := fileLimit(); s != need {
		t.Fatalf("soft limit now %d, want %d", s, need)
	}
	short := &report.FDLimit{Soft: 256, Hard: 256, Needed: 1064, Clients: 1000, PerClient: 1, Spare: 64}
	if adv := FileLimitAdvice(short); !strings.Contains(adv, "ulimit -n 256 < 1064 needed for 1000 clients") || !strings.Contains(adv, "about 192 clients") {
		t.Errorf("advice %q", adv)
	}
}

// A short limit leaves the swarm its spare: only the room after it goes to
// clients, and the rest fail as descriptor-limit harness errors.
func TestFDBudget(t *testing.T) {
	if fdBudget(&report.FDLimit{Soft: 2000, Needed: 1064, Clients: 1000, PerClient: 1, Spare: 64}) != nil {
		t.Fatal("a limit above the need got a budget")
	}
	var none *fdRoom
	if none.take() != nil {
		t.Fatal("no budget refused a client")
	}
	b := fdBudget(&report.FDLimit{Soft: 70, Hard: 70, Needed: 1064, Clients: 1000, PerClient: 2, Spare: 64})
	for i := range 3 {
		if err := b.take(); err != nil {
			t.Fatalf("client %d of the room of 3: %v", i, err)
		}
	}
	err := b.take()
	if !fdExhausted(err) || !strings.Contains(err.Error(), "ulimit -n 70 leaves room for 3 of 1000 clients") {
		t.Fatalf("past the room: %v", err)
	}
}

// The wire ceiling is the server's own figure: read from its metrics each
// second by the gate's rule, it ends the run when over the bound; a file
// whose wire_peers is 0 measured nothing and never does.
func TestRunAbortsOnWireCeiling(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	srv := startFakeServer(t, BodyFormatOpaque, make([]byte, 100), 0)
	for _, tc := range []struct {
		name, file string
		abort      bool
	}{
		{"over", metricsFile, true},
		{"nothing measured", strings.Replace(metricsFile, `"wire_peers":8`, `"wire_peers":0`, 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.json")
			if err := report.WriteFileAtomic(path, []byte(tc.file)); err != nil {
				t.Fatal(err)
			}
			dur := 60 * time.Second
			if !tc.abort {
				dur = 4 * time.Second
			}
			cfg := Config{Addr: srv.addr, Clients: 2, Duration: dur, Ramp: 10 * time.Millisecond, Threads: 1, ServerMetrics: path,
				RSSSampleInterval: time.Second, Abort: []gatetable.AbortRule{abortRule(t, "wire_kbs_max", 15, 2, 20)}}
			r := runSwarm(t, context.Background(), cfg, 45*time.Second).Report
			if got := r.AbortedAtS != nil; got != tc.abort {
				t.Fatalf("ended early %v (%q), want %v", got, r.AbortReason, tc.abort)
			}
			if tc.abort && (r.AbortGate != "wire_kbs_max" || !strings.Contains(r.AbortReason, "wire KB/s per client 21.50 KB/s over 18 KB/s")) {
				t.Fatalf("gate %q reason %q", r.AbortGate, r.AbortReason)
			}
		})
	}
}
