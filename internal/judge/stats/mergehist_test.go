package stats

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// within is the documented bound: |got − want| ≤ rel·|want| + abs.
func within(got, want float64) bool {
	return math.Abs(got-want) <= HistogramRelError*math.Abs(want)+HistogramAbsError+1e-9
}

// TestHistogramMergeMatchesPooled splits known samples over shards the way
// a sharded swarm does, merges the shards' histograms after a JSON round
// trip, and compares the merged summary with Summarize of the pooled
// samples: count, min, max exact, mean to float rounding, percentiles
// within the documented error.
func TestHistogramMergeMatchesPooled(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	skewed := make([]float64, 20000) // log-normal RTT-like: long right tail
	for i := range skewed {
		skewed[i] = math.Exp(rng.NormFloat64()*0.8 + 3)
	}
	bimodal := make([]float64, 10000) // 90 % near 2 ms, 10 % near 400 ms
	for i := range bimodal {
		if i%10 == 9 {
			bimodal[i] = 400 + rng.NormFloat64()*20
		} else {
			bimodal[i] = 2 + math.Abs(rng.NormFloat64())*0.3
		}
	}
	tiny := []float64{0, 0.0004, 0.001, 16.667, 16.668, 3_700_000} // clamped top, sub-resolution bottom
	cases := map[string][]float64{"skewed": skewed, "bimodal": bimodal, "edges": tiny}
	for name, samples := range cases {
		for _, shards := range []int{1, 3, 8} {
			merged := NewHistogram()
			for s := range shards {
				lo, hi := s*len(samples)/shards, (s+1)*len(samples)/shards
				part := HistogramOf(samples[lo:hi])
				if part == nil {
					continue // an empty shard carries null
				}
				b, err := json.Marshal(part)
				if err != nil {
					t.Fatal(err)
				}
				var back Histogram
				if err := json.Unmarshal(b, &back); err != nil {
					t.Fatalf("%s: decode shard %d: %v", name, s, err)
				}
				merged.Merge(&back)
			}
			got, want := merged.Summary(), Summarize(samples)
			if got.Count != want.Count || got.Min != want.Min || got.Max != want.Max {
				t.Errorf("%s/%d: count/min/max %d %g %g, want %d %g %g", name, shards, got.Count, got.Min, got.Max, want.Count, want.Min, want.Max)
			}
			if math.Abs(got.Mean-want.Mean) > 1e-9*math.Abs(want.Mean)+1e-9 {
				t.Errorf("%s/%d: mean %g, want %g", name, shards, got.Mean, want.Mean)
			}
			if name == "edges" {
				continue // the clamped value bends the top percentiles (documented)
			}
			for _, p := range []struct {
				n         string
				got, want float64
			}{{"p50", got.P50, want.P50}, {"p95", got.P95, want.P95}, {"p99", got.P99, want.P99}} {
				if !within(p.got, p.want) {
					t.Errorf("%s/%d shards: %s %g, pooled %g (allowed ±%g)", name, shards, p.n, p.got, p.want, HistogramRelError*p.want+HistogramAbsError)
				}
			}
		}
	}
}

// TestHistogramBimodalGap: a percentile whose rank falls between the two
// modes interpolates between them as type 7 does, not snapping to a mode.
func TestHistogramBimodalGap(t *testing.T) {
	var v []float64
	for range 95 {
		v = append(v, 1)
	}
	for range 5 {
		v = append(v, 1000)
	}
	got, want := HistogramOf(v).Summary(), Summarize(v)
	// p95: rank 94.05 → 1 + 0.05·999 = 50.95
	if !within(got.P95, want.P95) || !near(want.P95, 50.95, 1e-9) {
		t.Fatalf("p95 %g, pooled %g (want 50.95)", got.P95, want.P95)
	}
}

func TestHistogramEmptyAndNaN(t *testing.T) {
	if HistogramOf(nil) != nil || HistogramOf([]float64{math.NaN()}) != nil {
		t.Fatal("no numbers must be a missing histogram (nil)")
	}
	h := HistogramOf([]float64{math.NaN(), 5})
	if h.Count() != 1 || h.Mean() != 5 {
		t.Fatalf("NaN must be ignored: count %d mean %g", h.Count(), h.Mean())
	}
	var nilH *Histogram
	if s := nilH.Summary(); s.Count != 0 {
		t.Fatal("nil summary must be empty")
	}
}

func TestHistogramDecodeRefuses(t *testing.T) {
	good, _ := json.Marshal(HistogramOf([]float64{1, 2, 3}))
	var w map[string]any
	_ = json.Unmarshal(good, &w)
	mut := func(k string, v any) []byte {
		c := map[string]any{}
		for kk, vv := range w {
			c[kk] = vv
		}
		c[k] = v
		b, _ := json.Marshal(c)
		return b
	}
	other := hdrEncode(t)
	for name, b := range map[string][]byte{
		"not json":       []byte("{"),
		"no hdr":         mut("hdr", ""),
		"bad base64":     mut("hdr", "!!!"),
		"count mismatch": mut("count", 4),
		"zero count":     mut("count", 0),
		"min > max":      mut("min", 10),
		"other geometry": mut("hdr", other),
	} {
		var h Histogram
		if err := json.Unmarshal(b, &h); err == nil {
			t.Errorf("%s: decoded without error", name)
		}
	}
}

func BenchmarkHistogramRecord(b *testing.B) {
	h := NewHistogram()
	for i := 0; b.Loop(); i++ {
		h.Record(float64(i%5000) * 0.37)
	}
}

func FuzzHistogramUnmarshal(f *testing.F) {
	good, _ := json.Marshal(HistogramOf([]float64{1, 2, 3, 400}))
	f.Add(good)
	f.Add([]byte(`{"count":1,"sum":1,"min":1,"max":1,"hdr":"HISTFAAAAB94nJNpmSzMwMDAyAABzFCaEUrLMDIxMDAzAAAOhwEB"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Histogram
		if err := json.Unmarshal(b, &h); err != nil {
			return
		}
		s := h.Summary()
		if s.Count < 1 || s.Min > s.Max {
			t.Fatalf("accepted an impossible histogram: %+v", s)
		}
		if _, err := json.Marshal(&h); err != nil {
			t.Fatal(err)
		}
	})
}

// hdrEncode is a valid HdrHistogram of a different geometry holding 3
// values, which UnmarshalJSON must refuse.
func hdrEncode(t *testing.T) string {
	t.Helper()
	h := hdrhistogram.New(1, 1000, 2)
	for _, v := range []int64{1, 2, 3} {
		_ = h.RecordValue(v)
	}
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEncodedRoundTrip: a histogram held encoded decodes to the same
// distribution, writes the same JSON as the live one, and costs a few
// hundred bytes where the live one holds its whole bucket array.
func TestEncodedRoundTrip(t *testing.T) {
	h := NewHistogram()
	for i := range 128 {
		h.Record(0.4 + float64(i%37)/7)
	}
	e, err := Encode(h)
	if err != nil {
		t.Fatal(err)
	}
	live, _ := json.Marshal(h)
	held, _ := json.Marshal(e)
	if string(live) != string(held) {
		t.Fatalf("encoded JSON %s, live %s", held, live)
	}
	if len(held) > 1000 {
		t.Errorf("encoded form %d bytes: not compact", len(held))
	}
	back, err := e.Decode()
	if err != nil {
		t.Fatal(err)
	}
	if back.Summary() != h.Summary() {
		t.Errorf("decoded %+v, want %+v", back.Summary(), h.Summary())
	}
	var again Encoded
	if err := json.Unmarshal(held, &again); err != nil {
		t.Fatal(err)
	}
	if d, err := again.Decode(); err != nil || d.Count() != 128 {
		t.Fatalf("re-decoded %v %v", d, err)
	}
	if e, err := Encode(NewHistogram()); e != nil || err != nil {
		t.Errorf("an empty histogram encoded to %v, %v: it is missing, not zero", e, err)
	}
	h.Reset()
	if h.Count() != 0 || !math.IsNaN(h.Mean()) {
		t.Errorf("reset histogram %+v", h.Summary())
	}
}

func TestEncodedRefuses(t *testing.T) {
	for _, bad := range []string{`{}`, `{"count":0,"hdr":"x"}`, `{"count":2}`, `[]`} {
		var e Encoded
		if err := json.Unmarshal([]byte(bad), &e); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	// The shape checks out; the buckets do not: Decode refuses it.
	var e Encoded
	if err := json.Unmarshal([]byte(`{"count":2,"sum":1,"min":0,"max":1,"hdr":"bm90IGhkcg=="}`), &e); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Decode(); err == nil {
		t.Error("garbage buckets decoded")
	}
}
