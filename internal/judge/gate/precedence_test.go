package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// TestPrecedenceTable is docs/gate.md's precedence table ("Verdicts"),
// row by row: each case builds the leg the row describes (through
// Evaluate where softening decides it) and checks the leg's verdict, the
// run's verdict of that one leg, and that the row's number is named in the
// doc, so the table and the code cannot drift apart unnoticed.
func TestPrecedenceTable(t *testing.T) {
	// busy: other processes used 0.9 cores against the profile's 0.25.
	busy := func(r *report.Report) { r.Host = hostBlock(0.9) }
	slowTick := func(tick map[string]any, r *report.Report) {
		tick["tick_ms"] = map[string]any{"min": 0.5, "mean": 20, "max": 40, "p95": 30, "p99": 35}
		r.ServerTick = mustJSON(tick)
	}
	for _, tc := range []struct {
		row     int
		name    string
		level   gatetable.Level // tick_ms_p99_max's level
		mutate  func(tick map[string]any, r *report.Report)
		facts   Facts
		verdict rundir.Verdict
	}{
		{1, "interrupted, whatever else", gatetable.LevelHard, slowTick, Facts{Interrupted: true, NotRun: "server died"}, rundir.VerdictInterrupted},
		{2, "did not run as declared", gatetable.LevelHard, nil, Facts{NotRun: "server exited (status 6) during the run"}, rundir.VerdictLaunchFailed},
		{3, "a hard check failed (quiet host)", gatetable.LevelHard, slowTick, Facts{}, rundir.VerdictFailed},
		{3, "a hard check unevaluable, on a busy host too", gatetable.LevelHard, func(tick map[string]any, r *report.Report) {
			delete(tick, "tick_ms")
			r.ServerTick = mustJSON(tick)
			busy(r)
		}, Facts{}, rundir.VerdictFailed},
		{4, "a leg file could not be written", gatetable.LevelHard, nil, Facts{ArtifactErr: true}, rundir.VerdictFailed},
		{5, "a hard timing failure on a busy host", gatetable.LevelHard, func(tick map[string]any, r *report.Report) {
			slowTick(tick, r)
			busy(r)
		}, Facts{}, rundir.VerdictInconclusive},
		{5, "a harness-bound leg's hard timing failure", gatetable.LevelHard, func(tick map[string]any, r *report.Report) {
			slowTick(tick, r)
			r.ServiceIntervalMs.P99, r.ServiceIntervalMs.Mean = 80, 30
		}, Facts{}, rundir.VerdictInconclusive},
		{6, "an advisory breach on a busy host", gatetable.LevelAdvisory, func(tick map[string]any, r *report.Report) {
			slowTick(tick, r)
			busy(r)
		}, Facts{}, rundir.VerdictPassed},
		{5, "an advisory breach on a harness-bound leg (the harness check is hard)", gatetable.LevelAdvisory, func(tick map[string]any, r *report.Report) {
			slowTick(tick, r)
			r.ServiceIntervalMs.P99 = 80
		}, Facts{}, rundir.VerdictInconclusive},
		{6, "an advisory breach on a quiet host", gatetable.LevelAdvisory, slowTick, Facts{}, rundir.VerdictPassed},
		{7, "every check passed", gatetable.LevelHard, nil, Facts{}, rundir.VerdictPassed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, tick := testProfile(), healthyTick()
			p.Tier = "strict"
			p.Host.MaxOtherCores = 0.25
			setLevel(p, "tick_ms_p99_max", tc.level)
			r := healthyReport(tick)
			if tc.mutate != nil {
				tc.mutate(tick, r)
			}
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
			got := LegVerdict(checks, tc.facts)
			if got != tc.verdict {
				t.Fatalf("row %d: leg %s, want %s; checks %+v", tc.row, got, tc.verdict, checks)
			}
			run := RunVerdict(&rundir.RunResult{Legs: []rundir.LegResult{{Verdict: got, Checks: checks}}})
			if run != tc.verdict {
				t.Errorf("row %d: run %s, want %s", tc.row, run, tc.verdict)
			}
			if tc.level == gatetable.LevelAdvisory {
				// The advisory check keeps its own status and says why its
				// figure may be the machine's; it is never inconclusive.
				c, _ := find(checks, "tick_ms_p99_max")
				if c.Status != rundir.StatusFail || c.Level != gatetable.LevelAdvisory {
					t.Errorf("row %d: advisory tick check %s/%s, want fail/advisory", tc.row, c.Status, c.Level)
				}
			}
		})
	}
	doc := readGateDoc(t)
	for row := 1; row <= 7; row++ {
		if !strings.Contains(doc, "| "+string(rune('0'+row))+" |") {
			t.Errorf("docs/gate.md's precedence table has no row %d", row)
		}
	}
}

// readGateDoc is docs/gate.md.
func readGateDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "gate.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
