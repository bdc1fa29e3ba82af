package swarmcmd

import (
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

func f64(v float64) *float64 { return &v }

func testProfile() *profile.Profile {
	hard := gatetable.LevelHard
	return &profile.Profile{
		Name: "t", Tier: "pr", Transport: "enet", Clients: 8, DurationS: 20, RateHz: 60, RampMs: 5,
		RSSSampleIntervalS: 1, Patterns: []string{"weave"}, EntityType: "fighter",
		Harness: profile.Harness{TestBusyUsPerClient: 250},
		Gates: profile.Gates{
			"admission":                {Level: hard},
			"wire_kbs_max":             {Threshold: f64(150), Level: hard},
			"tick_hz_min":              {Threshold: f64(30), Level: hard},
			"tick_ms_p99_max":          {Threshold: f64(16.6)}, // no level: the tier rule
			"rss_growth_kb_max":        {Threshold: f64(10000), Level: hard},
			"rss_slope_kb_per_min_max": {Threshold: f64(128), Level: hard},
			"entities_min":             {Threshold: f64(8), Level: hard},
			"kbs_max":                  {Threshold: f64(100), Level: hard, Phase: "during"},
		},
	}
}

func TestAssertFlags(t *testing.T) {
	p := testProfile()
	got := strings.Join(AssertFlags(p, p.Legs()[0], false), " ")
	for _, want := range []string{"--assert-admission", "--assert-max-wire-kbs 150", "--assert-min-tick-hz 30",
		"--assert-max-rss-growth-kb 10000", "--assert-max-rss-slope-kb-per-min 128", "--assert-min-entities 8"} {
		if !strings.Contains(got, want) {
			t.Errorf("flags %q lack %q", got, want)
		}
	}
	if strings.Contains(got, "--assert-max-tick-ms") {
		t.Errorf("pr tier must not forward the tick-ms assert (advisory there): %q", got)
	}
	if strings.Contains(got, "--assert-max-kbs") {
		t.Errorf("a phase-scoped gate must not be forwarded (a swarm assert reads the whole run): %q", got)
	}
	if got := strings.Join(AssertFlags(p, p.Legs()[0], true), " "); !strings.Contains(got, "--assert-max-tick-ms 16.6") {
		t.Errorf("--strict must forward the tick-ms assert: %q", got)
	}
	spec := p.Gates["wire_kbs_max"]
	spec.Level = gatetable.LevelAdvisory
	p.Gates["wire_kbs_max"] = spec
	if got := strings.Join(AssertFlags(p, p.Legs()[0], false), " "); strings.Contains(got, "wire") {
		t.Errorf("advisory gates must not be forwarded: %q", got)
	}
}

// The leg's early-abort rules reach the swarm as --abort-on-breach, each
// beside the assert whose threshold it reads; none without asserts.
func TestAbortFlags(t *testing.T) {
	p := testProfile()
	leg := p.Legs()[0]
	if got := AbortFlags(p, leg, false); len(got) != 0 {
		t.Fatalf("no opt-in, flags %q", got)
	}
	p.AbortOnBreach = &profile.AbortPolicy{AfterS: 4, MarginPct: 12.5}
	args := strings.Join(Args(p, leg, Options{Host: "h", Port: "1", Asserts: true}), " ")
	for _, want := range []string{"--abort-on-breach wire_kbs_max:4:12.5", "--abort-on-breach tick_hz_min:4:12.5", "--assert-min-tick-hz 30"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "kbs_max:") && !strings.Contains(args, "wire_kbs_max:") || strings.Count(args, "--abort-on-breach") != 2 {
		t.Errorf("the phase-scoped kbs_max must not abort: %q", args)
	}
	if got := strings.Join(Args(p, leg, Options{Host: "h", Port: "1"}), " "); strings.Contains(got, "--abort-on-breach") {
		t.Errorf("without asserts, no abort flags: %q", got)
	}
}

// TestArgs: one builder for the local run, a shard and a pod. Every load
// flag the profile sets reaches the swarm whoever builds the line (the
// Kubernetes Job once dropped --test-busy-us because it built its own).
func TestArgs(t *testing.T) {
	p := testProfile()
	leg := p.Legs()[0]
	cases := []struct {
		name      string
		o         Options
		want, not []string
	}{
		{"local", Options{Host: "127.0.0.1", Port: "7777", Report: "/r/report.json", ServerMetrics: "/r/m.json", Asserts: true},
			[]string{"127.0.0.1 7777 --clients 8 --duration 20 --rate 60 --transport enet --ramp-ms 5 --json /r/report.json --server-metrics /r/m.json --rss-sample-interval-s 1 --pattern weave",
				"--entity-type fighter", "--test-busy-us 250", "--assert-admission"},
			[]string{"--shard", "--progress", "--degrade"}},
		{"shard", Options{Host: "h", Port: "1", Report: "/r/s0.json", Shard: "0/2", StartAt: "T", Asserts: true},
			[]string{"--json /r/s0.json", "--test-busy-us 250", "--shard 0/2 --start-at T"}, nil},
		{"pod", Options{Host: "10.0.0.5", Port: "7777", Progress: "plain", Shard: "$(JOB_COMPLETION_INDEX)/4", StartAt: "T"},
			[]string{"10.0.0.5 7777 --clients 8", "--test-busy-us 250", "--progress plain", "--shard $(JOB_COMPLETION_INDEX)/4 --start-at T"},
			[]string{"--json", "--assert-", "--server-metrics"}},
		{"trace and impairment", Options{Host: "h", Port: "1", Pattern: "trace:/r/trace", ImpairmentFile: "/r/impairment.json"},
			[]string{"--pattern trace:/r/trace", "--degrade-schedule /r/impairment.json --degrade-seed 0"}, []string{"--pattern weave"}},
	}
	for _, tc := range cases {
		got := strings.Join(Args(p, leg, tc.o), " ")
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q lacks %q", tc.name, got, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: %q has %q", tc.name, got, n)
			}
		}
	}
	p.PatternMix, p.Patterns = "weave:80,idle:20", nil
	if got := strings.Join(Args(p, p.Legs()[0], Options{}), " "); !strings.Contains(got, "--pattern-mix weave:80,idle:20") || strings.Contains(got, "--pattern ") {
		t.Errorf("mix leg: %q", got)
	}
}
