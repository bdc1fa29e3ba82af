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
	"errors"
	"fmt"
	"io"
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

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
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

// Binary finds prometheus: $PROMETHEUS, else on PATH; the error names
// how to install it.
func Binary() (string, error) {
	if p := os.Getenv("PROMETHEUS"); p != "" {
		return p, nil
	}
	if p, err := exec.LookPath("prometheus"); err == nil {
		return p, nil
	}
	return "", errors.New("no prometheus on PATH: run scripts/test.sh, or SCALEGATE_NEED_PROMETHEUS=1 bash scripts/deps.sh, " +
		"which install Debian's prometheus with apt-get; or set PROMETHEUS=/path/to/prometheus")
}

// Options say what Prometheus scrapes.
type Options struct {
	// Targets are scraped as listed.
	Targets []Target
	// TargetsFile, when set, is a file_sd file it watches (re-read at
	// once on change, and every second): the gate's runner writes each
	// leg's server there (server.metrics.targets_file).
	TargetsFile string
}

// config is prometheus.yml: one job, every target its own static group
// with its labels, scraped every second.
func config(o Options) string {
	var b strings.Builder
	b.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: game\n")
	if len(o.Targets) > 0 {
		b.WriteString("    static_configs:\n")
	}
	for _, tg := range o.Targets {
		fmt.Fprintf(&b, "      - targets: [%q]\n", tg.Addr)
		if len(tg.Labels) > 0 {
			b.WriteString("        labels:\n")
			for k, v := range tg.Labels {
				fmt.Fprintf(&b, "          %s: %q\n", k, v)
			}
		}
	}
	if o.TargetsFile != "" {
		fmt.Fprintf(&b, "    file_sd_configs:\n      - files: [%q]\n        refresh_interval: 1s\n", o.TargetsFile)
	}
	return b.String()
}

// Start runs Prometheus for the test and waits until it is ready; it is
// stopped when the test ends. It fails the test when it cannot start.
func Start(t testing.TB, targets []Target) *Server {
	t.Helper()
	s, stop, err := Run(t.TempDir(), Options{Targets: targets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return s
}

// Run starts Prometheus with its config, data and log under dir, and
// waits until it is ready. stop ends it (SIGTERM, then SIGKILL after 5 s).
func Run(dir string, o Options) (s *Server, stop func(), err error) {
	bin, err := Binary()
	if err != nil {
		return nil, nil, err
	}
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte(config(o)), 0o644); err != nil {
		return nil, nil, err
	}
	// A port picked free can be taken before Prometheus binds it: then it
	// exits at once, and another port is tried.
	var lastErr error
	for try := range 3 {
		port, err := freePort()
		if err != nil {
			return nil, nil, err
		}
		s := &Server{URL: "http://127.0.0.1:" + strconv.Itoa(port), Log: filepath.Join(dir, fmt.Sprintf("prometheus-%d.log", try))}
		var stop func()
		if stop, lastErr = s.run(bin, cfg, filepath.Join(dir, fmt.Sprintf("data-%d", try)), port); lastErr == nil {
			return s, stop, nil
		}
	}
	return nil, nil, fmt.Errorf("prometheus did not start: %w", lastErr)
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
func (s *Server) run(bin, cfg, data string, port int) (func(), error) {
	logf, err := os.Create(s.Log)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "--config.file="+cfg, "--storage.tsdb.path="+data,
		"--web.listen-address=127.0.0.1:"+strconv.Itoa(port), "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("%s: %w", bin, err)
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
		return nil, fmt.Errorf("%w; its log ends: %s", err, logTail(s.Log, 2000))
	}
	return stop, nil
}

// logTail is the last n bytes of the log at path, read through
// boundedfile (a regular file, never more than n bytes), or why not.
func logTail(path string, n int64) string {
	f, err := boundedfile.Open(path)
	if err != nil {
		return err.Error()
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > n {
		if _, err := f.Seek(st.Size()-n, io.SeekStart); err != nil {
			return err.Error()
		}
	}
	buf := make([]byte, n)
	k, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return err.Error()
	}
	return string(buf[:k])
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
