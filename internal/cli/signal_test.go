package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// secondInterruptProfile runs a team's server through a wrapper that
// survives SIGINT (it records it in "$0.int" and keeps running), so after
// the first Ctrl-C the gate sits in a ten-minute grace.
const secondInterruptProfile = `name:        "stubborn"
description: "a custom server whose wrapper outlives SIGINT"
transport:   "enet"
clients:     4
duration_s:  120
patterns: ["weave"]
baselined: false
server: {
	kind: "custom"
	command: ["sh", "-c", "trap 'echo $$ > \"$0.int\"' INT; scalegate serve --config {config} --port {port} --metrics-json {metrics_json} & wait; while :; do sleep 1; done", "{metrics_json}"]
	config_format: "toml"
	config: {
		server: {max_peers: 16, transport: "enet"}
		security: {connect_rate_limit_count: 1000, connect_rate_limit_window_s: 1, max_connections_per_ip: 16}
		metrics: {tick_json_path: "{metrics_json}", tick_json_interval_ms: 250}
	}
}
gates: admission: {}
`

// TestSecondInterruptKillsAtOnce: the first SIGINT starts the staged stop,
// the second kills every process at once and the gate exits 130 — long
// before the grace would have run out. Each step waits on an event (a file
// appearing, the process exiting), bounded.
func TestSecondInterruptKillsAtOnce(t *testing.T) {
	exe, err := exec.LookPath("scalegate") // this test binary, put in $PATH by TestMain
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p", "stubborn.cue"), []byte(secondInterruptProfile), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	var stderr bytes.Buffer
	gate := exec.Command(exe, "--profiles", "p", "--profile", "stubborn", "--out", run, "--grace", "10m")
	gate.Dir, gate.Stderr = dir, &stderr
	if err := gate.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	go func() { waitErr = gate.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			gate.Process.Kill() // its guardians then kill the rest
			<-exited
		}
	}()

	waitFor(t, filepath.Join(run, "weave", "swarm.log"), exited)
	if err := gate.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// The wrapper got the staged stop's SIGINT and ignored it: the gate is
	// in its grace period now.
	waitFor(t, filepath.Join(run, "weave", "server_metrics.json.int"), exited)
	if err := gate.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if perr := livetest.Poll(context.Background(), 2*livetest.Wait, nil, livetest.Closed("the gate's exit", exited)); perr != nil {
		t.Fatalf("still running after the second SIGINT (grace 10m): it was swallowed (%v)\n%s", perr, stderr.String())
	}
	err = waitErr
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, stderr.String())
	}
	for _, want := range []string{"interrupt again to kill it now", "interrupted again: killing every process", "interrupted (exit 130: interrupted)"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	if left := processesMentioning(run); len(left) > 0 {
		for _, p := range left {
			var pid int
			if _, err := fmt.Sscan(p, &pid); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		t.Fatalf("left behind after the gate exited: %v", left)
	}
	t.Logf("gate stderr:\n%s", stderr.String())
	sum, err := os.ReadFile(filepath.Join(run, "summary.json"))
	if err != nil || !bytes.Contains(sum, []byte(`"interrupted": true`)) {
		t.Errorf("summary.json not marked interrupted (%v)", err)
	}
}

// waitFor waits (at most twice livetest.Wait: a whole gate leg starts
// first) for path to exist; the gate exiting first fails at once.
func waitFor(t *testing.T, path string, exited <-chan struct{}) {
	t.Helper()
	livetest.Eventually(t, 2*livetest.Wait, func() (bool, string) {
		if _, err := os.Stat(path); err == nil {
			return true, ""
		}
		if ok, _ := livetest.Closed("", exited)(); ok {
			t.Fatalf("gate exited before %s appeared", path)
		}
		return false, path + " has not appeared"
	})
}
