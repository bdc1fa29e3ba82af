package server

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/load/trace"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// TestRecordsAcceptedInputs: with [trace] input_trace_dir set, each peer's
// accepted Inputs land in trace_peer<id>_0.flit in order, as applied
// (clamped), stamped with the tick that accepted them; a malformed Input
// (NaN) and a reordered older one are not recorded; files are flushed at
// shutdown; the metrics file counts what was accepted and recorded.
func TestRecordsAcceptedInputs(t *testing.T) {
	dir := t.TempDir()
	tdir := filepath.Join(dir, "traces")
	ts := newTestServer(t, func(c *Config) {
		c.Trace.InputTraceDir = tdir
		c.Metrics.TickJSONPath = filepath.Join(dir, "m.json")
	})
	for p := transport.PeerID(1); p <= 2; p++ {
		ts.h.connect(p, "127.0.0.1", proto.ConnectData)
		ts.h.recv(p, joinMsg(t, "x"))
	}
	ts.step() // tick 0: joins
	in := func(seq uint32, c proto.Input) []byte {
		c.Seq = seq
		return proto.AppendInput(nil, &c)
	}
	ts.h.recv(1, in(1, proto.Input{Throttle: 0.5, Elevator: 0.25, Aileron: -0.5, Rudder: 0.125, Buttons: 1}))
	ts.h.recv(2, in(1, proto.Input{Throttle: 1}))
	ts.step()                                                                                       // tick 1
	ts.h.recv(1, in(2, proto.Input{Throttle: 7, Elevator: -3, Aileron: 2, Rudder: -9, Buttons: 6})) // clamped
	ts.h.recv(1, in(3, proto.Input{Throttle: float32(math.NaN())}))                                 // malformed
	ts.h.recv(1, in(1, proto.Input{Throttle: 0.1}))                                                 // older: dropped
	ts.step()                                                                                       // tick 2
	if err := ts.shutdown(); err != nil {
		t.Fatal(err)
	}
	tr, err := trace.ReadFile(context.Background(), filepath.Join(tdir, trace.FileName(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	want := []trace.Record{
		{ServerTick: 1, Throttle: 0.5, Elevator: 0.25, Aileron: -0.5, Rudder: 0.125, Buttons: 1},
		{ServerTick: 2, Throttle: 1, Elevator: -1, Aileron: 1, Rudder: -1, Buttons: 6},
	}
	if tr.TickRate != TickHz || len(tr.Records) != len(want) || tr.TruncatedBytes != 0 {
		t.Fatalf("peer 1 trace: %d Hz, %d records, %d truncated bytes; want %d Hz, %d records", tr.TickRate, len(tr.Records), tr.TruncatedBytes, TickHz, len(want))
	}
	for i := range want {
		if tr.Records[i] != want[i] {
			t.Errorf("record %d = %+v, want %+v", i, tr.Records[i], want[i])
		}
	}
	tr2, err := trace.ReadFile(context.Background(), filepath.Join(tdir, trace.FileName(2, 0)))
	if err != nil || len(tr2.Records) != 1 || tr2.Records[0].Throttle != 1 {
		t.Fatalf("peer 2 trace: %+v %v", tr2, err)
	}
	st, _, err := report.ReadServerTick(filepath.Join(dir, "m.json"))
	if err != nil {
		t.Fatal(err)
	}
	if st.InputsAccepted == nil || *st.InputsAccepted != 3 || st.TraceRecords == nil || *st.TraceRecords != 3 ||
		*st.TraceFiles != 2 || *st.TraceErrors != 0 {
		t.Fatalf("metrics inputs_accepted %v trace_records %v files %v errors %v; want 3, 3, 2, 0",
			st.InputsAccepted, st.TraceRecords, st.TraceFiles, st.TraceErrors)
	}
}

// TestRecordingOffHasNoTraceFields: without a trace dir nothing is written
// and the metrics file carries inputs_accepted but no trace_* fields.
func TestRecordingOffHasNoTraceFields(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, func(c *Config) { c.Metrics.TickJSONPath = filepath.Join(dir, "m.json") })
	ts.step()
	if err := ts.shutdown(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "m.json"))
	if !strings.Contains(string(b), `"inputs_accepted": 0`) || strings.Contains(string(b), "trace_") {
		t.Fatalf("metrics file:\n%s", b)
	}
}

// TestTraceDirUnusable: a trace dir that cannot be created is a config
// error naming the key.
func TestTraceDirUnusable(t *testing.T) {
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	cfg := DefaultConfig()
	cfg.Trace.InputTraceDir = filepath.Join(f, "sub")
	_, err := New(cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "trace.input_trace_dir") {
		t.Fatalf("New: %v, want a config error naming trace.input_trace_dir", err)
	}
}

func TestTraceConfigKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.toml")
	os.WriteFile(path, []byte("[trace]\ninput_trace_dir = \"tr\"\nmax_file_bytes = 4096\n"), 0o644)
	cfg, err := LoadConfig(path)
	if err != nil || cfg.Trace.InputTraceDir != "tr" || cfg.Trace.MaxFileBytes != 4096 {
		t.Fatalf("LoadConfig: %+v %v", cfg.Trace, err)
	}
	os.WriteFile(path, []byte("[trace]\nmax_file_bytes = 20\n"), 0o644)
	if _, err := LoadConfig(path); err == nil || !strings.Contains(err.Error(), "trace.max_file_bytes") {
		t.Fatalf("a cap below one record: %v", err)
	}
}

// TestIgnoreInputsFault: the fault drops Inputs unapplied, uncounted and
// unrecorded, and is listed as active.
func TestIgnoreInputsFault(t *testing.T) {
	dir := t.TempDir()
	ts := newTestServer(t, func(c *Config) {
		c.Faults.IgnoreInputs = true
		c.Trace.InputTraceDir = dir
	})
	ts.h.connect(1, "127.0.0.1", proto.ConnectData)
	ts.h.recv(1, joinMsg(t, "x"))
	ts.step()
	ts.h.recv(1, inputMsg(1))
	ts.step()
	if ctl := ts.sim.World.At(ts.peers[1].slot).Ctl; math.Abs(ctl.Throttle-0.8) < 1e-6 || ts.met.inputsAccepted != 0 || ts.met.malformed != 0 {
		t.Fatalf("throttle %v accepted %d malformed %d", ctl.Throttle, ts.met.inputsAccepted, ts.met.malformed)
	}
	if s := ts.rec.Stats(); s.Records != 0 {
		t.Fatalf("recorded %d", s.Records)
	}
	if a := ts.cfg.Faults.Active(); len(a) != 1 || a[0] != "ignore_inputs=true" {
		t.Fatalf("active %v", a)
	}
}
