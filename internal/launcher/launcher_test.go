package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"
)

// alive reports whether pid exists (and is not a zombie we reaped).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// Field 3 is the state; Z = zombie (dead, waiting for its parent).
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// startShell starts sh -c script with a log in a temp dir and returns the
// process and the dir.
func startShell(t *testing.T, ctx context.Context, script string, grace time.Duration) (*Process, string) {
	t.Helper()
	dir := t.TempDir()
	p, err := Start(ctx, Spec{Name: "sh", Path: "/bin/sh", Args: []string{"-c", script}, LogPath: filepath.Join(dir, "log"), Grace: grace})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, dir
}

// waitFile waits (bounded) for path to hold a pid.
func waitPid(t *testing.T, path string) int {
	t.Helper()
	for range 500 {
		b, err := os.ReadFile(path)
		if err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil {
				return pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

func TestStopKillsWholeGroupEvenWhenInterruptIgnored(t *testing.T) {
	// The leader ignores SIGINT and so does its background child: only the
	// SIGKILL stage can end them, and it must reach the grandchild too.
	script := `trap '' INT; (trap '' INT; sleep 300) & echo $! > "$0.child"; echo ready > "$0.ready"; while :; do sleep 1; done`
	dir := t.TempDir()
	marker := filepath.Join(dir, "m")
	p, err := Start(context.Background(), Spec{Name: "stubborn", Path: "/bin/sh", Args: []string{"-c", script, marker},
		LogPath: filepath.Join(dir, "log"), Grace: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	child := waitPid(t, marker+".child")
	p.Stop()
	if alive(p.Pid()) {
		t.Error("leader survived Stop")
	}
	for range 200 {
		if !alive(child) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if alive(child) {
		syscall.Kill(child, syscall.SIGKILL)
		t.Fatal("grandchild survived Stop: orphan")
	}
	if code := p.ExitCode(); code != -1 {
		t.Errorf("exit code %d, want -1 (killed)", code)
	}
}

func TestStopInterruptsFirst(t *testing.T) {
	// A process that exits cleanly on SIGINT must exit by itself (status 7),
	// not be killed.
	p, _ := startShell(t, context.Background(), `trap 'exit 7' INT; while :; do sleep 0.05; done`, 10*time.Second)
	time.Sleep(100 * time.Millisecond) // let the trap be installed; Stop is bounded regardless
	p.Stop()
	if code := p.ExitCode(); code != 7 {
		t.Errorf("exit code %d, want 7 (graceful)", code)
	}
}

func TestContextCancelStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p, _ := startShell(t, ctx, `sleep 300`, 100*time.Millisecond)
	cancel()
	select {
	case <-p.Done():
	case <-time.After(30 * time.Second):
		t.Fatal("process outlived its context")
	}
}

func TestLogCapturesBothStreams(t *testing.T) {
	p, dir := startShell(t, context.Background(), `echo out; echo err >&2; exit 3`, time.Second)
	<-p.Done()
	b, _ := os.ReadFile(filepath.Join(dir, "log"))
	if !strings.Contains(string(b), "out") || !strings.Contains(string(b), "err") || p.ExitCode() != 3 {
		t.Errorf("log %q exit %d", b, p.ExitCode())
	}
}

func TestWaitReady(t *testing.T) {
	t.Run("ready", func(t *testing.T) {
		dir := t.TempDir()
		ok := filepath.Join(dir, "ok")
		p, err := Start(context.Background(), Spec{Name: "s", Path: "/bin/sh",
			Args: []string{"-c", `sleep 0.2; echo x > "$0"; sleep 300`, ok}, LogPath: filepath.Join(dir, "log")})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Stop()
		ready := func() error { _, err := os.Stat(ok); return err }
		if err := WaitReady(context.Background(), p, ready, 30*time.Second, 20*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("exits first", func(t *testing.T) {
		p, _ := startShell(t, context.Background(), `exit 4`, time.Second)
		err := WaitReady(context.Background(), p, func() error { return errors.New("no metrics") }, 30*time.Second, 20*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "exited (status 4) before it was ready (no metrics)") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		p, _ := startShell(t, context.Background(), `sleep 300`, 100*time.Millisecond)
		err := WaitReady(context.Background(), p, func() error { return errors.New("no metrics") }, 100*time.Millisecond, 20*time.Millisecond)
		if err == nil || !strings.Contains(err.Error(), "not ready after") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestPortAllocatorDistinct(t *testing.T) {
	var a PortAllocator
	seen := map[int]bool{}
	for range 20 {
		p, err := a.Next()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] || p <= 0 {
			t.Fatalf("port %d repeated or invalid", p)
		}
		seen[p] = true
	}
}

func TestRenderConfig(t *testing.T) {
	v := ExpandAll(map[string]any{"server": map[string]any{"port": "{port}", "n": 3, "list": []any{"{metrics_json}"}}},
		map[string]string{"port": "4000", "metrics_json": "/m.json"})
	for _, f := range []string{"toml", "json", "yaml"} {
		b, err := RenderConfig(f, v)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		var back map[string]any
		switch f {
		case "toml":
			_, err = toml.Decode(string(b), &back)
		case "json":
			err = json.Unmarshal(b, &back)
		case "yaml":
			err = yaml.Unmarshal(b, &back)
		}
		if err != nil {
			t.Fatalf("%s does not parse back: %v\n%s", f, err, b)
		}
		s := back["server"].(map[string]any)
		if fmt.Sprint(s["port"]) != "4000" || fmt.Sprintf("%T", s["port"]) == "string" || s["list"].([]any)[0] != "/m.json" {
			t.Errorf("%s round trip: %v", f, back)
		}
	}
	if _, err := RenderConfig("ini", v); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestCommandLineQuoting(t *testing.T) {
	got := CommandLine("/bin/scalegate", []string{"swarm", "127.0.0.1", "--pattern-mix", "weave:80,idle:20", "a b", "it's"})
	want := `/bin/scalegate swarm 127.0.0.1 --pattern-mix weave:80,idle:20 'a b' 'it'\''s'`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
