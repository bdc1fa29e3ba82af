package cli

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reference/admin"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// adminCmd runs `scalegate admin ARGS...` in-process.
func adminCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	env, out, errb := serveEnv()
	code = Run(context.Background(), env, append([]string{"admin"}, args...))
	return code, out.String(), errb.String()
}

func overloadConfig(governor bool, sock, metrics string) string {
	return "[server]\nport = 0\n[world]\nsim_worker_threads = 1\noverrun_governor = " + map[bool]string{true: "true", false: "false"}[governor] +
		"\n[metrics]\ntick_json_path = \"" + metrics + "\"\ntick_json_interval_ms = 100\n[admin]\nsocket = \"" + sock + "\"\n" +
		// 20 ms of work on a 16.7 ms period: the governor sheds as soon as
		// it may.
		"[faults]\nextra_tick_ms = 20\n"
}

// The governor switch flips live through reload on an overloaded server:
// off, no [DEGRADED]; reloaded on, the governor sheds and status says
// [DEGRADED]; reloaded off, every lever is released at once. Exit codes:
// a refused command 1, usage 2, a dead socket 5.
func TestAdminReloadFlipsGovernorLive(t *testing.T) {
	dir := t.TempDir()
	cfg, sock, metrics := filepath.Join(dir, "s.toml"), filepath.Join(dir, "admin.sock"), filepath.Join(dir, "m.json")
	write := func(gov bool) {
		if err := os.WriteFile(cfg, []byte(overloadConfig(gov, sock, metrics)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(false)
	env, out, errb := serveEnv()
	serve := serveTask(t, env, "--config", cfg)
	// Ready when serve says it listens (Listen has bound and is listening on
	// the admin socket too). The socket file alone is not the event: it
	// appears at bind, a moment before the listen that accepts connections.
	waitOutput(t, out, regexp.MustCompile(`scalegate serve: listening on `))

	status := func() string {
		t.Helper()
		code, out, stderr := adminCmd(t, sock, "status")
		if code != 0 {
			t.Fatalf("status: exit %d, %s", code, stderr)
		}
		return out
	}
	if s := status(); !strings.Contains(s, "governor off") || strings.Contains(s, "DEGRADED") {
		t.Fatalf("governor off: status %q", s)
	}
	write(true)
	if code, out, stderr := adminCmd(t, sock, "reload"); code != 0 || !strings.Contains(out, "applied world.overrun_governor: false -> true") {
		t.Fatalf("reload on: exit %d, %q %q", code, out, stderr)
	}
	livetest.Eventually(t, livetest.Wait, func() (bool, string) {
		s := status()
		return strings.Contains(s, "governor on [DEGRADED]"), fmt.Sprintf("status %q, waiting for \"governor on [DEGRADED]\"", s)
	})
	write(false)
	if code, out, _ := adminCmd(t, sock, "reload"); code != 0 || !strings.Contains(out, "applied world.overrun_governor: true -> false") {
		t.Fatalf("reload off: exit %d, %q", code, out)
	}
	if s := status(); !strings.Contains(s, "load_factor 1.00 governor off") || strings.Contains(s, "DEGRADED") {
		t.Fatalf("governor reloaded off: status %q", s)
	}

	for _, c := range []struct {
		args []string
		code exitcode.Code
		msg  string
	}{
		{[]string{sock, "frobnicate"}, exitcode.GateFailed, `unknown command "frobnicate"`},
		{[]string{sock}, exitcode.Usage, "need SOCKET and COMMAND"},
		{[]string{sock, "status\nreload"}, exitcode.Usage, "one line"},
		{[]string{filepath.Join(dir, "nobody.sock"), "status"}, exitcode.LaunchFailure, "no server answers on admin socket"},
	} {
		if code, _, stderr := adminCmd(t, c.args...); code != int(c.code) || !strings.Contains(stderr, c.msg) {
			t.Errorf("admin %q: exit %d (want %d), stderr %q (want %q)", c.args, code, c.code, stderr, c.msg)
		}
	}

	if err := serve.Stop(); err != nil {
		t.Fatalf("%v, stderr %q", err, errb.String())
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Fatalf("socket file left after shutdown: %v", err)
	}
	st, _, err := report.ReadServerTick(metrics)
	if err != nil {
		t.Fatal(err)
	}
	if st.OverrunGovernor || st.LoadFactorMin >= 1 {
		t.Fatalf("final metrics: governor %v, load_factor_min %v; want off now, shed during the run", st.OverrunGovernor, st.LoadFactorMin)
	}
}

// TestAdminExitCodeBehindSilentConnections: behind 64 silent connections
// the server gives no answer within the deadline: exit 5 ("no server
// answers": the server's state), not 6 (scalegate's own fault); SIGINT
// while waiting is 130.
func TestAdminExitCodeBehindSilentConnections(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "admin.sock")
	srv, err := admin.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv.Serve(func(admin.Command) []string { return []string{"ok"} })
	t.Cleanup(func() { srv.Close() })
	for range 64 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	env, _, errb := serveEnv()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if code := Run(ctx, env, []string{"admin", sock, "status"}); code != int(exitcode.LaunchFailure) || !strings.Contains(errb.String(), "took the connection but gave no answer") {
		t.Fatalf("exit %d, stderr %q; want 5 naming the silence", code, errb.String())
	}
	env, _, errb = serveEnv()
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	if code := Run(ctx, env, []string{"admin", sock, "status"}); code != int(exitcode.Interrupted) {
		t.Fatalf("interrupted: exit %d, stderr %q; want 130", code, errb.String())
	}
}

// TestAdminTraceStartDirWithSpaces: the words after trace-start are one
// directory (spaces included), made absolute here; the server receives it
// whole (the rest of the line) instead of refusing a usage error.
func TestAdminTraceStartDirWithSpaces(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "admin.sock")
	srv, err := admin.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan admin.Command, 2)
	srv.Serve(func(c admin.Command) []string { got <- c; return []string{"recording"} })
	t.Cleanup(func() { srv.Close() })
	wd, _ := os.Getwd()
	for _, args := range [][]string{{"trace-start", "my traces"}, {"trace-start", "my", "traces"}} {
		code, _, stderr := adminCmd(t, append([]string{sock}, args...)...)
		if code != 0 {
			t.Fatalf("%q: exit %d: %s", args, code, stderr)
		}
		c := <-got
		if want := filepath.Join(wd, "my traces"); c.Name != "trace-start" || len(c.Args) != 1 || c.Args[0] != want {
			t.Errorf("%q: the server got %+v, want trace-start %q", args, c, want)
		}
	}
}
