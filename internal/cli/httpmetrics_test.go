package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// waitOutput waits (at most livetest.Wait) for out to match re and returns
// the match: the event, not a sleep, is awaited.
func waitOutput(t *testing.T, out *syncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	var m []string
	livetest.Eventually(t, livetest.Wait, func() (bool, string) {
		m = re.FindStringSubmatch(out.String())
		return m != nil, fmt.Sprintf("no %q yet in:\n%s", re, out)
	})
	return m
}

// serveTask runs `scalegate serve ARGS` in-process on a goroutine the test
// owns; stopping it (Stop, or the test's end) is SIGINT's cancellation, and
// any exit code but 0 is its error.
func serveTask(t *testing.T, env *Env, args ...string) *livetest.Task {
	t.Helper()
	return livetest.Go(t, "scalegate serve", func(ctx context.Context) error {
		if code := Run(ctx, env, append([]string{"serve"}, args...)); code != 0 {
			return fmt.Errorf("exit %d", code)
		}
		return nil
	})
}

// TestShardsAgainstHTTPMetrics: a server whose metrics document is
// reachable only over HTTP (no metrics file), two swarm shards sampling
// that URL on a shared start instant, their merge, and the gate on the
// merged report (--report, nothing launched) — all on loopback. The
// server-side gates pass on figures that came over HTTP.
func TestShardsAgainstHTTPMetrics(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "server.toml")
	writeFile(t, cfg, "[server]\nmax_peers = 16\n[security]\nmax_connections_per_ip = 16\n[metrics]\nhttp_listen = \"127.0.0.1:0\"\ntick_json_interval_ms = 100\n")
	srvOut := &syncBuffer{}
	serveTask(t, &Env{Stdout: srvOut, Stderr: &syncBuffer{}, Getenv: func(string) string { return "" }}, "--config", cfg, "--port", "0")
	port := waitOutput(t, srvOut, regexp.MustCompile(`listening on 127\.0\.0\.1:(\d+)`))[1]
	url := waitOutput(t, srvOut, regexp.MustCompile(`metrics at (http://127\.0\.0\.1:\d+/metrics)`))[1]

	at := time.Now().Add(time.Second).UTC().Format(time.RFC3339Nano)
	var wg sync.WaitGroup
	codes := make([]int, 2)
	outs := make([]*syncBuffer, 2)
	for i := range 2 {
		outs[i] = &syncBuffer{}
		wg.Go(func() {
			env := &Env{Stdout: outs[i], Stderr: outs[i], Getenv: func(string) string { return "" }}
			codes[i] = Run(context.Background(), env, []string{"swarm", "127.0.0.1", port, "--clients", "4", "--duration", "8",
				"--shard", []string{"0/2", "1/2"}[i], "--start-at", at, "--server-metrics", url, "--progress", "off",
				"--json", filepath.Join(dir, []string{"s0.json", "s1.json"}[i])})
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != 0 {
			t.Fatalf("shard %d exited %d:\n%s", i, c, outs[i])
		}
	}
	merged := filepath.Join(dir, "merged.json")
	env, out, errb := testEnv(nil)
	if code := Run(context.Background(), env, []string{"merge", "--out", merged, filepath.Join(dir, "s0.json"), filepath.Join(dir, "s1.json")}); code != 0 {
		t.Fatalf("merge exited %d: %s %s", code, out, errb)
	}
	m, err := report.ReadReport(merged)
	if err != nil {
		t.Fatal(err)
	}
	if m.ServerMetricsPath != url || m.ServerMetricsError != "" || len(m.ServerTick) == 0 || m.ClientsConnected != 4 || !m.Shards.Complete {
		t.Fatalf("merged: metrics %q err %q tick %d bytes, connected %d, shards %+v", m.ServerMetricsPath, m.ServerMetricsError, len(m.ServerTick), m.ClientsConnected, m.Shards)
	}

	profiles := filepath.Join(dir, "p")
	if err := os.Mkdir(profiles, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(profiles, "remote.cue"), `name: "remote"
description: "4 clients in 2 shards against a server reached over the network"
transport: "enet"
clients: 4
shards: 2
duration_s: 8
patterns: ["weave"]
baselined: false
// Tests share a loaded 2-core machine (and this one may run under the race
// detector, in-process with its own swarm shards): a generous harness
// bound keeps the leg judged on the gates under test (inconclusive.txtar
// tests the bound itself).
harness: {service_interval_p99_max_periods: 15, service_interval_mean_max_pct: 50}
gates: {
	admission: {}
	wire_kbs_max: threshold: 150
	tick_ms_p99_max: {threshold: 16.6, level: "advisory"}
}
`)
	run := filepath.Join(dir, "run")
	env, out, errb = testEnv(nil)
	code := Run(context.Background(), env, []string{"--profiles", profiles, "--profile", "remote", "--report", merged, "--out", run})
	if code != 0 {
		t.Fatalf("gate --report exited %d:\n%s\n%s", code, out, errb)
	}
	var sum struct {
		Legs []struct {
			Shards int
			Checks []struct{ Gate, Status string }
		}
	}
	b, err := os.ReadFile(filepath.Join(run, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range sum.Legs[0].Checks {
		got[c.Gate] = c.Status
	}
	for _, g := range []string{"transport", "load", "shards", "admission", "wire_kbs_max"} {
		if got[g] != "pass" {
			t.Errorf("check %s: %q, want pass (all: %v)", g, got[g], got)
		}
	}
	if sum.Legs[0].Shards != 2 || !strings.Contains(out.String(), "2 swarm shards") {
		t.Errorf("summary shards %d; stdout:\n%s", sum.Legs[0].Shards, out)
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
