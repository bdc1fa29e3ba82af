package metricsfile

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// TestFileIsReadByTheGate: what the examples write parses as a metrics
// file, its tick rate comes from the tick start times, and the wire rate
// kept is the one at the highest peer count (a drained server does not
// report 0), per client.
func TestFileIsReadByTheGate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.json")
	f := New(path, "udp")
	start := time.Now()
	for i := range 700 { // more than the window: the ring wraps
		f.Tick(start.Add(time.Duration(i)*time.Second/60), time.Millisecond)
	}
	f.lastAt = time.Now().Add(-time.Second)
	f.CountOut(40000) // 40 KB in the last second with 4 peers: 10 KB/s each
	if err := f.Write(4, 4); err != nil {
		t.Fatal(err)
	}
	f.lastAt = time.Now().Add(-time.Second)
	f.CountOut(100) // then drained: one peer left, which is not the peak
	if err := f.Write(1, 1); err != nil {
		t.Fatal(err)
	}
	st, raw, err := report.ReadServerTick(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.TickMs.P99 != 1 || st.Transport != "udp" {
		t.Errorf("tick_ms %+v transport %q", st.TickMs, st.Transport)
	}
	num := func(k string) float64 {
		var v float64
		if err := json.Unmarshal(raw[k], &v); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		return v
	}
	if hz := num("tick_hz"); hz < 59.9 || hz > 60.1 {
		t.Errorf("tick_hz %v, want 60", hz)
	}
	if kbs, peers := num("wire_out_kbs_per_client"), num("wire_peers"); kbs < 9 || kbs > 11 || peers != 4 {
		t.Errorf("wire_out_kbs_per_client %v at %v peers, want about 10 at the 4-peer peak", kbs, peers)
	}
}

// TestCountsOnlyWhatTheServerTracks: inputs_accepted and byes are written
// by a server that counts them (from 0), and left out by one that does
// not: a server that never counted inputs must read as missing, never as
// having applied none.
func TestCountsOnlyWhatTheServerTracks(t *testing.T) {
	for _, tc := range []struct {
		name         string
		track        func(*File)
		inputs, byes string // as written; "" absent
	}{
		{"untracked", func(*File) {}, "", ""},
		{"inputs", func(f *File) { f.TrackInputs() }, "3", ""},
		{"both", func(f *File) { f.TrackInputs(); f.TrackByes() }, "3", "2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.json")
			f := New(path, "udp")
			tc.track(f)
			for range 3 {
				f.CountInputAccepted()
			}
			f.CountBye()
			f.CountBye()
			if err := f.Write(1, 1); err != nil {
				t.Fatal(err)
			}
			_, raw, err := report.ReadServerTick(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := string(raw["inputs_accepted"]); got != tc.inputs {
				t.Errorf("inputs_accepted %q, want %q", got, tc.inputs)
			}
			if got := string(raw["byes"]); got != tc.byes {
				t.Errorf("byes %q, want %q", got, tc.byes)
			}
		})
	}
}
