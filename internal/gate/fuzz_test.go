package gate

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/report"
)

func TestTransportError(t *testing.T) {
	p := &Profile{Name: "reference", Transport: "quic"}
	missing := func(string) error {
		return errors.New(`transport "quic" is not available in this build (available: [enet])`)
	}
	err := p.TransportError(missing)
	if err == nil || !strings.Contains(err.Error(), "transport quic") || !strings.Contains(err.Error(), "not available in this build") ||
		!strings.Contains(err.Error(), "never runs another transport") {
		t.Fatalf("err = %v", err)
	}
	if err := p.TransportError(func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
}

// FuzzProfile: any bytes as a profile file give a profile or an error,
// never a panic; every problem is one line at the user's file (never inside
// the schema); a profile that loads has legs.
func FuzzProfile(f *testing.F) {
	for _, s := range []string{goodSrc, "", "name: 1", "{", `name: "good", sweep: {entity_counts: [1], sim_worker_threads: [0]}`} {
		f.Add(s)
	}
	c, err := NewCatalog("")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, _, err := c.resolve("good", "good.cue", []byte(src), nil)
		if err != nil {
			for _, line := range strings.Split(FormatError(err), "\n") {
				if !strings.HasPrefix(line, "good.cue:") {
					t.Fatalf("problem not at the user's file: %q", line)
				}
			}
			return
		}
		if len(p.Legs()) == 0 {
			t.Fatalf("valid profile without legs: %s", src)
		}
	})
}

// FuzzBaseline: any bytes as the baseline file parse or error, never panic.
func FuzzBaseline(f *testing.F) {
	f.Add([]byte(committed))
	f.Add([]byte(`{"baselines": null}`))
	f.Add([]byte(`[]`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "b.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		bl, err := ReadBaseline(path)
		if err == nil && bl.Entries == nil {
			t.Fatal("nil entries from a parsed baseline")
		}
	})
}

// FuzzEvaluate: any report bytes that parse are evaluated without panic,
// and a leg without a server_tick never passes.
func FuzzEvaluate(f *testing.F) {
	b, _ := os.ReadFile("testdata/report.json")
	f.Add(b)
	f.Add([]byte(`{"schema_version":5,"transport":"enet","clients":8,"clients_connected":8,"server_tick":{"transport":1}}`))
	p := testProfile()
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := report.ParseReport(b)
		if err != nil {
			return
		}
		checks := Evaluate(Input{Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
		var m map[string]json.RawMessage
		if json.Unmarshal(r.ServerTick, &m) != nil && LegVerdict(checks) == VerdictPassed {
			t.Fatal("passed without a readable server_tick")
		}
	})
}

// BenchmarkEvaluate: evaluating a leg is off the hot path, but a sweep of
// hundreds of legs should not notice it.
func BenchmarkEvaluate(b *testing.B) {
	p, r := testProfile(), healthyReport(healthyTick())
	for b.Loop() {
		Evaluate(Input{Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
	}
}
