// Package abtest is the statistics of `scalegate ab`, which compares two
// server builds. The two builds, A and B, run leg after leg on one runner in
// rounds (A B, then B A, …), and for every gate figure the package says
// whether B moved it, by how much, with a confidence interval, and whether
// the move is a regression, an improvement or no detectable change.
//
// The statistic is the Hodges–Lehmann estimate with the exact Wilcoxon
// signed-rank interval (stats.HodgesLehmann) on the within-round
// differences, on the log scale when every value is positive:
//
//   - Pairing by round removes what the runner does between rounds (other
//     jobs' load comes and goes over minutes, a leg lasts 20 s); the A B / B
//     A alternation cancels a steady drift inside a round and any "second
//     leg of the round" effect.
//   - Under "B is A" the two legs of a round are exchangeable, so their
//     difference is symmetric about 0 whatever the legs' own distribution;
//     the signed-rank test's false-alarm rate is then exact, without
//     assuming normal, unskewed timing figures. A bootstrap would assume
//     nothing either but, at 10–30 pairs, its percentile and BCa intervals
//     undercover (they approach the nominal level only as n grows), and its
//     result would depend on a random seed.
//   - Ranks bound the pull of a starved leg: on this kind of runner a leg
//     now and then collapses (tick-Hz 35 among legs at 59), which would
//     swamp a mean difference but moves one rank.
//   - The log scale turns a multiplicative change ("5 % slower") into a
//     shift, which is what the tolerance, in percent, is about.
//
// The confidence is simultaneous over the figures judged (Bonferroni: each
// interval is at 1 − (1 − confidence)/m), because an ab run exits 1 when any
// figure regresses: with m figures at the confidence each, a build compared
// with itself would fail m times as often.
package abtest

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/judge/stats/confidence"
)

// Defaults. TestDefaultsMeetAcceptance measures what they give over seeded
// trials; docs/baselines.md quotes the figures.
const (
	// DefaultConfidence is the simultaneous confidence over all figures of
	// one ab run. At 0.99 a build compared with itself reports any change
	// in at most 1 run in 100 and exits 1 (a regression) in at most 1 in
	// 200; at 0.95 the "no change" rate would sit on its 95 % floor.
	DefaultConfidence = 0.99
	// DefaultRounds is the round count (legs per build) that detects a 5 %
	// shift of one figure at DefaultConfidence with ≥ 80 % probability when
	// a leg's figure varies ±10 % (95 % of legs within ±10 % of the median:
	// log-normal, σ = ln 1.1/1.96 = 4.86 %). RoundsFor(0.0486, 0.05, 0.99,
	// 0.80) is 28; 30 keeps the A B / B A order balanced, and the seeded
	// trials of TestDefaultsMeetAcceptance measure its power.
	DefaultRounds = 30
	// DetectablePower is the power at which Result.DetectablePct is quoted.
	DetectablePower = 0.80
	// signedRankARE is the Wilcoxon test's asymptotic relative efficiency
	// against the t test for normal data (3/π): the rank test needs 1/0.955
	// times the pairs to match the t test there, and fewer for heavier tails.
	signedRankARE = 3 / math.Pi
)

// Side is one of the two builds.
type Side int

// The two builds.
const (
	A Side = iota
	B
)

func (s Side) String() string {
	if s == B {
		return "B"
	}
	return "A"
}

// Schedule is the order of the legs for rounds rounds: round r runs A then
// B when r is even, B then A when r is odd (A B B A A B …). Legs 2r and
// 2r+1 are round r. An even round count balances the order exactly.
func Schedule(rounds int) []Side {
	out := make([]Side, 0, 2*max(rounds, 0))
	for r := range max(rounds, 0) {
		if r%2 == 0 {
			out = append(out, A, B)
		} else {
			out = append(out, B, A)
		}
	}
	return out
}

// Metric is one gate figure measured on both builds: A[r] and B[r] are the
// figures of round r's two legs (NaN when a leg did not yield it; that
// round then drops out of this figure's comparison).
type Metric struct {
	// Gate is the gate table's name (e.g. "tick_ms_p99_max").
	Gate  string
	Title string
	Unit  string
	// Dir is the gate table's direction: AtMost means lower is better, so a
	// rise is a regression; AtLeast the reverse.
	Dir gatetable.Direction
	// TolerancePct is the change, in percent of A's median, that is not a
	// verdict: a regression must be beyond it at the confidence. 0 judges
	// any change the interval resolves.
	TolerancePct float64
	A, B         []float64
}

// Verdict is what the comparison says about one figure.
type Verdict string

// Verdicts.
const (
	// Regression: the whole interval lies beyond the tolerance on the
	// worse side.
	Regression Verdict = "regression"
	// Improvement: the whole interval lies beyond the tolerance on the
	// better side.
	Improvement Verdict = "improvement"
	// NoChange: the interval reaches inside the tolerance band; the change
	// may be 0 or one smaller than DetectablePct.
	NoChange Verdict = "no_change"
	// Unevaluable: too few complete rounds for an interval at the
	// confidence; like an unevaluable gate, it fails the run.
	Unevaluable Verdict = "unevaluable"
)

// Answer is the three-valued answer, per figure and for the run, in the
// style of Chromium's Pinpoint: a "no change" interval that still reaches
// outside the tolerance band does not say the builds are the same.
type Answer string

// Answers.
const (
	// Different: the interval lies wholly beyond the tolerance band
	// (a regression or an improvement).
	Different Answer = "different"
	// Same: the interval lies wholly inside the tolerance band: any change
	// is smaller than the tolerance, at the confidence. It needs a
	// tolerance above 0.
	Same Answer = "same"
	// Unknown: the interval straddles an edge of the band (more rounds
	// would decide), or the figure could not be judged.
	Unknown Answer = "unknown"
)

// MinRounds is the fewest complete rounds for which an interval exists
// at simultaneous confidence conf over figures figures and looks looks at
// the data (1 unless rounds are added while undecided): below it every
// figure is unevaluable whatever the builds do.
func MinRounds(conf float64, figures, looks int) int {
	return stats.MinPairs(1 - (1-conf)/float64(max(figures, 1)*max(looks, 1)))
}

// Scale names how a figure is compared.
const (
	// ScaleRatio: every value is positive; differences are ln(B/A) and the
	// change is reported in percent of A.
	ScaleRatio = "ratio"
	// ScaleDifference: some value is 0 or negative (counts, slopes); the
	// differences are B − A in the figure's unit, and percent is of A's
	// median when that is not 0.
	ScaleDifference = "difference"
)

// Result is the comparison of one figure.
type Result struct {
	Gate  string `json:"gate"`
	Title string `json:"title"`
	Unit  string `json:"unit,omitempty"`
	// Better is "lower" (an AtMost gate) or "higher" (AtLeast).
	Better       string  `json:"better"`
	TolerancePct float64 `json:"tolerance_pct"`
	// A and B are the figures per round (null: the leg gave none).
	A stats.Values `json:"a"`
	B stats.Values `json:"b"`
	// Pairs is the rounds in which both legs gave the figure.
	Pairs int `json:"pairs"`
	// MedianA and MedianB are over each build's legs (nil: none).
	MedianA *float64 `json:"median_a"`
	MedianB *float64 `json:"median_b"`
	Scale   string   `json:"scale,omitempty"`
	// Change is B against A; nil when unevaluable.
	Change *Change `json:"change,omitempty"`
	// Confidence is this interval's exact coverage (≥ the per-figure level
	// asked; the rank distribution is discrete).
	Confidence float64 `json:"confidence,omitempty"`
	// DetectablePct is the change this run would detect with 80 %
	// probability at this noise (read off the interval's half-width, see
	// detectable): a "no change" rules out changes about this large, not
	// smaller ones. Nil when it is not a percentage (difference scale, A's
	// median 0).
	DetectablePct *float64 `json:"detectable_pct,omitempty"`
	Verdict       Verdict  `json:"verdict"`
	Answer        Answer   `json:"answer"`
	Detail        string   `json:"detail,omitempty"`
}

// Change is B's change against A with its interval.
type Change struct {
	// Pct, LoPct, HiPct: the estimate and interval in percent of A (+ means
	// B is higher). Nil on the difference scale when A's median is 0.
	Pct   *float64 `json:"pct,omitempty"`
	LoPct *float64 `json:"lo_pct,omitempty"`
	HiPct *float64 `json:"hi_pct,omitempty"`
	// Diff, Lo, Hi: the same in the figure's unit, on the difference scale
	// only (a ratio has no single difference).
	Diff *float64 `json:"diff,omitempty"`
	Lo   *float64 `json:"lo,omitempty"`
	Hi   *float64 `json:"hi,omitempty"`
}

// Report is ab.json.
type Report struct {
	SchemaVersion int `json:"schema_version"`
	// A and B say what ran (the caller fills them: a label and the command
	// or binary).
	A Build `json:"a"`
	B Build `json:"b"`
	// Rounds is how many rounds ran; Order the legs' order ("AB", "BA", …).
	Rounds int      `json:"rounds"`
	Order  []string `json:"order"`
	// Confidence is simultaneous over the Figures judged; PerFigure is
	// 1 − (1 − Confidence)/Figures, each interval's level.
	Confidence float64 `json:"confidence"`
	PerFigure  float64 `json:"per_figure_confidence"`
	Figures    int     `json:"figures"`
	Method     string  `json:"method"`
	// Host and Profile say where and what (the caller fills them).
	Host    string   `json:"host,omitempty"`
	Profile string   `json:"profile,omitempty"`
	Results []Result `json:"results"`
	// Notes are the runner's remarks on the run, one sentence each (e.g.
	// how many legs of each side were harness-bound); ab.md lists them.
	Notes []string `json:"notes,omitempty"`
	// Regressions and Unevaluable count the results with those verdicts.
	Regressions int `json:"regressions"`
	Unevaluable int `json:"unevaluable"`
	// Answer is the run's: different when any figure is, same when every
	// one is, unknown otherwise.
	Answer Answer `json:"answer"`
	// Looks is how many times the rounds were analysed (more than 1 with
	// --until-decided); each look's intervals are at the confidence
	// divided among the looks as well as the figures (Bonferroni), so
	// adding rounds until decided keeps the run's error rate.
	Looks int `json:"looks,omitempty"`
}

// Build describes one side.
type Build struct {
	Label   string `json:"label"`
	Command string `json:"command,omitempty"`
}

// SchemaVersion of ab.json.
const SchemaVersion = 1

// Method is the one-line statement of the statistic, for the report.
const Method = "per round, B vs A: ln(B/A) (or B − A when a value is ≤ 0); Hodges–Lehmann estimate with the exact Wilcoxon signed-rank interval; Bonferroni over the figures"

// Failed reports whether the run must exit non-zero: a figure regressed
// beyond its tolerance, or could not be judged (an unevaluable figure
// fails, as an unevaluable gate does).
func (r *Report) Failed() bool { return r.Regressions > 0 || r.Unevaluable > 0 }

// Analyze compares every metric. rounds is the rounds that ran (each
// metric's A and B must have that length); confidence is simultaneous over
// the metrics. Bad arguments are an error; a metric that cannot be judged
// is a Result with verdict Unevaluable.
func Analyze(metrics []Metric, rounds int, confidence float64) (*Report, error) {
	return AnalyzeLooks(metrics, rounds, confidence, 1)
}

// AnalyzeLooks is Analyze for the looks-th planned look at the data
// (--until-decided): each interval is at 1 − (1 − confidence)/(figures ×
// looks).
func AnalyzeLooks(metrics []Metric, rounds int, confidence float64, looks int) (*Report, error) {
	if looks < 1 {
		return nil, fmt.Errorf("looks %d: at least 1", looks)
	}
	if !(confidence > 0 && confidence < 1) {
		return nil, fmt.Errorf("confidence %v: must be in (0, 1)", confidence)
	}
	if rounds < 1 {
		return nil, fmt.Errorf("rounds %d: at least 1", rounds)
	}
	if len(metrics) == 0 {
		return nil, errors.New("no figures to compare")
	}
	per := 1 - (1-confidence)/float64(len(metrics)*looks)
	rep := &Report{
		SchemaVersion: SchemaVersion, Rounds: rounds, Confidence: confidence,
		PerFigure: per, Figures: len(metrics), Method: Method, Looks: looks,
	}
	sched := Schedule(rounds)
	for r := range rounds {
		rep.Order = append(rep.Order, sched[2*r].String()+sched[2*r+1].String())
	}
	for _, m := range metrics {
		if len(m.A) != rounds || len(m.B) != rounds {
			return nil, fmt.Errorf("figure %s: %d A and %d B values for %d rounds", m.Gate, len(m.A), len(m.B), rounds)
		}
		if m.TolerancePct < 0 || math.IsNaN(m.TolerancePct) || math.IsInf(m.TolerancePct, 0) {
			return nil, fmt.Errorf("figure %s: tolerance %v %%: must be a number ≥ 0", m.Gate, m.TolerancePct)
		}
		for r := range rounds {
			if math.IsInf(m.A[r], 0) || math.IsInf(m.B[r], 0) {
				return nil, fmt.Errorf("figure %s: round %d: an infinite figure (A %v, B %v)", m.Gate, r+1, m.A[r], m.B[r])
			}
		}
		res := compare(m, per)
		switch res.Verdict {
		case Regression:
			rep.Regressions++
		case Unevaluable:
			rep.Unevaluable++
		}
		rep.Results = append(rep.Results, res)
	}
	rep.Answer = overall(rep.Results)
	return rep, nil
}

func overall(rs []Result) Answer {
	same := true
	for _, r := range rs {
		if r.Answer == Different {
			return Different
		}
		same = same && r.Answer == Same
	}
	if same {
		return Same
	}
	return Unknown
}

// compare judges one metric at the per-figure confidence.
func compare(m Metric, conf float64) Result {
	res := Result{
		Gate: m.Gate, Title: m.Title, Unit: m.Unit, Better: better(m.Dir),
		TolerancePct: m.TolerancePct, A: slices.Clone(m.A), B: slices.Clone(m.B),
	}
	res.MedianA, res.MedianB = ptr(stats.Median(m.A)), ptr(stats.Median(m.B))
	var a, b []float64
	positive := true
	for r := range m.A {
		if math.IsNaN(m.A[r]) || math.IsNaN(m.B[r]) {
			continue
		}
		a, b = append(a, m.A[r]), append(b, m.B[r])
		positive = positive && m.A[r] > 0 && m.B[r] > 0
	}
	res.Pairs = len(a)
	need := stats.MinPairs(conf)
	res.Answer = Unknown
	if res.Pairs < need {
		res.Verdict = Unevaluable
		res.Detail = fmt.Sprintf("%d complete round(s); an interval at %s confidence needs at least %d", res.Pairs, pct(conf), need)
		return res
	}
	d := make([]float64, len(a))
	res.Scale = ScaleDifference
	if positive {
		res.Scale = ScaleRatio
	}
	for i := range a {
		if positive {
			d[i] = math.Log(b[i] / a[i])
		} else {
			d[i] = b[i] - a[i]
		}
	}
	si, err := stats.HodgesLehmann(d, conf)
	if err != nil {
		res.Verdict, res.Detail = Unevaluable, err.Error()
		return res
	}
	res.Confidence = si.Confidence
	medA := stats.Median(a)
	res.Change = change(si, positive, medA)
	res.DetectablePct = detectable(si, conf, positive, medA)
	res.Verdict, res.Detail = judge(m, si, positive, medA)
	res.Answer = answer(m, si, positive, medA, res.Verdict)
	return res
}

// answer is Different for a regression or an improvement, Same when the
// whole interval lies inside the tolerance band, Unknown otherwise.
func answer(m Metric, si stats.ShiftInterval, ratio bool, medA float64, v Verdict) Answer {
	switch v {
	case Regression, Improvement:
		return Different
	case Unevaluable:
		return Unknown
	}
	down, up := band(m.TolerancePct/100, ratio, medA)
	if m.TolerancePct > 0 && si.Lo >= down && si.Hi <= up {
		return Same
	}
	return Unknown
}

// band is the tolerance band in the figure's own terms: ln(1 ± tol) on
// the ratio scale, ± tol·|median A| on the difference scale.
func band(tol float64, ratio bool, medA float64) (down, up float64) {
	if ratio {
		return math.Log1p(-math.Min(tol, 0.999999)), math.Log1p(tol)
	}
	return -tol * math.Abs(medA), tol * math.Abs(medA)
}

// change expresses the interval in percent (and in units on the
// difference scale).
func change(si stats.ShiftInterval, ratio bool, medA float64) *Change {
	if ratio {
		return &Change{Pct: ptr(toPct(si.Estimate)), LoPct: ptr(toPct(si.Lo)), HiPct: ptr(toPct(si.Hi))}
	}
	c := &Change{Diff: ptr(si.Estimate), Lo: ptr(si.Lo), Hi: ptr(si.Hi)}
	if medA != 0 {
		s := 100 / math.Abs(medA)
		c.Pct, c.LoPct, c.HiPct = ptr(si.Estimate*s), ptr(si.Lo*s), ptr(si.Hi*s)
	}
	return c
}

// judge turns the interval into a verdict. The interval is compared with
// the tolerance band in the figure's own terms: ln(1 ± tol) on the ratio
// scale, ± tol·|median A| on the difference scale.
func judge(m Metric, si stats.ShiftInterval, ratio bool, medA float64) (Verdict, string) {
	tol := m.TolerancePct / 100
	down, up := band(tol, ratio, medA)
	rose, fell := si.Lo > up, si.Hi < down
	worse, better := rose, fell
	if m.Dir == gatetable.AtLeast {
		worse, better = fell, rose
	}
	band := "0"
	if tol > 0 {
		band = "±" + fmtPct(m.TolerancePct)
	}
	switch {
	case worse:
		return Regression, fmt.Sprintf("B is worse beyond %s: the whole interval is on the %s side", band, worseWord(m.Dir))
	case better:
		return Improvement, fmt.Sprintf("B is better beyond %s: the whole interval is on the %s side", band, betterWord(m.Dir))
	}
	return NoChange, fmt.Sprintf("The interval reaches inside %s", band)
}

// detectable is the change the run would detect with DetectablePower,
// read off this run's own interval: a half-width h at the two-sided level
// means a standard error of h/z₁₋α/₂, and a true change of
// (z₁₋α/₂ + z_power)·SE puts the whole interval beyond 0 with probability
// power. Taken from the interval rather than from a spread estimate, it
// counts what the rank test actually lost to collapsed legs. It is the
// normal-approximation planning figure, not a claim of this run.
func detectable(si stats.ShiftInterval, conf float64, ratio bool, medA float64) *float64 {
	za := confidence.NormalQuantile(1 - (1-conf)/2)
	delta := (si.Hi - si.Lo) / 2 * (za + confidence.NormalQuantile(DetectablePower)) / za
	if ratio {
		return ptr(toPct(delta))
	}
	if medA == 0 {
		return nil
	}
	return ptr(delta / math.Abs(medA) * 100)
}

// RoundsFor is the planning count: the rounds for which a shift of
// shiftFrac (0.05 = 5 %) is detected with probability power at the
// per-figure confidence conf, when a leg's log-figure varies with standard
// deviation sigmaLog and legs are independent. The normal approximation
// n = ((z₁₋α/₂ + z_power)·σ·√2 / ln(1+shift))² / ARE undercounts at small
// n (the interval uses the estimated spread, not the true one), so
// Guenther's correction z₁₋α/₂²/2 is added; the count is never below
// stats.MinPairs(conf). TestRoundsForAgainstTrials checks it against the
// exact test.
func RoundsFor(sigmaLog, shiftFrac, conf, power float64) int {
	za := confidence.NormalQuantile(1 - (1-conf)/2)
	z := za + confidence.NormalQuantile(power)
	n := math.Pow(z*sigmaLog*math.Sqrt2/math.Log1p(shiftFrac), 2)/signedRankARE + za*za/2
	return max(int(math.Ceil(n)), stats.MinPairs(conf))
}

func better(d gatetable.Direction) string {
	if d == gatetable.AtLeast {
		return "higher"
	}
	return "lower"
}

func worseWord(d gatetable.Direction) string {
	if d == gatetable.AtLeast {
		return "lower"
	}
	return "higher"
}

func betterWord(d gatetable.Direction) string {
	if d == gatetable.AtLeast {
		return "higher"
	}
	return "lower"
}

func toPct(logRatio float64) float64 { return math.Expm1(logRatio) * 100 }

func ptr(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

func pct(frac float64) string { return fmtPct(frac * 100) }

// fmtPct shows a percentage with up to 4 significant digits ("99.17 %").
func fmtPct(p float64) string { return fmt.Sprintf("%.4g %%", p) }
