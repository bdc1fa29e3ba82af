package abtest

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/judge/stats"
)

func TestSchedule(t *testing.T) {
	got := Schedule(3)
	want := []Side{A, B, B, A, A, B}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Schedule(3) = %v, want %v", got, want)
	}
	if len(Schedule(0)) != 0 || len(Schedule(-1)) != 0 {
		t.Error("no rounds must schedule no legs")
	}
}

// jitter makes n values base·(1 + small distinct offsets), so no two
// differences tie.
func jitter(base float64, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = base * (1 + scale*math.Sin(float64(3*i+1)))
	}
	return out
}

func one(t *testing.T, m Metric, rounds int, conf float64) Result {
	t.Helper()
	rep, err := Analyze([]Metric{m}, rounds, conf)
	if err != nil {
		t.Fatal(err)
	}
	return rep.Results[0]
}

// TestVerdicts judges hand-made rounds: B 20 % above A in every one of 8
// rounds (the fewest that give a 99 % interval: 2·2⁻⁸ = 0.0078) is a
// regression where lower is better and an improvement where higher is.
func TestVerdicts(t *testing.T) {
	a := jitter(10, 8, 0.02)
	b := make([]float64, 8)
	for i := range a {
		b[i] = a[i] * 1.2 * (1 + 0.01*math.Cos(float64(i)))
	}
	cases := []struct {
		name string
		dir  gatetable.Direction
		tol  float64
		a, b []float64
		want Verdict
	}{
		{"rise, lower is better", gatetable.AtMost, 0, a, b, Regression},
		{"rise, higher is better", gatetable.AtLeast, 0, a, b, Improvement},
		{"fall, lower is better", gatetable.AtMost, 0, b, a, Improvement},
		{"fall, higher is better", gatetable.AtLeast, 0, b, a, Regression},
		// +20 % against a 10 % tolerance: the interval (≈ +18 … +22 %) clears it
		{"beyond tolerance", gatetable.AtMost, 10, a, b, Regression},
		// against 25 % it does not: inside the band is no verdict
		{"within tolerance", gatetable.AtMost, 25, a, b, NoChange},
		{"identical legs", gatetable.AtMost, 0, a, a, NoChange},
	}
	for _, c := range cases {
		res := one(t, Metric{Gate: "tick_ms_p99_max", Title: "tick", Dir: c.dir, TolerancePct: c.tol, A: c.a, B: c.b}, 8, 0.99)
		if res.Verdict != c.want {
			t.Errorf("%s: %s (%s), want %s", c.name, res.Verdict, res.Detail, c.want)
		}
		if res.Scale != ScaleRatio || res.Pairs != 8 || res.Confidence < 0.99 {
			t.Errorf("%s: scale %q pairs %d coverage %v", c.name, res.Scale, res.Pairs, res.Confidence)
		}
	}
	res := one(t, Metric{Gate: "g", A: a, B: a}, 8, 0.99)
	if c := res.Change; *c.Pct != 0 || *c.LoPct != 0 || *c.HiPct != 0 || *res.DetectablePct != 0 {
		t.Errorf("identical legs: change %v [%v, %v], detectable %v; want all 0", *c.Pct, *c.LoPct, *c.HiPct, *res.DetectablePct)
	}
	res = one(t, Metric{Gate: "g", A: a, B: b}, 8, 0.99)
	if p := *res.Change.Pct; p < 18 || p > 22 {
		t.Errorf("estimate %+.2f %%, want ≈ +20 %%", p)
	}
}

// TestDifferenceScale: a count that is 0 on A (dropped ticks) cannot be a
// ratio: the change is B − A in the unit, no percentage, and a confident
// rise is still a regression.
func TestDifferenceScale(t *testing.T) {
	a := make([]float64, 8)
	b := []float64{3, 5, 4, 6, 2, 7, 5, 4}
	res := one(t, Metric{Gate: "dropped_ticks_max", Dir: gatetable.AtMost, A: a, B: b}, 8, 0.99)
	if res.Scale != ScaleDifference || res.Verdict != Regression {
		t.Fatalf("scale %s verdict %s (%s)", res.Scale, res.Verdict, res.Detail)
	}
	if res.Change.Pct != nil || res.Change.Diff == nil || *res.Change.Diff != 4.5 || res.DetectablePct != nil {
		t.Errorf("change %+v: want Diff 4.5 (median of Walsh averages) and no percentage of a 0 median", res.Change)
	}
	// A 0 on either side switches the figure to differences, percent of A.
	res = one(t, Metric{Gate: "g", Dir: gatetable.AtMost, A: []float64{10, 10, 10, 10, 10, 10, 10, 0}, B: []float64{11, 11.5, 12, 11.2, 11.1, 11.7, 11.4, 1.3}}, 8, 0.99)
	if res.Scale != ScaleDifference || res.Change.Pct == nil {
		t.Errorf("scale %s, pct %v", res.Scale, res.Change.Pct)
	}
}

// TestMissingAndTooFew: a NaN leg drops its round from that figure; below
// stats.MinPairs the figure is unevaluable and fails the run.
func TestMissingAndTooFew(t *testing.T) {
	a, b := jitter(10, 8, 0.02), jitter(12, 8, 0.03)
	a[3] = math.NaN()
	rep, err := Analyze([]Metric{{Gate: "g", A: a, B: b}}, 8, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	res := rep.Results[0]
	if res.Pairs != 7 || res.Verdict != Unevaluable || !strings.Contains(res.Detail, "at least 8") {
		t.Errorf("pairs %d verdict %s detail %q", res.Pairs, res.Verdict, res.Detail)
	}
	if !rep.Failed() || rep.Unevaluable != 1 {
		t.Error("an unevaluable figure must fail the run")
	}
	if res.MedianA == nil || res.Change != nil {
		t.Errorf("median A %v (7 legs measured), change %v (none)", res.MedianA, res.Change)
	}
	all := make([]float64, 8)
	for i := range all {
		all[i] = math.NaN()
	}
	res = one(t, Metric{Gate: "g", A: all, B: b}, 8, 0.99)
	if res.MedianA != nil || res.Verdict != Unevaluable {
		t.Errorf("no A leg measured: median %v verdict %s", res.MedianA, res.Verdict)
	}
}

// TestBonferroni: two figures at 99 % simultaneous are each judged at
// 99.5 %, which needs 9 pairs (2·2⁻⁹ ≤ 0.005): 8 rounds judge neither.
func TestBonferroni(t *testing.T) {
	a, b := jitter(10, 8, 0.02), jitter(12, 8, 0.02)
	rep, err := Analyze([]Metric{{Gate: "x", A: a, B: b}, {Gate: "y", A: a, B: b}}, 8, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(rep.PerFigure-0.995) > 1e-12 || rep.Figures != 2 {
		t.Errorf("per-figure %v over %d", rep.PerFigure, rep.Figures)
	}
	if stats.MinPairs(0.995) != 9 || rep.Unevaluable != 2 {
		t.Errorf("MinPairs(0.995) = %d, unevaluable %d; want 9, 2", stats.MinPairs(0.995), rep.Unevaluable)
	}
}

func TestAnalyzeErrors(t *testing.T) {
	ok := Metric{Gate: "g", A: []float64{1}, B: []float64{1}}
	cases := []struct {
		name    string
		ms      []Metric
		rounds  int
		conf    float64
		errWant string
	}{
		{"confidence 1", []Metric{ok}, 1, 1, "confidence"},
		{"no rounds", []Metric{ok}, 0, 0.99, "rounds"},
		{"no figures", nil, 1, 0.99, "no figures"},
		{"short B", []Metric{{Gate: "g", A: []float64{1, 2}, B: []float64{1}}}, 2, 0.99, "figure g"},
		{"negative tolerance", []Metric{{Gate: "g", TolerancePct: -1, A: []float64{1}, B: []float64{1}}}, 1, 0.99, "tolerance"},
		{"infinite figure", []Metric{{Gate: "g", A: []float64{1, math.Inf(1)}, B: []float64{1, 2}}}, 2, 0.99, "figure g: round 2: an infinite figure"},
	}
	for _, c := range cases {
		if _, err := Analyze(c.ms, c.rounds, c.conf); err == nil || !strings.Contains(err.Error(), c.errWant) {
			t.Errorf("%s: err %v, want one naming %q", c.name, err, c.errWant)
		}
	}
}

// TestReportJSONAndMarkdown: ab.json round-trips (missing legs as null),
// ab.md carries the verdict, every figure and every round.
func TestReportJSONAndMarkdown(t *testing.T) {
	a, b := jitter(5, 10, 0.05), jitter(7.5, 10, 0.05)
	hz := jitter(59.9, 10, 0.002)
	hz[4] = math.NaN()
	rep, err := Analyze([]Metric{
		{Gate: "tick_ms_p99_max", Title: "server tick ms p99", Unit: "ms", Dir: gatetable.AtMost, A: a, B: b},
		{Gate: "tick_hz_min", Title: "observed server tick-Hz (min)", Unit: "Hz", Dir: gatetable.AtLeast, TolerancePct: 1, A: hz, B: hz},
	}, 10, 0.99)
	if err != nil {
		t.Fatal(err)
	}
	rep.A, rep.B, rep.Profile, rep.Host = Build{Label: "main", Command: "scalegate serve"}, Build{Label: "pr"}, "pr", "runner-1"
	rep.Notes = []string{"harness-bound legs: A 2 of 10, B 3 of 10"}
	if rep.Results[0].Verdict != Regression || rep.Results[1].Verdict != NoChange || !rep.Failed() {
		t.Fatalf("verdicts %s, %s", rep.Results[0].Verdict, rep.Results[1].Verdict)
	}
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(raw, []byte("null")) {
		t.Error("the missing leg must be null in ab.json")
	}
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.MarshalIndent(&back, "", "  ")
	if !bytes.Equal(raw, again) {
		t.Errorf("ab.json does not round-trip:\n%s\n---\n%s", raw, again)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, rep); err != nil {
		t.Fatal(err)
	}
	s := md.String()
	for _, want := range []string{
		"**1 regression(s)**", "main (`scalegate serve`)", "profile pr, host runner-1, 10 rounds (20 legs, order AB BA AB BA …)",
		"each interval is at 99.5 %", "| server tick ms p99 (ms) | lower | ", "**regression**",
		"| observed server tick-Hz (min) (Hz) | higher |", "no change", "| 5 | AB | missing |", "| 10 | BA |",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("ab.md lacks %q:\n%s", want, s)
		}
	}
}

// TestAnswers: the three-valued answer. 12 rounds, 99 %: B 20 % above A is
// DIFFERENT; B within ±0.5 % of A with a 10 % tolerance is SAME (the whole
// interval inside the band); the same rounds with tolerance 0 cannot be
// SAME, and noise wider than the band is UNKNOWN. Too few rounds are
// UNKNOWN and unevaluable. The run's answer is DIFFERENT if any figure is,
// SAME only if all are.
func TestAnswers(t *testing.T) {
	const n = 12
	a := jitter(10, n, 0.02)
	scaled := func(f, wobble float64) []float64 {
		b := make([]float64, n)
		for i := range a {
			b[i] = a[i] * f * (1 + wobble*math.Cos(float64(2*i+1)))
		}
		return b
	}
	cases := []struct {
		name   string
		tol    float64
		b      []float64
		rounds int
		want   Answer
	}{
		{"20 % worse", 10, scaled(1.2, 0.01), n, Different},
		{"within half a percent, 10 % tolerance", 10, scaled(1, 0.005), n, Same},
		{"within half a percent, no tolerance", 0, scaled(1, 0.005), n, Unknown},
		{"noise wider than the band", 5, scaled(1.03, 0.2), n, Unknown},
		{"too few rounds", 10, scaled(1, 0.005), 4, Unknown},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := one(t, Metric{Gate: "g", Dir: gatetable.AtMost, TolerancePct: tc.tol, A: a[:tc.rounds], B: tc.b[:tc.rounds]}, tc.rounds, 0.99)
			if r.Answer != tc.want {
				t.Errorf("answer %s (verdict %s, change %+v), want %s", r.Answer, r.Verdict, r.Change, tc.want)
			}
		})
	}
	same := Metric{Gate: "s", Dir: gatetable.AtMost, TolerancePct: 10, A: a, B: scaled(1, 0.005)}
	worse := Metric{Gate: "w", Dir: gatetable.AtMost, TolerancePct: 10, A: a, B: scaled(1.2, 0.01)}
	wide := Metric{Gate: "u", Dir: gatetable.AtMost, TolerancePct: 5, A: a, B: scaled(1.03, 0.2)}
	for _, tc := range []struct {
		ms   []Metric
		want Answer
	}{{[]Metric{same, same}, Same}, {[]Metric{same, wide}, Unknown}, {[]Metric{wide, worse}, Different}} {
		rep, err := Analyze(tc.ms, n, 0.99)
		if err != nil || rep.Answer != tc.want {
			t.Errorf("run answer %v (%v), want %s", rep.Answer, err, tc.want)
		}
	}
}

// MinRounds: 8 rounds give a 99 % interval for one figure; two figures
// need 9 (each at 99.5 %), which is why --rounds 8 with two figures is
// refused before running; 3 looks at the data need more still.
func TestMinRounds(t *testing.T) {
	for _, tc := range []struct{ figures, looks, want int }{{1, 1, 8}, {2, 1, 9}, {2, 3, 11}, {0, 0, 8}} {
		if got := MinRounds(0.99, tc.figures, tc.looks); got != tc.want {
			t.Errorf("MinRounds(0.99, %d, %d) = %d, want %d", tc.figures, tc.looks, got, tc.want)
		}
	}
}
