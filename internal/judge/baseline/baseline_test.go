package baseline

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// v1 is a version-1 entry exactly as the committed file has it.
const v1 = `{
  "schema_version": 1,
  "comment": "payload kbs and wire_kbs keyed PROFILE/PATTERN",
  "baselines": {
    "pr/weave": {"kbs": 71.291, "wire_kbs": 71.944, "bytes_per_entity": 24.455,
      "transport": "enet", "clients": 64, "updated_at": "2026-12-01T03:17:26Z", "git_head": "278ec255"}
  }
}`

// TestDecodeVersion1: an old file loads unchanged, every figure a
// single-run reference.
func TestDecodeVersion1(t *testing.T) {
	f, err := Decode([]byte(v1))
	if err != nil {
		t.Fatal(err)
	}
	e := f.Entries["pr/weave"]
	if f.SchemaVersion != 1 || e.KBs != 71.291 || e.Runs != 0 || e.Spread != nil || e.DescribeRuns() != "1 run" {
		t.Fatalf("decoded %+v", f)
	}
	for fig, want := range map[string]float64{FigureKBs: 71.291, FigureWireKBs: 71.944, FigureBytesPerEntity: 24.455} {
		ref, ok := e.Reference(fig)
		if !ok || ref.Value != want || ref.Spread != nil {
			t.Errorf("%s: %+v %v, want %v without spread", fig, ref, ok, want)
		}
	}
	if _, ok := e.Reference("tick_ms_p99"); ok {
		t.Error("a figure the entry never recorded must be missing")
	}
}

// TestCommittedBaselineLoads: the repository's own file decodes.
func TestCommittedBaselineLoads(t *testing.T) {
	raw, err := os.ReadFile("../../../baselines/scale-gate-baseline.json")
	if err != nil {
		t.Fatal(err)
	}
	f, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Entries) == 0 {
		t.Fatal("no entries")
	}
}

// TestVersion2RoundTrip: an entry recorded from 5 runs encodes, decodes
// and re-encodes byte-identically; the scalars are the medians, so an
// older reader (which ignores "spread", "runs" and "host") compares
// against the median.
func TestVersion2RoundTrip(t *testing.T) {
	e := Entry{Transport: "enet", Clients: 64, UpdatedAt: "2026-12-01T16:00:00Z", GitHead: "abc", Host: "runner-1"}
	for fig, s := range map[string][]float64{
		FigureKBs:            {71.2, 71.4, 71.3, 70.9, 71.31},
		FigureWireKBs:        {72, 72.2, 71.9, 72.1, 72.05},
		FigureBytesPerEntity: {24.41, 24.44, 24.45, 24.43, 24.42},
		"tick_ms_p99":        {5.1, 7.9, 4.2, 21.6, 6.3},
	} {
		if err := e.Record(fig, s); err != nil {
			t.Fatal(err)
		}
	}
	f := &File{SchemaVersion: SchemaVersion, Entries: map[string]Entry{"pr/weave": e}}
	raw, err := Encode(f)
	if err != nil {
		t.Fatal(err)
	}
	back, err := Decode(raw)
	if err != nil {
		t.Fatalf("%v\n%s", err, raw)
	}
	again, _ := Encode(back)
	if !bytes.Equal(raw, again) || !reflect.DeepEqual(back, f) {
		t.Errorf("round trip differs:\n%s\n---\n%s", raw, again)
	}
	got := back.Entries["pr/weave"]
	if got.KBs != 71.3 || got.Runs != 5 || *got.BytesPerEntity != 24.43 || got.DescribeRuns() != "median of 5 runs on runner-1" {
		t.Errorf("entry %+v", got)
	}
	s := got.Spread["tick_ms_p99"]
	// sorted 4.2 5.1 6.3 7.9 21.6: median 6.3; |x−6.3| = 1.2 2.1 0 1.6 15.3 → MAD 1.6
	if s.N != 5 || s.Median != 6.3 || s.MAD != 1.6 || s.Min != 4.2 || s.Max != 21.6 {
		t.Errorf("tick spread %+v", s)
	}
	// 24.44 − 24.43 in binary is 0.010000000000001563: written tidy.
	if !bytes.Contains(raw, []byte(`"mad": 0.01,`)) {
		t.Errorf("bytes_per_entity MAD not written as 0.01:\n%s", raw)
	}
	// What a version-1 reader sees: the old struct's fields only.
	var old struct {
		Entries map[string]struct {
			KBs     float64 `json:"kbs"`
			WireKBs float64 `json:"wire_kbs"`
		} `json:"baselines"`
	}
	if err := json.Unmarshal(raw, &old); err != nil || old.Entries["pr/weave"].KBs != 71.3 || old.Entries["pr/weave"].WireKBs != 72.05 {
		t.Errorf("an older reader gets %+v (%v), want the medians", old, err)
	}
}

// TestDecodeErrors: a hand-edited spread or an unknown version is a clear
// error naming the key and field, never a silently moved limit.
func TestDecodeErrors(t *testing.T) {
	entry := func(extra string) string {
		return `{"schema_version": 2, "baselines": {"pr/weave": {"kbs": 71.3, "wire_kbs": 72, "runs": 3` + extra + `}}}`
	}
	good := `, "spread": {"kbs": {"n": 3, "median": 71.3, "mad": 0.1, "min": 71.2, "max": 71.5, "samples": [71.2, 71.3, 71.5]}}`
	if _, err := Decode([]byte(entry(good))); err != nil {
		t.Fatalf("the good entry: %v", err)
	}
	cases := []struct {
		name, raw, want string
	}{
		{"newer version", `{"schema_version": 3, "baselines": {}}`, "schema_version 3"},
		{"median edited", entry(strings.Replace(good, `"median": 71.3`, `"median": 70`, 1)), `baselines["pr/weave"]: spread.kbs.median is 70`},
		{"mad edited", entry(strings.Replace(good, `"mad": 0.1`, `"mad": 0.5`, 1)), "spread.kbs.mad"},
		{"n edited", entry(strings.Replace(good, `"n": 3`, `"n": 4`, 1)), "spread.kbs.n"},
		{"scalar not the median", strings.Replace(entry(good), `"kbs": 71.3,`, `"kbs": 71.9,`, 1), "kbs is 71.9 but spread.kbs.median is 71.3"},
		{"too few samples", entry(strings.Replace(strings.Replace(good, `[71.2, 71.3, 71.5]`, `[71.2, 71.3]`, 1), `"n": 3`, `"n": 2`, 1)), "at least 3"},
		{"null sample", entry(strings.Replace(good, `71.5]`, `null]`, 1)), "spread.kbs"},
		{"runs disagree", strings.Replace(entry(good), `"runs": 3`, `"runs": 4`, 1), "runs is 4"},
		{"bpe spread without scalar", entry(`, "spread": {"bytes_per_entity": {"n": 3, "median": 2, "mad": 1, "min": 1, "max": 3, "samples": [1, 2, 3]}}`), "bytes_per_entity is missing"},
		{"trailing data", v1 + "{}", "trailing"},
		{"not JSON", `{"baselines": [`, "unexpected EOF"},
	}
	for _, c := range cases {
		_, err := Decode([]byte(c.raw))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
	if f, err := Decode([]byte(`{"baselines": {}}`)); err != nil || f.SchemaVersion != 1 {
		t.Errorf("no schema_version: %v, %v; want version 1", f, err)
	}
}

func TestRecordErrors(t *testing.T) {
	var e Entry
	if err := e.Record(FigureKBs, []float64{1, 2}); err == nil || !strings.Contains(err.Error(), "at least 3") {
		t.Errorf("2 runs: %v", err)
	}
	if err := e.Record(FigureKBs, []float64{1, math.NaN(), 3}); err == nil || !strings.Contains(err.Error(), "run 2") {
		t.Errorf("a missing run: %v", err)
	}
	if err := e.Record("tick_ms_p99", []float64{5}); err == nil {
		t.Error("a single-run timing figure has nowhere to go and must be refused")
	}
	if err := e.Record(FigureKBs, []float64{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if err := e.Record(FigureWireKBs, []float64{1, 2, 3, 4}); err == nil || !strings.Contains(err.Error(), "3 runs") {
		t.Errorf("figures from different run counts: %v", err)
	}
	// Back to one run: the spread goes, the scalar is the run's.
	e = Entry{}
	if err := e.Record(FigureKBs, []float64{70}); err != nil || e.KBs != 70 || e.Runs != 1 || len(e.Spread) != 0 {
		t.Errorf("single run: %+v %v", e, err)
	}
}

// TestLimit works limits from hand-made samples.
func TestLimit(t *testing.T) {
	spread := func(x ...float64) *Spread {
		s, err := NewSpread(x)
		if err != nil {
			t.Fatal(err)
		}
		return &s
	}
	// Bytes: 10 runs within ±0.1 of 71.3: MAD 0.05, σ̂ 0.0741, 5σ̂ 0.371;
	// 10 % of 71.3 = 7.13 is the margin.
	bytesRuns := spread(71.2, 71.25, 71.3, 71.3, 71.35, 71.3, 71.25, 71.4, 71.3, 71.35)
	// Timing: tick p99 ms over 10 runs; median 6.25, |x−6.25| sorted
	// .05 .05 .35 .45 .45 .65 .75 1.15 1.75 14.75 → MAD 0.55, σ̂ 0.8154,
	// 5σ̂ 4.077 against 10 % = 0.625; the 21 ms run is 14.75 over: the worst
	// run sets the margin.
	tickRuns := spread(5.1, 5.8, 6.3, 21, 5.6, 6.6, 8, 6.2, 6.7, 5.5)
	tickNoOutlier := spread(5.1, 5.8, 6.3, 6.9, 5.6, 6.6, 8, 6.2, 6.7, 5.5)
	cases := []struct {
		name  string
		ref   Reference
		dir   gatetable.Direction
		tol   float64
		bound float64
		by    string
		text  string
	}{
		{"single run", Reference{Value: 71.291}, gatetable.AtMost, 10, 78.4201, "tolerance", "≤ 78.42 (baseline 71.29 +10%)"},
		{"bytes from 10 runs", Reference{Value: bytesRuns.Median, Spread: bytesRuns}, gatetable.AtMost, 10, 78.43, "tolerance",
			"≤ 78.43 (median 71.30 of 10 runs + max(10 % = 7.13, 5 × σ̂ 0.07 = 0.37, worst run +0.10))"},
		{"timing, worst run", Reference{Value: tickRuns.Median, Spread: tickRuns}, gatetable.AtMost, 10, 21, "worst run", ""},
		// sorted 5.1 5.5 5.6 5.8 6.2 6.3 6.6 6.7 6.9 8: median 6.25; |x−6.25|
		// sorted .05 .35 .35 .45 .45 .65 .65 .75 1.15 1.75 → MAD .55, σ̂ .8154,
		// 5σ̂ = 4.0771 > 8 − 6.25 = 1.75 > 0.625
		{"timing, spread", Reference{Value: tickNoOutlier.Median, Spread: tickNoOutlier}, gatetable.AtMost, 10, 6.25 + 5*0.55*1.482602218505602, "spread", ""},
		// tick-Hz, higher is better: 59.9 median, MAD 0.1: 5σ̂ = 0.741 below; 1 % = 0.599
		{"at least", Reference{Value: 59.9, Spread: spread(59.8, 59.9, 60, 59.9, 59.7)}, gatetable.AtLeast, 1, 59.9 - 5*0.1*1.482602218505602, "spread", ""},
	}
	for _, c := range cases {
		l, err := NewLimit(c.ref, c.dir, c.tol, DefaultK)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(l.Bound-c.bound) > 1e-3 || l.By != c.by {
			t.Errorf("%s: bound %v by %s, want %v by %s (%+v)", c.name, l.Bound, l.By, c.bound, c.by, l)
		}
		if c.text != "" && l.Text() != c.text {
			t.Errorf("%s: Text %q, want %q", c.name, l.Text(), c.text)
		}
		if !l.Holds(l.Bound) || l.Holds(l.Bound+map[gatetable.Direction]float64{gatetable.AtMost: 0.01, gatetable.AtLeast: -0.01}[c.dir]) {
			t.Errorf("%s: Holds is not the bound's side", c.name)
		}
	}
	// The worst run holds by construction: a recorded run never fails its own limit.
	l, _ := NewLimit(Reference{Value: tickRuns.Median, Spread: tickRuns}, gatetable.AtMost, 0, 0)
	if !l.Holds(tickRuns.Max) || l.Holds(21.01) {
		t.Errorf("k 0, tolerance 0: bound %v, want the worst run 21", l.Bound)
	}
	if s := l.Sigmas(6.25 + 2*0.55*1.482602218505602); math.Abs(s-2) > 1e-9 {
		t.Errorf("Sigmas = %v, want 2", s)
	}
	for _, bad := range [][2]float64{{-1, 5}, {10, -1}, {math.NaN(), 5}, {10, math.Inf(1)}} {
		if _, err := NewLimit(Reference{Value: 1}, gatetable.AtMost, bad[0], bad[1]); err == nil {
			t.Errorf("tolerance %v, k %v accepted", bad[0], bad[1])
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte(v1))
	f.Add([]byte(`{"schema_version": 2, "baselines": {"a/b": {"kbs": 2, "wire_kbs": 1, "runs": 3, "spread": {"kbs": {"n": 3, "median": 2, "mad": 1, "min": 1, "max": 3, "samples": [1, 2, 3]}}}}}`))
	f.Add([]byte(`{"baselines": null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		file, err := Decode(raw)
		if err != nil {
			return
		}
		out, err := Encode(file)
		if err != nil {
			t.Fatalf("decoded but cannot encode: %v", err)
		}
		if _, err := Decode(out); err != nil {
			t.Fatalf("re-decode of what Decode accepted: %v\n%s", err, out)
		}
		for _, e := range file.Entries {
			for name := range e.Spread {
				ref, ok := e.Reference(name)
				if !ok {
					t.Fatalf("spread %s has no reference", name)
				}
				if _, err := NewLimit(ref, gatetable.AtMost, 10, DefaultK); err != nil && !math.IsNaN(ref.Value) {
					t.Fatalf("limit of an accepted entry: %v", err)
				}
			}
		}
	})
}
