package runner

import (
	"encoding/json"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// TestFileCounts: the witness takes a metrics file's counters from its
// cumulative block, falls back to the top-level counts a file without one
// carries, and leaves uncounted figures nil (never 0: a server that does
// not count inputs must not read as one that accepted none).
func TestFileCounts(t *testing.T) {
	for _, tc := range []struct {
		name                string
		doc                 string
		inputs, peerS, tick string // "" = nil
	}{
		{"cumulative", `{"ticks_total": 900, "inputs_accepted": 5, "cumulative": {"uptime_s": 15, "ticks": 901, "peer_s": 12.5, "inputs_accepted": 7}}`, "7", "12.5", "901"},
		{"top-level only", `{"ticks_total": 900, "inputs_accepted": 5}`, "5", "", "900"},
		{"counts nothing", `{"tick_hz": 60}`, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The fields the witness reads, decoded as ParseServerTick
			// does (which also demands the fields every gate needs).
			var st report.ServerTick
			var raw map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tc.doc), &st); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.doc), &raw); err != nil {
				t.Fatal(err)
			}
			c := fileCounts(&st, raw)
			for _, f := range []struct {
				what string
				got  *float64
				want string
			}{{"inputs", c.inputs, tc.inputs}, {"peer_s", c.peerS, tc.peerS}, {"ticks", c.ticks, tc.tick}} {
				got := ""
				if f.got != nil {
					b, _ := json.Marshal(*f.got)
					got = string(b)
				}
				if got != f.want {
					t.Errorf("%s = %q, want %q", f.what, got, f.want)
				}
			}
		})
	}
}

// TestPromCounts: inputs accepted from a counter's increase (scaled) or a
// monotonic gauge's growth over the window; a missing series stays nil.
func TestPromCounts(t *testing.T) {
	p := func(v float64) *float64 { return &v }
	for _, tc := range []struct {
		name string
		b    *promsource.Block
		want *float64
	}{
		{"counter", &promsource.Block{Details: map[string]*promsource.Detail{"inputs_accepted": {Kind: promsource.Counter, Increase: p(120), Scale: 1}}}, p(120)},
		{"gauge", &promsource.Block{Details: map[string]*promsource.Detail{"inputs_accepted": {Kind: promsource.Gauge, Min: p(1000), Max: p(1480), Scale: 1}}}, p(480)},
		{"missing", &promsource.Block{Details: map[string]*promsource.Detail{"inputs_accepted": {Kind: promsource.Counter}},
			Missing: map[string]string{"inputs_accepted": "no series x"}}, nil},
		{"not mapped", &promsource.Block{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := promCounts(tc.b).inputs
			if (got == nil) != (tc.want == nil) || (got != nil && *got != *tc.want) {
				t.Fatalf("inputs = %v, want %v", got, tc.want)
			}
		})
	}
}
