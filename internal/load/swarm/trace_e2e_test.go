//go:build linux

package swarm_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/cli"
	"github.com/scalegate/scalegate/internal/load/trace"
	"github.com/scalegate/scalegate/internal/reference/server"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/testkit/livetest/liveserver"
)

// recordingServer starts the reference server recording into a fresh
// directory, which it returns.
func recordingServer(t *testing.T) (*liveserver.Process, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "traces")
	return startRefServer(t, 16, func(c *server.Config) { c.Trace.InputTraceDir = dir }), dir
}

// recordings stops the server (its shutdown flushes the files) and reads
// every recording it made, in name order.
func recordings(t *testing.T, s *liveserver.Process, dir string) []*trace.Trace {
	t.Helper()
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "*.flit"))
	var out []*trace.Trace
	for _, p := range paths {
		tr, err := trace.ReadFile(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		if tr.TruncatedBytes != 0 {
			t.Fatalf("%s: %d truncated bytes after a clean shutdown", p, tr.TruncatedBytes)
		}
		out = append(out, tr)
	}
	return out
}

type controls struct {
	thr, elev, ail, rud float32
	buttons             uint32
}

func ctlOf(r trace.Record) controls {
	return controls{r.Throttle, r.Elevator, r.Aileron, r.Rudder, r.Buttons}
}

// replayedExactly fails unless got's controls and buttons are want's, in
// order, from want's first record, looping (tick numbers aside), and got
// holds all of want at least once.
func replayedExactly(t *testing.T, want, got *trace.Trace) {
	t.Helper()
	n := len(want.Records)
	if len(got.Records) < n {
		t.Fatalf("second recording has %d records, fewer than the %d replayed", len(got.Records), n)
	}
	for i, r := range got.Records {
		if w := want.Records[i%n]; ctlOf(r) != ctlOf(w) {
			t.Fatalf("second recording record %d = %+v, want record %d of the first = %+v", i, ctlOf(r), i%n, ctlOf(w))
		}
	}
}

func replayOf(t *testing.T, r *report.Report) report.TraceReplay {
	t.Helper()
	if len(r.Traces) != 1 {
		t.Fatalf("report traces %+v, want one entry", r.Traces)
	}
	return r.Traces[0]
}

// TestTraceRoundTrip: record a real swarm run, replay the recording with
// one client against a recording server, and the second recording's
// controls and buttons equal the first's, in order.
func TestTraceRoundTrip(t *testing.T) {
	// Recorded at 20 Inputs a second and replayed by a 60 Hz swarm: three
	// loop iterations per record, so a replay slowed by a loaded machine
	// still keeps the recording's pace (a client more than 1 s behind
	// would skip records, and the test would say so). That headroom lets
	// it run beside the package's other live tests.
	t.Parallel()
	srv, dir := recordingServer(t)
	code, _, _ := swarmCLI(t, 60*time.Second, "127.0.0.1", srv.Port, "--clients", "1", "--duration", "4", "--rate", "20", "--pattern", "weapons")
	if code != 0 {
		t.Fatalf("recording run exit %d", code)
	}
	first := recordings(t, srv, dir)
	if len(first) != 1 || len(first[0].Records) < 40 {
		t.Fatalf("first recording: %d file(s), want 1 with ≥ 40 records", len(first))
	}
	orig := first[0]
	distinct := map[controls]bool{}
	var buttons uint32
	for _, r := range orig.Records {
		distinct[ctlOf(r)] = true
		buttons |= r.Buttons
	}
	if len(distinct) < len(orig.Records)/2 || buttons&1 == 0 {
		t.Fatalf("first recording is not varied enough to prove anything: %d distinct of %d, buttons %b", len(distinct), len(orig.Records), buttons)
	}
	src := filepath.Join(t.TempDir(), "first.flit")
	if err := os.WriteFile(src, trace.Encode(orig.TickRate, orig.Records), 0o644); err != nil {
		t.Fatal(err)
	}

	srv2, dir2 := recordingServer(t)
	dur := orig.Duration() + 1.5 // the whole recording, then part of a second pass
	code, rep, _ := swarmCLI(t, 60*time.Second, "127.0.0.1", srv2.Port, "--clients", "1",
		"--duration", strconv.FormatFloat(dur, 'f', 2, 64), "--pattern", "trace:"+src)
	if code != 0 {
		t.Fatalf("replay run exit %d", code)
	}
	second := recordings(t, srv2, dir2)
	if len(second) != 1 {
		t.Fatalf("second recording: %d files, want 1", len(second))
	}
	replayedExactly(t, orig, second[0])
	// The few Inputs in flight when the client disconnects are lost (ENet
	// drops a peer's undelivered packets on disconnect): the report may
	// count a handful more than the server recorded, never fewer.
	tr := replayOf(t, rep)
	if lost := tr.RecordsReplayed - int64(len(second[0].Records)); tr.ClientsReplayed != 1 || tr.RecordsSkipped != 0 || lost < 0 || lost > 10 {
		t.Fatalf("report traces %+v; the server recorded %d records", tr, len(second[0].Records))
	}
}

// TestForeignTraceReplays: files written here byte by byte from the
// documented layout (not by internal/load/trace; a foreign recorder, at 30 ticks
// a second with gaps) replay from a directory: client i plays file i mod 2,
// and each file comes back out of the server in order.
func TestForeignTraceReplays(t *testing.T) {
	// Parallel: it judges counts and outcomes, not rates, so another test
	// beside it cannot change its verdict.
	t.Parallel()
	dir := t.TempDir()
	want := map[string]*trace.Trace{}
	for f, name := range []string{"a.flit", "b.flit"} {
		b := []byte("FLIT")
		b = binary.LittleEndian.AppendUint16(b, 1)
		b = binary.LittleEndian.AppendUint32(b, 30)
		var recs []trace.Record
		for i := range 40 {
			r := trace.Record{
				ServerTick: uint64(5000 + i + i/10), // a skipped tick every 10
				Throttle:   float32(i) / 40, Elevator: float32(math.Sin(float64(i+f))) / 2,
				Aileron: -float32(i%7) / 7, Rudder: float32(f) - 0.5, Buttons: uint32((i + f) % 8),
			}
			recs = append(recs, r)
			b = binary.LittleEndian.AppendUint64(b, r.ServerTick)
			for _, v := range []float32{r.Throttle, r.Elevator, r.Aileron, r.Rudder} {
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
			}
			b = binary.LittleEndian.AppendUint32(b, r.Buttons)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		want[name] = &trace.Trace{Header: trace.Header{Version: 1, TickRate: 30}, Records: recs}
	}
	srv, out := recordingServer(t)
	code, rep, _ := swarmCLI(t, 60*time.Second, "127.0.0.1", srv.Port, "--clients", "2", "--ramp-ms", "0",
		"--duration", "2.2", "--pattern", "trace:"+dir)
	if code != 0 {
		t.Fatalf("replay run exit %d", code)
	}
	got := recordings(t, srv, out)
	if len(got) != 2 {
		t.Fatalf("%d recordings, want one per client", len(got))
	}
	// Which peer id a client got is the transport's business: match by the
	// first record.
	for _, g := range got {
		var w *trace.Trace
		for _, cand := range want {
			if len(g.Records) > 0 && ctlOf(g.Records[0]) == ctlOf(cand.Records[0]) {
				w = cand
			}
		}
		if w == nil {
			t.Fatalf("a recording starts with %+v, neither file's first record", g.Records[0])
		}
		replayedExactly(t, w, g)
	}
	if tr := replayOf(t, rep); tr.ClientsReplayed != 2 || len(tr.Files) != 2 || tr.Records != 80 {
		t.Fatalf("report traces %+v", tr)
	}
}

// TestTraceBadFileExit4: an unreplayable recording stops the swarm before
// it connects, with exit 4 and the file named.
func TestTraceBadFileExit4(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v2.flit")
	os.WriteFile(path, []byte("FLIT\x02\x00\x3c\x00\x00\x00"), 0o644)
	code, errs := swarmCLINoReport(t, "127.0.0.1", "9", "--pattern", "trace:"+path)
	if code != int(exitcode.InvalidProfile) || !contains(errs, path) || !contains(errs, "FLIT version 2") {
		t.Fatalf("exit %d stderr %q; want 4 naming %s and the version", code, errs, path)
	}
}

// swarmCLINoReport runs `scalegate swarm` for a run expected to stop before
// writing a report; it returns the exit code and stderr.
func swarmCLINoReport(t *testing.T, args ...string) (int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &cli.Env{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }}
	code := cli.Run(context.Background(), env, append([]string{"swarm"}, args...))
	return code, errb.String()
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
