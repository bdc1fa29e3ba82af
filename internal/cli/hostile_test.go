package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/guard/boundedfile/boundedfiletest"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// hangLimit bounds a command that must not block at all: far above what a
// refusal takes (the in-process acceptance tests hold each reader to 2 s),
// low enough that a hang fails the test instead of the suite's timeout.
const hangLimit = 30 * time.Second

// sigintWithin is how long a command may take to exit after SIGINT.
const sigintWithin = 2 * time.Second

// scalegateBin is this test binary installed as "scalegate" (TestMain).
func scalegateBin(t *testing.T) string {
	t.Helper()
	exe, err := exec.LookPath("scalegate")
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// started is a scalegate process started by the test.
type started struct {
	cmd    *exec.Cmd
	stdout syncBuffer // written by exec's copying goroutines while read here
	stderr syncBuffer
	done   chan struct{}
	err    error
}

func start(t *testing.T, dir string, args ...string) *started {
	t.Helper()
	p := &started{cmd: exec.Command(scalegateBin(t), args...), done: make(chan struct{})}
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait waits up to limit for the process and returns its exit code.
func (p *started) wait(t *testing.T, limit time.Duration, what string) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(limit):
		t.Fatalf("%s: still running after %v\nstderr: %s", what, limit, p.stderr.String())
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		t.Fatal(p.err)
	}
	return 0
}

// TestCommandsRefuseHostileFiles: a /dev/zero symlink, a FIFO and a 300 MB
// file given as a trace, a config and a report are refused by the commands
// that read them, with an error naming the file and the reason, instead of
// hanging (a FIFO), growing without bound (/dev/zero) or reading it whole.
func TestCommandsRefuseHostileFiles(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, base string
		args       func(path string) []string
		code       int
	}{
		{"trace inspect", "s.flit", func(p string) []string { return []string{"trace", "inspect", p} }, 4},
		{"swarm trace pattern", "s.flit", func(p string) []string {
			return []string{"swarm", "127.0.0.1", "9", "--pattern", "trace:" + p, "--duration", "1"}
		}, 4},
		{"serve --config", "server.toml", func(p string) []string { return []string{"serve", "--config", p, "--port", "0"} }, 4},
		{"merge", "report.json", func(p string) []string {
			return []string{"merge", "--out", filepath.Join(dir, "merged.json"), p}
		}, 2},
	} {
		sub := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_"))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, c := range boundedfiletest.Files(t, sub, tc.base) {
			t.Run(tc.name+"/"+c.Name, func(t *testing.T) {
				began := time.Now()
				p := start(t, dir, tc.args(c.Path)...)
				code := p.wait(t, hangLimit, tc.name)
				t.Logf("exit %d after %v: %s", code, time.Since(began).Round(time.Millisecond), strings.TrimSpace(p.stderr.String()))
				if code != tc.code || !strings.Contains(p.stderr.String(), c.Path) || !strings.Contains(p.stderr.String(), c.Want) {
					t.Fatalf("exit %d, stderr %q; want exit %d naming %s and saying %q", code, p.stderr.String(), tc.code, c.Path, c.Want)
				}
			})
		}
	}
}

// TestSIGINTEndsCommandsFacingAFIFO: commands that keep running while a
// file they read is a FIFO (the swarm sampling a metrics path, a server
// whose config was replaced and is reloaded) still end within 2 s of
// SIGINT. Before, the FIFO's open blocked them, and SIGINT was ignored.
func TestSIGINTEndsCommandsFacingAFIFO(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "metrics.fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Run("swarm --server-metrics FIFO", func(t *testing.T) {
		srvDir := t.TempDir()
		srv := start(t, srvDir, "serve", "--port", "0", "--metrics-json", filepath.Join(srvDir, "m.json"))
		addr := waitListening(t, srv)
		sw := start(t, dir, "swarm", "127.0.0.1", addr, "--clients", "2", "--duration", "600", "--server-metrics", fifo,
			"--progress", "plain", "--json", filepath.Join(dir, "report.json"))
		waitLine(t, sw, &sw.stderr, "connected [1-9]")
		sigint(t, sw, "swarm")
		b, err := os.ReadFile(filepath.Join(dir, "report.json"))
		if err != nil || !bytes.Contains(b, []byte("is a named pipe (FIFO), not a regular file")) {
			t.Fatalf("report: %v; want server_metrics_error naming the FIFO:\n%s", err, b)
		}
		sigint(t, srv, "serve")
	})
	t.Run("serve reloading a FIFO config", func(t *testing.T) {
		cfg, sock := filepath.Join(dir, "server.toml"), filepath.Join(dir, "admin.sock")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[server]\nport = 0\n[admin]\nsocket = %q\n", sock)), 0o644); err != nil {
			t.Fatal(err)
		}
		srv := start(t, dir, "serve", "--config", cfg)
		waitListening(t, srv)
		os.Remove(cfg)
		if err := syscall.Mkfifo(cfg, 0o644); err != nil {
			t.Fatal(err)
		}
		for i := range 8 {
			a := start(t, dir, "admin", sock, "reload")
			if code := a.wait(t, hangLimit, "admin reload"); code != 1 || !strings.Contains(a.stderr.String(), "named pipe (FIFO)") {
				t.Fatalf("reload %d: exit %d, stderr %q; want 1 naming the FIFO", i, code, a.stderr.String())
			}
		}
		sigint(t, srv, "serve")
	})
}

// sigint sends SIGINT and requires the process to exit within sigintWithin.
func sigint(t *testing.T, p *started, what string) {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	p.wait(t, hangLimit, what)
	if took := time.Since(began); took > sigintWithin {
		t.Fatalf("%s took %v to exit after SIGINT, want ≤ %v", what, took, sigintWithin)
	} else {
		t.Logf("%s exited %v after SIGINT", what, took.Round(time.Millisecond))
	}
}

// waitListening waits for serve's "listening on" line and returns its port.
func waitListening(t *testing.T, p *started) string {
	t.Helper()
	line := waitLine(t, p, &p.stdout, `listening on 127\.0\.0\.1:[0-9]+`)
	_, port, _ := strings.Cut(strings.Fields(line[strings.Index(line, "listening on"):])[2], ":")
	return port
}

// waitLine waits (bounded) for a line of buf matching re and returns it.
func waitLine(t *testing.T, p *started, buf *syncBuffer, re string) string {
	t.Helper()
	var line string
	var exited bool
	livetest.Eventually(t, 60*time.Second, func() (bool, string) {
		for _, l := range strings.Split(buf.String(), "\n") {
			if ok, _ := regexp.MatchString(re, l); ok {
				line = l
				return true, ""
			}
		}
		select {
		case <-p.done:
			exited = true // stop polling: reported below
			return true, ""
		default:
		}
		return false, fmt.Sprintf("no line matching %q: %s %s", re, p.stdout.String(), p.stderr.String())
	})
	if exited {
		t.Fatalf("exited before printing %q: %s %s", re, p.stdout.String(), p.stderr.String())
	}
	return line
}
