package confidence

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"
)

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

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
