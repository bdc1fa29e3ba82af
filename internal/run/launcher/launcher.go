// Package launcher starts and stops the processes of a gate leg.
//
// Those processes are the server under test and the swarm. Every process
// runs in its own process group with its output captured to a file, is
// stopped in stages (SIGINT, a grace period, SIGKILL), and is reaped by the
// goroutine that started it. When the run's context is cancelled (scalegate
// got SIGINT), every process still running gets the same staged stop; when
// the Kill channel closes (a second SIGINT) the SIGKILL stage comes at
// once.
//
// On Linux each process is started under a guardian (RunGuardian: the
// scalegate binary re-executed) that adopts every descendant and kills them
// all when the process ends or when scalegate dies, however it dies:
// docs/gate.md, "No process left behind", says why a guardian.
package launcher

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultGrace is how long a process gets between SIGINT and SIGKILL.
const DefaultGrace = 5 * time.Second

// GuardianCommand is the hidden first argument under which the scalegate
// binary runs RunGuardian. Not a user command: it needs the lifeline on fd 3.
const GuardianCommand = "__guardian"

// killTimeout bounds the SIGKILL stage: a guardian that has not emptied its
// tree by then is itself killed with its group (the last resort).
const killTimeout = 15 * time.Second

// Spec describes a process to start.
type Spec struct {
	// Name labels the process in errors ("server", "swarm").
	Name string
	// Path is the executable; Args are its arguments (without argv[0]).
	Path string
	Args []string
	// LogPath receives stdout and stderr, interleaved, up to LogMaxBytes
	// (DefaultLogMaxBytes when 0): past it the file keeps the first part
	// and the last, with a marker saying what was left out between.
	LogPath     string
	LogMaxBytes int64
	// Grace is the SIGINT→SIGKILL delay; DefaultGrace when zero.
	Grace time.Duration
	// Env is added to the current environment.
	Env []string
	// Guardian is an executable that runs RunGuardian when its first
	// argument is GuardianCommand (the scalegate binary). When set (and on
	// Linux), the process is started under it, so no descendant outlives
	// the process or scalegate. Empty: the process gets its own group and
	// Pdeathsig only, which a wrapper script defeats.
	Guardian string
	// Kill, when closed, skips whatever is left of the grace: SIGKILL to
	// the whole tree now. Nil: never.
	Kill <-chan struct{}
}

// Process is a started process and its process group.
type Process struct {
	spec Spec
	cmd  *exec.Cmd
	done chan struct{}
	log  *cappedLog
	// lifeline is the write end of the guardian's pipe (nil without a
	// guardian); closing it makes the guardian kill the whole tree.
	lifeline *os.File

	stopOnce sync.Once
	stopReq  chan struct{}
	cutOnce  sync.Once

	mu       sync.Mutex
	state    *os.ProcessState
	logStats LogStats
}

// logDrainWait bounds how long reaping waits for the process's output
// after it exited: a descendant that escaped and still holds the pipe
// must not hold the leg (exec.Cmd.WaitDelay then closes it).
const logDrainWait = 5 * time.Second

// Start starts spec in a new process group. The process is stopped (in
// stages) when ctx is cancelled or Stop is called.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	if spec.Grace <= 0 {
		spec.Grace = DefaultGrace
	}
	// Resolved here, so a missing executable is a start error naming it,
	// not a guardian that exits 127.
	path, err := exec.LookPath(spec.Path)
	if err != nil {
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Path, err)
	}
	f, err := os.OpenFile(spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", spec.Name, err)
	}
	p := &Process{spec: spec, done: make(chan struct{}), log: newCappedLog(f, spec.LogMaxBytes), stopReq: make(chan struct{})}
	if err := p.start(path); err != nil {
		p.log.Close()
		return nil, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Path, err)
	}
	go p.reap()
	go p.supervise(ctx)
	return p, nil
}

// start starts the command, under a guardian when the spec names one.
func (p *Process) start(path string) error {
	spec := p.spec
	cmd := exec.Command(path, spec.Args...)
	cmd.Args[0] = spec.Path
	var lifeR *os.File
	if spec.Guardian != "" && guardianAvailable {
		r, w, err := os.Pipe() // close-on-exec: no other child inherits the write end
		if err != nil {
			return fmt.Errorf("guardian lifeline: %w", err)
		}
		lifeR, p.lifeline = r, w
		cmd = exec.Command(spec.Guardian, append([]string{GuardianCommand, path, spec.Path}, spec.Args...)...)
		cmd.ExtraFiles = []*os.File{r} // fd 3
	}
	// One writer for both, so the output interleaves as written; through a
	// pipe the launcher drains, so the cap holds whatever the process writes.
	cmd.Stdout, cmd.Stderr = p.log, p.log
	cmd.WaitDelay = logDrainWait
	cmd.Env = append(os.Environ(), spec.Env...)
	cmd.SysProcAttr = sysProcAttr(p.lifeline != nil)
	err := cmd.Start()
	if lifeR != nil {
		lifeR.Close()
	}
	if err != nil {
		if p.lifeline != nil {
			p.lifeline.Close()
		}
		return err
	}
	p.cmd = cmd
	return nil
}

// supervise runs the staged stop: SIGINT when ctx ends or Stop is called,
// SIGKILL to the tree after the grace or as soon as spec.Kill closes, and
// as a last resort SIGKILL to the group should the tree outlive that.
func (p *Process) supervise(ctx context.Context) {
	stop := p.stopReq
	ctxDone := ctx.Done()
	kill := p.spec.Kill
	var grace, last <-chan time.Time
	for {
		select {
		case <-p.done:
			return
		case <-ctxDone:
			ctxDone, stop = nil, nil
			grace = p.interrupt()
		case <-stop:
			ctxDone, stop = nil, nil
			grace = p.interrupt()
		case <-grace:
			grace, kill = nil, nil
			last = p.cut()
		case <-kill:
			grace, kill, ctxDone, stop = nil, nil, nil, nil
			last = p.cut()
		case <-last:
			last = nil
			_ = signalGroup(p.cmd, syscall.SIGKILL)
		}
	}
}

// interrupt is the first stage: SIGINT to the group (a guardian forwards it
// to the whole tree). It returns the grace timer.
func (p *Process) interrupt() <-chan time.Time {
	_ = signalGroup(p.cmd, syscall.SIGINT)
	return time.After(p.spec.Grace)
}

// cut is the SIGKILL stage: the guardian kills the whole tree when its
// lifeline closes; without one, the group is killed. It returns the timer
// of the last resort.
func (p *Process) cut() <-chan time.Time {
	p.cutOnce.Do(func() {
		if p.lifeline != nil {
			p.lifeline.Close()
			return
		}
		_ = signalGroup(p.cmd, syscall.SIGKILL)
	})
	return time.After(killTimeout)
}

// reap waits for the process, then SIGKILLs its group so no descendant
// outlives it (a guardian has already emptied its tree), and closes the log.
func (p *Process) reap() {
	_ = p.cmd.Wait() // the status is read from ProcessState
	_ = signalGroup(p.cmd, syscall.SIGKILL)
	p.cutOnce.Do(func() {
		if p.lifeline != nil {
			p.lifeline.Close()
		}
	})
	stats := p.log.Close()
	p.mu.Lock()
	p.state = p.cmd.ProcessState
	p.logStats = stats
	p.mu.Unlock()
	close(p.done)
}

// signalGroup signals the process group led by cmd's process. ESRCH (the
// group is already gone) is not an error.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// Done is closed once the process has exited and its group (under a
// guardian: every descendant) is gone.
func (p *Process) Done() <-chan struct{} { return p.done }

// Pid is the process (and process group) id: the guardian's when there is
// one.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop interrupts the process group, waits up to the grace period, then
// kills it; it returns once the process is reaped. Safe to call twice.
func (p *Process) Stop() {
	p.stopOnce.Do(func() { close(p.stopReq) })
	<-p.done
}

// Wait waits for the process to exit or ctx to end (then it stops it).
func (p *Process) Wait(ctx context.Context) {
	select {
	case <-p.done:
	case <-ctx.Done():
		p.Stop()
	}
}

// ExitCode is the exit status once Done: -1 when killed by a signal.
func (p *Process) ExitCode() int {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == nil {
		return -1
	}
	return p.state.ExitCode()
}

// LogStats is what the process wrote to its log, once Done.
func (p *Process) LogStats() LogStats {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.logStats
}

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// CommandLine renders the process's command line, shell-quoted, for a user
// to rerun it.
func (p *Process) CommandLine() string { return CommandLine(p.spec.Path, p.spec.Args) }

// CommandLine renders path and args as a shell command line.
func CommandLine(path string, args []string) string {
	parts := make([]string, 0, len(args)+1)
	for _, a := range append([]string{path}, args...) {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

func shellQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@+%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// PortAllocator hands out distinct free loopback UDP ports: one per leg, so
// a leg never races the previous leg's socket for the same port.
type PortAllocator struct {
	mu   sync.Mutex
	used map[int]bool
}

// Next binds 127.0.0.1:0 over UDP, reads the port the kernel chose, releases
// it, and returns it unless this allocator handed it out before. It binds
// TCP on the same port too, so a server that also listens on TCP finds it
// free.
func (a *PortAllocator) Next() (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.used == nil {
		a.used = map[int]bool{}
	}
	for range 64 {
		c, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("free port: %w", err)
		}
		port := c.LocalAddr().(*net.UDPAddr).Port
		c.Close()
		if a.used[port] {
			continue
		}
		l, err := net.Listen("tcp4", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue
		}
		l.Close()
		a.used[port] = true
		return port, nil
	}
	return 0, errors.New("free port: no distinct free UDP port after 64 tries")
}

// ReadyFunc reports whether the server is ready (nil) or why not.
type ReadyFunc func() error

// ReadyContextFunc reports whether the server is ready (nil) or why not,
// giving up when ctx ends.
type ReadyContextFunc func(ctx context.Context) error

// WaitReady is WaitReadyContext for a ready func without a context: a
// call that blocks is abandoned at the timeout (WaitReadyContext says
// how), so prefer a ReadyContextFunc that stops when told.
func WaitReady(ctx context.Context, p *Process, ready ReadyFunc, timeout, interval time.Duration) error {
	return WaitReadyContext(ctx, p, func(context.Context) error { return ready() }, timeout, interval)
}

// WaitReadyContext polls ready every interval until it returns nil, the
// process exits, the timeout passes, or ctx ends. The error names the
// last reason the server was not ready and where its log is.
//
// Each call runs on its own goroutine under a context that ends with the
// timeout or ctx, and WaitReadyContext never waits for a call past that:
// a ready func that blocks (a metrics path that is a FIFO, an endpoint
// that accepts and never answers) cannot hold the gate past
// ready_timeout_s or SIGINT. A call still running then is told to stop
// through its context and left to finish on its own; a new call is never
// started while one is still running.
func WaitReadyContext(ctx context.Context, p *Process, ready ReadyContextFunc, timeout, interval time.Duration) error {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	last := errors.New("not checked yet")
	result := make(chan error, 1) // buffered: an abandoned call never blocks
	check := func() {
		go func() { result <- ready(wctx) }()
	}
	check()
	running := true
	for {
		select {
		case err := <-result:
			running = false
			if err == nil {
				return nil
			}
			last = err
			continue
		case <-ctx.Done():
			return ctx.Err()
		case <-p.Done():
			if !running {
				check()
			}
			return exitedWhileWaiting(wctx, p, result, last)
		case <-wctx.Done():
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if running {
				last = fmt.Errorf("%v; the last readiness check was still running at the timeout", last)
			}
			return fmt.Errorf("%s not ready after %s (%v); see %s", p.spec.Name, timeout, last, p.spec.LogPath)
		case <-tick.C:
			if !running {
				running = true
				check()
			}
		}
	}
}

// exitedWhileWaiting is WaitReadyContext's error once p has exited: it
// waits (up to wctx) for the check in flight, so that a process that became
// ready and then died is told apart from one that never got there.
func exitedWhileWaiting(wctx context.Context, p *Process, result <-chan error, last error) error {
	select {
	case err := <-result:
		if err == nil {
			return fmt.Errorf("%s exited (status %d) right after becoming ready; see %s", p.spec.Name, p.ExitCode(), p.spec.LogPath)
		}
		last = err
	case <-wctx.Done():
	}
	return fmt.Errorf("%s exited (status %d) before it was ready (%v); see %s", p.spec.Name, p.ExitCode(), last, p.spec.LogPath)
}

// Self is the path of the running scalegate binary: the swarm and the
// built-in server are started as subcommands of it.
func Self() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("locate scalegate executable: %w", err)
	}
	return exe, nil
}
