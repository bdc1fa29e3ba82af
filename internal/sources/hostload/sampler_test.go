package hostload

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// waitSamples waits (at most 20 s: a loaded machine delays tickers) until s holds n samples.
func waitSamples(t *testing.T, s *Sampler, n int) Series {
	t.Helper()
	var got Series
	livetest.Eventually(t, 20*time.Second, func() (bool, string) {
		got = s.Samples()
		return len(got.Samples) >= n, fmt.Sprintf("%d samples, want %d", len(got.Samples), n)
	})
	return got
}

// TestSamplerFixture runs the sampling goroutine over a fixture that does not change: every
// interval is measured (others and own 0 cores, pressure as read) and steal, with no tick
// elapsed, is missing with its reason.
func TestSamplerFixture(t *testing.T) {
	s, err := Start(context.Background(), Config{Roots: []int{100}, Interval: 10 * time.Millisecond,
		Proc: filepath.Join("testdata", "busy", "t0"), ClockTicks: 100})
	if err != nil {
		t.Fatal(err)
	}
	waitSamples(t, s, 3)
	got := s.Stop()
	again := s.Stop() // a second Stop returns the same samples
	if len(got.Samples) < 3 || len(again.Samples) != len(got.Samples) || got.CPUs != 2 {
		t.Fatalf("%d samples, again %d, cpus %d", len(got.Samples), len(again.Samples), got.CPUs)
	}
	for i, sm := range got.Samples {
		if sm.OtherCores == nil || *sm.OtherCores != 0 || sm.OwnCores == nil || *sm.OwnCores != 0 {
			t.Errorf("sample %d: other %v own %v, want 0 and 0", i, sm.OtherCores, sm.OwnCores)
		}
		if sm.CPUPressureAvg10 == nil || *sm.CPUPressureAvg10 != 3 {
			t.Errorf("sample %d: pressure %v, want 3", i, sm.CPUPressureAvg10)
		}
		if sm.StealPct != nil || sm.Missing("steal_pct") != "no CPU time passed in /proc/stat" {
			t.Errorf("sample %d: steal %v (%q)", i, sm.StealPct, sm.Missing("steal_pct"))
		}
		if i > 0 && !sm.From.Equal(got.Samples[i-1].At) {
			t.Errorf("sample %d starts at %v, the previous ended at %v", i, sm.From, got.Samples[i-1].At)
		}
	}
}

// TestSamplerContextEnds: the goroutine stops with its context, and Stop still returns.
func TestSamplerContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	s, err := Start(ctx, Config{Roots: []int{100}, Interval: 10 * time.Millisecond, Proc: filepath.Join("testdata", "busy", "t0"), ClockTicks: 100})
	if err != nil {
		t.Fatal(err)
	}
	waitSamples(t, s, 1)
	cancel()
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		t.Fatal("sampler still running 10 s after its context ended")
	}
	n := len(s.Stop().Samples)
	time.Sleep(30 * time.Millisecond)
	if len(s.Samples().Samples) != n {
		t.Error("samples taken after the context ended")
	}
}

func TestStartErrors(t *testing.T) {
	proc := filepath.Join("testdata", "busy", "t0")
	cases := []struct {
		cfg  Config
		want string
	}{
		{Config{Roots: []int{100, 999}, Proc: proc, ClockTicks: 100}, "hostload: root process 999"},
		{Config{Interval: -time.Second, Proc: proc}, "interval -1s"},
		{Config{ClockTicks: -1, Proc: proc}, "clock ticks -1"},
	}
	for _, c := range cases {
		s, err := Start(context.Background(), c.cfg)
		if err == nil {
			s.Stop()
			t.Errorf("%+v: started, want %q", c.cfg, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
}

func TestAddRoots(t *testing.T) {
	s, err := Start(context.Background(), Config{Interval: time.Hour, Proc: filepath.Join("testdata", "busy", "t0"), ClockTicks: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	err = s.AddRoots(102, 998, 200)
	if err == nil || !strings.Contains(err.Error(), "root process 998") {
		t.Fatalf("AddRoots: %v, want an error naming 998", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.roots) != 2 || s.roots[102] != 601 || s.roots[200] != 700 {
		t.Errorf("roots %v, want 102→601 and 200→700 (the valid ones are kept)", s.roots)
	}
}
