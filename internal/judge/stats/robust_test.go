package stats

import (
	"math"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/stats/confidence"
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
	q := 2 * confidence.NormalQuantile(0.75)
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
