package swarm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/trace"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// writeTrace writes a FLIT file of n records, one per tick from tick 100
// (tick step apart), record i's throttle = i/1000 so order is visible.
func writeTrace(t *testing.T, dir, name string, rate uint32, n int, step uint64) string {
	t.Helper()
	recs := make([]trace.Record, n)
	for i := range recs {
		recs[i] = trace.Record{ServerTick: 100 + uint64(i)*step, Throttle: float32(i) / 1000, Buttons: uint32(i)}
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, trace.Encode(rate, recs), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// play calls Control at each time and returns the record index (the
// buttons) of every Input sent, -1 for a call that sent nothing.
func play(p Pattern, times []float64) []int {
	var out []int
	for _, tt := range times {
		var c Control
		if p.Control(tt, &c) {
			out = append(out, int(c.Buttons))
		} else {
			out = append(out, -1)
		}
	}
	return out
}

func ticks(n int, hz float64, jitter func(i int) float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i)/hz + 0.001
		if jitter != nil {
			out[i] += jitter(i)
		}
	}
	return out
}

func loadSet(t *testing.T, path string) *replaySet {
	t.Helper()
	rs, err := loadReplay(context.Background(), TracePrefix+path, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestReplayPacing(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		rate  uint32
		n     int
		step  uint64
		swarm float64
		calls int
		want  []int
	}{
		// Same rate: one record per Input, in order, looping after 4.
		{"60 on 60", 60, 4, 1, 60, 10, []int{0, 1, 2, 3, 0, 1, 2, 3, 0, 1}},
		// A 30 Hz recording under a 60 Hz swarm: wall time × tick rate,
		// so every other call sends nothing.
		{"30 on 60", 30, 3, 1, 60, 8, []int{0, -1, 1, -1, 2, -1, 0, -1}},
		// Records 2 ticks apart at 60 Hz: paced by their ticks, not by
		// index. A loop is the span plus one tick (5 ticks here).
		{"sparse ticks", 60, 3, 2, 60, 8, []int{0, -1, 1, -1, 2, 0, -1, 1}},
		// A 120 Hz swarm on a 60 Hz recording sends each record once.
		{"60 on 120", 60, 2, 1, 120, 6, []int{0, -1, 1, -1, 0, -1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs := loadSet(t, writeTrace(t, dir, strings.ReplaceAll(tc.name, " ", "_")+".flit", tc.rate, tc.n, tc.step))
			got := play(rs.factory(0, 1), ticks(tc.calls, tc.swarm, nil))
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("sent %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReplayCatchesUpInOrder: a late worker iteration does not skip
// records; the next calls send the overdue ones in order.
func TestReplayCatchesUpInOrder(t *testing.T) {
	rs := loadSet(t, writeTrace(t, t.TempDir(), "a.flit", 60, 100, 1))
	times := []float64{0.001, 0.017, 0.1, 0.101, 0.102, 0.103, 0.104, 0.105, 0.106}
	got := play(rs.factory(0, 1), times)
	// At 0.1 s records 0..6 are due (6/60 = 0.1); 7 is due at 0.1167.
	want := []int{0, 1, 2, 3, 4, 5, 6, -1, -1}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %v, want %v", got, want)
	}
	if p := rs.clients[0]; p.skipped != 0 || p.sent != 7 {
		t.Fatalf("skipped %d sent %d", p.skipped, p.sent)
	}
	if c := rs.covered(); c != 7 {
		t.Fatalf("covered %d, want 7", c)
	}
	// A second client from another offset adds its own span; a span
	// longer than the file covers it once.
	q := rs.factory(1, 2).(*replay)
	q.sent = 500
	if c := rs.covered(); c != 100 {
		t.Fatalf("covered %d, want all 100", c)
	}
}

// TestReplaySkipsWhenFarBehind: more than a second behind, the cursor jumps
// to the newest due record and counts the skipped ones.
func TestReplaySkipsWhenFarBehind(t *testing.T) {
	rs := loadSet(t, writeTrace(t, t.TempDir(), "a.flit", 60, 1000, 1))
	got := play(rs.factory(0, 1), []float64{0.001, 3.001})
	if got[1] != 180 {
		t.Fatalf("after a 3 s stall sent record %d, want 180 (the newest due)", got[1])
	}
	if p := rs.clients[0]; p.skipped != 179 {
		t.Fatalf("skipped %d, want 179", p.skipped)
	}
}

// TestReplayKeepalive: a pause in the recording longer than the keepalive
// repeats the last record (counted apart) so the server keeps the client.
func TestReplayKeepalive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pause.flit")
	os.WriteFile(path, trace.Encode(60, []trace.Record{{ServerTick: 0, Buttons: 7}, {ServerTick: 600, Buttons: 8}}), 0o644)
	rs := loadSet(t, path)
	got := play(rs.factory(0, 1), []float64{0.001, 1, 2.5, 3, 10.001})
	if want := []int{7, -1, 7, -1, 8}; !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %v, want %v", got, want)
	}
	if p := rs.clients[0]; p.keepalives != 1 || p.sent != 2 {
		t.Fatalf("keepalives %d sent %d", p.keepalives, p.sent)
	}
}

// TestReplayOffsetsAndFiles: client i replays file i mod n; clients sharing
// a file start at different records; client 0 starts at record 0.
func TestReplayOffsetsAndFiles(t *testing.T) {
	dir := t.TempDir()
	writeTrace(t, dir, "b.flit", 60, 50, 1)
	writeTrace(t, dir, "a.flit", 60, 50, 1)
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("not a trace"), 0o644)
	rs := loadSet(t, dir)
	if len(rs.files) != 2 || filepath.Base(rs.files[0].path) != "a.flit" {
		t.Fatalf("files %v", rs.files)
	}
	starts := map[int]bool{}
	for i := 0; i < 8; i++ {
		p := rs.factory(i, 8).(*replay)
		if want := rs.files[i%2]; p.f != want {
			t.Errorf("client %d replays %s, want %s", i, p.f.path, want.path)
		}
		if i < 2 && p.offset != 0 {
			t.Errorf("client %d offset %d, want 0", i, p.offset)
		}
		if i%2 == 0 {
			starts[p.offset] = true
		}
	}
	if len(starts) != 4 {
		t.Errorf("the 4 clients of a.flit start at %v: want 4 distinct offsets", starts)
	}
}

// TestReplayBadFiles: each unusable input is an error naming the file and
// the problem; a truncated last record is a warning, not an error.
func TestReplayBadFiles(t *testing.T) {
	dir := t.TempDir()
	good := trace.Encode(60, []trace.Record{{ServerTick: 1, Throttle: 0.5}})
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	v2 := append([]byte{}, good...)
	v2[4] = 2
	nan := trace.Encode(60, []trace.Record{{ServerTick: 1, Elevator: float32(nan())}})
	back := trace.Encode(60, []trace.Record{{ServerTick: 5}, {ServerTick: 4}})
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	os.WriteFile(filepath.Join(empty, "x.txt"), nil, 0o644)
	cases := []struct{ path, want string }{
		{write("magic.flit", append([]byte("FLIX"), good[4:]...)), `bad magic "FLIX"`},
		{write("v2.flit", v2), "FLIT version 2: this build reads version 1 only"},
		{write("zero.flit", trace.AppendHeader(nil, 60)), "no records (header only): nothing to replay"},
		{write("rate0.flit", trace.Encode(0, []trace.Record{{}})), "tick rate 0"},
		{write("nan.flit", nan), "record 0: elevator is NaN"},
		{write("back.flit", back), "record 1: server tick 4 is before the previous record's 5"},
		{empty, "holds no .flit file: nothing to replay"},
		{filepath.Join(dir, "missing.flit"), "no such file"},
	}
	for _, c := range cases {
		_, err := loadReplay(context.Background(), TracePrefix+c.path, c.path, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("%s: err %v, want it to name the path and say %q", filepath.Base(c.path), err, c.want)
		}
	}
	trunc := write("trunc.flit", append(append([]byte{}, good...), 1, 2, 3))
	rs := loadSet(t, trunc)
	r := &report.Report{}
	addTraceReport(r, []*replaySet{rs}, nil)
	if len(r.Traces) != 1 || r.Traces[0].TruncatedFiles != 1 || r.Traces[0].Records != 1 ||
		len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "last record truncated (3 byte(s) ignored)") {
		t.Fatalf("truncated file: traces %+v warnings %q", r.Traces, r.Warnings)
	}
}

func nan() float64 { var z float64; return z / z }

func TestMixWithTrace(t *testing.T) {
	m, err := ParseMix("trace:some/dir/x.flit:20, weave:80")
	if err != nil {
		t.Fatal(err)
	}
	if m[0].Name != "trace:some/dir/x.flit" || m[0].Weight != 20 || m.String() != "trace:some/dir/x.flit:20,weave:80" {
		t.Fatalf("mix %+v %q", m, m.String())
	}
	if _, _, err := m.factories(context.Background()); err == nil || !strings.Contains(err.Error(), "some/dir/x.flit") {
		t.Fatalf("factories with a missing trace: %v", err)
	}
}

// naiveSkip is the walk skipTo replaces: record by record to the newest
// due one. It is the reference the bounded version must agree with.
func naiveSkip(p *replay, t float64) {
	for {
		ni, nl := p.following(p.idx, p.lap)
		if p.dueAt(ni, nl) > t {
			return
		}
		p.idx, p.lap = ni, nl
		p.skipped++
	}
}

// TestReplaySkipMatchesTheWalk: on recordings with runs of records on one
// tick, pauses and several passes, the bounded skip lands on the same
// record, pass and skipped count as walking every record.
func TestReplaySkipMatchesTheWalk(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + rng.IntN(300)
		recs := make([]trace.Record, n)
		tick := uint64(rng.IntN(1000))
		for i := range recs {
			if rng.IntN(3) == 0 {
				tick += uint64(rng.IntN(90))
			}
			recs[i] = trace.Record{ServerTick: tick}
		}
		path := filepath.Join(dir, fmt.Sprintf("t%d.flit", trial))
		os.WriteFile(path, trace.Encode(uint32(1+rng.IntN(240)), recs), 0o644)
		rs := loadSet(t, path)
		clients := 1 + rng.IntN(5)
		for c := range clients {
			a := rs.factory(c, clients).(*replay)
			b := *a
			for step := 0; step < 5; step++ {
				at := float64(step)*rng.Float64()*7 + rng.Float64()
				if a.due() < at-maxReplayLag {
					a.skipTo(at)
					naiveSkip(&b, at)
				}
				if a.idx != b.idx || a.lap != b.lap || a.skipped != b.skipped {
					t.Fatalf("trial %d client %d t=%.4f: skip at (%d, lap %d, skipped %d), the walk at (%d, lap %d, skipped %d)",
						trial, c, at, a.idx, a.lap, a.skipped, b.idx, b.lap, b.skipped)
				}
				a.advance()
				b.advance()
			}
		}
	}
}

// TestReplayDenseTraceDoesNotStallAWorker: 1,000 records on one tick of a
// 1 GHz recording are 10^10 passes over the file in 10 s of trace time;
// walking them record by record never ends. One Control step must return
// (the deadline is a hang detector for a loaded machine, not a speed
// figure: BenchmarkReplaySkipDense has the figure).
func TestReplayDenseTraceDoesNotStallAWorker(t *testing.T) {
	recs := make([]trace.Record, 1000)
	for i := range recs {
		recs[i] = trace.Record{ServerTick: 7, Buttons: uint32(i)}
	}
	path := filepath.Join(t.TempDir(), "dense.flit")
	os.WriteFile(path, trace.Encode(1_000_000_000, recs), 0o644)
	rs := loadSet(t, path)
	p := rs.factory(0, 1)
	done := make(chan []int, 1)
	go func() { done <- play(p, []float64{0.001, 10.001}) }()
	select {
	case got := <-done:
		if got[1] != 999 {
			t.Errorf("sent record %d after the stall, want 999 (the newest due)", got[1])
		}
		if sk := rs.clients[0].skipped; sk < 9_000_000_000_000 {
			t.Errorf("skipped %d, want about 10^13 (10^10 passes of 1,000 records)", sk)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("one Control step still running after 60 s: the skip walks the records")
	}
}

// TestReplayCoveredCountsIntervals: covered merges the clients' spans,
// wrapping ones included, without walking records.
func TestReplayCoveredCountsIntervals(t *testing.T) {
	rs := loadSet(t, writeTrace(t, t.TempDir(), "a.flit", 60, 100, 1))
	for i, span := range []struct {
		offset int
		sent   int64
	}{{0, 10}, {5, 10}, {95, 10}, {50, 0}} {
		p := rs.factory(i, 4).(*replay)
		p.offset, p.sent = span.offset, span.sent
	}
	// [0,15) ∪ [95,100) ∪ [0,5): 20 records.
	if got := rs.covered(); got != 20 {
		t.Fatalf("covered %d, want 20", got)
	}
}

func BenchmarkReplaySkipDense(b *testing.B) {
	recs := make([]trace.Record, 2_000_000)
	for i := range recs {
		recs[i] = trace.Record{ServerTick: uint64(i / 500_000)}
	}
	path := filepath.Join(b.TempDir(), "dense.flit")
	os.WriteFile(path, trace.Encode(60, recs), 0o644)
	rs, err := loadReplay(context.Background(), TracePrefix+path, path, nil)
	if err != nil {
		b.Fatal(err)
	}
	p := rs.factory(0, 1).(*replay)
	at := 0.0
	for b.Loop() {
		at += 2
		p.skipTo(at)
	}
}
