package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/report"
)

// waitOutput polls out for re (bounded: the event, not a sleep, is awaited).
func waitOutput(t *testing.T, out *syncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m
		}
	}
	t.Fatalf("no %q within 30 s in:\n%s", re, out)
	return nil
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
	ctx, cancel := context.WithCancel(context.Background())
	srvOut := &syncBuffer{}
	srvDone := make(chan int, 1)
	go func() {
		env := &Env{Stdout: srvOut, Stderr: &syncBuffer{}, Getenv: func(string) string { return "" }}
		srvDone <- Run(ctx, env, []string{"serve", "--config", cfg, "--port", "0"})
	}()
	defer func() {
		cancel()
		if code := <-srvDone; code != 0 {
			t.Errorf("serve exited %d:\n%s", code, srvOut)
		}
	}()
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
