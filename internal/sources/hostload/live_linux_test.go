package hostload

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// roleEnv makes the test binary a helper process instead of running tests.
const roleEnv = "SCALEGATE_HOSTLOAD_TEST_ROLE"

// helperLife bounds every helper: it exits by itself after this even if the test that started
// it is killed before its cleanup runs.
const helperLife = 60 * time.Second

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "hog":
		// One goroutine that never blocks: one busy core, for helperLife at most.
		for end := time.Now().Add(helperLife); time.Now().Before(end); {
		}
		os.Exit(0)
	case "parent":
		// A sleeping parent with the hog as its child: the hog is a descendant, not a root.
		hog := exec.Command(os.Args[0], "-test.run=^$")
		hog.Env = append(os.Environ(), roleEnv+"=hog")
		hog.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := hog.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "start hog:", err)
			os.Exit(1)
		}
		_ = hog.Wait()
		os.Exit(0)
	case "sleeper":
		time.Sleep(helperLife)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startHelper starts the test binary in a role, in a process group of its own that the test's
// cleanup kills (the hog child of "parent" is in the same group).
func startHelper(t *testing.T, role string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"="+role)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", role, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	return cmd
}

// childOf waits (at most 10 s) for pid's child to appear and to have used CPU, and returns it.
func childOf(t *testing.T, rd *reader, pid int) int {
	t.Helper()
	child := 0
	livetest.Eventually(t, 10*time.Second, func() (bool, string) {
		procs, err := rd.processes()
		if err != nil {
			t.Fatal(err)
		}
		for c, p := range procs {
			if p.ppid == pid && p.cpu > 0 {
				child = c
				return true, ""
			}
		}
		return false, fmt.Sprintf("no busy child of %d", pid)
	})
	return child
}

// cpuOf is pid's utime+stime in clock ticks.
func cpuOf(t *testing.T, rd *reader, pid int) uint64 {
	t.Helper()
	p, err := rd.procStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	return p.cpu
}

// sums adds up a series' unrounded others' and own CPU-seconds and wall seconds.
func sums(s Series) (other, own, wall float64) {
	for _, sm := range s.Samples {
		if sm.OtherCores != nil {
			other += sm.otherCPU
		}
		if sm.OwnCores != nil {
			own += sm.ownCPU
		}
		wall += sm.wall
	}
	return other, own, wall
}

// TestLiveHog: a process burning a core is others' CPU when it is outside the run's tree and
// the tree's own when it is inside (a grandchild of a root). The machine is shared, so nothing
// is asserted about the total: only against the hog's own CPU, read from its /proc/PID/stat
// over a window that contains the samplers'.
func TestLiveHog(t *testing.T) {
	hz, err := clockTicks()
	if err != nil {
		t.Fatal(err)
	}
	rd := newReader("/proc")
	var hogPID int
	t.Cleanup(func() {
		if hogPID != 0 {
			waitGone(t, hogPID)
		}
	})
	sleeper := startHelper(t, "sleeper")
	parent := startHelper(t, "parent")
	hog := childOf(t, rd, parent.Process.Pid)
	hogPID = hog // the first cleanup registered runs last: after the group is killed

	tree := func() uint64 { return cpuOf(t, rd, hog) + cpuOf(t, rd, parent.Process.Pid) }
	hog0, tree0, w0 := cpuOf(t, rd, hog), tree(), time.Now()
	// outside: the hog is not in the tree of its roots; inside: it is a grandchild of one.
	outside, err := Start(context.Background(), Config{Roots: []int{sleeper.Process.Pid}})
	if err != nil {
		t.Fatal(err)
	}
	inside, err := Start(context.Background(), Config{Roots: []int{parent.Process.Pid}})
	if err != nil {
		outside.Stop()
		t.Fatal(err)
	}
	// Sample at least 3 s, and until the hog has used 0.5 CPU-s (50 ticks at USER_HZ 100), so
	// that a tick of rounding is 2 % of what is compared even when a loaded machine gives the
	// hog a small share: at most 60 s.
	waitSamples(t, outside, 3)
	waitSamples(t, inside, 3)
	err = livetest.Poll(context.Background(), 60*time.Second, nil, func() (bool, string) {
		used := cpuOf(t, rd, hog) - hog0
		return used >= uint64(hz)/2, fmt.Sprintf("the hog used %d ticks: the machine starved it, nothing to measure", used)
	})
	if err != nil {
		outside.Stop()
		inside.Stop()
		t.Fatal(err)
	}
	so, si := outside.Stop(), inside.Stop()
	hog1, tree1, w1 := cpuOf(t, rd, hog), tree(), time.Now()
	hogRate := float64(hog1-hog0) / float64(hz) / w1.Sub(w0).Seconds()
	oOther, oOwn, oWall := sums(so)
	iOther, iOwn, iWall := sums(si)
	t.Logf("hog %.3f cores; outside: others %.3f own %.3f cores; inside: others %.3f own %.3f cores (%d, %d samples)",
		hogRate, oOther/oWall, oOwn/oWall, iOther/iWall, iOwn/iWall, len(so.Samples), len(si.Samples))
	tick := 1 / float64(hz)
	if oOther < 0.85*hogRate*oWall-2*tick {
		t.Errorf("outside the tree: others used %.3f CPU-s in %.2f s, want ≥ 0.85 × the hog's %.3f cores", oOther, oWall, hogRate)
	}
	if oOwn > 0.05*oWall {
		t.Errorf("outside the tree: own %.3f CPU-s for a sleeping root", oOwn)
	}
	if iOwn < 0.85*hogRate*iWall-2*tick {
		t.Errorf("inside the tree: own used %.3f CPU-s in %.2f s, want ≥ 0.85 × the hog's %.3f cores", iOwn, iWall, hogRate)
	}
	// The tree is the parent and the hog: its own CPU cannot exceed theirs over a window that
	// contains the sampler's (plus a tick of rounding at each end).
	if max := float64(tree1-tree0+2) / float64(hz); iOwn > max {
		t.Errorf("inside the tree: own %.3f CPU-s, more than the tree's %.3f: something else was counted", iOwn, max)
	}
}

// waitGone waits (at most 10 s) until pid has exited: killed with its group, the hog is
// reparented and reaped by init, and must not outlive the test.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	// t.Error, not t.Fatal: it runs as a cleanup and reports without
	// stopping.
	err := livetest.Poll(context.Background(), 10*time.Second, nil, func() (bool, string) {
		return syscall.Kill(pid, 0) == syscall.ESRCH, fmt.Sprintf("hog %d still alive after its group was killed", pid)
	})
	if err != nil {
		t.Error(err)
	}
}

// TestProcessCPU reads this test process's CPU time as getrusage sees it.
func TestProcessCPU(t *testing.T) {
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	var ru syscall.Rusage
	got, err := ProcessCPU(os.Getpid())
	if err2 := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	after := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	// /proc's figure is in clock ticks and read first: at most a tick (10 ms) under getrusage's
	// and never above it by more than a tick of rounding.
	if got <= 0 || got > after+10*time.Millisecond || got < after-20*time.Millisecond {
		t.Errorf("ProcessCPU %v, getrusage %v", got, after)
	}
	if _, err := ProcessCPU(-1); err == nil {
		t.Error("ProcessCPU(-1): no error")
	}
}
