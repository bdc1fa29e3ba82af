package trace

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func recs(n int, tick uint64) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = Record{ServerTick: tick + uint64(i), Throttle: float32(i) / float32(n), Buttons: uint32(i % 8)}
	}
	return out
}

// TestRecorderRollsAtCap: a file never exceeds the cap; the next record
// opens trace_peer<id>_<n+1>.flit; together the files hold every record in
// order, and nothing reaches disk until a flush (buffered).
func TestRecorderRollsAtCap(t *testing.T) {
	dir := t.TempDir()
	cap := int64(HeaderSize + 3*RecordSize) // three records a file
	r, err := NewRecorder(dir, 60, cap)
	if err != nil {
		t.Fatal(err)
	}
	in := recs(7, 100)
	for i := range in {
		if err := r.Record(9, &in[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	var got []Record
	for n, want := range []int{3, 3, 1} {
		path := filepath.Join(dir, FileName(9, n))
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() > cap {
			t.Fatalf("%s is %d bytes, over the %d cap", path, st.Size(), cap)
		}
		tr, err := ReadFile(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		if len(tr.Records) != want || tr.TickRate != 60 {
			t.Fatalf("%s: %d records at %d Hz, want %d at 60", path, len(tr.Records), tr.TickRate, want)
		}
		got = append(got, tr.Records...)
	}
	if !reflect.DeepEqual(got, in) {
		t.Fatalf("records across files = %v, want %v", got, in)
	}
	if s := r.Stats(); s.Records != 7 || s.Files != 3 || s.Errors != 0 {
		t.Fatalf("stats %+v, want 7 records in 3 files, no errors", s)
	}
}

// TestRecorderNeverOverwrites: an existing trace_peer<id>_0.flit (an earlier
// run's) is kept; the recorder takes the next free index.
func TestRecorderNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, FileName(2, 0))
	if err := os.WriteFile(old, []byte("earlier run"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := NewRecorder(dir, 60, 0)
	if err != nil {
		t.Fatal(err)
	}
	rec := recordA
	if err := r.Record(2, &rec); err != nil {
		t.Fatal(err)
	}
	if err := r.ClosePeer(2); err != nil {
		t.Fatal(err)
	}
	// The same id again (a transport reuses ids): a new file, not an append.
	rec2 := recordB
	if err := r.Record(2, &rec2); err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(old); string(b) != "earlier run" {
		t.Fatalf("existing file overwritten: %q", b)
	}
	for n, want := range map[int]Record{1: rec, 2: rec2} {
		tr, err := ReadFile(context.Background(), filepath.Join(dir, FileName(2, n)))
		if err != nil || len(tr.Records) != 1 || tr.Records[0] != want {
			t.Fatalf("trace_peer2_%d.flit: %+v, %v; want one record %+v", n, tr, err, want)
		}
	}
	if err := r.Record(2, &rec); err == nil {
		t.Fatal("Record after Close must fail")
	}
}

// TestRecorderBuffers: records are buffered, not written per Input, and
// Close makes them durable.
func TestRecorderBuffers(t *testing.T) {
	dir := t.TempDir()
	r, err := NewRecorder(dir, 60, 0)
	if err != nil {
		t.Fatal(err)
	}
	in := recs(10, 0)
	for i := range in {
		if err := r.Record(1, &in[i]); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, FileName(1, 0))
	if st, err := os.Stat(path); err == nil && st.Size() != 0 {
		t.Fatalf("before a flush nothing should be written (buffered): %d bytes", st.Size())
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(path); st.Size() != HeaderSize+10*RecordSize {
		t.Fatalf("after Close: %d bytes, want %d", st.Size(), HeaderSize+10*RecordSize)
	}
}

func TestNewRecorderRejects(t *testing.T) {
	if _, err := NewRecorder(t.TempDir(), 60, 20); err == nil {
		t.Error("a cap below header + one record must be refused")
	}
	if _, err := NewRecorder(t.TempDir(), 0, 0); err == nil {
		t.Error("tick rate 0 must be refused")
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := NewRecorder(f, 60, 0); err == nil {
		t.Error("a directory that is a file must be refused")
	}
}

// BenchmarkRecord is the per-Input cost the server's tick pays.
func BenchmarkRecord(b *testing.B) {
	r, err := NewRecorder(b.TempDir(), 60, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	rec := recordA
	for i := 0; b.Loop(); i++ {
		rec.ServerTick = uint64(i)
		if err := r.Record(uint32(i%128), &rec); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRecorderChunks: records spanning many chunks and a roll land intact
// and in order (the writer goroutine writes the chunks in queue order).
func TestRecorderChunks(t *testing.T) {
	dir := t.TempDir()
	cap := int64(HeaderSize + 2000*RecordSize)
	r, err := NewRecorder(dir, 60, cap)
	if err != nil {
		t.Fatal(err)
	}
	in := recs(5000, 7)
	for i := range in {
		for p := uint32(0); p < 3; p++ {
			if err := r.Record(p, &in[i]); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for p := uint32(0); p < 3; p++ {
		var got []Record
		for n := 0; n < 3; n++ {
			tr, err := ReadFile(context.Background(), filepath.Join(dir, FileName(p, n)))
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, tr.Records...)
		}
		if !reflect.DeepEqual(got, in) {
			t.Fatalf("peer %d: %d records back, want the %d in order", p, len(got), len(in))
		}
	}
	if s := r.Stats(); s.Records != 15000 || s.Files != 9 || s.Errors != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// TestRecorderCountsWhatWasNeverWritten: records whose file could not be
// created are accepted but lost, and the totals say so: trace-stop must not
// report records that never reached a file.
func TestRecorderCountsWhatWasNeverWritten(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	r, err := NewRecorder(dir, 60, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil { // every create now fails
		t.Fatal(err)
	}
	for i := range 5 {
		r.Record(1, &Record{ServerTick: uint64(i)})
	}
	if err := r.Close(); err == nil {
		t.Fatal("Close reported no error")
	}
	st := r.Stats()
	if st.Records != 5 || st.Written != 0 || st.Lost != 5 || st.Errors < 1 {
		t.Fatalf("stats %+v: want 5 accepted, 0 written, 5 lost", st)
	}
	// And a good recording: everything written, nothing lost.
	r, _ = NewRecorder(t.TempDir(), 60, 0)
	for i := range 700 { // more than one chunk
		r.Record(2, &Record{ServerTick: uint64(i)})
	}
	r.Close()
	if st := r.Stats(); st.Written != 700 || st.Lost != 0 || st.Records != 700 {
		t.Fatalf("stats %+v: want 700 written", st)
	}
}
