package launcher

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// prSetChildSubreaper is PR_SET_CHILD_SUBREAPER (linux/prctl.h): orphaned
// descendants are reparented to the caller instead of to init.
const prSetChildSubreaper = 36

// guardianAvailable: the guardian needs PR_SET_CHILD_SUBREAPER (Linux 3.4+).
const guardianAvailable = true

// sweepLimit bounds how long the guardian keeps killing a tree that keeps
// forking; a tree still alive after it is reported in the log.
const sweepLimit = 10 * time.Second

// innerFlag is the first argument of the inner guardian (see RunGuardian).
// The launcher's first argument is a resolved executable path, which
// always holds a '/', so it can never be this.
const innerFlag = "--inner"

// RunGuardian is the guardian's main; args are the executable's resolved
// path, then argv (argv[0] first). It expects the lifeline pipe's read end
// on fd 3 and returns the exit status to use (it re-raises the signal that
// killed the command, so the launcher sees the command's own status).
//
// A guardian is two processes, each a subreaper, so that killing either
// one, even with SIGKILL, leaves nothing running:
//
//   - the outer one (what the launcher starts) starts the inner one in a
//     process group of its own, with a second lifeline whose only write
//     end the outer one holds, and forwards SIGINT/SIGTERM to it;
//   - the inner one starts the command in a process group of its own (with
//     Pdeathsig SIGKILL) and forwards those signals to every descendant.
//
// Each one, when its lifeline reaches EOF (the launcher died or asked for
// an immediate kill; for the inner one: the outer one died) or when its
// child exits, SIGKILLs every descendant until none is left (ones that
// changed process group or session too: as a subreaper it adopts every
// orphan below it), then exits with its child's status. Kill the outer
// one and the inner one's lifeline closes: it empties the tree. Kill the
// inner one and everything it held is reparented to the outer one (the
// nearest living subreaper), which empties it. One subreaper alone cannot
// do this: its adopted orphans go to init with it.
func RunGuardian(args []string) int {
	inner := len(args) > 0 && args[0] == innerFlag
	if inner {
		args = args[1:]
	}
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "scalegate guardian: usage: PATH ARGV0 [ARGS...] (internal; started by the launcher)")
		return 2
	}
	lifeline, ok := takeLifeline()
	if !ok || !becomeSubreaper() {
		return 2
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	var g *guardian
	var innerLifeline *os.File // the outer one's write end of the inner one's lifeline
	var code int
	if inner {
		g, code = startCommand(args)
	} else {
		g, innerLifeline, code = startInnerGuardian(args)
	}
	if g == nil {
		return code
	}
	go g.reap()
	g.supervise(sigs, watchLifeline(lifeline), innerLifeline)
	return g.exitStatus()
}

// takeLifeline adopts the lifeline pipe on fd 3, refusing to run without
// one: a guardian that cannot notice the launcher's death would outlive it.
func takeLifeline() (*os.File, bool) {
	var st syscall.Stat_t
	if err := syscall.Fstat(3, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFIFO {
		fmt.Fprintln(os.Stderr, "scalegate guardian: no lifeline pipe on fd 3 (internal; started by the launcher)")
		return nil, false
	}
	lifeline := os.NewFile(3, "lifeline")
	syscall.CloseOnExec(3) // the command must not hold it
	return lifeline, true
}

// becomeSubreaper makes this process adopt its orphaned descendants, so
// none can escape the sweep by outliving its parent.
func becomeSubreaper() bool {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		fmt.Fprintf(os.Stderr, "scalegate guardian: PR_SET_CHILD_SUBREAPER: %v\n", e)
		return false
	}
	return true
}

// startCommand is the inner guardian's start: the command itself, in a
// process group of its own so its signals can reach the whole group. On
// failure g is nil and code the exit status to return.
func startCommand(args []string) (g *guardian, code int) {
	child, err := os.StartProcess(args[0], args[1:], &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		// Pdeathsig: should this guardian be SIGKILLed, the command
		// dies with it at once (the outer guardian sweeps the rest).
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "scalegate guardian: start %s: %v\n", args[0], err)
		return nil, 127
	}
	return newGuardian(child.Pid, true), 0
}

// startInnerGuardian is the outer guardian's start: this binary again as
// the inner guardian, whose lifeline's only write end (w) stays here, so
// the inner one learns of this one's death however it dies. On failure g
// is nil and code the exit status to return.
func startInnerGuardian(args []string) (g *guardian, w *os.File, code int) {
	r, w, err := os.Pipe() // close-on-exec: only the inner guardian gets r, as its fd 3
	if err != nil {
		fmt.Fprintf(os.Stderr, "scalegate guardian: inner lifeline: %v\n", err)
		return nil, nil, 2
	}
	// /proc/self/exe: this very binary, even if its file was replaced.
	child, err := os.StartProcess("/proc/self/exe", append([]string{os.Args[0], GuardianCommand, innerFlag}, args...), &os.ProcAttr{
		Env:   os.Environ(),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr, r},
		Sys:   &syscall.SysProcAttr{Setpgid: true},
	})
	r.Close()
	if err != nil {
		w.Close()
		fmt.Fprintf(os.Stderr, "scalegate guardian: start the inner guardian: %v\n", err)
		return nil, nil, 2
	}
	return newGuardian(child.Pid, false), w, 0
}

// watchLifeline returns a channel closed when the lifeline reaches EOF:
// the holder of its write end died or let go, and the tree must go too.
func watchLifeline(lifeline *os.File) <-chan struct{} {
	lost := make(chan struct{})
	go func() {
		// Nobody writes: Read returns only at EOF, when every copy of the
		// write end is closed.
		var b [1]byte
		for {
			if _, err := lifeline.Read(b[:]); err != nil {
				close(lost)
				return
			}
		}
	}()
	return lost
}

func newGuardian(child int, inner bool) *guardian {
	return &guardian{self: os.Getpid(), child: child, inner: inner, exited: make(chan struct{}), empty: make(chan struct{})}
}

// guardian is the state of one guardian process.
type guardian struct {
	self, child int
	inner       bool               // the child is the command (else the inner guardian)
	status      syscall.WaitStatus // the command's, valid once exited is closed
	exited      chan struct{}      // the command has been reaped
	empty       chan struct{}      // no child left at all: the tree is gone
}

// supervise forwards signals until the child exits or the lifeline is
// lost, then kills the rest of the tree. The outer guardian forwards to
// the inner one only (which forwards to the tree: each process gets a
// signal once), and on a lost lifeline closes the inner one's first.
func (g *guardian) supervise(sigs chan os.Signal, lost <-chan struct{}, innerLifeline *os.File) {
	defer g.sweep()
	defer signal.Stop(sigs)
	if innerLifeline != nil {
		defer innerLifeline.Close()
	}
	for {
		select {
		case s := <-sigs:
			if g.inner {
				g.signalTree(s.(syscall.Signal))
			} else {
				_ = syscall.Kill(g.child, s.(syscall.Signal))
			}
		case <-g.exited:
			return
		case <-lost:
			return
		}
	}
}

// reap waits for every child, the command and adopted orphans alike; ECHILD
// means the tree is empty, and it stays empty: only a member can add to it.
func (g *guardian) reap() {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
		case err != nil:
			close(g.empty)
			return
		case pid == g.child:
			g.status = ws
			close(g.exited)
		}
	}
}

// signalTree sends sig to the command's process group and to every
// descendant outside it (one that made its own group or session); members
// of the group get it once, as from a terminal.
func (g *guardian) signalTree(sig syscall.Signal) {
	_ = syscall.Kill(-g.child, sig)
	for _, p := range descendants(g.self) {
		if p.pgid != g.child || sig == syscall.SIGKILL {
			_ = syscall.Kill(p.pid, sig)
		}
	}
}

// sweep SIGKILLs every descendant, again and again, until the reaper has
// collected the last one. A killed parent's children are adopted by the
// guardian (a subreaper) and found on the next pass.
func (g *guardian) sweep() {
	deadline := time.NewTimer(sweepLimit)
	defer deadline.Stop()
	pass := time.NewTicker(10 * time.Millisecond)
	defer pass.Stop()
	for {
		g.signalTree(syscall.SIGKILL)
		select {
		case <-g.empty:
			return
		case <-deadline.C:
			fmt.Fprintf(os.Stderr, "scalegate guardian: descendants %v still alive after %s of SIGKILL\n", descendants(g.self), sweepLimit)
			return
		case <-pass.C:
		}
	}
}

// exitStatus mirrors the command's status: its exit code, or death by the
// same signal (SIGKILL when the command outlived the lifeline).
func (g *guardian) exitStatus() int {
	select {
	case <-g.exited:
	default:
		return 125 // the sweep gave up with the command unreaped; it said so
	}
	ws := g.status
	if !ws.Signaled() {
		return ws.ExitStatus()
	}
	sig := ws.Signal()
	signal.Reset(sig)
	_ = syscall.Kill(g.self, sig)
	// Still here: the signal is ignored or does not terminate.
	return 128 + int(sig)
}

// proc is one process of the tree.
type proc struct{ pid, pgid int }

// descendants lists every process below pid, read from /proc.
func descendants(pid int) []proc {
	children := map[int][]proc{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, pgid, ok := readStat(p); ok {
			children[pp] = append(children[pp], proc{pid: p, pgid: pgid})
		}
	}
	var out []proc
	queue := []int{pid}
	for len(queue) > 0 {
		next := children[queue[0]]
		queue = queue[1:]
		for _, c := range next {
			out = append(out, c)
			queue = append(queue, c.pid)
		}
	}
	return out
}

// readStat reads the parent pid and process group from /proc/PID/stat. The
// command name is in parentheses and may itself contain spaces or
// parentheses, so fields are counted after the last ')'.
func readStat(pid int) (ppid, pgid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0, false
	}
	f := strings.Fields(s[i+1:]) // state, ppid, pgrp, ...
	if len(f) < 3 {
		return 0, 0, false
	}
	ppid, err1 := strconv.Atoi(f[1])
	pgid, err2 := strconv.Atoi(f[2])
	return ppid, pgid, err1 == nil && err2 == nil
}
