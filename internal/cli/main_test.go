package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/scalegate/scalegate/internal/livetest"
)

// TestMain makes this test binary double as the scalegate executable:
// testscript installs it in $PATH as "scalegate", and the gate runner starts
// `scalegate serve` and `scalegate swarm` through os.Executable, which is
// that same copy — so the scripts run the real product end to end.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"scalegate": func() { os.Exit(Main(os.Args[1:])) },
	})
}

// TestScripts runs testdata/script/*.txtar: the CLI end to end, including
// real gate runs against the reference server with its fault knobs (the
// "gate bites" tests). Each real leg is 8 clients for 4 s.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"gatestatus": cmdGateStatus,
			"waitfile":   cmdWaitFile,
			"waitmatch":  cmdWaitMatch,
			"noorphans":  cmdNoOrphans,
			"gone":       cmdGone,
			"mkflit":     cmdMkFlit,
			"killswarm":  cmdKillSwarm,
			"samerun":    cmdSameRun,
		},
	})
}

// cmdGateStatus: gatestatus RUNDIR LEG GATE STATUS [LEVEL] asserts one
// check of summary.json.
func cmdGateStatus(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 4 {
		ts.Fatalf("usage: gatestatus RUNDIR LEG GATE STATUS [LEVEL]")
	}
	var sum struct {
		Legs []struct {
			Leg    struct{ ID string }
			Checks []struct {
				Gate, Status, Level, Detail string
			}
		}
	}
	b := ts.ReadFile(filepath.Join(args[0], "summary.json"))
	if err := json.Unmarshal([]byte(b), &sum); err != nil {
		ts.Fatalf("summary.json: %v", err)
	}
	for _, l := range sum.Legs {
		if l.Leg.ID != args[1] {
			continue
		}
		for _, c := range l.Checks {
			if c.Gate != args[2] {
				continue
			}
			ok := c.Status == args[3] && (len(args) < 5 || c.Level == args[4])
			if ok == neg {
				ts.Fatalf("leg %s gate %s: status %s level %s (%s); want %s %v", args[1], args[2], c.Status, c.Level, c.Detail, args[3:], !neg)
			}
			ts.Logf("leg %s gate %s: %s %s — %s", args[1], args[2], c.Status, c.Level, c.Detail)
			return
		}
		ts.Fatalf("leg %s has no %s check", args[1], args[2])
	}
	ts.Fatalf("no leg %s in %s/summary.json", args[1], args[0])
}

// scriptWait bounds a script's waits: a gate run starts a whole leg
// before the awaited file or line can appear.
const scriptWait = 2 * livetest.Wait

// cmdWaitFile: waitfile PATH waits (at most scriptWait) for PATH to exist.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: waitfile PATH")
	}
	path := ts.MkAbs(args[0])
	if err := livetest.Poll(context.Background(), scriptWait, nil, livetest.Holds(path+" to appear", func() bool {
		_, err := os.Stat(path)
		return err == nil
	})); err != nil {
		ts.Fatalf("waitfile: %v", err)
	}
}

// cmdWaitMatch: waitmatch PATH REGEXP waits (at most scriptWait) for a
// line of PATH to match REGEXP: the event a background command announces in its log
// (the swarm's first progress line says its clients are connected and its
// signal handler is in place), so a script never guesses with a sleep.
func cmdWaitMatch(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: waitmatch PATH REGEXP")
	}
	path := ts.MkAbs(args[0])
	re, err := regexp.Compile("(?m)" + args[1])
	if err != nil {
		ts.Fatalf("waitmatch: %v", err)
	}
	if err := livetest.Poll(context.Background(), scriptWait, nil, func() (bool, string) {
		b, _ := os.ReadFile(path)
		return re.Match(b), fmt.Sprintf("%s: no line matching %q; it holds:\n%s", path, args[1], b)
	}); err != nil {
		ts.Fatalf("waitmatch: %v", err)
	}
}

// cmdNoOrphans: noorphans DIR fails if any live process has DIR in its
// command line (every server and swarm of a run carries its run directory).
func cmdNoOrphans(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: noorphans DIR")
	}
	dir := ts.MkAbs(args[0])
	var left []string
	// Reaping is synchronous in the runner; the short bound (5 s) only
	// absorbs the kernel tearing down a process it already reported dead.
	err := livetest.Poll(context.Background(), 5*time.Second, nil, func() (bool, string) {
		left = processesMentioning(dir)
		return len(left) == 0, fmt.Sprintf("processes left behind: %v", left)
	})
	if err == nil {
		return
	}
	for _, p := range left {
		var pid int
		fmt.Sscan(p, &pid)
		syscall.Kill(pid, syscall.SIGKILL)
	}
	ts.Fatalf("noorphans: %v", err)
}

// cmdGone: gone DURATION PIDFILE... fails unless every process whose pid
// a file holds is gone (or a zombie) within DURATION. It polls with that
// bound; it is an assertion with a deadline, not a synchronisation.
func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || neg {
		ts.Fatalf("usage: gone DURATION PIDFILE...")
	}
	within, err := time.ParseDuration(args[0])
	if err != nil {
		ts.Fatalf("gone: %v", err)
	}
	var pids []int
	for _, f := range args[1:] {
		pid, err := strconv.Atoi(strings.TrimSpace(ts.ReadFile(f)))
		if err != nil {
			ts.Fatalf("gone: %s: %v", f, err)
		}
		pids = append(pids, pid)
	}
	var left []int
	err = livetest.Poll(context.Background(), within, nil, func() (bool, string) {
		left = left[:0]
		for _, pid := range pids {
			if processAlive(pid) {
				left = append(left, pid)
			}
		}
		return len(left) == 0, fmt.Sprintf("still alive: %v", left)
	})
	if err != nil {
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		ts.Fatalf("gone: %v", err)
	}
}

// processAlive: pid exists and is not a zombie.
func processAlive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || !strings.HasPrefix(s[i+1:], " Z")
}

func processesMentioning(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range ents {
		pid := e.Name()
		if pid[0] < '0' || pid[0] > '9' {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + pid + "/cmdline")
		if err != nil || !strings.Contains(string(cmd), s) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + pid + "/stat")
		if f := strings.Fields(string(stat)); len(f) > 2 && f[2] == "Z" {
			continue
		}
		out = append(out, pid+" "+strings.ReplaceAll(string(cmd), "\x00", " "))
	}
	return out
}

// TestProcessesMentioning shows noorphans can fail: a live process whose
// command line carries the marker is found.
func TestProcessesMentioning(t *testing.T) {
	marker := t.TempDir() + "/run"
	// A loop, not a lone command: dash execs a lone last command in place,
	// which would replace the shell (and its marker argument) with sleep.
	cmd := exec.Command("/bin/sh", "-c", "i=0; while [ $i -lt 30 ]; do sleep 1; i=$((i+1)); done", marker)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	// Start returns once the child has begun its exec, which can be before
	// the kernel has set the new command line (/proc/PID/cmdline reads
	// empty for that instant, seen once on a loaded CI machine): look until
	// it shows, for at most 10 s.
	livetest.Eventually(t, livetest.Wait, livetest.Holds("the sleeping shell found by its marker", func() bool {
		return len(processesMentioning(marker)) > 0
	}))
}
