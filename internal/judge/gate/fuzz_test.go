package gate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

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
		bl, err := baseline.Read(path)
		if err == nil && bl.Entries == nil {
			t.Fatal("nil entries from a parsed baseline")
		}
	})
}

// FuzzEvaluate: any report bytes that parse are evaluated without panic,
// and a leg without a server_tick never passes.
func FuzzEvaluate(f *testing.F) {
	// Seeded with a real smoke run's report (the catalog's schema fixture).
	b, err := os.ReadFile("../../config/catalog/testdata/report.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{"schema_version":5,"transport":"enet","clients":8,"clients_connected":8,"server_tick":{"transport":1}}`))
	p := testProfile()
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := report.ParseReport(b)
		if err != nil {
			return
		}
		checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
		var m map[string]json.RawMessage
		if json.Unmarshal(r.ServerTick, &m) != nil && LegVerdict(checks, Facts{}) == rundir.VerdictPassed {
			t.Fatal("passed without a readable server_tick")
		}
	})
}

// BenchmarkEvaluate: evaluating a leg is off the hot path, but a sweep of
// hundreds of legs should not notice it.
func BenchmarkEvaluate(b *testing.B) {
	p, r := testProfile(), healthyReport(healthyTick())
	for b.Loop() {
		Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
	}
}
