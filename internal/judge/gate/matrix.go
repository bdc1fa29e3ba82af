package gate

import (
	"slices"
	"strconv"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// MatrixFigures are the sweep matrix's columns: where the tick's time went
// (each phase's mean), its p99, what the world held, what a snapshot paid
// per entity, and the CPU the server burnt; then what the wire carried:
// payload KB/s per client, bytes per snapshot, bytes per entity of full and
// delta snapshots, the share of deltas, and the idle floor (a leg of
// bots flying gatetable.StationaryPattern).
func MatrixFigures() []gatetable.Figure { return slices.Clone(matrixFigures) }

// matrixFigures backs MatrixFigures; never handed out itself, so no caller can change it.
var matrixFigures = append(append([]gatetable.Figure{}, gatetable.TickPhases()...),
	gatetable.TickMsP99, gatetable.Entities, gatetable.BytesPerEntity, gatetable.CPUPctMean,
	gatetable.KBsMean, gatetable.BytesPerSnapshot, gatetable.BytesPerEntityFull, gatetable.BytesPerEntityDelta, gatetable.DeltaShare, gatetable.IdleFloor)

// matrixFiguresOf are the matrix's columns for p: the profile's own tick
// phases (figures with phase: true) follow the built-in ones.
func matrixFiguresOf(p *profile.Profile) []gatetable.Figure {
	n := len(gatetable.TickPhases())
	out := slices.Clone(matrixFigures[:n])
	out = append(out, p.Figures.OwnPhases(p.Server.MetricsSource())...)
	return append(out, matrixFigures[n:]...)
}

// Matrix builds the sweep matrix of a run whose profile sweeps (nil
// otherwise): one row per leg in run order, each figure read through the
// gate table from the leg's report, missing where the leg has none.
func Matrix(r *rundir.RunResult) *rundir.SweepMatrix {
	p := r.Profile
	if p == nil || p.Sweep == nil {
		return nil
	}
	m := &rundir.SweepMatrix{Axes: sweepAxes(p)}
	figs := matrixFiguresOf(p)
	own := map[string]bool{}
	for _, f := range p.Figures.OwnPhases(p.Server.MetricsSource()) {
		own[f.Name] = true
	}
	for _, f := range figs {
		m.Columns = append(m.Columns, rundir.MatrixColumn{Name: f.Name, Title: f.Title, Unit: f.Unit, OwnPhase: own[f.Name]})
	}
	for _, l := range r.Legs {
		row := rundir.MatrixRow{LegID: l.Leg.ID, Pattern: l.Leg.PatternLabel(), Verdict: l.Verdict,
			Values: make([]*float64, len(figs))}
		for _, a := range m.Axes {
			row.Point = append(row.Point, axisValue(p, l.Leg, a))
		}
		if l.Report != nil {
			fm := gatetable.FromReport(l.Report)
			for i, f := range figs {
				row.Values[i], _ = f.Value(fm)
			}
		}
		m.Rows = append(m.Rows, row)
	}
	return m
}

// sweepAxes are the axes the profile sweeps, in the leg ID's order, and
// the transport when it runs several.
func sweepAxes(p *profile.Profile) []string {
	var axes []string
	for _, a := range []struct {
		name string
		vals []int
	}{{"clients", p.Sweep.Clients}, {"entity_count", p.Sweep.EntityCounts},
		{"sim_worker_threads", p.Sweep.SimWorkerThreads}, {"snapshot_budget_bytes", p.Sweep.SnapshotBudgetBytes}} {
		if len(a.vals) > 0 {
			axes = append(axes, a.name)
		}
	}
	if len(p.Transports) > 0 {
		axes = append(axes, "transport")
	}
	return axes
}

// axisValue is the leg's value on a sweep axis, as text.
func axisValue(p *profile.Profile, l profile.Leg, axis string) string {
	deref := func(v *int) string {
		if v == nil {
			return ""
		}
		return strconv.Itoa(*v)
	}
	switch axis {
	case "clients":
		return deref(l.Clients)
	case "entity_count":
		return deref(l.EntityCount)
	case "sim_worker_threads":
		return deref(l.SimWorkers)
	case "snapshot_budget_bytes":
		return deref(l.SnapshotBudget)
	case "transport":
		return p.TransportFor(l)
	}
	return ""
}
