package calibrate

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/judge/stats/confidence"
)

func f64(v float64) *float64 { return &v }

// Twelve consecutive pr legs of one build on the 2-core development
// machine, load average 7–17: what calibrate will be handed.
var (
	tickP99 = []float64{36.57, 64.97, 24.08, 43.63, 31.71, 55.93, 13.85, 28.54, 98.83, 17.98, 21.59, 90.98}
	tickHz  = []float64{58.71, 59.14, 59.73, 58.39, 58.92, 55.70, 59.18, 59.25, 35.35, 42.03, 59.20, 48.46}
)

// TestHandMade works one at-most gate of 5 runs by hand: mean 12, sd
// √(10/4) = 1.5811, k(5, 99 %, 95 %) = 5.741 (the published table), so
// the normal bound is 12 + 5.741·1.5811 = 21.08; the worst run is 14; the
// distribution-free statements are 1/6 and 1 − 0.05^(1/5) = 45.1 %, and
// 299 runs for ≤ 1 % at 95 %.
func TestHandMade(t *testing.T) {
	rep, err := Analyze("pr", "host-1", 5, []Gate{{
		Gate: "tick_ms_p99_max", Title: "server tick ms p99", Unit: "ms", Dir: gatetable.AtMost,
		Timing: true, Level: "advisory", Threshold: f64(13.5), Values: []float64{10, 12, 11, 13, 14},
	}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := rep.Gates[0]
	d := g.Distribution
	if d.N != 5 || d.Median != 12 || d.Mean != 12 || math.Abs(d.SD-math.Sqrt(2.5)) > 1e-12 || d.MAD != 1 || d.Min != 10 || d.Max != 14 {
		t.Errorf("distribution %+v", d)
	}
	if g.Failed != 1 || g.FalseAlarm.Fails != 1 || g.FalseAlarm.Rate != 0.2 {
		t.Errorf("failed %d, rate %+v; want 1 of 5 (the 14 > 13.5)", g.Failed, g.FalseAlarm)
	}
	lo, hi := confidence.ClopperPearson(1, 5, 0.95)
	if g.FalseAlarm.Lo != lo || g.FalseAlarm.Hi != hi || math.Abs(hi-0.7164) > 1e-4 {
		t.Errorf("interval [%v, %v], want Clopper–Pearson [%v, 0.7164]", g.FalseAlarm.Lo, g.FalseAlarm.Hi, lo)
	}
	s := g.Suggested
	if math.Abs(s.Factor-5.741) > 0.002 || math.Abs(s.NormalBound-(12+s.Factor*math.Sqrt(2.5))) > 1e-9 || math.Abs(s.NormalBound-21.08) > 0.01 {
		t.Errorf("k %v normal bound %v, want 5.741, 21.08", s.Factor, s.NormalBound)
	}
	logs := []float64{math.Log(10), math.Log(12), math.Log(11), math.Log(13), math.Log(14)}
	lm, ls := stats.MeanSD(logs)
	if want := math.Exp(lm + s.Factor*ls); s.LogNormalBound == nil || math.Abs(*s.LogNormalBound-want) > 1e-9 {
		t.Errorf("log-normal bound %v, want %v", s.LogNormalBound, want)
	}
	if s.Threshold != math.Max(s.NormalBound, *s.LogNormalBound) || s.Worst != 14 {
		t.Errorf("suggested %v by %s, worst %v", s.Threshold, s.By, s.Worst)
	}
	if math.Abs(s.WorstMeanExceedance-1.0/6) > 1e-12 || math.Abs(s.WorstUpperExceedance-0.4507) > 1e-4 || s.RunsForFreeClaim != 299 {
		t.Errorf("distribution-free: %v, %v, %d", s.WorstMeanExceedance, s.WorstUpperExceedance, s.RunsForFreeClaim)
	}
	for _, want := range []string{"≤ 1 %", "at 95 % confidence", "k = 5.741 for 5 runs", "the worst of them (14) with probability 16.7 % on average", "≤ 45.1 %", "needs 299 runs"} {
		if !strings.Contains(s.Claim, want) {
			t.Errorf("claim lacks %q: %s", want, s.Claim)
		}
	}
	if !strings.Contains(g.Note, "tighter than") {
		t.Errorf("13.5 is tighter than the suggestion, note %q", g.Note)
	}
}

// TestMeasuredRuns runs the 12 measured legs through: tick p99 against the
// pr profile's advisory 16.6 ms fails 11 of 12; tick-Hz against ≥ 30 fails
// none of them, yet two legs fell to 35 and 42 Hz, so at a 1 % target the
// runner supports only ≥ 24: the note must say 30 is too tight for it.
func TestMeasuredRuns(t *testing.T) {
	rep, err := Analyze("pr", "", 12, []Gate{
		{Gate: "tick_ms_p99_max", Title: "server tick ms p99", Unit: "ms", Dir: gatetable.AtMost, Threshold: f64(16.6), Values: tickP99},
		{Gate: "tick_hz_min", Title: "observed server tick-Hz (min)", Unit: "Hz", Dir: gatetable.AtLeast, Threshold: f64(30), Values: tickHz},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p99, hz := rep.Gates[0], rep.Gates[1]
	if p99.Failed != 11 || p99.FalseAlarm.Rate != 11.0/12 {
		t.Errorf("tick p99: %d failed", p99.Failed)
	}
	if p99.Suggested.By != "log-normal" || p99.Suggested.Threshold < 98.83 {
		t.Errorf("tick p99 (right-skewed) suggestion %v by %s", p99.Suggested.Threshold, p99.Suggested.By)
	}
	if hz.Failed != 0 || hz.FalseAlarm.Hi <= 0 || hz.Suggested.Threshold > 35.35 || hz.Better != "higher" {
		t.Errorf("tick-Hz: failed %d, rate %+v, suggested %v", hz.Failed, hz.FalseAlarm, hz.Suggested.Threshold)
	}
	if !strings.Contains(hz.Note, "tighter than the ≥ 24.02") {
		t.Errorf("note %q", hz.Note)
	}
	t.Logf("tick p99: suggested ≤ %.1f (%s); tick-Hz: suggested ≥ %.1f (%s)", p99.Suggested.Threshold, p99.Suggested.By, hz.Suggested.Threshold, hz.Suggested.By)
}

// TestUnevaluableRunsFail: a run that could not evaluate the gate counts
// as failed, and is left out of the distribution and the suggestion.
func TestUnevaluableRunsFail(t *testing.T) {
	nan := math.NaN()
	rep, err := Analyze("pr", "", 5, []Gate{
		{Gate: "g", Dir: gatetable.AtMost, Threshold: f64(1000), Values: []float64{1, nan, 2, 3, 4}},
		{Gate: "few", Dir: gatetable.AtMost, Threshold: f64(100), Values: []float64{1, nan, nan, 3, nan}},
		{Gate: "free", Dir: gatetable.AtMost, Values: []float64{1, 2, 3, 4, 5}},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	g, few, free := rep.Gates[0], rep.Gates[1], rep.Gates[2]
	if g.Unevaluable != 1 || g.Failed != 0 || g.FalseAlarm.Fails != 1 || g.Distribution.N != 4 {
		t.Errorf("g: %+v", g)
	}
	if !strings.Contains(g.Note, "≤ 1000 holds at the target; the tightest that does is ≤ 152.7") {
		t.Errorf("g: note %q", g.Note)
	}
	if few.Suggested != nil || !strings.Contains(few.Note, "2 evaluable run(s)") || few.FalseAlarm.Fails != 3 {
		t.Errorf("few: suggested %v, note %q", few.Suggested, few.Note)
	}
	if free.FalseAlarm != nil || free.Suggested == nil || free.Note != "" {
		t.Errorf("no threshold: %+v", free)
	}
}

func TestAnalyzeErrors(t *testing.T) {
	cases := []struct {
		name  string
		runs  int
		gates []Gate
		opt   Options
		want  string
	}{
		{"no run", 0, nil, Options{}, "no completed run"},
		{"short", 3, []Gate{{Gate: "g", Values: []float64{1, 2}}}, Options{}, "gate g: 2 values for 3 runs"},
		{"infinite", 1, []Gate{{Gate: "g", Values: []float64{math.Inf(1)}}}, Options{}, "run 1"},
		{"target", 1, nil, Options{Target: 1}, "target"},
		{"threshold NaN", 1, []Gate{{Gate: "g", Threshold: f64(math.NaN()), Values: []float64{1}}}, Options{}, "threshold"},
	}
	for _, c := range cases {
		if _, err := Analyze("p", "", c.runs, c.gates, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestSuggestionClaim checks the claim the suggestion makes, over 4,000
// seeded calibrations of 10 runs each: for normal and log-normal runs the
// true chance of a run beyond the suggested threshold is ≤ 1 % in at least
// 95 % of calibrations (the tolerance bound's guarantee, less 3 binomial
// standard errors: 93.9 %). For heavy-tailed runs (t₃) the guarantee does
// not hold and the test logs by how much, as docs/baselines.md quotes.
func TestSuggestionClaim(t *testing.T) {
	type shape struct {
		name     string
		draw     func(r *rand.Rand) float64
		survival func(x float64) float64
		assert   bool
	}
	shapes := []shape{
		{"normal", func(r *rand.Rand) float64 { return 10 + r.NormFloat64() },
			func(x float64) float64 { return 1 - confidence.NormalCDF(x-10) }, true},
		{"log-normal σ 0.5", func(r *rand.Rand) float64 { return 10 * math.Exp(0.5*r.NormFloat64()) },
			func(x float64) float64 { return 1 - confidence.NormalCDF(math.Log(x/10)/0.5) }, true},
		{"t3", func(r *rand.Rand) float64 {
			var c float64
			for range 3 {
				g := r.NormFloat64()
				c += g * g
			}
			return 10 + r.NormFloat64()/math.Sqrt(c/3)
		}, func(x float64) float64 {
			u := (x - 10) / math.Sqrt(3)
			return 0.5 - (math.Atan(u)+u/(1+u*u))/math.Pi
		}, false},
	}
	const trials = 4000
	for i, sh := range shapes {
		r := rand.New(rand.NewPCG(uint64(i+1), 27))
		ok := 0
		x := make([]float64, 10)
		for range trials {
			for j := range x {
				x[j] = sh.draw(r)
			}
			s := suggest(x, gatetable.AtMost, Options{Target: DefaultTarget, Confidence: DefaultConfidence})
			if sh.survival(s.Threshold) <= DefaultTarget {
				ok++
			}
		}
		got := float64(ok) / trials
		t.Logf("%-17s N 10: P(false alarm ≤ 1 %%) over %d calibrations = %.1f %%", sh.name, trials, 100*got)
		if sh.assert && got < 0.939 {
			t.Errorf("%s: the claim held in %.1f %% of calibrations, want ≥ 95 %% (less 3 SE)", sh.name, 100*got)
		}
	}
}

// TestReportJSONAndMarkdown: calibration.json round-trips (a missing run
// as null), calibration.md has the summary row and the runs of every gate.
func TestReportJSONAndMarkdown(t *testing.T) {
	hz := append([]float64(nil), tickHz...)
	hz[3] = math.NaN()
	rep, err := Analyze("pr", "dev-1", 12, []Gate{
		{Gate: "tick_ms_p99_max", Title: "server tick ms p99", Unit: "ms", Dir: gatetable.AtMost, Timing: true, Level: "advisory", Threshold: f64(16.6), Values: tickP99},
		{Gate: "tick_hz_min", Title: "observed server tick-Hz (min)", Unit: "Hz", Dir: gatetable.AtLeast, Timing: true, Level: "hard", Threshold: f64(30), Values: hz},
	}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep.Notes = []string{"runs 2, 4 and 9 had a harness-bound leg"}
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.MarshalIndent(&back, "", "  ")
	if !bytes.Equal(raw, again) || !bytes.Contains(raw, []byte("null")) {
		t.Errorf("calibration.json does not round-trip:\n%s", raw)
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, &back); err != nil {
		t.Fatal(err)
	}
	s := md.String()
	for _, want := range []string{
		"# calibrate: profile pr, 12 runs on dev-1",
		"| server tick ms p99 (ms) | advisory | lower | ≤ 16.60 | 12 | 34.14 |",
		"| 11 / 12 | 91.7 % (61.5 % – 99.8 %) |",
		"| observed server tick-Hz (min) (Hz) | hard | higher | ≥ 30 | 11 |",
		"| 1 / 12 (1 unevaluable) |",
		"| 4 | missing | **fails** (unevaluable) |",
		"| 7 | 13.85 | holds |", "| 1 | 36.57 | **fails** |",
		"A timing figure", "expect false alarms here", "- runs 2, 4 and 9 had a harness-bound leg\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("calibration.md lacks %q:\n%s", want, s)
		}
	}
}
