package cli

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// syncBuffer is a bytes.Buffer safe for the server goroutine to write while
// the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func serveEnv() (*Env, *syncBuffer, *syncBuffer) {
	out, errb := &syncBuffer{}, &syncBuffer{}
	return &Env{Stdout: out, Stderr: errb, Getenv: func(string) string { return "" }}, out, errb
}

func TestServeExitCodes(t *testing.T) {
	dir := t.TempDir()
	badCfg := filepath.Join(dir, "bad.toml")
	os.WriteFile(badCfg, []byte("[server]\nmax_peers = 5000\n"), 0o644)
	unknownKey := filepath.Join(dir, "unknown.toml")
	os.WriteFile(unknownKey, []byte("[world]\nai_count = 5\n"), 0o644)

	busy, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := strconv.Itoa(busy.LocalAddr().(*net.UDPAddr).Port)

	cases := []struct {
		name string
		args []string
		code exitcode.Code
		msg  string
	}{
		{"out of range", []string{"--config", badCfg}, exitcode.InvalidProfile, "server.max_peers"},
		{"unknown key", []string{"--config", unknownKey}, exitcode.InvalidProfile, "world.ai_count"},
		{"flag out of range", []string{"--sim-worker-threads", "-3"}, exitcode.InvalidProfile, "world.sim_worker_threads"},
		{"missing file", []string{"--config", filepath.Join(dir, "none.toml")}, exitcode.InvalidProfile, "none.toml"},
		{"unknown transport", []string{"--transport", "carrier-pigeon", "--port", "0"}, exitcode.Usage, "carrier-pigeon"},
		{"port in use", []string{"--port", busyPort}, exitcode.LaunchFailure, busyPort},
		{"metrics directory missing", []string{"--port", "0", "--metrics-json", filepath.Join(dir, "none", "m.json")}, exitcode.LaunchFailure, "none/m.json ([metrics] tick_json_path / --metrics-json) cannot be written"},
		{"metrics directory is a file", []string{"--port", "0", "--metrics-json", filepath.Join(badCfg, "m.json")}, exitcode.LaunchFailure, "bad.toml/m.json"},
		{"metrics path is a directory", []string{"--port", "0", "--metrics-json", dir}, exitcode.LaunchFailure, "it is a directory"},
		{"bad flag", []string{"--nope"}, exitcode.Usage, "nope"},
		{"stray argument", []string{"extra"}, exitcode.Usage, "extra"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, out, errb := serveEnv()
			code := Run(context.Background(), env, append([]string{"serve"}, c.args...))
			if code != int(c.code) || !strings.Contains(errb.String(), c.msg) {
				t.Fatalf("exit %d (want %d), stderr %q (want it to name %q)", code, c.code, errb.String(), c.msg)
			}
			// A server that fails never claims to listen first.
			if out.String() != "" {
				t.Errorf("stdout %q: a failing serve must print nothing", out.String())
			}
		})
	}
}

func TestServeRunsAndShutsDownCleanly(t *testing.T) {
	metrics := filepath.Join(t.TempDir(), "m.json")
	env, out, errb := serveEnv()
	serve := serveTask(t, env, "--port", "0", "--transport", "enet", "--metrics-json", metrics, "--sim-worker-threads", "2")
	livetest.Eventually(t, livetest.Wait, func() (bool, string) {
		return strings.Contains(out.String(), "\n"), fmt.Sprintf("no listening line; stderr %q", errb.String())
	})
	line := out.String()
	if !strings.HasPrefix(line, "scalegate serve: listening on 127.0.0.1:") || !strings.HasSuffix(line, " transport=enet\n") {
		t.Fatalf("listening line %q", line)
	}
	// The metrics file exists and parses as soon as the line is printed.
	if _, _, err := report.ReadServerTick(metrics); err != nil {
		t.Fatalf("metrics not ready at bind: %v", err)
	}
	if err := serve.Stop(); err != nil {
		t.Fatalf("%v, stderr %q", err, errb.String())
	}
	st, _, err := report.ReadServerTick(metrics)
	if err != nil || st.SimWorkerThreads != 2 || st.Transport != "enet" {
		t.Fatalf("final metrics %+v %v", st, err)
	}
}
