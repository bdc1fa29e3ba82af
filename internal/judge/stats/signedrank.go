package stats

import (
	"errors"
	"math"
	"slices"
)

// SignedRankMaxN bounds the exact signed-rank distribution's size: its
// table has n(n+1)/2+1 entries and costs O(n³/2) additions, about 6·10⁷ at
// 500, well under a second; no A/B run of whole legs gets near it.
const SignedRankMaxN = 500

// ErrTooFewPairs: at the asked confidence even the most extreme outcome of
// n pairs (every difference on one side, probability 2·2⁻ⁿ) is not
// significant, so no finite interval exists.
var ErrTooFewPairs = errors.New("too few pairs for this confidence")

// SignedRankLowerTail returns P(W⁺ ≤ w) for w = 0..n(n+1)/2 under the null
// hypothesis of the Wilcoxon signed-rank test with n non-zero, untied
// differences: each rank 1..n carries a + sign with probability 1/2
// independently, W⁺ is the sum of the + ranks. Computed exactly by the
// recurrence p_k(w) = (p_{k−1}(w) + p_{k−1}(w−k))/2 (rank k is − or +).
func SignedRankLowerTail(n int) []float64 {
	if n < 0 || n > SignedRankMaxN {
		return nil
	}
	m := n * (n + 1) / 2
	p := make([]float64, m+1)
	p[0] = 1
	top := 0
	for k := 1; k <= n; k++ {
		top += k
		for w := top; w >= 0; w-- {
			v := p[w]
			if w >= k {
				v += p[w-k]
			}
			p[w] = v / 2
		}
	}
	for w := 1; w <= m; w++ {
		p[w] += p[w-1]
	}
	return p
}

// ShiftInterval is the Hodges–Lehmann estimate of a location shift and its
// confidence interval from the Wilcoxon signed-rank test.
type ShiftInterval struct {
	// N is the number of differences used.
	N int
	// Estimate is the median of the n(n+1)/2 Walsh averages (dᵢ+dⱼ)/2, i ≤ j.
	Estimate float64
	// Lo and Hi bound the shift: the C-th smallest and largest Walsh
	// averages, C the largest count with P(W⁺ ≤ C−1) ≤ α/2.
	Lo, Hi float64
	// Confidence is the interval's exact coverage under the test's
	// assumptions, 1 − 2·P(W⁺ ≤ C−1) ≥ the confidence asked (the
	// distribution is discrete, so the asked level is rarely hit exactly).
	Confidence float64
}

// HodgesLehmann estimates the centre of the distribution of the paired
// differences d and inverts the exact Wilcoxon signed-rank test for a
// two-sided interval at conf. The interval is exact (distribution-free)
// when the differences are continuous and symmetric about the shift; under
// "A and B are the same build" a difference of two legs run side by side
// is symmetric about 0 by exchangeability, so the test's false-alarm rate
// holds however skewed the legs' own distribution is. Ties and zero
// differences make the coverage approximate (they only occur for counts
// and quantised figures). NaN differences are dropped: a missing pair is
// not a zero difference. It returns ErrTooFewPairs when 2·2⁻ⁿ > 1 − conf.
func HodgesLehmann(d []float64, conf float64) (ShiftInterval, error) {
	x := make([]float64, 0, len(d))
	for _, v := range d {
		if !math.IsNaN(v) {
			x = append(x, v)
		}
	}
	n := len(x)
	if !(conf > 0 && conf < 1) {
		return ShiftInterval{N: n}, errors.New("confidence must be in (0, 1)")
	}
	if n > SignedRankMaxN {
		return ShiftInterval{N: n}, errors.New("more than SignedRankMaxN pairs")
	}
	c, achieved := SignedRankCriticalCount(n, conf)
	if c == 0 {
		return ShiftInterval{N: n}, ErrTooFewPairs
	}
	w := WalshAverages(x)
	return ShiftInterval{
		N:          n,
		Estimate:   Percentile(w, 50),
		Lo:         w[c-1],
		Hi:         w[len(w)-c],
		Confidence: achieved,
	}, nil
}

// SignedRankCriticalCount returns C, the largest count with
// P(W⁺ ≤ C−1) ≤ (1−conf)/2 for n differences, and the interval's coverage
// 1 − 2·P(W⁺ ≤ C−1). C = 0 means no interval at this confidence.
func SignedRankCriticalCount(n int, conf float64) (c int, coverage float64) {
	tail := SignedRankLowerTail(n)
	half := (1 - conf) / 2
	// P(W⁺ ≤ c−1) grows with c: step until the next would exceed α/2.
	// A 1e-12 slack keeps the table's rounding from losing an exact hit.
	for c < len(tail) && tail[c] <= half*(1+1e-12) {
		c++
	}
	if c == 0 {
		return 0, 0
	}
	return c, 1 - 2*tail[c-1]
}

// MinPairs is the fewest differences for which a two-sided signed-rank
// interval at conf exists: the smallest n with 2·2⁻ⁿ ≤ 1 − conf.
func MinPairs(conf float64) int {
	if !(conf > 0 && conf < 1) {
		return 0
	}
	return int(math.Ceil(math.Log2(2 / (1 - conf))))
}

// WalshAverages returns the n(n+1)/2 averages (xᵢ+xⱼ)/2, i ≤ j, sorted.
func WalshAverages(x []float64) []float64 {
	w := make([]float64, 0, len(x)*(len(x)+1)/2)
	for i := range x {
		for j := i; j < len(x); j++ {
			w = append(w, (x[i]+x[j])/2)
		}
	}
	slices.Sort(w)
	return w
}
