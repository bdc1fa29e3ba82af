package stats

import (
	"encoding/json"
	"math"
	"testing"
)

// TestValuesJSON: NaN ↔ null both ways, numbers exact, infinity refused.
func TestValuesJSON(t *testing.T) {
	in := Values{1.5, math.NaN(), 0, 71.291, 1e-9}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(raw), `[1.5,null,0,71.291,1e-9]`; got != want {
		t.Errorf("marshal = %s, want %s", got, want)
	}
	var back Values
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if len(back) != len(in) {
		t.Fatalf("round trip %v, want %v", back, in)
	}
	for i := range in {
		if in[i] != back[i] && !(math.IsNaN(in[i]) && math.IsNaN(back[i])) {
			t.Errorf("value %d: %v → %v", i, in[i], back[i])
		}
	}
	if p := back.Present(); len(p) != 4 || p[1] != 0 {
		t.Errorf("Present = %v: the 0 is a measurement, the null is not", p)
	}
	if _, err := json.Marshal(Values{math.Inf(1)}); err == nil {
		t.Error("+Inf marshalled")
	}
	if err := json.Unmarshal([]byte(`[1,"x"]`), &back); err == nil {
		t.Error(`"x" accepted as a value`)
	}
}

func FuzzValuesJSON(f *testing.F) {
	for _, s := range []string{`[1,null,2]`, `null`, `[]`, `[1e308,-0]`, `{"a":1}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v Values
		if json.Unmarshal(data, &v) != nil {
			return
		}
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode %v: %v", data, v, err)
		}
		var again Values
		if err := json.Unmarshal(raw, &again); err != nil || len(again) != len(v) {
			t.Fatalf("re-decode of %s: %v (len %d, want %d)", raw, err, len(again), len(v))
		}
	})
}
