package stats

import (
	"math"
	"testing"
)

func TestHistogramPercentile(t *testing.T) {
	bounds := []float64{0, 1, 2, 4, 8, math.Inf(1)}
	cases := []struct {
		name   string
		counts []uint64
		p      float64
		want   float64
	}{
		{"empty is NaN", []uint64{0, 0, 0, 0, 0}, 99, math.NaN()},
		{"max is the top bucket's upper bound", []uint64{5, 0, 1, 0, 0}, 100, 4},
		{"p99 of 100 values, one outlier", []uint64{99, 0, 0, 1, 0}, 99, 1},
		{"p99 of 100 values, two outliers", []uint64{98, 0, 0, 2, 0}, 99, 8},
		{"p0 is the lowest value's bucket", []uint64{0, 3, 0, 0, 0}, 0, 2},
		{"open last bucket answers its lower bound", []uint64{1, 0, 0, 0, 1}, 100, 8},
		{"single value", []uint64{0, 0, 1, 0, 0}, 50, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := HistogramPercentile(tc.counts, bounds, tc.p)
			if !(got == tc.want || math.IsNaN(got) && math.IsNaN(tc.want)) {
				t.Fatalf("HistogramPercentile(%v, p%v) = %v, want %v", tc.counts, tc.p, got, tc.want)
			}
		})
	}
	if got := HistogramPercentile([]uint64{1}, []float64{0}, 50); !math.IsNaN(got) {
		t.Fatalf("malformed bounds: %v, want NaN", got)
	}
}
