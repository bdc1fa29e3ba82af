package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// ClopperPearson is the exact (Clopper–Pearson) two-sided confidence
// interval for a proportion after k successes in n trials: lo is the
// α/2 quantile of Beta(k, n−k+1), hi the 1−α/2 quantile of Beta(k+1, n−k),
// with lo = 0 at k = 0 and hi = 1 at k = n. It inverts two one-sided
// binomial tests, so its coverage is never below conf whatever the true
// proportion; Wilson's interval is narrower but its coverage dips below the
// nominal level for some proportions, and a false-alarm rate quoted as "at
// most" must not undercover. It returns NaN, NaN for n < 1, k outside
// 0..n, or conf outside (0, 1).
func ClopperPearson(k, n int, conf float64) (lo, hi float64) {
	if n < 1 || k < 0 || k > n || !(conf > 0 && conf < 1) {
		return math.NaN(), math.NaN()
	}
	alpha := 1 - conf
	lo, hi = 0, 1
	if k > 0 {
		lo = distuv.Beta{Alpha: float64(k), Beta: float64(n - k + 1)}.Quantile(alpha / 2)
	}
	if k < n {
		hi = distuv.Beta{Alpha: float64(k + 1), Beta: float64(n - k)}.Quantile(1 - alpha/2)
	}
	return lo, hi
}

// NormalQuantile is Φ⁻¹(p), the standard normal quantile; NaN outside
// (0, 1).
func NormalQuantile(p float64) float64 {
	if !(p > 0 && p < 1) {
		return math.NaN()
	}
	return distuv.UnitNormal.Quantile(p)
}

// NormalCDF is Φ(x), the standard normal distribution function.
func NormalCDF(x float64) float64 { return distuv.UnitNormal.CDF(x) }

// ToleranceFactor is the one-sided normal tolerance factor k: for n
// independent samples of a normal distribution with sample mean x̄ and
// sample standard deviation s, the bound x̄ + k·s exceeds the
// coverage-quantile of the distribution with probability conf (over the
// draw of the samples). Exactly, k = t′⁻¹(conf; ν = n−1, δ = z·√n)/√n with
// z = Φ⁻¹(coverage) and t′ the noncentral t distribution (the textbook
// derivation: x̄ + k·s ≥ μ + z·σ ⟺ (√n(μ − x̄)/σ + z·√n)/(s/σ) ≤ k·√n,
// a N(z·√n, 1) variable over √(χ²ν/ν), which is t′ with ν, δ = z·√n).
// For n = 10, coverage 0.99, conf 0.95 it is 3.981 (NIST/SEMATECH
// e-Handbook, 7.2.6.3). It returns NaN for n < 2 or a probability outside
// (0, 1).
func ToleranceFactor(n int, coverage, conf float64) float64 {
	if n < 2 || !(coverage > 0 && coverage < 1) || !(conf > 0 && conf < 1) {
		return math.NaN()
	}
	sn := math.Sqrt(float64(n))
	delta := NormalQuantile(coverage) * sn
	return distuv.NoncentralT{Nu: float64(n - 1), Mu: delta}.Quantile(conf) / sn
}
