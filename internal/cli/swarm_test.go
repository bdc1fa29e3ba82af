package cli

import (
	"bytes"
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/swarm"
	"github.com/scalegate/scalegate/internal/load/swarmcli"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

// swarmEnv is env as the swarm command line sees it.
func swarmEnv(env *Env) *swarmcli.Env {
	return &swarmcli.Env{Stdout: env.Stdout, Stderr: env.Stderr, Getenv: env.Getenv}
}

func testEnv(vars map[string]string) (*Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &Env{Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return vars[k] }}, &out, &errb
}

func TestParseSwarmArgs(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(t *testing.T, f *swarmcli.Flags)
	}{
		{"defaults", nil, []string{"127.0.0.1", "7777"}, func(t *testing.T, f *swarmcli.Flags) {
			c := f.Cfg
			if c.Addr != "127.0.0.1:7777" || c.Clients != 32 || c.Duration != 30*time.Second || c.RateHz != 60 ||
				c.Transport != "enet" || c.Ramp != 20*time.Millisecond || c.RSSSampleInterval != 30*time.Second ||
				c.Threads != swarm.AutoThreads(32) || c.Mix.String() != "weave" || c.Timeout != 5*time.Second || c.TestBusy != 0 {
				t.Errorf("defaults: %+v", c)
			}
			if len(f.Asserts) != 0 {
				t.Errorf("asserts not all off by default: %+v", f.Asserts)
			}
		}},
		{"env host and port", map[string]string{"SCALEGATE_HOST": "127.0.0.2", "SCALEGATE_PORT": "4778"}, nil, func(t *testing.T, f *swarmcli.Flags) {
			if f.Cfg.Addr != "127.0.0.2:4778" {
				t.Errorf("addr %q", f.Cfg.Addr)
			}
		}},
		{"positionals override env", map[string]string{"SCALEGATE_PORT": "4778"}, []string{"localhost", "9000"}, func(t *testing.T, f *swarmcli.Flags) {
			if f.Cfg.Addr != "localhost:9000" {
				t.Errorf("addr %q", f.Cfg.Addr)
			}
		}},
		{"options around positionals", nil, []string{"--timeout-s", "2", "127.0.0.1", "5000", "--clients", "4"}, func(t *testing.T, f *swarmcli.Flags) {
			if f.Cfg.Addr != "127.0.0.1:5000" || f.Cfg.Clients != 4 || f.Cfg.Timeout != 2*time.Second {
				t.Errorf("cfg %+v", f.Cfg)
			}
		}},
		{"positionals after options", nil, []string{"--clients", "128", "127.0.0.1", "5000"}, func(t *testing.T, f *swarmcli.Flags) {
			if f.Cfg.Addr != "127.0.0.1:5000" || f.Cfg.Clients != 128 || f.Cfg.Threads != swarm.AutoThreads(128) {
				t.Errorf("cfg %+v", f.Cfg)
			}
		}},
		{"every option", nil, []string{"127.0.0.1", "1", "--clients", "10", "--duration", "2.5", "--rate", "30", "--ramp-ms", "5",
			"--threads", "3", "--pattern", "idle", "--pattern-mix", "weave:80,aggressive:20", "--json", "r.json",
			"--server-metrics", "m.json", "--rss-sample-interval-s", "2", "--entity-type", "builtin:sensor-fighter", "--test-busy-us", "250.5",
			"--assert-min-tick-hz", "58", "--assert-max-kbs", "150", "--assert-max-tick-ms", "16.6", "--assert-min-entities", "10",
			"--assert-max-rss-growth-kb", "0", "--assert-max-rss-slope-kb-per-min", "128", "--assert-max-load-factor", "0.99",
			"--assert-max-dropped-ticks", "100", "--assert-max-wire-kbs", "150", "--assert-congestion-engaged-hz", "30",
			"--assert-congestion-recovered-hz", "55", "--assert-no-refused"}, func(t *testing.T, f *swarmcli.Flags) {
			c := f.Cfg
			if c.Clients != 10 || c.Duration != 2500*time.Millisecond || c.RateHz != 30 || c.Ramp != 5*time.Millisecond ||
				c.Threads != 3 || c.Mix.String() != "weave:80,aggressive:20" || f.JSONPath != "r.json" ||
				c.ServerMetrics != "m.json" || c.RSSSampleInterval != 2*time.Second || c.EntityType != "builtin:sensor-fighter" ||
				c.TestBusy != 250500*time.Nanosecond {
				t.Errorf("cfg %+v", c)
			}
			want := swarm.Asserts{"tick_hz_min": 58, "kbs_max": 150, "tick_ms_p99_max": 16.6, "entities_min": 10, "rss_growth_kb_max": 0,
				"rss_slope_kb_per_min_max": 128, "load_factor_max": 0.99, "dropped_ticks_max": 100, "wire_kbs_max": 150,
				"congestion_engaged_hz": 30, "congestion_recovered_hz": 55, "admission": 0}
			if !maps.Equal(f.Asserts, want) {
				t.Errorf("asserts %+v, want %+v", f.Asserts, want)
			}
		}},
		{"shard and start-at", nil, []string{"127.0.0.1", "7777", "--clients", "130", "--shard", "3/4", "--start-at", "2026-12-01T10:00:00Z", "--ramp-ms", "1"}, func(t *testing.T, f *swarmcli.Flags) {
			c := f.Cfg
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
			f, err := swarmcli.Scalegate.Parse(swarmEnv(env), tc.args)
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
