package stats

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The soak profile's leak gate: rss_slope_kb_per_min_max 128 (fails above it) and
// rss_growth_kb_max 65536 (rss_kb − rss_startup_kb at the end), on a 2 h run sampled every 30 s
// (the geometry of soakEnd, soakDt). These tests say what the gate can see: what a real leak
// reads, and the smallest leak it catches at a given sample noise.
const (
	soakSlopeMax  = 128.0   // KB/min
	soakGrowthMax = 65536.0 // KB
	// The reference server's RSS under load (docs/server.md, "Memory: RSS under load"): 25208 KB
	// at start, a working-set fill to ~34400 KB by ~300 s, then flat; the largest single step
	// of the flat part 4 KB. The fill is modelled as a ramp over the first 300 s.
	soakStartKB = 25208.0
	soakFillKB  = 34424.0 - 25208.0
	soakFillS   = 300.0
)

// soakRSS is a 2 h series: the fill, then flat, plus a linear leak of leak KB/min from t = 0
// and Gaussian noise of sigma KB on every sample.
func soakRSS(leak, sigma float64, rng *rand.Rand) []Point {
	return series(soakEnd, soakDt, func(t float64) float64 {
		v := soakStartKB + soakFillKB*min(1, t/soakFillS) + leak*t/60
		if rng != nil {
			v += sigma * rng.NormFloat64()
		}
		return v
	})
}

// caught reports whether the soak gate fails the series: the slope over its threshold, the
// growth over its ceiling, or the slope missing (unevaluable fails).
func caught(ps []Point) (bySlope, byGrowth bool) {
	r := RSSSlope(ps)
	return !r.OK || r.KBPerMin > soakSlopeMax, ps[len(ps)-1].V-ps[0].V > soakGrowthMax
}

// TestSoakLeakOneMBPerMin: a real leak of 1 MB/min over the 2 h soak reads 1024 KB/min by the
// bucket median, 8× the 128 KB/min threshold, and grows RSS by ~129 MB, twice the 64 MiB
// ceiling: both gates fail, at any plausible noise. Without a leak neither does.
func TestSoakLeakOneMBPerMin(t *testing.T) {
	for _, sigma := range []float64{0, 4, 256, 1024} {
		rng := rand.New(rand.NewPCG(1, uint64(sigma)))
		leak := soakRSS(1024, sigma, rng)
		r := RSSSlope(leak)
		bySlope, byGrowth := caught(leak)
		t.Logf("σ %4.0f KB: 1 MB/min leak reads %.1f KB/min (%s), growth %.0f KB", sigma, r.KBPerMin, r.Method, leak[len(leak)-1].V-leak[0].V)
		if !bySlope || !byGrowth {
			t.Errorf("σ %v: 1 MB/min leak passes (slope %.1f, caught by slope %v, by growth %v)", sigma, r.KBPerMin, bySlope, byGrowth)
		}
		if r.Method != "bucket-median" || r.KBPerMin < 1024-3*sigma/10*1.5 || r.KBPerMin > 1024+3*sigma/10*1.5 {
			t.Errorf("σ %v: 1 MB/min leak reads %.1f KB/min by %s", sigma, r.KBPerMin, r.Method)
		}
		if sigma == 0 && (r.KBPerMin != 1024 || r.TailFromS != 3600) {
			t.Errorf("noiseless: %.6f KB/min from %v s, want exactly 1024 from 3600", r.KBPerMin, r.TailFromS)
		}
	}
	flat := soakRSS(0, 4, rand.New(rand.NewPCG(2, 2)))
	if s, g := caught(flat); s || g {
		t.Errorf("no leak, observed noise: caught (slope %v, growth %v)", s, g)
	}
}

// detectRate is the share of n noisy soak series with a leak of leak KB/min that the slope
// gate fails.
func detectRate(leak, sigma float64, n int, seed uint64) float64 {
	rng := rand.New(rand.NewPCG(seed, uint64(leak*1000)))
	hits := 0
	for range n {
		if s, _ := caught(soakRSS(leak, sigma, rng)); s {
			hits++
		}
	}
	return float64(hits) / float64(n)
}

// smallestCaught is the smallest leak (to 2 KB/min) that the slope gate fails in at least 99 %
// of n noisy series.
func smallestCaught(sigma float64, n int) float64 {
	for leak := 0.0; leak <= 4096; leak += 2 {
		if detectRate(leak, sigma, n, 7) >= 0.99 {
			return leak
		}
	}
	return -1
}

// TestSoakSlopeSensitivity: the smallest leak the slope gate catches (in 99 % of runs) and how
// often it fails a leak-free server, as a function of the noise on each RSS sample. The
// estimator's rate per bucket is an endpoint difference over 600 s, so its noise is σ·√2/10
// KB/min, and the median of 6 such rates (whose sum telescopes, so their errors partly cancel)
// shrinks it further. The simulation (400 series per point, seeded) reads: at the observed σ of
// a few KB the gate catches anything from 130 KB/min on and fails no flat server; at σ = 1 MB,
// 250 times the observed noise, it needs 226 KB/min and still failed no flat server.
func TestSoakSlopeSensitivity(t *testing.T) {
	const n = 400
	want := []struct {
		sigma              float64
		loCaught, hiCaught float64 // bounds on the smallest leak caught, KB/min
		maxFalse           float64 // bound on the false-alarm rate at no leak
	}{
		{sigma: 4, loCaught: 128, hiCaught: 134, maxFalse: 0},
		{sigma: 64, loCaught: 128, hiCaught: 145, maxFalse: 0},
		{sigma: 256, loCaught: 140, hiCaught: 175, maxFalse: 0},
		{sigma: 1024, loCaught: 180, hiCaught: 280, maxFalse: 0.01},
	}
	for _, w := range want {
		got := smallestCaught(w.sigma, n)
		fa := detectRate(0, w.sigma, n, 11)
		t.Logf("σ %4.0f KB per sample: smallest leak caught in 99 %% of runs %4.0f KB/min; a flat server fails %.1f %% of runs",
			w.sigma, got, 100*fa)
		if got < w.loCaught || got > w.hiCaught {
			t.Errorf("σ %v: smallest caught %v KB/min, want %v..%v", w.sigma, got, w.loCaught, w.hiCaught)
		}
		if fa > w.maxFalse {
			t.Errorf("σ %v: false alarms %.3f, want ≤ %v", w.sigma, fa, w.maxFalse)
		}
	}
}

// TestSoakStaircaseLeak: a leak that arrives in steps (a heap that grows by whole spans) is
// read by the bucket median while its steps come more often than the 600 s buckets; steps
// rarer than every other bucket leave most buckets flat, the median reads ~0 and the slope gate
// passes them by design (an isolated step is not a trend) — the step is reported beside the
// slope, and the growth ceiling catches the leak once it has added 64 MiB.
func TestSoakStaircaseLeak(t *testing.T) {
	cases := []struct {
		stepKB, everyS float64
		slope          bool // the slope gate catches it
		growth         bool // the growth gate catches it
	}{
		{stepKB: 1024, everyS: 60, slope: true, growth: true},     // 1 MB/min in 1 MB steps
		{stepKB: 8192, everyS: 480, slope: true, growth: true},    // 1 MB/min in 8 MB steps
		{stepKB: 32768, everyS: 1800, slope: false, growth: true}, // ~1.1 MB/min in 32 MB steps: 2 in the tail
		{stepKB: 4096, everyS: 1800, slope: false, growth: false}, // 136 KB/min in 4 MB steps: neither
	}
	for _, c := range cases {
		ps := series(soakEnd, soakDt, func(t float64) float64 {
			n := float64(int((t + soakDt/2) / c.everyS)) // steps land just after a sample
			return soakStartKB + soakFillKB*min(1, t/soakFillS) + n*c.stepKB
		})
		r := RSSSlope(ps)
		s, g := caught(ps)
		t.Logf("%s: slope %.1f KB/min, largest step %.0f KB at %.0f s, growth %.0f KB: caught by slope %v, by growth %v",
			fmt.Sprintf("%.0f KB every %.0f s", c.stepKB, c.everyS), r.KBPerMin, r.StepMaxKB, r.StepAtS, ps[len(ps)-1].V-ps[0].V, s, g)
		if s != c.slope || g != c.growth {
			t.Errorf("%v KB every %v s: caught by slope %v by growth %v, want %v %v", c.stepKB, c.everyS, s, g, c.slope, c.growth)
		}
	}
}
