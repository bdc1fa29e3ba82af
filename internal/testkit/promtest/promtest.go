// Package promtest runs a real Prometheus server for a test, on loopback.
//
// The PromQL source is judged against Prometheus itself, not a fake of
// its API: a fake would answer what its author believes increase() and
// histogram_quantile() do. Start runs Debian's prometheus (2.42; the test
// command, scripts/test.sh, installs it) in a temporary directory with a
// 1 s scrape interval over the targets the test gives. It does not skip
// without the binary: it fails, naming how to install it.
package promtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Target is one endpoint Prometheus scrapes, with the labels its series
// get (pod: "reference" lets a query pick this server among others).
type Target struct {
	// Addr is host:port; the path is /metrics.
	Addr   string
	Labels map[string]string
}

// Server is a running Prometheus.
type Server struct {
	// URL is its root, http://127.0.0.1:PORT.
	URL string
	// Log is its output file.
	Log string
}

// binary finds prometheus: $PROMETHEUS, else on PATH.
func binary(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("PROMETHEUS"); p != "" {
		return p
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p
	}
	t.Fatal("no prometheus on PATH: run scripts/test.sh, or SCALEGATE_NEED_PROMETHEUS=1 bash scripts/deps.sh, " +
		"which install Debian's prometheus with apt-get; or set PROMETHEUS=/path/to/prometheus")
	return ""
}

// config is prometheus.yml: every target its own static group with its
// labels, scraped every second.
func config(targets []Target) string {
	var b strings.Builder
	b.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: game\n    static_configs:\n")
	for _, tg := range targets {
		fmt.Fprintf(&b, "      - targets: [%q]\n", tg.Addr)
		if len(tg.Labels) > 0 {
			b.WriteString("        labels:\n")
			for k, v := range tg.Labels {
				fmt.Fprintf(&b, "          %s: %q\n", k, v)
			}
		}
	}
	return b.String()
}

// Start runs Prometheus scraping targets and waits until it is ready. It
// is stopped (SIGTERM, then SIGKILL after 5 s) when the test ends.
func Start(t testing.TB, targets []Target) *Server {
	t.Helper()
	bin := binary(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config(targets)), 0o644); err != nil {
		t.Fatal(err)
	}
	// A port picked free can be taken before Prometheus binds it: then it
	// exits at once, and another port is tried.
	var lastErr error
	for try := range 3 {
		port, err := freePort()
		if err != nil {
			t.Fatal(err)
		}
		s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), Log: filepath.Join(dir, fmt.Sprintf("prometheus-%d.log", try))}
		if lastErr = s.run(t, bin, cfg, filepath.Join(dir, fmt.Sprintf("data-%d", try)), port); lastErr == nil {
			return s
		}
	}
	t.Fatalf("prometheus did not start: %v", lastErr)
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// run starts the process and waits for /-/ready; on failure the process
// is gone and the error quotes its log's tail.
func (s *Server) run(t testing.TB, bin, cfg, data string, port int) error {
	logf, err := os.Create(s.Log)
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+data,
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("%s: %w", bin, err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); logf.Close(); close(done) }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}
	if err := waitReady(s.URL, done, &waitErr); err != nil {
		stop()
		tail, _ := os.ReadFile(s.Log)
		if len(tail) > 2000 {
			tail = tail[len(tail)-2000:]
		}
		return fmt.Errorf("%w; its log: %s", err, tail)
	}
	t.Cleanup(stop)
	return nil
}

// waitReady polls /-/ready until 200, the process exits, or 60 s pass.
func waitReady(url string, done <-chan struct{}, waitErr *error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/-/ready", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-done:
			return fmt.Errorf("prometheus exited before it was ready: %v", *waitErr)
		case <-ctx.Done():
			return fmt.Errorf("prometheus at %s not ready after 60 s", url)
		case <-tick.C:
		}
	}
}
