// Package calibrate is the statistics of `scalegate calibrate`, which fits
// gate thresholds to a runner. The same profile runs N times on one runner,
// and per gate the package gives the observed distribution, how many runs
// the current threshold would have failed (this runner's false-alarm rate,
// with an exact interval), and the tightest threshold that keeps the
// false-alarm rate at a target.
//
// The tightest threshold is a one-sided normal tolerance bound, because
// with N = 10 runs an empirical 1 % quantile does not exist: the worst of
// 10 runs is exceeded by the next run with probability 1/11 on average
// (and up to 25.9 % at 95 % confidence), and a distribution-free claim of
// ≤ 1 % at 95 % confidence needs 299 runs (1 − 0.99^299 ≥ 0.95). The bound
// x̄ + k·s, with k the tolerance factor for N samples (3.981 for N = 10,
// 99 % coverage, 95 % confidence), is exceeded with probability ≤ 1 % at
// 95 % confidence if the runs are normal. Timing figures are skewed, so the
// same bound is also computed on the logarithms (log-normal runs), and the
// suggestion is the looser of the two, and never tighter than the worst
// observed run. Both claims rest on the shape assumption: 10 runs cannot
// show a tail. Report.Gates[].Suggested.Claim says so in each report.
package calibrate

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/judge/stats/confidence"
)

// Defaults.
const (
	// DefaultTarget is the false-alarm rate a suggested threshold aims at:
	// 1 run in 100.
	DefaultTarget = 0.01
	// DefaultConfidence is the confidence of the suggested thresholds'
	// claim and of the false-alarm rate's interval.
	DefaultConfidence = 0.95
	// MinRuns is the fewest evaluable runs a threshold is suggested from.
	MinRuns = 3
	// SchemaVersion of calibration.json.
	SchemaVersion = 1
)

// Gate is one gate's figure over the runs, as the runner read it through
// the gate table.
type Gate struct {
	Gate   string
	Title  string
	Unit   string
	Dir    gatetable.Direction
	Timing bool
	// Level is the gate's level in this tier ("hard", "advisory").
	Level gatetable.Level
	// Threshold is the profile's current threshold; nil when the gate has
	// no numeric one.
	Threshold *float64
	// Values holds one figure per run; NaN when the run could not evaluate
	// the gate (which fails the gate in that run).
	Values []float64
}

// Options are the target and the confidence (zero values take the
// defaults).
type Options struct {
	Target     float64
	Confidence float64
}

// Report is calibration.json.
type Report struct {
	SchemaVersion int    `json:"schema_version"`
	Profile       string `json:"profile"`
	Host          string `json:"host,omitempty"`
	// Runs is how many runs completed (the Values' length).
	Runs int `json:"runs"`
	// Target is the false-alarm rate the suggestions aim at; Confidence
	// the confidence of their claim and of the rates' intervals.
	Target     float64      `json:"target_false_alarm"`
	Confidence float64      `json:"confidence"`
	Gates      []GateResult `json:"gates"`
	// Notes are the runner's remarks, one sentence each (e.g. which runs
	// had harness-bound legs, whose timing failures the gate itself would
	// call inconclusive); calibration.md lists them.
	Notes []string `json:"notes,omitempty"`
}

// GateResult is one gate's calibration.
type GateResult struct {
	Gate  string `json:"gate"`
	Title string `json:"title"`
	Unit  string `json:"unit,omitempty"`
	// Better is "lower" (an at-most gate) or "higher".
	Better    string          `json:"better"`
	Timing    bool            `json:"timing,omitempty"`
	Level     gatetable.Level `json:"level,omitempty"`
	Threshold *float64        `json:"threshold"`
	Values    stats.Values    `json:"values"`
	// Distribution summarises the evaluable runs; nil when none was.
	Distribution *Distribution `json:"distribution"`
	// Failed counts runs whose figure was beyond the current threshold;
	// Unevaluable runs with no figure. Both fail the gate.
	Failed      int `json:"failed"`
	Unevaluable int `json:"unevaluable"`
	// FalseAlarm is (Failed + Unevaluable) / Runs with its interval; nil
	// without a threshold.
	FalseAlarm *Rate `json:"false_alarm"`
	// Suggested is the tightest threshold at the target; nil with fewer
	// than MinRuns evaluable runs (Note says so).
	Suggested *Suggestion `json:"suggested"`
	// Note compares the current threshold with the suggestion.
	Note string `json:"note,omitempty"`
}

// Distribution is the observed distribution of a figure over the runs.
type Distribution struct {
	N      int     `json:"n"`
	Min    float64 `json:"min"`
	Median float64 `json:"median"`
	Mean   float64 `json:"mean"`
	Max    float64 `json:"max"`
	// SD is the sample standard deviation (0 for one run).
	SD float64 `json:"sd"`
	// MAD is the raw median absolute deviation; SigmaMAD = 1.4826·MAD, the
	// σ a normal distribution with that MAD has (robust to a stalled run).
	MAD      float64 `json:"mad"`
	SigmaMAD float64 `json:"sigma_mad"`
	// CVPct is SD / |mean| in percent; nil when the mean is 0.
	CVPct *float64 `json:"cv_pct"`
}

// Rate is a proportion of runs with its Clopper–Pearson interval.
type Rate struct {
	Fails      int     `json:"fails"`
	Runs       int     `json:"runs"`
	Rate       float64 `json:"rate"`
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Confidence float64 `json:"confidence"`
	Method     string  `json:"method"`
}

// Suggestion is the tightest threshold meeting the target, and what the N
// runs can claim about it.
type Suggestion struct {
	// Threshold is the loosest of NormalBound, LogNormalBound and Worst:
	// each is a defensible tightest threshold under its own reading, and
	// a suggestion must hold under all three.
	Threshold float64 `json:"threshold"`
	// By names the bound that set it: "normal", "log-normal", "worst run".
	By string `json:"by"`
	// Factor is the one-sided tolerance factor k for N runs, the target
	// coverage and the confidence.
	Factor      float64 `json:"factor"`
	NormalBound float64 `json:"normal_bound"`
	// LogNormalBound is nil when a figure is ≤ 0 (no logarithm).
	LogNormalBound *float64 `json:"log_normal_bound"`
	// Worst is the worst observed run (the max for an at-most gate).
	Worst float64 `json:"worst"`
	// WorstMeanExceedance is 1/(N+1): the chance, averaged over what N runs
	// can be, that one more run is worse than the worst of them — the only
	// distribution-free statement N runs make. WorstUpperExceedance is its
	// bound at the confidence, 1 − (1 − confidence)^(1/N).
	WorstMeanExceedance  float64 `json:"worst_mean_exceedance"`
	WorstUpperExceedance float64 `json:"worst_upper_exceedance"`
	// RunsForFreeClaim is how many runs would make "the worst run is
	// exceeded with probability ≤ target at the confidence" true without
	// any shape assumption: ⌈ln(1 − confidence)/ln(1 − target)⌉.
	RunsForFreeClaim int `json:"runs_for_distribution_free_claim"`
	// Claim is the above in one paragraph.
	Claim string `json:"claim"`
}

// Analyze calibrates every gate. The gates' Values must all have runs
// entries. Runs below MinRuns still get their distribution and false-alarm
// count, without a suggestion.
func Analyze(profile, host string, runs int, gates []Gate, opt Options) (*Report, error) {
	if opt.Target == 0 {
		opt.Target = DefaultTarget
	}
	if opt.Confidence == 0 {
		opt.Confidence = DefaultConfidence
	}
	if !(opt.Target > 0 && opt.Target < 1) || !(opt.Confidence > 0 && opt.Confidence < 1) {
		return nil, fmt.Errorf("target %v and confidence %v: both must be in (0, 1)", opt.Target, opt.Confidence)
	}
	if runs < 1 {
		return nil, errors.New("no completed run to calibrate from")
	}
	rep := &Report{SchemaVersion: SchemaVersion, Profile: profile, Host: host, Runs: runs, Target: opt.Target, Confidence: opt.Confidence}
	for _, g := range gates {
		if len(g.Values) != runs {
			return nil, fmt.Errorf("gate %s: %d values for %d runs", g.Gate, len(g.Values), runs)
		}
		for i, v := range g.Values {
			if math.IsInf(v, 0) {
				return nil, fmt.Errorf("gate %s: run %d: figure %v", g.Gate, i+1, v)
			}
		}
		if g.Threshold != nil && (math.IsNaN(*g.Threshold) || math.IsInf(*g.Threshold, 0)) {
			return nil, fmt.Errorf("gate %s: threshold %v", g.Gate, *g.Threshold)
		}
		rep.Gates = append(rep.Gates, calibrate(g, opt))
	}
	return rep, nil
}

// calibrate is one gate.
func calibrate(g Gate, opt Options) GateResult {
	res := GateResult{
		Gate: g.Gate, Title: g.Title, Unit: g.Unit, Better: better(g.Dir), Timing: g.Timing,
		Level: g.Level, Threshold: g.Threshold, Values: stats.Values(slices.Clone(g.Values)),
	}
	present := res.Values.Present()
	res.Unevaluable = len(g.Values) - len(present)
	res.Distribution = distribution(present)
	if g.Threshold != nil {
		for _, v := range present {
			if !g.Dir.Holds(v, *g.Threshold) {
				res.Failed++
			}
		}
		res.FalseAlarm = rate(res.Failed+res.Unevaluable, len(g.Values), opt.Confidence)
	}
	if len(present) < MinRuns {
		res.Note = fmt.Sprintf("%d evaluable run(s): a threshold is suggested from at least %d", len(present), MinRuns)
		return res
	}
	res.Suggested = suggest(present, g.Dir, opt)
	res.Note = note(g, res.Suggested)
	return res
}

func distribution(x []float64) *Distribution {
	if len(x) == 0 {
		return nil
	}
	mean, sd := stats.MeanSD(x)
	if len(x) == 1 {
		sd = 0
	}
	d := &Distribution{
		N: len(x), Min: slices.Min(x), Median: stats.Median(x), Mean: mean, Max: slices.Max(x),
		SD: sd, MAD: stats.MAD(x), SigmaMAD: stats.MADScale * stats.MAD(x),
	}
	if mean != 0 {
		cv := sd / math.Abs(mean) * 100
		d.CVPct = &cv
	}
	return d
}

func rate(fails, runs int, conf float64) *Rate {
	lo, hi := confidence.ClopperPearson(fails, runs, conf)
	return &Rate{Fails: fails, Runs: runs, Rate: float64(fails) / float64(runs), Lo: lo, Hi: hi, Confidence: conf, Method: "clopper-pearson"}
}

// suggest computes the bounds over x (all present, len ≥ MinRuns).
func suggest(x []float64, dir gatetable.Direction, opt Options) *Suggestion {
	n := len(x)
	k := confidence.ToleranceFactor(n, 1-opt.Target, opt.Confidence)
	sign := 1.0
	worst := slices.Max(x)
	loosest := math.Max
	if dir == gatetable.AtLeast {
		sign, worst, loosest = -1, slices.Min(x), math.Min
	}
	mean, sd := stats.MeanSD(x)
	s := &Suggestion{
		Factor: k, NormalBound: mean + sign*k*sd, Worst: worst,
		WorstMeanExceedance:  1 / float64(n+1),
		WorstUpperExceedance: 1 - math.Pow(1-opt.Confidence, 1/float64(n)),
		RunsForFreeClaim:     int(math.Ceil(math.Log(1-opt.Confidence) / math.Log(1-opt.Target))),
	}
	s.Threshold, s.By = s.NormalBound, "normal"
	if slices.Min(x) > 0 {
		logs := make([]float64, n)
		for i, v := range x {
			logs[i] = math.Log(v)
		}
		lm, ls := stats.MeanSD(logs)
		b := math.Exp(lm + sign*k*ls)
		s.LogNormalBound = &b
		if loosest(b, s.Threshold) != s.Threshold {
			s.Threshold, s.By = b, "log-normal"
		}
	}
	if loosest(worst, s.Threshold) != s.Threshold {
		s.Threshold, s.By = worst, "worst run"
	}
	s.Claim = claim(s, n, dir, opt)
	return s
}

func claim(s *Suggestion, n int, dir gatetable.Direction, opt Options) string {
	f := gatetable.FormatNumber
	worse := "exceeds"
	if dir == gatetable.AtLeast {
		worse = "falls below"
	}
	return fmt.Sprintf("If this figure's runs are normal or log-normal, a run of unchanged code %s %s with probability ≤ %s, "+
		"at %s confidence (one-sided tolerance bound, k = %.3f for %d runs; the looser of the two fits, and never tighter than the worst run). "+
		"Without a shape assumption %d runs claim only that the next run %s the worst of them (%s) with probability %s on average, "+
		"≤ %s at %s confidence; ≤ %s at %s confidence needs %d runs.",
		worse, f(s.Threshold), pct(opt.Target), pct(opt.Confidence), s.Factor, n,
		n, worse, f(s.Worst), pct(s.WorstMeanExceedance), pct(s.WorstUpperExceedance), pct(opt.Confidence),
		pct(opt.Target), pct(opt.Confidence), s.RunsForFreeClaim)
}

// note compares the current threshold with the suggestion.
func note(g Gate, s *Suggestion) string {
	if g.Threshold == nil {
		return ""
	}
	f := gatetable.FormatNumber
	thr := *g.Threshold
	tighter := thr < s.Threshold
	if g.Dir == gatetable.AtLeast {
		tighter = thr > s.Threshold
	}
	if tighter {
		return fmt.Sprintf("the threshold %s %s is tighter than the %s %s this runner supports at the target: expect false alarms here",
			g.Dir.Symbol(), f(thr), g.Dir.Symbol(), f(s.Threshold))
	}
	return fmt.Sprintf("the threshold %s %s holds at the target; the tightest that does is %s %s",
		g.Dir.Symbol(), f(thr), g.Dir.Symbol(), f(s.Threshold))
}

func better(d gatetable.Direction) string {
	if d == gatetable.AtLeast {
		return "higher"
	}
	return "lower"
}

// pct shows a fraction as a percentage with up to 3 significant digits.
func pct(frac float64) string { return fmt.Sprintf("%.3g %%", 100*frac) }
