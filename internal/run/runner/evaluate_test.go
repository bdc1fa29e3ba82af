package runner

import (
	"path/filepath"
	"testing"

	"github.com/scalegate/scalegate/internal/config/catalog"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// TestEvaluateRealReport: a real smoke run's report (the catalog's schema
// fixture) passes the smoke gates through the runner's own path: read,
// validated against #Report, evaluated, decided.
func TestEvaluateRealReport(t *testing.T) {
	c, err := catalog.NewCatalog("")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := c.Load("smoke")
	if err != nil {
		t.Fatal(err)
	}
	res := EvaluateReport(Options{Profile: p, Dir: t.TempDir()}, p.Legs()[0], filepath.Join("..", "..", "config", "catalog", "testdata", "report.json"))
	l := res.Legs[0]
	if l.Verdict != rundir.VerdictPassed || res.Verdict != rundir.VerdictPassed {
		t.Fatalf("verdict %s (run %s): %+v", l.Verdict, res.Verdict, l.Checks)
	}
	var schema bool
	for _, c := range l.Checks {
		schema = schema || c.Gate == "report_schema" && c.Status == rundir.StatusPass
	}
	if !schema {
		t.Fatalf("no passing report_schema check: %+v", l.Checks)
	}
}
