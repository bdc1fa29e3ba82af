package liveserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/scalegate/scalegate/internal/reference/server"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

// childEnv carries the config file path to a test binary re-executed as a
// server child.
const childEnv = "SCALEGATE_LIVESERVER_CONFIG"

// listeningPrefix starts the line a server child prints once it is bound;
// promPrefix the line before it, when the child serves Prometheus.
const (
	listeningPrefix = "liveserver: listening on "
	promPrefix      = "liveserver: prometheus at "
)

// ChildMain makes the test binary a server child when StartProcess has
// re-executed it: it then runs the reference server from the config file
// until SIGINT or SIGTERM and exits (0 on a clean shutdown). Otherwise it
// returns at once. A package whose tests call StartProcess calls it first
// in TestMain.
func ChildMain() {
	path := os.Getenv(childEnv)
	if path == "" {
		return
	}
	if err := serveChild(path); err != nil {
		fmt.Fprintln(os.Stderr, "liveserver child:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func serveChild(path string) error {
	cfg, err := server.LoadConfig(path)
	if err != nil {
		return err
	}
	s, err := listen(cfg, os.Stderr)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if u := s.PrometheusURL(); u != "" {
		fmt.Printf("%s%s\n", promPrefix, u)
	}
	fmt.Printf("%s%s\n", listeningPrefix, s.Addr())
	return s.Run(ctx)
}

// Process is a reference server running as a child process: the test
// binary, re-executed (see ChildMain).
type Process struct {
	// Addr is the server's address (127.0.0.1:PORT) and Port its port.
	Addr, Port string
	// Metrics is the metrics file's path ("" when the config has none).
	Metrics string
	// PromURL is the Prometheus endpoint's URL ("" when the config has
	// no [metrics] prometheus_listen).
	PromURL string
	cmd     *exec.Cmd
	done    chan struct{}
	killed  atomic.Bool // Kill may run on a goroutine other than the test's
}

// StartProcess starts the reference server with Config changed by mut as
// a child process and waits, on the address it prints, until it listens
// (at most livetest.Wait). The child dies with the test binary (no orphan
// even if the test is killed); when the test ends it is stopped, and a
// child that did not exit 0 after its interrupt fails the test (a data
// race found in it under -race is such an exit).
func StartProcess(t testing.TB, mut func(*server.Config)) *Process {
	t.Helper()
	cfg, path := writeChildConfig(t, mut)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+path)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &Process{Metrics: cfg.Metrics.TickJSONPath, cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go p.readStdout(out, addr)
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Error(err)
		}
	})
	p.awaitListening(t, addr)
	return p
}

// writeChildConfig writes the child's config file, Config changed by mut,
// and returns the config and the file's path. The file goes beside the
// default metrics file, in the test's own directory, whatever mut does with
// the metrics path.
func writeChildConfig(t testing.TB, mut func(*server.Config)) (server.Config, string) {
	t.Helper()
	cfg := Config(t)
	path := filepath.Join(filepath.Dir(cfg.Metrics.TickJSONPath), "server.toml")
	if mut != nil {
		mut(&cfg)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	err = encodeConfig(f, cfg)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("write the server config: %v", err)
	}
	return cfg, path
}

// readStdout owns the child's stdout and reaps the child: it ends when the
// child does, which Stop and Kill (and Pdeathsig) guarantee. The address
// the child prints is handed over on addr.
func (p *Process) readStdout(out io.Reader, addr chan<- string) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		// The child prints its Prometheus URL before its address, so
		// PromURL is set before the address is handed over.
		if u, ok := strings.CutPrefix(sc.Text(), promPrefix); ok {
			p.PromURL = u
		}
		if a, ok := strings.CutPrefix(sc.Text(), listeningPrefix); ok {
			addr <- a
		}
	}
	_ = p.cmd.Wait()
	close(p.done)
}

// awaitListening waits (at most livetest.Wait) for the address the child
// prints once bound, failing the test if the child exits or stays silent.
func (p *Process) awaitListening(t testing.TB, addr <-chan string) {
	t.Helper()
	timer := time.NewTimer(livetest.Wait)
	defer timer.Stop()
	select {
	case a := <-addr:
		p.Addr = a
		p.Port = a[strings.LastIndexByte(a, ':')+1:]
	case <-p.done:
		t.Fatalf("reference server child exited (%v) before listening", p.cmd.ProcessState)
	case <-timer.C:
		t.Fatalf("reference server child did not listen within %v", livetest.Wait)
	}
}

// encodeConfig writes cfg as the TOML file server.LoadConfig reads.
func encodeConfig(w io.Writer, cfg server.Config) error {
	return toml.NewEncoder(w).Encode(cfg)
}

// Stop interrupts the child and waits for its clean shutdown; after
// livetest.Wait it kills it. It returns an error when the child did not
// exit 0 (nil after Kill, or when it already stopped).
func (p *Process) Stop() error {
	select {
	case <-p.done:
		return p.exitErr()
	default:
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	timer := time.NewTimer(livetest.Wait)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.exitErr()
	case <-timer.C:
		p.Kill()
		return fmt.Errorf("reference server child did not stop within %v of its interrupt: killed", livetest.Wait)
	}
}

func (p *Process) exitErr() error {
	if p.killed.Load() || p.cmd.ProcessState.ExitCode() == 0 {
		return nil
	}
	return fmt.Errorf("reference server child exited %s (its stderr is above)", p.cmd.ProcessState)
}

// Kill SIGKILLs the child and waits for it to be reaped: no Notice, no
// disconnect, like a crashed server. Safe from any goroutine once; the
// test's own later Stop then reports nothing.
func (p *Process) Kill() {
	p.killed.Store(true)
	_ = p.cmd.Process.Kill()
	<-p.done
}

// MetricsWhen reads the child's metrics file until cond accepts it (see
// Server.MetricsWhen).
func (p *Process) MetricsWhen(t testing.TB, what string, cond func(*report.ServerTick) bool) *report.ServerTick {
	t.Helper()
	st, err := metricsWhen(context.Background(), p.Metrics, what, cond)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// AwaitMetrics is MetricsWhen for goroutines other than the test's: it
// returns an error instead of failing the test.
func (p *Process) AwaitMetrics(what string, cond func(*report.ServerTick) bool) (*report.ServerTick, error) {
	return metricsWhen(context.Background(), p.Metrics, what, cond)
}
