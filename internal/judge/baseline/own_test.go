package baseline

import (
	"strings"
	"testing"
)

// TestOwnFigureEntry: an own figure records from one run (its value) or
// from MinRuns runs (the median, with its spread), reads back as its
// reference, and a file whose own value is not its spread's median, or
// that has a spread without the value, is refused naming it. A file from
// before own figures loads as it did.
func TestOwnFigureEntry(t *testing.T) {
	var one Entry
	if err := one.Record(OwnName("physics_ms", "p99"), []float64{2.5}); err != nil {
		t.Fatal(err)
	}
	if ref, ok := one.Reference("physics_ms.p99"); !ok || ref.Value != 2.5 || ref.Spread != nil {
		t.Errorf("one run: reference %+v %v", ref, ok)
	}
	var three Entry
	if err := three.Record("physics_ms.p99", []float64{2, 3, 2.2}); err != nil {
		t.Fatal(err)
	}
	if ref, ok := three.Reference("physics_ms.p99"); !ok || ref.Value != 2.2 || ref.Spread == nil || ref.Spread.N != 3 || three.Own["physics_ms.p99"] != 2.2 {
		t.Errorf("three runs: reference %+v %v, own %v", ref, ok, three.Own)
	}
	if err := three.Record("bodies.min", []float64{1, 2}); err == nil {
		t.Error("two runs recorded")
	}
	if _, ok := one.Reference("bodies.min"); ok {
		t.Error("an unrecorded own figure has a reference")
	}
	for _, tc := range []struct{ name, file, want string }{
		{"before own figures", `{"schema_version": 2, "baselines": {"p/w": {"kbs": 1, "wire_kbs": 2}}}`, ""},
		{"own, one run", `{"schema_version": 2, "baselines": {"p/w": {"kbs": 1, "wire_kbs": 2, "own": {"physics_ms.p99": 2.5}}}}`, ""},
		{"own median moved", `{"schema_version": 2, "baselines": {"p/w": {"kbs": 1, "wire_kbs": 2, "runs": 3, "own": {"physics_ms.p99": 9},
			"spread": {"physics_ms.p99": {"n": 3, "median": 2.2, "mad": 0.2, "min": 2, "max": 3, "samples": [2, 3, 2.2]}}}}}`, "own.physics_ms.p99 is 9 but spread.physics_ms.p99.median is 2.2"},
		{"own spread without its value", `{"schema_version": 2, "baselines": {"p/w": {"kbs": 1, "wire_kbs": 2, "runs": 3,
			"spread": {"physics_ms.p99": {"n": 3, "median": 2.2, "mad": 0.2, "min": 2, "max": 3, "samples": [2, 3, 2.2]}}}}}`, "own.physics_ms.p99 is missing"},
	} {
		_, err := Decode([]byte(tc.file))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}
