package stats

import (
	"math"
	"testing"
)

func TestCounterIncrease(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name     string
		readings []float64
		inc      float64
		resets   int
	}{
		{"none", nil, 0, 0},
		{"one reading is no growth", []float64{5}, 0, 0},
		{"steady", []float64{10, 15, 25}, 15, 0},
		// 10 → 40 is 30; the process restarts and shows 5 (5 new); 5 → 20 is 15.
		{"reset mid-window", []float64{10, 40, 5, 20}, 50, 1},
		{"reset to zero", []float64{7, 0, 3}, 3, 1},
		{"two resets", []float64{100, 2, 1, 4}, 6, 2},
		{"an unreadable reading adds nothing", []float64{1, nan, 4}, 0, 0},
		{"flat", []float64{3, 3, 3}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			inc, resets := CounterIncrease(tc.readings)
			if inc != tc.inc || resets != tc.resets {
				t.Fatalf("CounterIncrease(%v) = %v, %d resets; want %v, %d", tc.readings, inc, resets, tc.inc, tc.resets)
			}
		})
	}
}

func TestHistogramQuantile(t *testing.T) {
	inf := math.Inf(1)
	upper := []float64{1, 2, 4, 8, inf}
	cases := []struct {
		name        string
		q           float64
		cum         []float64
		value       float64
		lo, hi      float64
		above, ok   bool
		forcedMono  bool
		wantNaNOnly bool
	}{
		// 100 observations: 50 ≤ 1, 40 in (1,2], 9 in (2,4], 1 in (4,8].
		// p50: rank 50, bucket ≤1 reaches it: 0 + 1·50/50 = 1.
		{name: "p50 at a bucket edge", q: 0.5, cum: []float64{50, 90, 99, 100, 100}, value: 1, lo: 0, hi: 1, ok: true},
		// p95: rank 95, bucket (2,4] (cum 90→99): 2 + 2·(95−90)/9.
		{name: "p95 interpolated", q: 0.95, cum: []float64{50, 90, 99, 100, 100}, value: 2 + 2*5.0/9, lo: 2, hi: 4, ok: true},
		// p99: rank 99 reached by (2,4] exactly: its upper bound.
		{name: "p99 at the top of its bucket", q: 0.99, cum: []float64{50, 90, 99, 100, 100}, value: 4, lo: 2, hi: 4, ok: true},
		{name: "max quantile 1", q: 1, cum: []float64{50, 90, 99, 100, 100}, value: 8, lo: 4, hi: 8, ok: true},
		// 2 of 100 above the highest finite bound: p99 (rank 99) is in +Inf.
		{name: "quantile above the finite buckets", q: 0.99, cum: []float64{50, 90, 97, 98, 100}, lo: 8, hi: inf, above: true},
		{name: "empty", q: 0.99, cum: []float64{0, 0, 0, 0, 0}},
		{name: "q out of range", q: 1.5, cum: []float64{1, 1, 1, 1, 1}},
		// A decrease (a bucket's increase crossing a reset differently) is
		// raised: cum becomes 10, 10, 20, 20, 20; p50 rank 10 → first bucket.
		{name: "forced monotonic", q: 0.5, cum: []float64{10, 8, 20, 20, 20}, value: 1, lo: 0, hi: 1, ok: true, forcedMono: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]float64(nil), tc.cum...)
			got := HistogramQuantile(tc.q, upper, tc.cum)
			if got.OK != tc.ok || got.AboveFinite != tc.above || got.ForcedMonotonic != tc.forcedMono {
				t.Fatalf("got %+v", got)
			}
			if tc.ok && (math.Abs(got.Value-tc.value) > 1e-12 || got.Lo != tc.lo || got.Hi != tc.hi) {
				t.Fatalf("got %+v, want value %v in [%v, %v]", got, tc.value, tc.lo, tc.hi)
			}
			if tc.above && (got.Lo != tc.lo || !math.IsInf(got.Hi, 1)) {
				t.Fatalf("got %+v, want above %v", got, tc.lo)
			}
			for i := range in {
				if in[i] != tc.cum[i] {
					t.Fatal("input modified")
				}
			}
		})
	}
	if r := HistogramQuantile(0.5, []float64{1, 2}, []float64{1, 2}); r.OK {
		t.Fatal("a layout without +Inf must not estimate")
	}
	if r := HistogramQuantile(0.5, []float64{2, 1, inf}, []float64{1, 2, 2}); r.OK {
		t.Fatal("unsorted bounds must not estimate")
	}
}

func TestHistogramMaxBound(t *testing.T) {
	inf := math.Inf(1)
	upper := []float64{1, 2, 4, inf}
	lo, hi, above, ok := HistogramMaxBound(upper, []float64{3, 5, 5, 5})
	if !ok || above || lo != 1 || hi != 2 {
		t.Fatalf("max in (1,2]: %v %v %v %v", lo, hi, above, ok)
	}
	lo, _, above, ok = HistogramMaxBound(upper, []float64{3, 5, 5, 6})
	if !ok || !above || lo != 4 {
		t.Fatalf("max above 4: %v %v %v", lo, above, ok)
	}
	if _, _, _, ok := HistogramMaxBound(upper, []float64{0, 0, 0, 0}); ok {
		t.Fatal("empty histogram has no max")
	}
}

func BenchmarkHistogramQuantile100(b *testing.B) {
	upper := make([]float64, 101)
	cum := make([]float64, 101)
	for i := range 100 {
		upper[i] = float64(i+1) * 0.25
		cum[i] = float64((i + 1) * (i + 1))
	}
	upper[100], cum[100] = math.Inf(1), cum[99]
	for b.Loop() {
		HistogramQuantile(0.99, upper, cum)
	}
}
