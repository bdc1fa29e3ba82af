package cli

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/exitcode"
	"github.com/scalegate/scalegate/internal/report"
	"github.com/scalegate/scalegate/internal/swarm"
)

func testEnv(vars map[string]string) (*Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}, &out, &errb
}

func TestParseSwarmArgs(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(t *testing.T, f *swarmFlags)
	}{
		{"defaults", nil, []string{"127.0.0.1", "7777"}, func(t *testing.T, f *swarmFlags) {
			c := f.cfg
			if c.Addr != "127.0.0.1:7777" || c.Clients != 32 || c.Duration != 30*time.Second || c.RateHz != 60 ||
				c.Transport != "enet" || c.Ramp != 20*time.Millisecond || c.RSSSampleInterval != 30*time.Second ||
				c.Threads != swarm.AutoThreads(32) || c.Mix.String() != "weave" || c.Timeout != 5*time.Second || c.TestBusy != 0 {
				t.Errorf("defaults: %+v", c)
			}
			if len(f.asserts) != 0 {
				t.Errorf("asserts not all off by default: %+v", f.asserts)
			}
		}},
		{"env host and port", map[string]string{"SCALEGATE_HOST": "127.0.0.2", "SCALEGATE_PORT": "4778"}, nil, func(t *testing.T, f *swarmFlags) {
			if f.cfg.Addr != "127.0.0.2:4778" {
				t.Errorf("addr %q", f.cfg.Addr)
			}
		}},
		{"positionals override env", map[string]string{"SCALEGATE_PORT": "4778"}, []string{"localhost", "9000"}, func(t *testing.T, f *swarmFlags) {
			if f.cfg.Addr != "localhost:9000" {
				t.Errorf("addr %q", f.cfg.Addr)
			}
		}},
		{"positionals after options", nil, []string{"--clients", "128", "127.0.0.1", "5000"}, func(t *testing.T, f *swarmFlags) {
			if f.cfg.Addr != "127.0.0.1:5000" || f.cfg.Clients != 128 || f.cfg.Threads != swarm.AutoThreads(128) {
				t.Errorf("cfg %+v", f.cfg)
			}
		}},
		{"every option", nil, []string{"127.0.0.1", "1", "--clients", "10", "--duration", "2.5", "--rate", "30", "--ramp-ms", "5",
			"--threads", "3", "--pattern", "idle", "--pattern-mix", "weave:80,aggressive:20", "--json", "r.json",
			"--server-metrics", "m.json", "--rss-sample-interval-s", "2", "--entity-type", "builtin:sensor-fighter", "--test-busy-us", "250.5",
			"--assert-min-tick-hz", "58", "--assert-max-kbs", "150", "--assert-max-tick-ms", "16.6", "--assert-min-entities", "10",
			"--assert-max-rss-growth-kb", "0", "--assert-max-rss-slope-kb-per-min", "128", "--assert-max-load-factor", "0.99",
			"--assert-max-dropped-ticks", "100", "--assert-max-wire-kbs", "150", "--assert-congestion-engaged-hz", "30",
			"--assert-congestion-recovered-hz", "55", "--assert-no-refused"}, func(t *testing.T, f *swarmFlags) {
			c := f.cfg
			if c.Clients != 10 || c.Duration != 2500*time.Millisecond || c.RateHz != 30 || c.Ramp != 5*time.Millisecond ||
				c.Threads != 3 || c.Mix.String() != "weave:80,aggressive:20" || f.jsonPath != "r.json" ||
				c.ServerMetrics != "m.json" || c.RSSSampleInterval != 2*time.Second || c.EntityType != "builtin:sensor-fighter" ||
				c.TestBusy != 250500*time.Nanosecond {
				t.Errorf("cfg %+v", c)
			}
			want := swarm.Asserts{"tick_hz_min": 58, "kbs_max": 150, "tick_ms_p99_max": 16.6, "entities_min": 10, "rss_growth_kb_max": 0,
				"rss_slope_kb_per_min_max": 128, "load_factor_max": 0.99, "dropped_ticks_max": 100, "wire_kbs_max": 150,
				"congestion_engaged_hz": 30, "congestion_recovered_hz": 55, "admission": 0}
			if !maps.Equal(f.asserts, want) {
				t.Errorf("asserts %+v, want %+v", f.asserts, want)
			}
		}},
		{"shard and start-at", nil, []string{"127.0.0.1", "7777", "--clients", "130", "--shard", "3/4", "--start-at", "2026-12-01T10:00:00Z", "--ramp-ms", "1"}, func(t *testing.T, f *swarmFlags) {
			c := f.cfg
			if c.Shard != (swarm.Shard{Index: 3, Count: 4}) || !c.StartAt.Equal(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)) {
				t.Errorf("shard %v start %v", c.Shard, c.StartAt)
			}
			// Auto threads follow the shard's 33 clients, not the run's 130.
			if c.ShardClients() != 33 || c.Threads != swarm.AutoThreads(33) {
				t.Errorf("shard clients %d threads %d", c.ShardClients(), c.Threads)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, _, errb := testEnv(tc.env)
			f, err := parseSwarmArgs(env, tc.args)
			if err != nil {
				t.Fatalf("parse: %v (%s)", err, errb)
			}
			tc.check(t, f)
		})
	}
}

func TestSwarmUsageErrorsExit2(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no port", []string{}, "no port"},
		{"bad port", []string{"127.0.0.1", "http"}, "port"},
		{"too many args", []string{"a", "1", "b"}, "too many"},
		{"unknown flag", []string{"127.0.0.1", "1", "--nope"}, "nope"},
		{"bad threads", []string{"127.0.0.1", "1", "--threads", "0"}, "threads"},
		{"unknown pattern", []string{"127.0.0.1", "1", "--pattern", "barrel"}, "barrel"},
		{"bad mix", []string{"127.0.0.1", "1", "--pattern-mix", "weave:0"}, "weight"},
		{"negative duration", []string{"127.0.0.1", "1", "--duration", "-1"}, "duration"},
		{"negative test busy", []string{"127.0.0.1", "1", "--test-busy-us", "-1"}, "--test-busy-us"},
		{"ramp longer than run", []string{"127.0.0.1", "1", "--clients", "100", "--ramp-ms", "100", "--duration", "5"}, "ramp"},
		{"bad progress", []string{"127.0.0.1", "1", "--progress", "loud"}, "progress"},
		{"bad shard", []string{"127.0.0.1", "1", "--shard", "4/4"}, "shard"},
		{"more shards than clients", []string{"127.0.0.1", "1", "--clients", "2", "--shard", "0/3"}, "none"},
		{"bad start-at", []string{"127.0.0.1", "1", "--start-at", "tomorrow"}, "RFC 3339"},
		{"start-at too far", []string{"127.0.0.1", "1", "--start-at", "2999-01-01T00:00:00Z"}, "ahead"},
		// A transport this build cannot speak is refused, never replaced.
		{"unknown transport", []string{"127.0.0.1", "1", "--transport", "gns", "--duration", "1"}, `transport "gns" is not available`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env, out, errb := testEnv(nil)
			code := Run(context.Background(), env, append([]string{"swarm"}, tc.args...))
			if code != int(exitcode.Usage) {
				t.Errorf("exit %d, want %d (stderr %q)", code, exitcode.Usage, errb)
			}
			if !strings.Contains(errb.String(), tc.want) {
				t.Errorf("stderr %q does not mention %q", errb, tc.want)
			}
			if strings.Contains(out.String(), "admitted") {
				t.Errorf("a refused command line ran the swarm: %s", out)
			}
		})
	}
}

// TestSwarmHelpListsAsserts: the swarm's help (on stdout, see
// TestHelpExitsZeroQuietly) documents the assert flags.
func TestSwarmHelpListsAsserts(t *testing.T) {
	env, out, _ := testEnv(nil)
	if code := Run(context.Background(), env, []string{"swarm", "--help"}); code != 0 {
		t.Errorf("--help exit %d", code)
	}
	if !strings.Contains(out.String(), "assert-max-rss-slope-kb-per-min") {
		t.Errorf("help lacks the asserts: %s", out)
	}
}

// TestSwarmOutcomeIsTheLoadRule: the swarm's exit status reads the gate's
// own "load happened" rule, so a run whose clients were admitted but
// received no snapshot exits 1 (it once exited 0 while its report said
// passed: false), as do a run that admitted nobody and one that lost
// clients; an aborted run is interrupted; a failed assert is 1.
func TestSwarmOutcomeIsTheLoadRule(t *testing.T) {
	healthy := func() *report.Report {
		return &report.Report{Clients: 4, ClientsConnected: 4, SnapshotsReceived: 400}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*report.Report)
		failed int
		want   exitcode.Code
		msg    string
	}{
		{"healthy", nil, 0, exitcode.OK, ""},
		{"no snapshots", func(r *report.Report) { r.SnapshotsReceived = 0 }, 0, exitcode.GateFailed, "no client received a snapshot"},
		{"nobody admitted", func(r *report.Report) { r.ClientsConnected = 0 }, 0, exitcode.GateFailed, "no client was admitted"},
		{"clients lost", func(r *report.Report) { r.ClientsDisconnected = 1 }, 0, exitcode.GateFailed, "1 of 4 admitted clients lost mid-run"},
		{"assert failed", nil, 1, exitcode.GateFailed, ""},
		{"aborted", func(r *report.Report) { r.Aborted = "interrupted" }, 0, exitcode.Interrupted, "interrupted"},
	} {
		r := healthy()
		if tc.mutate != nil {
			tc.mutate(r)
		}
		err := swarmOutcome(&swarm.Result{Report: r}, tc.failed)
		if got := exitcode.Of(err); got != tc.want {
			t.Errorf("%s: exit %d (%v), want %d", tc.name, got, err, tc.want)
		}
		if tc.msg != "" && (err == nil || !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%s: error %v lacks %q", tc.name, err, tc.msg)
		}
	}
}
