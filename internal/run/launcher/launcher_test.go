package launcher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"go.yaml.in/yaml/v3"

	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// TestMain lets this test binary serve as the guardian executable, as the
// scalegate binary does in production.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == GuardianCommand {
		os.Exit(RunGuardian(os.Args[2:]))
	}
	if len(os.Args) > 1 && os.Args[1] == fakeGateCommand {
		os.Exit(fakeGate(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// self is this test binary, the guardian of every process the tests start.
func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

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
	p, err := Start(ctx, Spec{Name: "sh", Path: "/bin/sh", Args: []string{"-c", script}, LogPath: filepath.Join(dir, "log"), Grace: grace, Guardian: self(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p, dir
}

// waitPid waits (at most livetest.Wait, for a loaded machine) for path to
// hold a pid and a newline.
func waitPid(t *testing.T, path string) int {
	t.Helper()
	pid := 0
	livetest.Eventually(t, livetest.Wait, func() (bool, string) {
		b, err := os.ReadFile(path)
		if err != nil || !strings.HasSuffix(string(b), "\n") {
			return false, fmt.Sprintf("no pid line in %s (%q, %v)", path, b, err)
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil, fmt.Sprintf("%s: %v", path, err)
	})
	return pid
}

// goneWithin polls (the kernel tears down a SIGKILLed process
// asynchronously) until no pid is alive, for at most d: d is the
// assertion's own bound. It returns nil or why not.
func goneWithin(d time.Duration, pids ...int) error {
	return livetest.Poll(context.Background(), d, nil, func() (bool, string) {
		for _, pid := range pids {
			if alive(pid) {
				return false, fmt.Sprintf("pid %d alive", pid)
			}
		}
		return true, ""
	})
}

func TestStopKillsWholeGroupEvenWhenInterruptIgnored(t *testing.T) {
	// The leader ignores SIGINT and so does its background child: only the
	// SIGKILL stage can end them, and it must reach the grandchild too.
	for _, guarded := range []bool{false, true} {
		t.Run(fmt.Sprintf("guardian=%v", guarded), func(t *testing.T) {
			// The grandchild writes its own pid only after its trap is set
			// (an ignored signal stays ignored across exec), so waiting for
			// the pid waits for both traps: the leader set its own first.
			script := `trap '' INT; sh -c 'trap "" INT; echo $$ > "$0.child"; exec sleep 300' "$0" & while :; do sleep 1; done`
			dir := t.TempDir()
			marker := filepath.Join(dir, "m")
			spec := Spec{Name: "stubborn", Path: "/bin/sh", Args: []string{"-c", script, marker},
				LogPath: filepath.Join(dir, "log"), Grace: 200 * time.Millisecond}
			if guarded {
				spec.Guardian = self(t)
			}
			p, err := Start(context.Background(), spec)
			if err != nil {
				t.Fatal(err)
			}
			child := waitPid(t, marker+".child")
			p.Stop()
			if alive(p.Pid()) {
				t.Error("leader survived Stop")
			}
			waitGone(t, child)
			if code := p.ExitCode(); code != -1 {
				t.Errorf("exit code %d, want -1 (killed)", code)
			}
		})
	}
}

// waitGone fails unless pid is gone within 2 s; it kills a survivor.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if err := goneWithin(2*time.Second, pid); err != nil {
		syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("pid %d survived: orphan (%v)", pid, err)
	}
}

// daemonScript starts a descendant that leaves the process group and the
// session (setsid) and ignores SIGINT, writes its pid to "$0.daemon", then
// waits like a wrapper script: `bash -c "server …; echo done"`.
const daemonScript = `setsid sh -c 'trap "" INT; echo $$ > "$0.daemon"; exec sleep 300' "$0" & sleep 300; echo done`

func TestGuardianKillsDescendantsOutsideTheGroup(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "m")
	p, err := Start(context.Background(), Spec{Name: "wrapper", Path: "/bin/sh", Args: []string{"-c", daemonScript, marker},
		LogPath: filepath.Join(dir, "log"), Grace: 200 * time.Millisecond, Guardian: self(t)})
	if err != nil {
		t.Fatal(err)
	}
	daemon := waitPid(t, marker+".daemon")
	if _, pgid, _ := readStat(daemon); pgid == p.Pid() {
		t.Fatalf("daemon %d still in the launcher's group: the test proves nothing", daemon)
	}
	p.Stop()
	// Done means the guardian emptied its tree: no poll needed.
	if alive(daemon) {
		syscall.Kill(daemon, syscall.SIGKILL)
		t.Fatal("the setsid descendant survived Stop")
	}
}

// fakeGateCommand makes the test binary a stand-in for scalegate: it starts
// daemonScript under a guardian, says so, and waits to be killed.
const fakeGateCommand = "__fake_gate"

func fakeGate(args []string) int {
	marker, guardian := args[0], args[1]
	p, err := Start(context.Background(), Spec{Name: "wrapper", Path: "/bin/sh", Args: []string{"-c", daemonScript, marker},
		LogPath: marker + ".log", Guardian: guardian})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := os.WriteFile(marker+".guardian", []byte(strconv.Itoa(p.Pid())+"\n"), 0o644); err != nil {
		return 1
	}
	<-p.Done()
	return 0
}

func TestKill9OfTheParentLeavesNoDescendant(t *testing.T) {
	// The parent (a stand-in for scalegate) is SIGKILLed: it stops nothing.
	// Pdeathsig would reach only the wrapper; the guardian sees its
	// lifeline close and kills the wrapper, its child and the setsid
	// descendant.
	dir := t.TempDir()
	marker := filepath.Join(dir, "m")
	gate := exec.Command(self(t), fakeGateCommand, marker, self(t))
	if err := gate.Start(); err != nil {
		t.Fatal(err)
	}
	daemon := waitPid(t, marker+".daemon")
	leader := waitPid(t, marker+".guardian")
	if err := gate.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	gate.Wait()
	// Acceptance: nothing of the tree is left within 1 s.
	if err := goneWithin(time.Second, daemon, leader); err != nil {
		syscall.Kill(daemon, syscall.SIGKILL)
		syscall.Kill(-leader, syscall.SIGKILL)
		t.Fatalf("1 s after kill -9 of the parent: setsid descendant alive %v, process alive %v", alive(daemon), alive(leader))
	}
}

func TestKillSkipsTheGrace(t *testing.T) {
	// A process that ignores SIGINT with an hour of grace: closing Kill
	// (scalegate's second Ctrl-C) must end it at once.
	dir := t.TempDir()
	marker := filepath.Join(dir, "m")
	kill := make(chan struct{})
	script := `trap 'echo $$ > "$0.int"' INT; echo $$ > "$0.ready"; while :; do sleep 1; done`
	p, err := Start(context.Background(), Spec{Name: "stubborn", Path: "/bin/sh", Args: []string{"-c", script, marker},
		LogPath: filepath.Join(dir, "log"), Grace: time.Hour, Guardian: self(t), Kill: kill})
	if err != nil {
		t.Fatal(err)
	}
	waitPid(t, marker+".ready")
	stop := livetest.Go(t, "Stop", func(context.Context) error { p.Stop(); return nil })
	waitPid(t, marker+".int") // the SIGINT stage was reached and survived
	close(kill)
	livetest.Eventually(t, livetest.Wait, livetest.Closed("Kill cutting the hour of grace short", stop.Done()))
	if code := p.ExitCode(); code != -1 {
		t.Errorf("exit code %d, want -1 (killed)", code)
	}
}

func TestStopInterruptsFirst(t *testing.T) {
	// A process that exits cleanly on SIGINT must exit by itself (status 7),
	// not be killed.
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	p, err := Start(context.Background(), Spec{Name: "sh", Path: "/bin/sh", Args: []string{"-c", `trap 'exit 7' INT; echo $$ > "$0"; while :; do sleep 0.05; done`, ready},
		LogPath: filepath.Join(dir, "log"), Grace: 30 * time.Second, Guardian: self(t)})
	if err != nil {
		t.Fatal(err)
	}
	waitPid(t, ready) // the trap is installed
	p.Stop()
	if code := p.ExitCode(); code != 7 {
		t.Errorf("exit code %d, want 7 (graceful)", code)
	}
}

func TestContextCancelStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p, _ := startShell(t, ctx, `sleep 300`, 100*time.Millisecond)
	cancel()
	livetest.Eventually(t, livetest.Wait, livetest.Closed("the process ending with its context", p.Done()))
}

func TestLogCapturesBothStreams(t *testing.T) {
	p, dir := startShell(t, context.Background(), `echo out; echo err >&2; exit 3`, time.Second)
	livetest.Eventually(t, livetest.Wait, livetest.Closed("the shell's exit", p.Done()))
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

// TestWaitReadyNeverOutlivesTheTimeout: a readiness check that blocks
// (a custom server made its metrics path a FIFO, and the check opened it)
// cannot hold the wait past its timeout, nor past ctx; before, the gate sat
// past ready_timeout_s for 10+ minutes.
func TestWaitReadyNeverOutlivesTheTimeout(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	blocked := func() error { <-release; return nil } // ignores every context
	p, _ := startShell(t, context.Background(), `sleep 300`, 100*time.Millisecond)
	done := make(chan error, 1)
	go func() { done <- WaitReady(context.Background(), p, blocked, 200*time.Millisecond, 20*time.Millisecond) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not ready after 200ms") || !strings.Contains(err.Error(), "still running at the timeout") {
			t.Fatalf("err = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("WaitReady still waiting on a blocked check 30 s after a 200 ms timeout")
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- WaitReady(ctx, p, blocked, time.Hour, 20*time.Millisecond) }()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("WaitReady ignored its context while a check was blocked")
	}
	// A check that honours its context is told to stop at the timeout.
	stopped := make(chan struct{})
	err := WaitReadyContext(context.Background(), p, func(ctx context.Context) error {
		<-ctx.Done()
		close(stopped)
		return ctx.Err()
	}, 100*time.Millisecond, 20*time.Millisecond)
	if err == nil {
		t.Fatal("ready")
	}
	select {
	case <-stopped:
	case <-time.After(30 * time.Second):
		t.Fatal("the check's context did not end with the timeout")
	}
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

func TestGuardianRefusesWithoutLifeline(t *testing.T) {
	// Typed by hand (no pipe on fd 3) it must not run the command: with no
	// lifeline it could not tell when to kill it.
	marker := filepath.Join(t.TempDir(), "ran")
	out, err := exec.Command(self(t), GuardianCommand, "/bin/sh", "sh", "-c", `echo > "$0"`, marker).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "no lifeline pipe on fd 3") {
		t.Fatalf("err %v, output %q; want exit 2 naming the lifeline", err, out)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without a lifeline")
	}
}

// treeOf lists pid and every process below it (pids), from /proc.
func treeOf(pid int) []int {
	out := []int{pid}
	for _, p := range descendants(pid) {
		out = append(out, p.pid)
	}
	return out
}

// cmdline is a process's argv joined by spaces ("" once it is gone).
func cmdline(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
}

// TestKill9OfAGuardianLeavesNothing: kill -9 of either guardian process
// (the one the launcher started, or the inner one holding the command)
// leaves nothing of the tree running: the wrapper, its child and a
// descendant that left the session (setsid) are all gone. A single
// guardian could not do it: Pdeathsig killed the wrapper, and the setsid
// daemon, orphaned with its subreaper gone, was adopted by init and lived.
func TestKill9OfAGuardianLeavesNothing(t *testing.T) {
	for _, victim := range []string{"outer", "inner"} {
		t.Run(victim, func(t *testing.T) {
			dir := t.TempDir()
			marker := filepath.Join(dir, "m")
			p, err := Start(context.Background(), Spec{Name: "wrapper", Path: "/bin/sh", Args: []string{"-c", daemonScript, marker},
				LogPath: filepath.Join(dir, "log"), Grace: 200 * time.Millisecond, Guardian: self(t)})
			if err != nil {
				t.Fatal(err)
			}
			daemon := waitPid(t, marker+".daemon")
			tree := treeOf(p.Pid())
			if !slices.Contains(tree, daemon) {
				t.Fatalf("daemon %d not in the guardian's tree %v", daemon, tree)
			}
			target := p.Pid()
			if victim == "inner" {
				target = 0
				for _, pid := range tree[1:] {
					if strings.Contains(cmdline(pid), GuardianCommand) {
						target = pid
						break
					}
				}
				if target == 0 {
					t.Fatalf("no inner guardian in the tree %v", tree)
				}
			}
			t.Cleanup(func() {
				for _, pid := range tree {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			if err := syscall.Kill(target, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			// Acceptance: every process of the tree is gone (a deadline
			// for a loaded machine: the sweep takes milliseconds).
			livetest.Eventually(t, 10*time.Second, func() (bool, string) {
				var desc []string
				for _, pid := range tree {
					if alive(pid) {
						desc = append(desc, fmt.Sprintf("%d (%s)", pid, cmdline(pid)))
					}
				}
				return len(desc) == 0, fmt.Sprintf("after kill -9 of the %s guardian, still running: %s", victim, strings.Join(desc, ", "))
			})
			select {
			case <-p.Done():
			case <-time.After(30 * time.Second):
				t.Fatal("the launcher never saw the guardian end")
			}
		})
	}
}
