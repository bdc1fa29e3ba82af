package admin

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	cases := []struct {
		line, want, err string
	}{
		{"status", "status", ""},
		{"status\n", "status", ""},
		{"  tickstats \r\n", "tickstats", ""},
		{"trace-start /tmp/x", "trace-start /tmp/x", ""},
		{"reload", "reload", ""},
		{"", "", "empty command"},
		{"\n", "", "empty command"},
		{"stauts", "", `unknown command "stauts"`},
		{"status now", "", "usage: status"},
		{"trace-start", "", "usage: trace-start DIR"},
		{"trace-start /tmp/my traces", "trace-start /tmp/my traces", ""}, // the rest of the line
		{"trace-start\t /tmp/a\tb \t", "trace-start /tmp/a\tb", ""},
		{"trace-start /tmp/a\tb", "trace-start /tmp/a\tb", ""},
		{"trace-start   ", "", "usage: trace-start DIR"},
		{"status\x00", "", "not printable"},
		{"st\xffatus", "", "not printable"},
		{strings.Repeat("x", MaxLine+1), "", "longer than"},
	}
	for _, tc := range cases {
		c, err := Parse(tc.line)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("Parse(%q): %v", tc.line, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("Parse(%q) error %v, want %q", tc.line, err, tc.err)
		case tc.err == "" && c.String() != tc.want:
			t.Errorf("Parse(%q) = %q, want %q", tc.line, c.String(), tc.want)
		}
	}
}

// FuzzParse: any bytes a client sends are either a command that prints back
// as itself or an error, never a panic.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"status", "trace-start d", "reload\r\n", "\xff", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := Parse(line)
		if err != nil {
			return
		}
		again, err := Parse(c.String())
		if err != nil || again.String() != c.String() {
			t.Fatalf("%q parsed as %q, which reparses as %q (%v)", line, c, again, err)
		}
	})
}

// serve starts a server at path answering with h, closed when the test ends.
func serve(t *testing.T, path string, h Handler) *Server {
	t.Helper()
	s, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Serve(h)
	t.Cleanup(func() { s.Close() })
	return s
}

func echo(c Command) []string { return []string{"got " + c.String(), "second line"} }

func TestRoundTripAndErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.sock")
	s := serve(t, path, echo)
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket file %v, mode %v; want 0600", err, fi.Mode())
	}
	ctx := context.Background()
	lines, err := Do(ctx, path, "trace-start /x")
	if err != nil || len(lines) != 2 || lines[0] != "got trace-start /x" {
		t.Fatalf("answer %q, %v", lines, err)
	}
	lines, err = Do(ctx, path, "frobnicate")
	var ae *AnsweredError
	if !errors.As(err, &ae) || len(lines) != 1 || !strings.HasPrefix(lines[0], ErrorPrefix+`unknown command "frobnicate"`) {
		t.Fatalf("bad command: %q, %v", lines, err)
	}
	// A client that sends garbage without a newline and closes its side
	// gets its error line too, and the server keeps serving.
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte("\x01\x02"))
	c.(*net.UnixConn).CloseWrite()
	buf := make([]byte, 256)
	n, _ := c.Read(buf)
	c.Close()
	if !strings.HasPrefix(string(buf[:n]), ErrorPrefix) {
		t.Fatalf("garbage answered %q", buf[:n])
	}
	if _, err := Do(ctx, path, "status"); err != nil {
		t.Fatalf("after garbage: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket file left after Close: %v", err)
	}
	var na *NotAnsweringError
	if _, err := Do(ctx, path, "status"); !errors.As(err, &na) || !strings.Contains(err.Error(), path) {
		t.Fatalf("dead socket: %v", err)
	}
}

// A socket file a dead server left is replaced; a live one and a file that
// is not a socket are refused, naming the path.
func TestListenStaleAndOccupied(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close() // the file stays: a crashed server's socket
	serve(t, path, echo)
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "another server") {
		t.Fatalf("second Listen on a live socket: %v", err)
	}
	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("keep me"), 0o644)
	if _, err := Listen(plain); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Fatalf("Listen on a regular file: %v", err)
	}
	if b, _ := os.ReadFile(plain); string(b) != "keep me" {
		t.Fatal("Listen clobbered a regular file")
	}
}

// A path longer than sun_path (a deep results directory) still works.
func TestLongPath(t *testing.T) {
	dir := t.TempDir()
	for len(dir) < 150 {
		dir = filepath.Join(dir, "a-rather-long-directory-name")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "admin.sock")
	s := serve(t, path, echo)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if lines, err := Do(ctx, path, "status"); err != nil || lines[0] != "got status" {
		t.Fatalf("long path %d bytes: %q, %v", len(path), lines, err)
	}
	s.Close()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket file left after Close: %v", err)
	}
}

// TestSilentCrowdIsNotAnswering: 64 connections that never send their
// line hold every slot; a client behind them gets no answer by its
// deadline, and that is a *NotAnsweringError saying the server took the
// connection (the server's state), not a failure of the client.
func TestSilentCrowdIsNotAnswering(t *testing.T) {
	path := filepath.Join(t.TempDir(), "admin.sock")
	serve(t, path, echo)
	for range 64 {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := Do(ctx, path, "status")
	var na *NotAnsweringError
	if !errors.As(err, &na) || !na.Connected || !strings.Contains(err.Error(), "took the connection but gave no answer") {
		t.Fatalf("err = %v, want a NotAnsweringError for a connected socket", err)
	}
}
