package stats

import (
	"math"
	"slices"
	"testing"
	"time"
)

const eps = 1e-9

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestPercentile checks type-7 interpolation against values worked by hand:
// rank = p/100·(n−1); result = x[floor(rank)] + frac(rank)·(x[floor+1] − x[floor]).
// numpy.percentile (default "linear") gives the same numbers.
func TestPercentile(t *testing.T) {
	one := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	tens := []float64{10, 20, 30, 40}
	cases := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		// n=10: p50 rank 4.5 → 5 + 0.5·(6−5) = 5.5
		{"1..10 p50", one, 50, 5.5},
		// p95 rank 0.95·9 = 8.55 → 9 + 0.55·(10−9) = 9.55
		{"1..10 p95", one, 95, 9.55},
		// p99 rank 8.91 → 9 + 0.91 = 9.91
		{"1..10 p99", one, 99, 9.91},
		// p10 rank 0.9 → 1 + 0.9·(2−1) = 1.9
		{"1..10 p10", one, 10, 1.9},
		// p25 rank 2.25 → 3 + 0.25 = 3.25
		{"1..10 p25", one, 25, 3.25},
		{"1..10 p0", one, 0, 1},
		{"1..10 p100", one, 100, 10},
		// n=4: p95 rank 0.95·3 = 2.85 → 30 + 0.85·(40−30) = 38.5
		{"tens p95", tens, 95, 38.5},
		// p50 rank 1.5 → 20 + 0.5·10 = 25
		{"tens p50", tens, 50, 25},
		// p99 rank 2.97 → 30 + 0.97·10 = 39.7
		{"tens p99", tens, 99, 39.7},
		// p1 rank 0.03 → 10 + 0.03·10 = 10.3
		{"tens p1", tens, 1, 10.3},
		// n=2: p50 rank 0.5 → 1.5; p99 rank 0.99 → 1.99
		{"two p50", []float64{1, 2}, 50, 1.5},
		{"two p99", []float64{1, 2}, 99, 1.99},
		{"single", []float64{42}, 99, 42},
		{"below 0 clamps", tens, -5, 10},
		{"above 100 clamps", tens, 250, 40},
		// repeated values: [1,1,1,5] p90 rank 2.7 → 1 + 0.7·(5−1) = 3.8
		{"ties p90", []float64{1, 1, 1, 5}, 90, 3.8},
	}
	for _, c := range cases {
		if got := Percentile(c.sorted, c.p); !near(got, c.want, eps) {
			t.Errorf("%s: Percentile = %v, want %v", c.name, got, c.want)
		}
	}
	if got := Percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("empty: %v, want NaN (no data is not zero)", got)
	}
	if got := Percentile(tens, math.NaN()); !math.IsNaN(got) {
		t.Errorf("NaN p: %v, want NaN", got)
	}
}

func TestSummarize(t *testing.T) {
	in := []float64{3, math.NaN(), 1, 2, math.NaN()}
	s := Summarize(in)
	// Non-NaN values sorted: [1 2 3]. p50 rank 1 → 2; p95 rank 1.9 → 2 + 0.9 = 2.9;
	// p99 rank 1.98 → 2.98; mean 6/3 = 2.
	want := Summary{Count: 3, Min: 1, Mean: 2, P50: 2, P95: 2.9, P99: 2.98, Max: 3}
	if !summaryNear(s, want) {
		t.Fatalf("Summarize = %+v, want %+v", s, want)
	}
	if in[0] != 3 || in[2] != 1 {
		t.Fatalf("Summarize reordered its input: %v", in)
	}
	if s := Summarize([]float64{math.NaN(), math.NaN()}); s != (Summary{}) {
		t.Fatalf("all NaN: %+v, want Count 0", s)
	}
	if s := Summarize(nil); s.Count != 0 {
		t.Fatalf("nil: %+v", s)
	}
	// SummarizeInPlace ignores NaN the same way.
	scratch := []float64{math.NaN(), 10, 20, 30, 40}
	got := SummarizeInPlace(scratch)
	if !summaryNear(got, Summary{Count: 4, Min: 10, Mean: 25, P50: 25, P95: 38.5, P99: 39.7, Max: 40}) {
		t.Fatalf("SummarizeInPlace = %+v", got)
	}
}

func summaryNear(a, b Summary) bool {
	return a.Count == b.Count && near(a.Min, b.Min, eps) && near(a.Mean, b.Mean, eps) &&
		near(a.P50, b.P50, eps) && near(a.P95, b.P95, eps) && near(a.P99, b.P99, eps) && near(a.Max, b.Max, eps)
}

func TestWindow(t *testing.T) {
	w := NewWindow(3)
	if w.Len() != 0 || w.Summary().Count != 0 {
		t.Fatal("new window not empty")
	}
	steps := []struct {
		add  float64
		len  int
		want Summary
	}{
		{1, 1, Summary{Count: 1, Min: 1, Mean: 1, P50: 1, P95: 1, P99: 1, Max: 1}},
		// [1 2]: p95 rank 0.95 → 1.95
		{2, 2, Summary{Count: 2, Min: 1, Mean: 1.5, P50: 1.5, P95: 1.95, P99: 1.99, Max: 2}},
		// [1 2 3]: p95 rank 1.9 → 2.9
		{3, 3, Summary{Count: 3, Min: 1, Mean: 2, P50: 2, P95: 2.9, P99: 2.98, Max: 3}},
		// 1 rolls out: [2 3 4], mean 3, p95 3.9
		{4, 3, Summary{Count: 3, Min: 2, Mean: 3, P50: 3, P95: 3.9, P99: 3.98, Max: 4}},
		// 2 rolls out: [3 4 10], mean 17/3, p95 rank 1.9 → 4 + 0.9·6 = 9.4
		{10, 3, Summary{Count: 3, Min: 3, Mean: 17.0 / 3, P50: 4, P95: 9.4, P99: 9.88, Max: 10}},
		// 3 rolls out: [4 10 0] sorted [0 4 10], mean 14/3, p95 4 + 0.9·6 = 9.4
		{0, 3, Summary{Count: 3, Min: 0, Mean: 14.0 / 3, P50: 4, P95: 9.4, P99: 9.88, Max: 10}},
	}
	for i, s := range steps {
		w.Add(s.add)
		if w.Len() != s.len {
			t.Fatalf("step %d: Len %d, want %d", i, w.Len(), s.len)
		}
		got := w.Summary()
		if !summaryNear(got, s.want) {
			t.Fatalf("step %d: %+v, want %+v", i, got, s.want)
		}
		// Summary must not disturb the ring (it sorts a scratch copy).
		if again := w.Summary(); again != got {
			t.Fatalf("step %d: second Summary %+v differs from %+v", i, again, got)
		}
	}
	// A NaN is held but ignored: [10 0 NaN] summarises as [0 10].
	w.Add(math.NaN())
	if got := w.Summary(); w.Len() != 3 || got.Count != 2 || got.Min != 0 || got.Max != 10 || got.Mean != 5 {
		t.Fatalf("NaN sample: Len %d, %+v", w.Len(), got)
	}
	z := NewWindow(0)
	z.Add(5)
	if z.Len() != 1 || z.Summary().Max != 5 {
		t.Fatal("NewWindow(0) must hold one sample")
	}
	if n := testing.AllocsPerRun(100, func() { w.Add(1); _ = w.Summary() }); n != 0 {
		t.Fatalf("Window.Summary allocates %v per run", n)
	}
}

func TestWindowValues(t *testing.T) {
	w := NewWindow(3)
	if len(w.Values()) != 0 {
		t.Fatal("empty window has values")
	}
	for _, v := range []float64{1, 2, 3, 4} {
		w.Add(v)
	}
	if got := w.Values(); !slices.Equal(got, []float64{2, 3, 4}) {
		t.Fatalf("Values = %v, want [2 3 4] (oldest first)", got)
	}
}

func TestRate(t *testing.T) {
	if got := Rate(120, 2*time.Second); got != 60 {
		t.Errorf("Rate(120, 2s) = %v", got)
	}
	if got := Rate(3, 1500*time.Millisecond); got != 2 {
		t.Errorf("Rate(3, 1.5s) = %v", got)
	}
	if Rate(5, 0) != 0 || Rate(5, -time.Second) != 0 {
		t.Error("non-positive duration must give 0")
	}
}

func TestMinMeanMax(t *testing.T) {
	cases := []struct {
		in           []float64
		lo, mean, hi float64
		ok           bool
		name         string
	}{
		{[]float64{math.NaN(), 4, -2, 7}, -2, 3, 7, true, "NaN ignored: (4−2+7)/3 = 3"},
		{[]float64{5}, 5, 5, 5, true, "single"},
		{[]float64{59.5, 60, 60.5, 60}, 59.5, 60, 60.5, true, "tick hz"},
		{nil, 0, 0, 0, false, "empty"},
		{[]float64{math.NaN()}, 0, 0, 0, false, "only NaN"},
	}
	for _, c := range cases {
		lo, mean, hi, ok := MinMeanMax(c.in)
		if ok != c.ok || !near(lo, c.lo, eps) || !near(mean, c.mean, eps) || !near(hi, c.hi, eps) {
			t.Errorf("%s: got %v %v %v %v", c.name, lo, mean, hi, ok)
		}
	}
}

func benchValues(n int) []float64 {
	v := make([]float64, n)
	x := uint32(12345)
	for i := range v {
		x = x*1664525 + 1013904223 // LCG: deterministic, no RNG state to share
		v[i] = float64(x%20000) / 1000
	}
	return v
}

func BenchmarkSummarize1k(b *testing.B) {
	v := benchValues(1000)
	b.ReportAllocs()
	for b.Loop() {
		_ = Summarize(v)
	}
}

func BenchmarkWindowSummary600(b *testing.B) {
	// 600 samples: a 10 s window of 60 Hz tick times.
	w := NewWindow(600)
	vals := benchValues(1009) // not a multiple of 600: the window keeps changing
	for _, x := range vals[:600] {
		w.Add(x)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w.Add(vals[i%len(vals)])
		_ = w.Summary()
	}
}
