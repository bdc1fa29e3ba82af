package stats

import (
	"encoding/json"
	"math"
	"testing"
)

// TestAppendFloatIsJSONs checks appendFloat against encoding/json, which
// the metrics file was written with before: the bytes must not change.
func TestAppendFloatIsJSONs(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1.0 / 3, 123456.789, 1e-6, 9.99999e-7, 1e-7, 1.5e-9, -2.5e-12,
		1e20, 1e21, 1.2345e22, -1e21, math.MaxFloat64, math.SmallestNonzeroFloat64, 0.000244140625, 4.1875}
	for i := range 2000 {
		vals = append(vals, math.Pow(2, float64(i)/8-120), -math.Pow(10, float64(i%60)-30)*1.7)
	}
	for _, v := range vals {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendFloat(nil, v); string(got) != string(want) {
			t.Errorf("appendFloat(%v) = %s, encoding/json writes %s", v, got, want)
		}
	}
}

// FuzzAppendFloatIsJSONs is TestAppendFloatIsJSONs over any finite float.
func FuzzAppendFloatIsJSONs(f *testing.F) {
	f.Add(1e-7)
	f.Add(123.5)
	f.Fuzz(func(t *testing.T, v float64) {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return
		}
		want, _ := json.Marshal(v)
		if got := appendFloat(nil, v); string(got) != string(want) {
			t.Errorf("appendFloat(%v) = %s, encoding/json writes %s", v, got, want)
		}
	})
}
