// Package confidence holds the judge's confidence intervals and tolerance factors.
//
// They are calibrate's and ab's statistics, apart from package stats
// because they need gonum's special functions (mathext): the swarm and
// every team's bot link package stats, and none of them needs these.
package confidence

import (
	"math"
	"sync"

	"gonum.org/v1/gonum/mathext"
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
		lo = mathext.InvRegIncBeta(float64(k), float64(n-k+1), alpha/2)
	}
	if k < n {
		hi = mathext.InvRegIncBeta(float64(k+1), float64(n-k), 1-alpha/2)
	}
	return lo, hi
}

// NormalQuantile is Φ⁻¹(p), the standard normal quantile; NaN outside
// (0, 1).
func NormalQuantile(p float64) float64 {
	if !(p > 0 && p < 1) {
		return math.NaN()
	}
	return mathext.NormalQuantile(p)
}

// NormalCDF is Φ(x), the standard normal distribution function.
func NormalCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// ToleranceFactor is the one-sided normal tolerance factor k: for n
// independent samples of a normal distribution with sample mean x̄ and
// sample standard deviation s, the bound x̄ + k·s exceeds the
// coverage-quantile μ + z·σ of the distribution (z = Φ⁻¹(coverage)) with
// probability conf over the draw of the samples. For n = 10, coverage
// 0.99, conf 0.95 it is 3.981 (NIST/SEMATECH e-Handbook, 7.2.6.3). It
// returns NaN for n < 2 or coverage or conf outside [0.5, 1) (a bound
// below the median is not a tolerance bound anyone gates on, and k ≥ 0
// holds only from there).
//
// With S = s/σ (S² ~ χ²ν/ν, ν = n − 1) independent of x̄ = μ + σ·U/√n,
// U ~ N(0, 1): x̄ + k·s ≥ μ + z·σ ⟺ S ≥ (z − U/√n)/k, so the confidence is
// E_U[Q(ν/2, ν·x²/2)] with x = (z − U/√n)/k (1 where x ≤ 0) and Q the
// regularized upper incomplete gamma function; it rises with k, which is
// found by bisection, the expectation by Simpson's rule over U. This is
// the noncentral-t quantile t′⁻¹(conf; ν, z·√n)/√n, and a test checks it
// against gonum's distuv.NoncentralT; the package does not import distuv
// because it adds 2.7 MB to the scalegate binary every server and swarm
// runs, where mathext adds almost nothing.
func ToleranceFactor(n int, coverage, conf float64) float64 {
	if n < 2 || !(coverage >= 0.5 && coverage < 1) || !(conf >= 0.5 && conf < 1) {
		return math.NaN()
	}
	key := [3]float64{float64(n), coverage, conf}
	toleranceMu.Lock()
	k, ok := toleranceMemo[key]
	toleranceMu.Unlock()
	if ok {
		return k
	}
	k = toleranceFactor(n, coverage, conf)
	toleranceMu.Lock()
	toleranceMemo[key] = k
	toleranceMu.Unlock()
	return k
}

// toleranceMemo remembers factors: one costs ~2·10⁵ incomplete-gamma
// evaluations (tens of ms), and a calibration asks for the same few.
var (
	toleranceMu   sync.Mutex
	toleranceMemo = map[[3]float64]float64{}
)

// toleranceFactor is ToleranceFactor without the memo.
func toleranceFactor(n int, coverage, conf float64) float64 {
	z := NormalQuantile(coverage)
	// At k = 0 the bound is x̄, which exceeds μ + z·σ with probability
	// Φ(−z·√n) < conf for any coverage ≥ 1/2 and conf ≥ 1/2; double
	// until the bracket holds the root.
	lo, hi := 0.0, math.Max(1, 2*math.Abs(z))
	for toleranceConfidence(n, z, hi) < conf {
		lo, hi = hi, 2*hi
		if hi > 1e7 {
			return math.NaN()
		}
	}
	for hi-lo > 1e-10*hi {
		mid := (lo + hi) / 2
		if toleranceConfidence(n, z, mid) < conf {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// toleranceConfidence is P(x̄ + k·s ≥ μ + z·σ) for n normal samples (see
// ToleranceFactor).
func toleranceConfidence(n int, z, k float64) float64 {
	nu := float64(n - 1)
	sn := math.Sqrt(float64(n))
	tail := func(u float64) float64 {
		x := (z - u/sn) / k
		if x <= 0 {
			return 1
		}
		return mathext.GammaIncRegComp(nu/2, nu*x*x/2)
	}
	// U beyond ±9 carries less than 1e-18 of the weight.
	const (
		span  = 9.0
		steps = 1800 // even, for Simpson's rule
	)
	h := 2 * span / steps
	var sum float64
	for i := 0; i <= steps; i++ {
		u := -span + float64(i)*h
		w := 2.0
		switch {
		case i == 0 || i == steps:
			w = 1
		case i%2 == 1:
			w = 4
		}
		sum += w * math.Exp(-u*u/2) * tail(u)
	}
	return sum * h / 3 / math.Sqrt(2*math.Pi)
}
