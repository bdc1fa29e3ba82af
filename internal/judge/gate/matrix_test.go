package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/run/rundir"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// A sweep reads as one matrix: a row per sweep point with its axes, the
// phase means, tick p99, entities, bytes per entity and CPU, then the
// wire's payload KB/s, bytes per snapshot, bytes per entity of full and
// delta snapshots and the delta share, each read
// through the gate table; a figure a leg lacks is missing (an empty CSV
// cell, "—" in the summary), a leg without a report has every figure
// missing, and a profile without a sweep has no matrix.
func TestMatrix(t *testing.T) {
	p := testProfile()
	p.Baselined = false
	p.Sweep = &profile.Sweep{EntityCounts: []int{0, 2000}, SnapshotBudgetBytes: []int{1200}}
	p.Gates = profile.Gates{"tick_hz_min": {Threshold: f64(30), Level: gatetable.LevelAdvisory}}
	legs := p.Legs()
	res := &rundir.RunResult{Profile: p}
	for i, l := range legs {
		if i == 1 {
			res.Legs = append(res.Legs, rundir.LegResult{Leg: l, Verdict: rundir.VerdictLaunchFailed})
			continue
		}
		tick := healthyTick()
		tick["entities"], tick["cpu_pct_mean"] = 8+*l.EntityCount, 61.5
		tick["sensing_ms"] = map[string]any{"min": 0.1, "mean": 0.25, "max": 1, "p95": 0.5, "p99": 0.8}
		r := healthyReport(tick)
		r.SnapshotBytesPerEntity = f64(17.25)
		r.BytesPerSnapshot, r.SnapshotBytesPerEntityFull, r.SnapshotBytesPerEntityDelta, r.DeltaSnapshotShare = f64(420), f64(19.5), f64(8.5), f64(0.98)
		checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: l, Report: r})
		res.Legs = append(res.Legs, rundir.LegResult{Leg: l, Verdict: LegVerdict(checks, Facts{}), Checks: checks, Report: r})
	}
	m := Matrix(res)
	if m == nil || strings.Join(m.Axes, ",") != "entity_count,snapshot_budget_bytes" || len(m.Rows) != 2 || len(m.Columns) != len(gatetable.TickPhases())+10 {
		t.Fatalf("matrix %+v", m)
	}
	col := func(name string) int {
		for i, c := range m.Columns {
			if c.Name == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	r0, r1 := m.Rows[0], m.Rows[1]
	if r0.LegID != "weave_e0_b1200" || strings.Join(r0.Point, ",") != "0,1200" || *r0.Values[col("entities")] != 8 ||
		*r0.Values[col("tick_ms_p99")] != 2.5 || *r0.Values[col("sensing_ms_mean")] != 0.25 || *r0.Values[col("cpu_pct_mean")] != 61.5 ||
		*r0.Values[col("bytes_per_entity")] != 17.25 || r0.Values[col("ai_ms_mean")] != nil ||
		*r0.Values[col("bytes_per_entity_delta")] != 8.5 || *r0.Values[col("delta_snapshot_share")] != 0.98 ||
		r0.Values[col("idle_floor_kbs")] != nil { // a weave leg is no idle floor
		t.Errorf("row 0 %+v", r0)
	}
	for i, v := range r1.Values {
		if v != nil {
			t.Errorf("a leg without a report has %s = %v", m.Columns[i].Name, *v)
		}
	}
	res.Matrix = m
	path := filepath.Join(t.TempDir(), rundir.MatrixFile)
	if err := rundir.WriteMatrixCSV(path, m); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 3 || lines[0] != "leg,pattern,entity_count,snapshot_budget_bytes,verdict,maintenance_ms_mean,sensing_ms_mean,integrate_ms_mean,ai_ms_mean,collision_ms_mean,serialize_ms_mean,other_ms_mean,tick_ms_p99,entities,bytes_per_entity,cpu_pct_mean,kbs_mean,bytes_per_snapshot,bytes_per_entity_full,bytes_per_entity_delta,delta_snapshot_share,idle_floor_kbs" ||
		lines[1] != "weave_e0_b1200,weave,0,1200,passed,,0.25,,,,,,2.5,8,17.25,61.5,60,420,19.5,8.5,0.98," ||
		lines[2] != "weave_e2000_b1200,weave,2000,1200,launch failure,,,,,,,,,,,,,,,,," {
		t.Errorf("matrix.csv:\n%s", b)
	}
	md := rundir.Markdown(res)
	if !strings.Contains(md, "### sweep matrix") || !strings.Contains(md, "| `weave_e0_b1200` | 0 | 1200 | — | 0.25 |") {
		t.Errorf("summary.md:\n%s", md)
	}
	p.Sweep = nil
	if Matrix(res) != nil {
		t.Error("a profile without a sweep has no matrix")
	}
}

// A profile's own tick phases (figures with phase: true) are matrix
// columns after the built-in phases, each the figure's mean per tick from
// its object in server_tick; a figure that is not a phase is not one.
func TestMatrixOwnPhases(t *testing.T) {
	p := testProfile()
	p.Baselined = false
	p.Sweep = &profile.Sweep{EntityCounts: []int{0}}
	p.Figures = gatetable.OwnFigures{
		"physics_ms": {Unit: "ms", Better: "lower", Phase: true, File: &serverwindow.FileFigure{Histogram: "physics.step_ms"}},
		"netcode_ms": {Unit: "ms", Better: "lower", Phase: true, File: &serverwindow.FileFigure{Summary: "netcode_ms"}},
		"bodies":     {Better: "higher", File: &serverwindow.FileFigure{Gauge: "bodies"}},
	}
	l := p.Legs()[0]
	tick := healthyTick()
	tick["physics_ms"] = map[string]any{"mean": 1.25, "p99": 3}
	r := healthyReport(tick)
	res := &rundir.RunResult{Profile: p, Legs: []rundir.LegResult{{Leg: l, Report: r}}}
	m := Matrix(res)
	n := len(gatetable.TickPhases())
	if m == nil || len(m.Columns) != len(gatetable.TickPhases())+12 {
		t.Fatalf("matrix %+v", m)
	}
	if c := m.Columns[n]; c.Name != "netcode_ms_mean" || !c.OwnPhase || c.Unit != "ms" {
		t.Errorf("column %d %+v, want the own phase netcode_ms", n, c)
	}
	if c := m.Columns[n+1]; c.Name != "physics_ms_mean" || !c.OwnPhase {
		t.Errorf("column %d %+v, want the own phase physics_ms", n+1, c)
	}
	if v := m.Rows[0].Values[n+1]; v == nil || *v != 1.25 {
		t.Errorf("physics_ms mean %v, want 1.25", v)
	}
	if v := m.Rows[0].Values[n]; v != nil {
		t.Errorf("netcode_ms mean %v: the leg has none, it is missing", *v)
	}
	if h := strings.Join(m.MatrixHeader(), ","); !strings.Contains(h, "netcode_ms_mean,physics_ms_mean") {
		t.Errorf("matrix.csv header %s", h)
	}
}
