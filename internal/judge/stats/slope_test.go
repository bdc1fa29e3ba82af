package stats

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// The soak geometry used throughout, the seed's: a 2 h run sampled every
// 30 s gives 241 samples at t = 0, 30, …, 7200 s. The tail (final half)
// starts at 3600 s and holds 121 samples; 6 buckets of 600 s (20 intervals)
// have boundaries at 3600, 4200, 4800, 5400, 6000, 6600, 7200 — each on a
// sample, so a step landing "on a boundary" is a real sample there.
const (
	soakEnd  = 7200.0
	soakDt   = 30.0
	tailFrom = 3600.0
	bucketW  = 600.0
)

// series samples f at t = 0, dt, …, end.
func series(end, dt float64, f func(t float64) float64) []Point {
	var ps []Point
	for i := 0; float64(i)*dt <= end; i++ {
		t := float64(i) * dt
		ps = append(ps, Point{T: t, V: f(t)})
	}
	return ps
}

// perBucketFitMedian is the estimator the seed's scale gate tried and
// rejected, because it aliases a staircase whose steps sit on the bucket
// boundaries: a least-squares slope fitted inside each bucket, median taken. It exists
// here only to show that the staircase cases below are the ones that catch
// a regression to it.
func perBucketFitMedian(tail []Point) float64 {
	a, b := tail[0].T, tail[len(tail)-1].T
	w := (b - a) / RSSSlopeBuckets
	groups := make([][]Point, RSSSlopeBuckets)
	for _, p := range tail {
		i := min(int((p.T-a)/w), RSSSlopeBuckets-1)
		groups[i] = append(groups[i], p)
	}
	rates := make([]float64, RSSSlopeBuckets)
	for i, g := range groups {
		rates[i] = leastSquares(g)
	}
	return median(rates) * 60
}

func tailOf(ps []Point, from float64) []Point {
	for i, p := range ps {
		if p.T >= from {
			return ps[i:]
		}
	}
	return nil
}

type slopeCase struct {
	name     string
	points   []Point
	want     float64 // KB/min
	tol      float64
	method   string
	stepKB   float64
	stepAt   float64
	stepTol  float64
	tailFrom float64
}

func checkSlope(t *testing.T, c slopeCase) SlopeResult {
	t.Helper()
	r := RSSSlope(c.points)
	if !r.OK {
		t.Fatalf("%s: OK=false for %d points", c.name, len(c.points))
	}
	if r.Method != c.method {
		t.Errorf("%s: method %q, want %q", c.name, r.Method, c.method)
	}
	if !near(r.KBPerMin, c.want, c.tol+eps) {
		t.Errorf("%s: slope %.6f KB/min, want %.6f ± %g", c.name, r.KBPerMin, c.want, c.tol)
	}
	if !near(r.StepMaxKB, c.stepKB, c.stepTol+eps) || (c.stepTol == 0 && r.StepAtS != c.stepAt) {
		t.Errorf("%s: step %.3f KB at %.1f s, want %.3f at %.1f", c.name, r.StepMaxKB, r.StepAtS, c.stepKB, c.stepAt)
	}
	if r.TailFromS != c.tailFrom {
		t.Errorf("%s: tail from %v, want %v", c.name, r.TailFromS, c.tailFrom)
	}
	return r
}

func TestRSSSlopeBucketMedian(t *testing.T) {
	stair := func(period, height, offset float64) func(float64) float64 {
		// A step of height at t = offset + k·period (the sample at that time
		// already carries it).
		return func(t float64) float64 { return 80000 + height*math.Floor((t-offset)/period+1) }
	}
	cases := []slopeCase{
		{
			// Flat: every bucket 0 → 0. No rise anywhere: every diff is 0,
			// the first one (at 3630 s) is reported.
			name: "flat", points: series(soakEnd, soakDt, func(float64) float64 { return 85700 }),
			want: 0, method: "bucket-median", stepKB: 0, stepAt: 3630, tailFrom: tailFrom,
		},
		{
			// Sustained 2 KB/s: every bucket (2·600)/600 = 2 KB/s → 120 KB/min.
			// Every diff is 2·30 = 60 KB; the first (3630 s) is kept.
			name: "sustained", points: series(soakEnd, soakDt, func(t float64) float64 { return 50000 + 2*t }),
			want: 120, method: "bucket-median", stepKB: 60, stepAt: 3630, tailFrom: tailFrom,
		},
		{
			// A real 2 h soak from the seed: flat 85 700 KB, one +6100 KB step at
			// 5460 s (bucket 3, [5400, 6000)), flat after. Bucket rates
			// [0 0 0 610 0 0] KB/min → median (0+0)/2 = 0. The step is reported.
			name: "one step", points: series(soakEnd, soakDt, func(t float64) float64 {
				if t >= 5460 {
					return 91800
				}
				return 85700
			}),
			want: 0, method: "bucket-median", stepKB: 6100, stepAt: 5460, tailFrom: tailFrom,
		},
		{
			// +3000 KB at 4500 s (bucket 1) and +2000 KB at 6300 s (bucket 4):
			// rates [0 300 0 0 200 0] KB/min, sorted [0 0 0 0 200 300] → 0.
			name: "two steps", points: series(soakEnd, soakDt, func(t float64) float64 {
				v := 85700.0
				if t >= 4500 {
					v += 3000
				}
				if t >= 6300 {
					v += 2000
				}
				return v
			}),
			want: 0, method: "bucket-median", stepKB: 3000, stepAt: 4500, tailFrom: tailFrom,
		},
		{
			// The seed's aliasing case: a 205 KB/min leak as a staircase of
			// 2050 KB every 600 s, steps exactly on the bucket boundaries
			// (4200, 4800, …, 7200). Bucket [b_i, b_i+1] charges the step at
			// b_i+1: 2050/600 KB/s · 60 = 205 KB/min in every bucket.
			name: "staircase aligned", points: series(soakEnd, soakDt, stair(600, 2050, 0)),
			want: 205, method: "bucket-median", stepKB: 2050, stepAt: 4200, tailFrom: tailFrom,
		},
		{
			// Same leak, steps mid-bucket (3900, 4500, …, 6900): still one
			// step of 2050 KB per 600 s bucket → 205 KB/min.
			name: "staircase offset", points: series(soakEnd, soakDt, stair(600, 2050, 300)),
			want: 205, method: "bucket-median", stepKB: 2050, stepAt: 3900, tailFrom: tailFrom,
		},
		{
			// Half-period: 1025 KB every 300 s, two steps per bucket →
			// 2050/600 · 60 = 205 KB/min.
			name: "staircase half-period", points: series(soakEnd, soakDt, stair(300, 1025, 0)),
			want: 205, method: "bucket-median", stepKB: 1025, stepAt: 3900, tailFrom: tailFrom,
		},
		{
			// Double period: 2050 KB every 1200 s (steps at 4800, 6000, 7200)
			// lands in buckets 1, 3, 5: rates [0 205 0 205 0 205], sorted
			// [0 0 0 205 205 205] → (0+205)/2 = 102.5 KB/min, which is the
			// true rate 2050/1200·60.
			name: "staircase double-period", points: series(soakEnd, soakDt, stair(1200, 2050, 0)),
			want: 102.5, method: "bucket-median", stepKB: 2050, stepAt: 4800, tailFrom: tailFrom,
		},
		{
			// A falling RSS (the allocator returning memory): −1 KB/s →
			// −60 KB/min. There is no rise; the largest diff is −30 KB.
			name: "shrinking", points: series(soakEnd, soakDt, func(t float64) float64 { return 90000 - t }),
			want: -60, method: "bucket-median", stepKB: -30, stepAt: 3630, tailFrom: tailFrom,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkSlope(t, c) })
	}
}

// TestRSSSlopeEstimatorChoice pins why the estimator is what it is: on the
// one-step soak series (a real 2 h soak that held flat, stepped once and held
// flat again: no leak) a whole-tail least-squares line reports a
// fabricated leak above the soak's 128 KB/min gate, and on the aligned
// staircase a median of per-bucket fits reports 0 for a real 205 KB/min leak.
// RSSSlope must get both right (TestRSSSlopeBucketMedian).
func TestRSSSlopeEstimatorChoice(t *testing.T) {
	oneStep := series(soakEnd, soakDt, func(t float64) float64 {
		if t >= 5460 {
			return 91800
		}
		return 85700
	})
	// Least squares over the tail, index j = 0..120 (t = 3600 + 30j), step
	// h = 6100 at j = 62, mean j = 60:
	//   Σ(j−60)·V = h·Σ_{j=62..120}(j−60) = h·(1+…+60 − 1) = 1829h
	//   Σ(j−60)²  = 2·(1²+…+60²) = 2·73810 = 147620
	//   slope = 1829·6100/147620 = 75.5784 KB per 30 s = 151.157 KB/min.
	if got := leastSquares(tailOf(oneStep, tailFrom)) * 60; !near(got, 151.157, 0.001) {
		t.Fatalf("least squares on the one-step tail = %.4f KB/min, want 151.157", got)
	}
	aligned := series(soakEnd, soakDt, func(t float64) float64 { return 80000 + 2050*math.Floor(t/600) })
	// Inside each bucket [b_i, b_i+1) the staircase is flat: every fit is 0.
	if got := perBucketFitMedian(tailOf(aligned, tailFrom)); got != 0 {
		t.Fatalf("per-bucket fit median on the aligned staircase = %v, want 0 (the aliasing)", got)
	}
	if r := RSSSlope(aligned); !near(r.KBPerMin, 205, 1e-9) {
		t.Fatalf("RSSSlope on the aligned staircase = %v, want 205", r.KBPerMin)
	}
}

// TestRSSSlopeJittered samples at t = 30j ± 5 s with ±40 KB of noise.
// Consecutive samples are at most 40 s apart, so a bucket's boundary sample
// lies less than 40 s before its boundary; buckets are at least 3590/6 ≈ 598 s
// wide, so the two boundary samples are more than 555 s apart, and their
// values differ by the leak over exactly that time plus at most 80 KB of
// noise. For a steady 2 KB/s leak every bucket rate — so the median — is
// within 80/555·60 = 8.65 KB/min of 120. The bound holds for any jitter and noise in those ranges, so the
// test does not depend on the generator's sequence.
func TestRSSSlopeJittered(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	jitter := func(leak func(float64) float64) []Point {
		var ps []Point
		for j := 0; j <= 240; j++ {
			tj := float64(j)*soakDt + (rng.Float64()*10 - 5)
			ps = append(ps, Point{T: tj, V: leak(tj) + (rng.Float64()*80 - 40)})
		}
		return ps
	}
	const bound = 80.0 / 555 * 60
	// Without noise the rate between two boundary samples is the leak
	// exactly, wherever jitter put them: 120 KB/min to rounding. (Dividing
	// by the nominal bucket width instead is off by up to ~1.6 KB/min here.)
	var clean []Point
	for j := 0; j <= 240; j++ {
		tj := float64(j)*soakDt + (rng.Float64()*10 - 5)
		clean = append(clean, Point{T: tj, V: 50000 + 2*tj})
	}
	if r := RSSSlope(clean); r.Method != "bucket-median" || !near(r.KBPerMin, 120, 1e-6) {
		t.Fatalf("jittered, noise-free sustained: %+v, want exactly 120", r)
	}
	for i := 0; i < 20; i++ {
		r := RSSSlope(jitter(func(t float64) float64 { return 50000 + 2*t }))
		if !r.OK || r.Method != "bucket-median" || !near(r.KBPerMin, 120, bound) {
			t.Fatalf("jittered sustained: %+v, want 120 ± %.2f", r, bound)
		}
		// A jittered one-step: every bucket but one is noise only, so the
		// median is within the same bound of 0, and the step (6100 ± 80 KB)
		// is still reported.
		r = RSSSlope(jitter(func(t float64) float64 {
			if t >= 5460 {
				return 91800
			}
			return 85700
		}))
		if !r.OK || !near(r.KBPerMin, 0, bound) || !near(r.StepMaxKB, 6100, 80) || math.Abs(r.StepAtS-5460) > 40 {
			t.Fatalf("jittered one step: %+v, want 0 ± %.2f and a 6100 ± 80 KB step near 5460 s", r, bound)
		}
	}
}

func TestRSSSlopeSparseFallback(t *testing.T) {
	// Five samples a minute apart: from = 120, tail = {120, 180, 240} with
	// V = {1000, 1060, 1180}. Least squares: mean t 180, mean V 1080;
	// Σ(t−180)(V−1080) = (−60)(−80) + 0 + (60)(100) = 10800; Σ(t−180)² = 7200;
	// slope 1.5 KB/s = 90 KB/min. Largest rise 120 KB at 240 s.
	short := []Point{{0, 1000}, {60, 1000}, {120, 1000}, {180, 1060}, {240, 1180}}
	checkSlope(t, slopeCase{name: "short", points: short, want: 90, method: "least-squares",
		stepKB: 120, stepAt: 240, tailFrom: 120})

	// Density threshold with a steady 1 KB/s leak (60 KB/min either way):
	// 49 samples at 1 s → tail t = 24..48, 25 samples, buckets of 4 s hold
	// 4,4,4,4,4,5 → bucket median. 45 samples → tail of 23 < 6·4 → fallback.
	leak := func(t float64) float64 { return 1000 + t }
	checkSlope(t, slopeCase{name: "dense enough", points: series(48, 1, leak), want: 60, method: "bucket-median",
		stepKB: 1, stepAt: 25, tailFrom: 24})
	checkSlope(t, slopeCase{name: "too sparse", points: series(44, 1, leak), want: 60, method: "least-squares",
		stepKB: 1, stepAt: 23, tailFrom: 22})

	// A half-hour run sampled at 30 s (61 samples, tail 31 → 5.17 per
	// bucket) with the one-step shape keeps the bucket median; at 60 s
	// (31 samples, tail 16) it falls back and the fit smears the step — the
	// documented behaviour of short runs, which is why the step is reported.
	step := func(t float64) float64 {
		if t >= 1500 {
			return 91800
		}
		return 85700
	}
	if r := RSSSlope(series(1800, 30, step)); r.Method != "bucket-median" || r.KBPerMin != 0 || r.StepMaxKB != 6100 {
		t.Fatalf("30 s half-hour one-step: %+v", r)
	}
	if r := RSSSlope(series(1800, 60, step)); r.Method != "least-squares" || r.KBPerMin <= 0 || r.StepMaxKB != 6100 || r.StepAtS != 1500 {
		t.Fatalf("60 s half-hour one-step: %+v", r)
	}
}

func TestRSSSlopeTooShort(t *testing.T) {
	cases := map[string][]Point{
		"nil":          nil,
		"one":          {{0, 1}},
		"three":        {{0, 1}, {30, 2}, {60, 3}},
		"no time span": {{5, 1}, {5, 2}, {5, 3}, {5, 4}},
	}
	for name, ps := range cases {
		if r := RSSSlope(ps); r.OK {
			t.Errorf("%s: OK=true (%+v); a series too short to fit must be unevaluable, not 0", name, r)
		}
	}
	// Four samples is the minimum: tail {30,60,90} at +1 KB/s → 60 KB/min.
	r := RSSSlope([]Point{{0, 0}, {30, 30}, {60, 60}, {90, 90}})
	if !r.OK || !near(r.KBPerMin, 60, eps) || r.Method != "least-squares" {
		t.Fatalf("four samples: %+v", r)
	}
}

func TestRSSSlopeUnsorted(t *testing.T) {
	ps := series(soakEnd, soakDt, func(t float64) float64 { return 80000 + 2050*math.Floor(t/600) })
	want := RSSSlope(ps)
	shuffled := append([]Point(nil), ps...)
	rng := rand.New(rand.NewPCG(3, 4))
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	if got := RSSSlope(shuffled); got != want {
		t.Fatalf("unsorted input: %+v, want %+v", got, want)
	}
}

func BenchmarkRSSSlope241(b *testing.B) {
	ps := series(soakEnd, soakDt, func(t float64) float64 { return 50000 + 2*t })
	b.ReportAllocs()
	for b.Loop() {
		_ = RSSSlope(ps)
	}
}

func TestRSSSlopeNonFinite(t *testing.T) {
	ps := series(soakEnd, soakDt, func(t float64) float64 { return 50000 + 2*t })
	want := RSSSlope(ps)
	// Samples that could not be taken are dropped, not fitted.
	dirty := append([]Point{{math.NaN(), 1}, {100, math.Inf(1)}}, ps...)
	dirty = append(dirty, Point{math.Inf(1), 5}, Point{7300, math.NaN()})
	if got := RSSSlope(dirty); got != want {
		t.Fatalf("with non-finite samples: %+v, want %+v", got, want)
	}
	// Magnitudes that overflow give an unevaluable slope, not NaN or Inf.
	huge := []Point{{0, -math.MaxFloat64}, {1, math.MaxFloat64}, {2, -math.MaxFloat64}, {3, math.MaxFloat64}}
	if r := RSSSlope(huge); r.OK {
		t.Fatalf("overflowing series: %+v, want OK=false", r)
	}
}

// FuzzRSSSlope feeds arbitrary series (pairs of float64 from the fuzzer's
// bytes) to the estimator: it must not panic, and an OK result is finite.
//
//	go test -run='^$' -fuzz=FuzzRSSSlope -fuzztime=30s ./internal/judge/stats
func FuzzRSSSlope(f *testing.F) {
	seed := func(ps []Point) []byte {
		var b []byte
		for _, p := range ps {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.T))
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(p.V))
		}
		return b
	}
	f.Add(seed(series(soakEnd, soakDt, func(t float64) float64 { return 80000 + 2050*math.Floor(t/600) })))
	f.Add(seed([]Point{{0, 1000}, {60, 1000}, {120, 1000}, {180, 1060}, {240, 1180}}))
	f.Add(seed([]Point{{math.NaN(), 1}, {0, 1}, {1, 2}, {2, 3}, {3, 4}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var ps []Point
		for len(b) >= 16 {
			ps = append(ps, Point{
				T: math.Float64frombits(binary.LittleEndian.Uint64(b)),
				V: math.Float64frombits(binary.LittleEndian.Uint64(b[8:])),
			})
			b = b[16:]
		}
		r := RSSSlope(ps)
		if r.OK && (!isFinite(r.KBPerMin) || !isFinite(r.StepMaxKB) || r.Method == "") {
			t.Fatalf("OK result not finite: %+v", r)
		}
	})
}
