package changepoint

import "math"

// bestSplit returns the split τ of x (x[:τ] | x[τ:]) with the largest
// E-Divisive means statistic (α = 1),
//
//	Q̂(τ) = m·n/(m+n) · ( 2/(m·n)·Σ|xᵢ−yⱼ| − Σ|xᵢ−xₖ|/C(m,2) − Σ|yⱼ−yₖ|/C(n,2) ),
//
// over the splits that leave at least min.left and min.right points. The
// within-sums come from running row sums of the distance matrix, so a
// segment of m points costs O(m²).
func bestSplit(x []float64, min sizes) (tau int, q float64, ok bool) {
	n := len(x)
	if n < min.left+min.right {
		return 0, 0, false
	}
	// before[t] = Σ_{i<j<t} |x_i − x_j|; after[t] = Σ_{t≤i<j} |x_i − x_j|.
	before := make([]float64, n+1)
	for t := 1; t <= n; t++ {
		row := 0.0
		for i := 0; i < t-1; i++ {
			row += math.Abs(x[t-1] - x[i])
		}
		before[t] = before[t-1] + row
	}
	after := make([]float64, n+1)
	for t := n - 1; t >= 0; t-- {
		row := 0.0
		for j := t + 1; j < n; j++ {
			row += math.Abs(x[t] - x[j])
		}
		after[t] = after[t+1] + row
	}
	total := before[n]
	q = math.Inf(-1)
	for t := min.left; t <= n-min.right; t++ {
		m, k := float64(t), float64(n-t)
		between := total - before[t] - after[t]
		e := 2 * between / (m * k)
		if t > 1 {
			e -= before[t] / (m * (m - 1) / 2)
		}
		if n-t > 1 {
			e -= after[t] / (k * (k - 1) / 2)
		}
		if s := m * k / (m + k) * e; s > q {
			tau, q = t, s
		}
	}
	return tau, q, true
}
