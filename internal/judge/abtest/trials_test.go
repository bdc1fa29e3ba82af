package abtest

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// A noise model draws ε, the leg's log-deviation from the build's true
// figure: the leg measures true·e^ε.
type noiseModel struct {
	name string
	draw func(r *rand.Rand) float64
}

// sigmaAcceptance reads "±10 % per 20 s leg" as 95 % of legs within ±10 %
// of the median: a log-normal leg with σ = ln(1.1)/1.96.
var sigmaAcceptance = math.Log(1.1) / 1.96

// measuredTickHz is tick-Hz (min) of 12 consecutive pr legs of one build
// on the 2-core development machine under load average 7–17 (other
// engineers' builds and tests), ÷ their median 58.82: the core varies by
// about 1 % (σ from the MAD 1.1 %) and 3 of the 12 legs collapsed (0.60,
// 0.71, 0.82) as the machine starved the server.
var measuredTickHz = []float64{58.71, 59.14, 59.73, 58.39, 58.92, 55.70, 59.18, 59.25, 35.35, 42.03, 59.20, 48.46}

func models() []noiseModel {
	logs := make([]float64, len(measuredTickHz))
	for i, v := range measuredTickHz {
		logs[i] = math.Log(v / 58.815)
	}
	return []noiseModel{
		{"log-normal σ 4.86 % (±10 % as a 95 % band)", func(r *rand.Rand) float64 { return sigmaAcceptance * r.NormFloat64() }},
		// Student t with 3 degrees of freedom, scaled to the same MAD as the
		// log-normal above (t₃'s MAD is 0.7649, N(0,1)'s 0.6745): same core
		// spread, far heavier tails.
		{"t3, same MAD", func(r *rand.Rand) float64 {
			var c float64
			for range 3 {
				g := r.NormFloat64()
				c += g * g
			}
			return sigmaAcceptance * 0.6745 / 0.7649 * r.NormFloat64() / math.Sqrt(c/3)
		}},
		{"measured tick-Hz legs (resampled)", func(r *rand.Rand) float64 { return logs[r.IntN(len(logs))] }},
		{"log-normal σ 10 % (±10 % as one σ)", func(r *rand.Rand) float64 { return 0.10 * r.NormFloat64() }},
	}
}

// trial runs one synthetic ab of one figure: B's true figure is A's ×
// (1+shift), every leg draws its own noise. A rise is worse for AtMost.
func trial(r *rand.Rand, m noiseModel, rounds int, shift float64, dir gatetable.Direction, conf float64) Verdict {
	met := Metric{Gate: "g", Dir: dir, A: make([]float64, rounds), B: make([]float64, rounds)}
	for i := range rounds {
		met.A[i] = 20 * math.Exp(m.draw(r))
		met.B[i] = 20 * (1 + shift) * math.Exp(m.draw(r))
	}
	rep, err := Analyze([]Metric{met}, rounds, conf)
	if err != nil {
		panic(err)
	}
	return rep.Results[0].Verdict
}

// rates runs trials seeded trials and returns the share of each verdict.
func rates(seed uint64, trials int, m noiseModel, rounds int, shift float64, dir gatetable.Direction, conf float64) map[Verdict]float64 {
	r := rand.New(rand.NewPCG(seed, 0x5ca1e9a7e))
	out := map[Verdict]float64{}
	for range trials {
		out[trial(r, m, rounds, shift, dir, conf)] += 1.0 / float64(trials)
	}
	return out
}

// TestDefaultsMeetAcceptance is the acceptance of the A/B statistic at
// DefaultRounds and DefaultConfidence, over 1,000 seeded trials per case:
// a 5 % shift of a figure whose legs vary ±10 % (the stated model) is
// detected, as a regression, in ≥ 80 %; identical builds report no change
// in ≥ 95 % under every noise model. The figures it logs are the ones
// docs/baselines.md quotes.
func TestDefaultsMeetAcceptance(t *testing.T) {
	const trials = 1000
	ms := models()
	for i, m := range ms {
		for _, dir := range []gatetable.Direction{gatetable.AtMost, gatetable.AtLeast} {
			// A regression: up for AtMost (tick ms), down for AtLeast (tick-Hz).
			shift := 0.05
			if dir == gatetable.AtLeast {
				shift = -0.05
			}
			seed := uint64(100*i) + uint64(dir)
			det := rates(seed, trials, m, DefaultRounds, shift, dir, DefaultConfidence)
			same := rates(seed+50, trials, m, DefaultRounds, 0, dir, DefaultConfidence)
			t.Logf("%-40s %s: 5 %% worse → regression %.1f %% (improvement %.1f %%); identical → no change %.1f %%",
				m.name, dir.Symbol(), 100*det[Regression], 100*det[Improvement], 100*same[NoChange])
			if i == 0 && det[Regression] < 0.80 {
				t.Errorf("%s %s: 5 %% shift detected in %.1f %% of trials, want ≥ 80 %%", m.name, dir.Symbol(), 100*det[Regression])
			}
			if same[NoChange] < 0.95 {
				t.Errorf("%s %s: identical builds: no change in %.1f %% of trials, want ≥ 95 %%", m.name, dir.Symbol(), 100*same[NoChange])
			}
			if det[Improvement] > 0.005 {
				t.Errorf("%s %s: a regression called an improvement in %.1f %% of trials", m.name, dir.Symbol(), 100*det[Improvement])
			}
		}
	}
}

// TestRoundsForAgainstTrials: the planning formula's round count reaches
// its power with the exact test (to within 3 binomial standard errors of
// 400 trials), and one round fewer than the default does not meet 80 % by
// much (the default is not padded).
func TestRoundsForAgainstTrials(t *testing.T) {
	n := RoundsFor(sigmaAcceptance, 0.05, DefaultConfidence, 0.80)
	if n > DefaultRounds {
		t.Fatalf("RoundsFor = %d > DefaultRounds %d", n, DefaultRounds)
	}
	m := models()[0]
	got := rates(7, 400, m, n, 0.05, gatetable.AtMost, DefaultConfidence)[Regression]
	t.Logf("RoundsFor(σ %.4f, 5 %%, %v, 80 %%) = %d rounds: measured power %.1f %%", sigmaAcceptance, DefaultConfidence, n, 100*got)
	if got < 0.80-3*0.02 {
		t.Errorf("%d rounds: power %.1f %%, want ≈ 80 %%", n, 100*got)
	}
}

// TestRoundsForTable logs the planning table docs/baselines.md quotes
// (rounds for a 5 % shift at 80 % power). Set SCALEGATE_AB_TABLE=1 to also
// measure each row with 1,000 seeded trials (slow: minutes).
func TestRoundsForTable(t *testing.T) {
	for _, sigma := range []float64{0.01, 0.02, sigmaAcceptance, 0.10, 0.50} {
		for _, conf := range []float64{0.95, 0.99} {
			n := RoundsFor(sigma, 0.05, conf, 0.80)
			line := ""
			if os.Getenv("SCALEGATE_AB_TABLE") != "" && n <= 200 {
				m := noiseModel{draw: func(r *rand.Rand) float64 { return sigma * r.NormFloat64() }}
				line = " measured power " + formatPct(rates(11, 1000, m, n, 0.05, gatetable.AtMost, conf)[Regression])
			}
			t.Logf("σ %.4f conf %.2f: %d rounds%s", sigma, conf, n, line)
		}
	}
	if RoundsFor(0.10, 0.05, 0.99, 0.80) <= RoundsFor(sigmaAcceptance, 0.05, 0.99, 0.80) {
		t.Error("more noise must need more rounds")
	}
}

func formatPct(v float64) string { return trimPct(100*v) + " %" }

func trimPct(v float64) string {
	s := []byte(fmtPct(v))
	return string(s[:len(s)-2])
}

// TestFamilyPowerAndDetectable measures, over 1,000 seeded trials per cell
// at DefaultRounds, the power against a 5 % rise with one figure (each
// interval at 99 %) and with five judged at once (each at 99.8 %), and the
// mean DetectablePct a run reports: the figures docs/baselines.md quotes.
// They are deterministic, so each is checked to its printed precision.
func TestFamilyPowerAndDetectable(t *testing.T) {
	want := []struct{ power1, power5, detectable float64 }{ // percent, as quoted
		{84.8, 64.5, 4.8},
		{63.8, 42.1, 5.9},
		{23.2, 10.3, 14.7},
		{19.4, 8.1, 9.9},
	}
	for i, m := range models() {
		var got [2]float64
		var det float64
		for j, conf := range []float64{DefaultConfidence, 1 - (1-DefaultConfidence)/5} {
			r := rand.New(rand.NewPCG(uint64(900+i), 1))
			hits, dn := 0, 0
			var dsum float64
			for range 1000 {
				met := Metric{Gate: "g", Dir: gatetable.AtMost, A: make([]float64, DefaultRounds), B: make([]float64, DefaultRounds)}
				for k := range DefaultRounds {
					met.A[k] = 20 * math.Exp(m.draw(r))
					met.B[k] = 21 * math.Exp(m.draw(r))
				}
				res := compare(met, conf)
				if res.Verdict == Regression {
					hits++
				}
				if res.DetectablePct != nil {
					dsum += *res.DetectablePct
					dn++
				}
			}
			got[j] = float64(hits) / 10
			if j == 0 {
				det = dsum / float64(dn)
			}
		}
		t.Logf("%-40s power 1 figure %.1f %%, 5 figures %.1f %%; mean detectable %.1f %%", m.name, got[0], got[1], det)
		w := want[i]
		if math.Abs(got[0]-w.power1) > 0.05+1e-9 || math.Abs(got[1]-w.power5) > 0.05+1e-9 || math.Abs(det-w.detectable) > 0.05 {
			t.Errorf("%s: %.1f / %.1f / %.2f, quoted %v / %v / %v", m.name, got[0], got[1], det, w.power1, w.power5, w.detectable)
		}
		if got[1] > got[0] {
			t.Errorf("%s: judging 5 figures must not raise one figure's power", m.name)
		}
	}
}
