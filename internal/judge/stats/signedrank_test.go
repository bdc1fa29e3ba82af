package stats

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestSignedRankLowerTail: for n = 3 the 8 sign patterns give W⁺ sums
// 0,1,2,3,3,4,5,6, so the CDF is 1,2,3,5,6,7,8 eighths.
func TestSignedRankLowerTail(t *testing.T) {
	want := []float64{1, 2, 3, 5, 6, 7, 8}
	got := SignedRankLowerTail(3)
	if len(got) != len(want) {
		t.Fatalf("len = %d, want %d", len(got), len(want))
	}
	for i := range want {
		if !near(got[i], want[i]/8, eps) {
			t.Errorf("P(W⁺ ≤ %d) = %v, want %v/8", i, got[i], want[i])
		}
	}
	// Brute force for n = 12: enumerate all 4096 sign patterns.
	const n = 12
	counts := make([]float64, n*(n+1)/2+1)
	for mask := 0; mask < 1<<n; mask++ {
		w := 0
		for r := 1; r <= n; r++ {
			if mask&(1<<(r-1)) != 0 {
				w += r
			}
		}
		counts[w]++
	}
	tail := SignedRankLowerTail(n)
	var cum float64
	for w, c := range counts {
		cum += c
		if !near(tail[w], cum/4096, 1e-12) {
			t.Fatalf("n=12: P(W⁺ ≤ %d) = %v, want %v", w, tail[w], cum/4096)
		}
	}
}

// TestSignedRankCriticalCount checks the table critical values: two-sided
// 5 %, n = 10 rejects at W⁺ ≤ 8 (P = 0.0244), so C = 9; n = 6 only at
// W⁺ = 0 (1/64); n = 5 never (1/32 > 0.025).
func TestSignedRankCriticalCount(t *testing.T) {
	cases := []struct {
		n     int
		conf  float64
		c     int
		cover float64
	}{
		{10, 0.95, 9, 1 - 2*25.0/1024},
		{6, 0.95, 1, 1 - 2.0/64},
		{5, 0.95, 0, 0},
		{20, 0.95, 53, 0}, // table: T ≤ 52 at 5 % two-sided
	}
	for _, c := range cases {
		got, cover := SignedRankCriticalCount(c.n, c.conf)
		if got != c.c {
			t.Errorf("n=%d conf=%v: C = %d, want %d", c.n, c.conf, got, c.c)
		}
		if c.cover != 0 && !near(cover, c.cover, 1e-12) {
			t.Errorf("n=%d: coverage %v, want %v", c.n, cover, c.cover)
		}
		if got > 0 && cover < c.conf {
			t.Errorf("n=%d: coverage %v below the asked %v", c.n, cover, c.conf)
		}
	}
	for _, conf := range []float64{0.9, 0.95, 0.99, 0.999} {
		n := MinPairs(conf)
		if c, _ := SignedRankCriticalCount(n, conf); c == 0 {
			t.Errorf("MinPairs(%v) = %d has no interval", conf, n)
		}
		if c, _ := SignedRankCriticalCount(n-1, conf); c != 0 {
			t.Errorf("MinPairs(%v) = %d but %d already has one", conf, n, n-1)
		}
	}
}

// wPlus is the signed-rank statistic of d − theta (no ties in the tests).
func wPlus(d []float64, theta float64) int {
	w := 0
	for i, a := range d {
		rank := 1
		for j, b := range d {
			if j != i && math.Abs(b-theta) < math.Abs(a-theta) {
				rank++
			}
		}
		if a-theta > 0 {
			w += rank
		}
	}
	return w
}

// TestHodgesLehmannInvertsTheTest: the interval is exactly the set of
// shifts θ the two-sided signed-rank test on d − θ does not reject.
func TestHodgesLehmannInvertsTheTest(t *testing.T) {
	d := []float64{0.952, -0.147, 1.022, 0.43, 0.62, 0.59, 0.49, -0.08, 0.01, 0.333, 0.71}
	si, err := HodgesLehmann(d, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	n := len(d)
	c, _ := SignedRankCriticalCount(n, 0.95)
	m := n * (n + 1) / 2
	rejects := func(theta float64) bool {
		w := wPlus(d, theta)
		return w <= c-1 || w >= m-c+1
	}
	const h = 1e-9
	for _, p := range []struct {
		theta  float64
		reject bool
	}{{si.Lo - h, true}, {si.Lo + h, false}, {si.Estimate, false}, {si.Hi - h, false}, {si.Hi + h, true}} {
		if got := rejects(p.theta); got != p.reject {
			t.Errorf("θ = %v: rejected %v, want %v (interval [%v, %v])", p.theta, got, p.reject, si.Lo, si.Hi)
		}
	}
	// Walsh averages of {1,2,3}: 1 1.5 2 2 2.5 3 → median 2.
	if w := WalshAverages([]float64{3, 1, 2}); !near(Percentile(w, 50), 2, eps) || len(w) != 6 {
		t.Errorf("Walsh averages %v", w)
	}
}

// TestHodgesLehmannCoverage: differences of two legs of one skewed
// (log-normal) distribution are symmetric about 0, so over 2,000 seeded
// trials of 10 pairs the 95 % interval must hold 0 at least its exact
// coverage (0.9512) less three binomial standard errors (3·0.0048).
func TestHodgesLehmannCoverage(t *testing.T) {
	r := rand.New(rand.NewPCG(27, 1))
	const trials = 2000
	hold := 0
	for range trials {
		d := make([]float64, 10)
		for i := range d {
			d[i] = math.Exp(0.8*r.NormFloat64()) - math.Exp(0.8*r.NormFloat64())
		}
		si, err := HodgesLehmann(d, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if si.Lo <= 0 && 0 <= si.Hi {
			hold++
		}
	}
	if got := float64(hold) / trials; got < 0.9512-3*0.0048 {
		t.Errorf("coverage %.4f over %d trials, want ≥ %.4f", got, trials, 0.9512-3*0.0048)
	}
}

func TestHodgesLehmannErrors(t *testing.T) {
	if _, err := HodgesLehmann([]float64{1, 2, 3, 4, 5}, 0.95); !errors.Is(err, ErrTooFewPairs) {
		t.Errorf("5 pairs at 95 %%: err %v, want ErrTooFewPairs", err)
	}
	// NaN is a missing pair, not a zero: 6 values with one NaN are 5 pairs.
	if _, err := HodgesLehmann([]float64{1, 2, 3, 4, 5, math.NaN()}, 0.95); !errors.Is(err, ErrTooFewPairs) {
		t.Errorf("NaN counted as a pair: err %v", err)
	}
	if _, err := HodgesLehmann([]float64{1, 2, 3, 4, 5, 6}, 1); err == nil {
		t.Error("confidence 1 accepted")
	}
}

func BenchmarkHodgesLehmann40(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	d := make([]float64, 40)
	for i := range d {
		d[i] = r.NormFloat64()
	}
	for b.Loop() {
		if _, err := HodgesLehmann(d, 0.95); err != nil {
			b.Fatal(err)
		}
	}
}
