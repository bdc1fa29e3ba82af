package stats

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func bk(count uint64, sum float64, b ...[3]float64) *Buckets {
	out := &Buckets{Count: count, Sum: sum}
	for _, e := range b {
		out.Lo, out.Hi, out.N = append(out.Lo, e[0]), append(out.Hi, e[1]), append(out.N, uint64(e[2]))
	}
	return out
}

func TestBucketsSub(t *testing.T) {
	inf := math.Inf(1)
	cases := []struct {
		name      string
		cur, prev *Buckets
		want      *Buckets
		err       string
	}{
		{"same layout", bk(10, 50, [3]float64{1, 2, 4}, [3]float64{4, 8, 6}), bk(3, 10, [3]float64{1, 2, 3}),
			bk(7, 40, [3]float64{1, 2, 1}, [3]float64{4, 8, 6}), ""},
		{"a bucket new in the later reading", bk(5, 9, [3]float64{0, 1, 1}, [3]float64{1, 2, 2}, [3]float64{2, inf, 2}), bk(2, 3, [3]float64{1, 2, 2}),
			bk(3, 6, [3]float64{0, 1, 1}, [3]float64{2, inf, 2}), ""},
		{"nothing new", bk(2, 3, [3]float64{1, 2, 2}), bk(2, 3, [3]float64{1, 2, 2}), bk(0, 0), ""},
		{"from empty", bk(2, 3, [3]float64{1, 2, 2}), &Buckets{}, bk(2, 3, [3]float64{1, 2, 2}), ""},
		{"bucket went down", bk(2, 3, [3]float64{1, 2, 2}), bk(3, 4, [3]float64{1, 2, 3}), nil, "count went down"},
		{"bucket gone", bk(4, 3, [3]float64{1, 2, 4}), bk(1, 1, [3]float64{2, 3, 1}), nil, "gone from the later one"},
		{"layout changed", bk(4, 3, [3]float64{1, 3, 4}), bk(1, 1, [3]float64{1, 2, 1}), nil, "gone from the later one"},
		{"count down, buckets up", bk(4, 3, [3]float64{1, 2, 2}, [3]float64{2, 3, 2}), bk(3, 2, [3]float64{1, 2, 3}), nil, "went down from 3 to 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.cur.Sub(c.prev)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Count != c.want.Count || got.Sum != c.want.Sum || !slices.Equal(got.Lo, c.want.Lo) || !slices.Equal(got.Hi, c.want.Hi) || !slices.Equal(got.N, c.want.N) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			if err := got.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBucketsAddIsSubInverse(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	a, b := NewLogLinear(), NewLogLinear()
	for range 5000 {
		v := r.ExpFloat64() * 5
		a.Record(v)
		b.Record(v)
	}
	early := a.Snapshot()
	for range 3000 {
		b.Record(r.NormFloat64()*2 + 16)
	}
	late := b.Snapshot()
	d, err := late.Sub(early)
	if err != nil {
		t.Fatal(err)
	}
	if d.Count != 3000 {
		t.Fatalf("difference holds %d, want 3000", d.Count)
	}
	sum := early.Clone()
	if err := sum.Add(d); err != nil {
		t.Fatal(err)
	}
	if sum.Count != late.Count || !slices.Equal(sum.Lo, late.Lo) || !slices.Equal(sum.N, late.N) || math.Abs(sum.Sum-late.Sum) > 1e-6 {
		t.Fatal("early + (late − early) is not late")
	}
	if err := sum.Add(bk(1, 1, [3]float64{1.001, 1.002, 1})); err == nil {
		t.Fatal("a bucket of another layout merged")
	}
}

// TestLogLinearQuantileWithinItsBucket: a percentile read from the
// layout is off from the exact one (Percentile over the values) by less
// than the width of the bucket it lies in, which is at most 1/128 of the
// value.
func TestLogLinearQuantileWithinItsBucket(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, gen := range []func() float64{
		func() float64 { return 4 + r.ExpFloat64()*2 },
		func() float64 { return 16 + r.NormFloat64()*0.3 },
		func() float64 { return math.Exp(r.NormFloat64() * 2) },
	} {
		l := NewLogLinear()
		var vs []float64
		for range 20000 {
			v := gen()
			if v <= 0 {
				continue
			}
			vs = append(vs, v)
			l.Record(v)
		}
		slices.Sort(vs)
		b := l.Snapshot()
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		for _, q := range []float64{0.5, 0.95, 0.99} {
			exact := Percentile(vs, q*100)
			est := b.Quantile(q)
			if !est.OK {
				t.Fatalf("q %g: no estimate", q)
			}
			if est.Hi-est.Lo > est.Lo/LogLinearSub*1.0001 {
				t.Fatalf("q %g: bucket (%g, %g] wider than 1/%d of its bound", q, est.Lo, est.Hi, LogLinearSub)
			}
			if math.Abs(est.Value-exact) > est.Hi-est.Lo+1e-9 {
				t.Fatalf("q %g: estimate %g, exact %g, bucket (%g, %g]", q, est.Value, exact, est.Lo, est.Hi)
			}
		}
		lo, hi, above, ok := b.MaxBound()
		if !ok || above || vs[len(vs)-1] > hi || vs[len(vs)-1] <= lo {
			t.Fatalf("max %g not in its bound (%g, %g]", vs[len(vs)-1], lo, hi)
		}
	}
}

func TestLogLinearEdges(t *testing.T) {
	l := NewLogLinear()
	for _, v := range []float64{-1, 0, 1.0 / 128, 1, 2, 16, 16.125, 16384, 1e9, math.NaN()} {
		l.Record(v)
	}
	b := l.Snapshot()
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	if b.Count != 9 {
		t.Fatalf("count %d, want 9 (NaN ignored)", b.Count)
	}
	in := func(v float64) (float64, float64) {
		i := logLinearSlot(v)
		return logLinearBounds(i)
	}
	for _, v := range []float64{1.0 / 128, 1, 2, 16, 16.125, 16.2, 16384, 3, 0.3} {
		lo, hi := in(v)
		if !(v > lo && v <= hi) {
			t.Errorf("%g filed in (%g, %g]", v, lo, hi)
		}
	}
	if _, hi := in(1e9); !math.IsInf(hi, 1) {
		t.Error("1e9 not in the open top bucket")
	}
	if q := b.Quantile(1); q.OK || !q.AboveFinite {
		t.Errorf("max quantile %+v: the largest value is above every finite bound", q)
	}
}

func TestBucketsCumulativeGaps(t *testing.T) {
	b := bk(4, 10, [3]float64{1, 2, 2}, [3]float64{8, 9, 2})
	upper, cum := b.Cumulative()
	wantU := []float64{1, 2, 8, 9, math.Inf(1)}
	wantC := []float64{0, 2, 2, 4, 4}
	if !slices.Equal(upper, wantU) || !slices.Equal(cum, wantC) {
		t.Fatalf("cumulative %v %v, want %v %v", upper, cum, wantU, wantC)
	}
	// The median lies in (1, 2] and the top quartile in (8, 9]: the gap
	// between them is empty, never interpolated across.
	if q := b.Quantile(0.75); !q.OK || q.Lo != 8 || q.Hi != 9 || q.Value != 8.5 {
		t.Fatalf("p75 %+v", q)
	}
	if q := b.Quantile(0.25); !q.OK || q.Lo != 1 || q.Value != 1.5 {
		t.Fatalf("p25 %+v", q)
	}
}

func TestFromCumulative(t *testing.T) {
	inf := math.Inf(1)
	b, err := FromCumulative([]float64{0.5, 1, 2, inf}, []float64{0, 3, 3, 5}, 7)
	if err != nil {
		t.Fatal(err)
	}
	want := bk(5, 7, [3]float64{0.5, 1, 3}, [3]float64{2, inf, 2})
	if !slices.Equal(b.Lo, want.Lo) || !slices.Equal(b.Hi, want.Hi) || !slices.Equal(b.N, want.N) || b.Count != 5 {
		t.Fatalf("got %+v", b)
	}
	for _, bad := range [][2][]float64{
		{{1, 2}, {1, 2}},            // no +Inf
		{{0, inf}, {1, 1}},          // first bound 0
		{{1, inf}, {2, 1}},          // decreasing
		{{1, inf}, {0.5, 1}},        // fractional
		{{1, 2, inf}, {1, 2}},       // lengths
		{{1, inf}, {math.NaN(), 1}}, // NaN
	} {
		if _, err := FromCumulative(bad[0], bad[1], 0); err == nil {
			t.Errorf("%v %v accepted", bad[0], bad[1])
		}
	}
}

func TestBucketsJSON(t *testing.T) {
	b := bk(5, 12.5, [3]float64{0, 0.0078125, 1}, [3]float64{16, 16.125, 3}, [3]float64{16384, math.Inf(1), 1})
	enc, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"count":5,"sum":12.5,"buckets":[[0,0.0078125,1],[16,16.125,3],[16384,null,1]]}`; string(enc) != want {
		t.Fatalf("encoded %s, want %s", enc, want)
	}
	var back Buckets
	if err := json.Unmarshal(enc, &back); err != nil {
		t.Fatal(err)
	}
	if back.Count != 5 || !math.IsInf(back.Hi[2], 1) || back.N[1] != 3 {
		t.Fatalf("decoded %+v", back)
	}
	for _, bad := range []string{
		`{}`,
		`{"count":1,"sum":1}`,
		`{"count":2,"sum":1,"buckets":[[0,1,1]]}`,
		`{"count":1,"sum":1,"buckets":[[1,0,1]]}`,
		`{"count":2,"sum":1,"buckets":[[0,2,1],[1,3,1]]}`,
		`{"count":2,"sum":1,"buckets":[[0,null,1],[3,4,1]]}`,
		`{"count":1,"sum":1,"buckets":[[0,1,1.5]]}`,
		`{"count":1,"sum":1,"buckets":[[0,1,-1]]}`,
		`{"count":1,"sum":1,"buckets":[[null,1,1]]}`,
		`{"count":1,"sum":1,"buckets":[[0,1]]}`,
		`{"count":1,"sum":1,"buckets":[[0,1,1,1]]}`,
		`{"count":1,"sum":1,"buckets":"x"}`,
		`[1]`,
	} {
		var b Buckets
		if err := json.Unmarshal([]byte(bad), &b); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func FuzzBucketsUnmarshal(f *testing.F) {
	f.Add([]byte(`{"count":5,"sum":12.5,"buckets":[[0,0.0078125,1],[16,16.125,3],[16384,null,1]]}`))
	f.Add([]byte(`{"count":0,"sum":0,"buckets":[]}`))
	f.Add([]byte(`{"count":1,"sum":1e308,"buckets":[[-1e308,1e308,1]]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var b Buckets
		if err := json.Unmarshal(data, &b); err != nil {
			return
		}
		if err := b.Validate(); err != nil {
			t.Fatalf("decoded an invalid histogram: %v", err)
		}
		// Whatever decodes reads back the same, subtracts from itself to
		// nothing, and answers quantiles without panicking.
		enc, err := json.Marshal(&b)
		if err != nil {
			t.Fatal(err)
		}
		var again Buckets
		if err := json.Unmarshal(enc, &again); err != nil {
			t.Fatalf("re-decode of %s: %v", enc, err)
		}
		d, err := again.Sub(&b)
		if err != nil || d.Count != 0 {
			t.Fatalf("b − b = %+v, %v", d, err)
		}
		b.Quantile(0.99)
		b.MaxBound()
	})
}

// FuzzParseBucketsMatchesJSON: whatever the input, the scanner either
// declines it or reads exactly what encoding/json reads (bucketsSlow),
// and accepts only valid JSON that encoding/json accepts.
func FuzzParseBucketsMatchesJSON(f *testing.F) {
	f.Add([]byte(`{"count":5,"sum":12.5,"buckets":[[0,0.0078125,1],[16,16.125,3],[16384,null,1]]}`))
	f.Add([]byte(` { "count" : 1 , "sum" : -0.5e-3 , "buckets" : [ [ -1e308 , 1E-3 , 2 ] ] } `))
	f.Add([]byte(`{"count":1,"sum":1,"buckets":[[0,1,1.5]]}`))
	f.Add([]byte(`{"count":1,"sum":1,"buckets":[[0,1,1e400]]}`))
	f.Add([]byte(`{"count":01,"sum":+1,"buckets":[[0,nul,1]]}`))
	f.Add([]byte(`{"count":0,"sum":0,"buckets":[]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var fast, slow Buckets
		if !parseBuckets(data, &fast) {
			return
		}
		if !json.Valid(data) {
			t.Fatalf("scanner read %q, which is not JSON", data)
		}
		if err := bucketsSlow(data, &slow); err != nil {
			t.Fatalf("scanner read %s, encoding/json refuses it: %v", data, err)
		}
		if fast.Count != slow.Count || math.Float64bits(fast.Sum) != math.Float64bits(slow.Sum) ||
			!slices.Equal(fast.Lo, slow.Lo) || !slices.Equal(fast.Hi, slow.Hi) || !slices.Equal(fast.N, slow.N) {
			t.Fatalf("%s: scanner %+v, encoding/json %+v", data, fast, slow)
		}
	})
}

// TestParseBucketsTakesTheServersHistograms: what MarshalJSON writes,
// compact or indented, is read by the scanner, not left to the slow path.
func TestParseBucketsTakesTheServersHistograms(t *testing.T) {
	b := bk(5, 12.5, [3]float64{0, 0.0078125, 1}, [3]float64{16, 16.125, 3}, [3]float64{16384, math.Inf(1), 1})
	enc, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var ind bytes.Buffer
	if err := json.Indent(&ind, enc, "", "  "); err != nil {
		t.Fatal(err)
	}
	for _, doc := range [][]byte{enc, ind.Bytes()} {
		var got Buckets
		if !parseBuckets(doc, &got) {
			t.Fatalf("scanner declined %s", doc)
		}
		if got.Count != b.Count || got.Sum != b.Sum || !slices.Equal(got.Lo, b.Lo) || !slices.Equal(got.Hi, b.Hi) || !slices.Equal(got.N, b.N) {
			t.Fatalf("scanner read %+v from %s", got, doc)
		}
	}
}

// TestLogLinearSnapshotInto: a snapshot into a reused Buckets equals a
// fresh Snapshot whether the reused one held more buckets, fewer or none.
func TestLogLinearSnapshotInto(t *testing.T) {
	wide, narrow := NewLogLinear(), NewLogLinear()
	for i := range 500 {
		wide.Record(0.01 * float64(i+1))
	}
	narrow.Record(2.5)
	narrow.Record(2.5)
	narrow.Record(40)
	for _, tc := range []struct {
		name       string
		prev, next *LogLinear
	}{
		{"shrink", wide, narrow},
		{"grow", narrow, wide},
		{"same", wide, wide},
		{"from empty", NewLogLinear(), wide},
		{"to empty", wide, NewLogLinear()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Buckets
			tc.prev.SnapshotInto(&b)
			tc.next.SnapshotInto(&b)
			want := tc.next.Snapshot()
			if !slices.Equal(b.Lo, want.Lo) || !slices.Equal(b.Hi, want.Hi) || !slices.Equal(b.N, want.N) || b.Count != want.Count || b.Sum != want.Sum {
				t.Fatalf("reused snapshot\n%+v\nwant\n%+v", b, *want)
			}
			if err := b.Validate(); err != nil && b.Count > 0 {
				t.Fatal(err)
			}
		})
	}
}
