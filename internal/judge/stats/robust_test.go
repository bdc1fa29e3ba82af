package stats

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

// TestMedianMAD checks the robust spread against values worked by hand.
func TestMedianMAD(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name        string
		in          []float64
		median, mad float64
	}{
		// deviations from 3: 2 1 0 1 97 → sorted 0 1 1 2 97 → 1; the 100 moves neither
		{"outlier ignored", []float64{1, 2, 3, 4, 100}, 3, 1},
		// median 2.5; deviations 1.5 .5 .5 1.5 → 1
		{"even count", []float64{4, 1, 3, 2}, 2.5, 1},
		{"single", []float64{7}, 7, 0},
		{"identical", []float64{5, 5, 5}, 5, 0},
		// three samples: deviations {0, a, b} → MAD is min(a, b) (here 1, not 4)
		{"three", []float64{70, 71, 75}, 71, 1},
		{"NaN skipped", []float64{nan, 1, 2, 3}, 2, 1},
	}
	for _, c := range cases {
		if got := Median(c.in); !near(got, c.median, eps) {
			t.Errorf("%s: Median = %v, want %v", c.name, got, c.median)
		}
		if got := MAD(c.in); !near(got, c.mad, eps) {
			t.Errorf("%s: MAD = %v, want %v", c.name, got, c.mad)
		}
	}
	for _, in := range [][]float64{nil, {nan}} {
		if !math.IsNaN(Median(in)) || !math.IsNaN(MAD(in)) {
			t.Errorf("%v: Median/MAD of no data must be NaN (missing, not 0)", in)
		}
	}
	// MADScale·MAD of a symmetric normal-quantile grid recovers σ: the
	// quartiles of N(0, 2) are ±2·0.6745 and the MAD is exactly that.
	q := 2 * NormalQuantile(0.75)
	if got := MADScale * MAD([]float64{-q, -q / 2, 0, q / 2, q, -2 * q, 2 * q}); !near(got, 2, 1e-9) {
		t.Errorf("MADScale·MAD = %v, want σ = 2", got)
	}
}

// TestMeanSD: {2,4,4,4,5,5,7,9}: mean 5, Σ(x−5)² = 32, sd = √(32/7).
func TestMeanSD(t *testing.T) {
	m, sd := MeanSD([]float64{2, 4, 4, 4, 5, 5, 7, 9, math.NaN()})
	if !near(m, 5, eps) || !near(sd, math.Sqrt(32.0/7), eps) {
		t.Errorf("MeanSD = %v, %v; want 5, %v", m, sd, math.Sqrt(32.0/7))
	}
	if m, sd := MeanSD([]float64{3}); m != 3 || !math.IsNaN(sd) {
		t.Errorf("one value: %v, %v; want 3, NaN", m, sd)
	}
	if m, _ := MeanSD(nil); !math.IsNaN(m) {
		t.Errorf("no value: mean %v, want NaN", m)
	}
}

// TestClopperPearson checks exact intervals: at k = 0 the upper bound is
// 1 − (α/2)^(1/n) in closed form; 3 of 10 is R's binom.test(3, 10).
func TestClopperPearson(t *testing.T) {
	cases := []struct {
		k, n   int
		conf   float64
		lo, hi float64
	}{
		{0, 10, 0.95, 0, 1 - math.Pow(0.025, 0.1)}, // 0.3085
		{10, 10, 0.95, math.Pow(0.025, 0.1), 1},
		{3, 10, 0.95, 0.06673951, 0.65245285},
		{0, 299, 0.90, 0, 1 - math.Pow(0.05, 1.0/299)}, // one-sided 95 %: 0.99 % for 0 of 299
	}
	for _, c := range cases {
		lo, hi := ClopperPearson(c.k, c.n, c.conf)
		if !near(lo, c.lo, 1e-7) || !near(hi, c.hi, 1e-7) {
			t.Errorf("ClopperPearson(%d, %d, %v) = [%v, %v], want [%v, %v]", c.k, c.n, c.conf, lo, hi, c.lo, c.hi)
		}
	}
	for _, bad := range [][3]float64{{-1, 10, .95}, {11, 10, .95}, {0, 0, .95}, {1, 10, 1}} {
		if lo, _ := ClopperPearson(int(bad[0]), int(bad[1]), bad[2]); !math.IsNaN(lo) {
			t.Errorf("ClopperPearson%v = %v, want NaN", bad, lo)
		}
	}
}

// TestToleranceFactor checks the one-sided normal tolerance factors
// against the published table (NIST/SEMATECH e-Handbook, section 7.2.6.3;
// the same figures as Natrella's).
func TestToleranceFactor(t *testing.T) {
	cases := []struct {
		n              int
		coverage, conf float64
		want           float64
	}{
		{5, 0.95, 0.95, 4.203},
		{10, 0.90, 0.95, 2.355},
		{10, 0.95, 0.95, 2.911},
		{10, 0.99, 0.95, 3.981},
		{20, 0.95, 0.95, 2.396},
		{20, 0.99, 0.95, 3.295},
	}
	for _, c := range cases {
		if got := ToleranceFactor(c.n, c.coverage, c.conf); !near(got, c.want, 0.0015) {
			t.Errorf("ToleranceFactor(%d, %v, %v) = %.4f, want %.3f", c.n, c.coverage, c.conf, got, c.want)
		}
	}
	if got := ToleranceFactor(1, .99, .95); !math.IsNaN(got) {
		t.Errorf("n = 1: %v, want NaN (no spread from one sample)", got)
	}
	if got := ToleranceFactor(10, .3, .95); !math.IsNaN(got) {
		t.Errorf("coverage 0.3: %v, want NaN", got)
	}
}

// TestToleranceFactorAgainstNoncentralT: the integral agrees with gonum's
// noncentral t quantile (AS 243), k = t′⁻¹(conf; n−1, z·√n)/√n, over the
// run counts and levels calibrate uses. (distuv is imported by this test
// only: see ToleranceFactor for why the package does not.)
func TestToleranceFactorAgainstNoncentralT(t *testing.T) {
	for _, n := range []int{2, 3, 5, 10, 20, 50} {
		for _, cov := range []float64{0.9, 0.99} {
			for _, conf := range []float64{0.95, 0.99} {
				sn := math.Sqrt(float64(n))
				want := distuv.NoncentralT{Nu: float64(n - 1), Mu: NormalQuantile(cov) * sn}.Quantile(conf) / sn
				got := ToleranceFactor(n, cov, conf)
				if math.Abs(got-want) > 1e-5*math.Max(1, want) {
					t.Errorf("n %d coverage %v conf %v: %.7f, noncentral t gives %.7f", n, cov, conf, got, want)
				}
			}
		}
	}
}

// BenchmarkToleranceFactor10 is one factor's cost without the memo.
func BenchmarkToleranceFactor10(b *testing.B) {
	for b.Loop() {
		toleranceFactor(10, 0.99, 0.95)
	}
}
