// Package gametest runs an example game end to end in a test. It builds
// the server and the bot binaries, starts the server on a loopback port,
// runs the bot swarm against it and returns its exit status and report,
// checked against the report's JSON Schema (`scalegate schema report`).
package gametest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/schema"
)

// Build compiles the package pkg (an import path) into dir and returns the
// binary's path.
func Build(t testing.TB, dir, pkg string) string {
	t.Helper()
	bin := filepath.Join(dir, filepath.Base(filepath.Dir(pkg))+"-"+filepath.Base(pkg))
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	if err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}

// Server is a running example server.
type Server struct {
	Addr    string // "127.0.0.1:PORT"
	Metrics string // its metrics file
	cmd     *exec.Cmd
	done    chan error
}

// StartServer starts bin -listen 127.0.0.1:0 -metrics-json … args and
// returns once it says where it listens (within 30 s, however loaded the
// machine); it is stopped (SIGINT, then SIGKILL after 5 s) when the test
// ends.
func StartServer(t testing.TB, bin string, args ...string) *Server {
	t.Helper()
	s := &Server{Metrics: filepath.Join(t.TempDir(), "metrics.json"), done: make(chan error, 1)}
	s.cmd = exec.Command(bin, append([]string{"-listen", "127.0.0.1:0", "-metrics-json", s.Metrics}, args...)...)
	s.cmd.Stderr = os.Stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				addr <- a
			}
		}
	}()
	go func() { s.done <- s.cmd.Wait() }()
	t.Cleanup(s.stop)
	select {
	case s.Addr = <-addr:
	case err := <-s.done:
		t.Fatalf("%s exited before listening: %v", bin, err)
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30 s", bin)
	}
	return s
}

func (s *Server) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// RunBot runs the bot binary against the server with args (after host and
// port), a JSON report and the server's metrics file, bounded by limit,
// and returns its exit status and its report, which must match the
// report's JSON Schema.
func RunBot(t testing.TB, bin string, s *Server, limit time.Duration, args ...string) (int, *report.Report) {
	t.Helper()
	host, port, _ := strings.Cut(s.Addr, ":")
	path := filepath.Join(t.TempDir(), "report.json")
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{host, port, "--json", path, "--server-metrics", s.Metrics, "--progress", "off"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	t.Logf("%s %s:\n%s", filepath.Base(bin), strings.Join(args, " "), out.String())
	if ctx.Err() != nil {
		t.Fatalf("the bot did not finish within %s", limit)
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no report (exit %d): %v", code, err)
	}
	validate(t, b)
	r, err := report.ParseReport(b)
	if err != nil {
		t.Fatal(err)
	}
	return code, r
}

// validate checks a report against the JSON Schema `scalegate schema
// report` prints, with an independent validator.
func validate(t testing.TB, b []byte) {
	t.Helper()
	js, err := schema.JSONSchema("#Report")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("report.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("report.json")
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Errorf("the bot's report does not match the report schema: %v", err)
	}
}

// Assert returns the report's result for the --assert-NAME flag.
func Assert(t testing.TB, r *report.Report, name string) report.AssertResult {
	t.Helper()
	for _, a := range r.Asserts {
		if a.Name == name {
			return a
		}
	}
	t.Fatalf("report has no %s assert: %+v", name, r.Asserts)
	return report.AssertResult{}
}
