package compare

import (
	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// metrics are the figures a reviewer asks about, in the summary's order:
// admission, what the clients saw, what the server spent (and why a tick
// was slow: gatetable.Diagnostics()), the harness.
// Each is read through the gate table's reader, so a figure the server or
// the swarm left out compares as missing, never as 0, and a figure means
// here what it means in the gate.
var metrics = []gatetable.Figure{
	gatetable.ClientsConnected,
	gatetable.TickHzMin,
	gatetable.TickHzMean,
	gatetable.KBsMean,
	gatetable.KBsMax,
	gatetable.WireKBs,
	gatetable.BytesPerEntity,
	gatetable.BytesPerEntityFull,
	gatetable.BytesPerEntityDelta,
	gatetable.DeltaShare,
	gatetable.BytesPerSnapshot,
	gatetable.IdleFloor,
	gatetable.Entities,
	gatetable.TickMsMean,
	gatetable.TickMsP99,
	gatetable.SerializeMs,
	gatetable.Contacts,
	gatetable.FusedContacts,
	gatetable.CPUPctMean,
	gatetable.CPUPctMax,
	gatetable.SlowTicks,
	gatetable.GCPauseP99,
	gatetable.GCCount,
	gatetable.SendQueueMax,
	gatetable.SlowSends,
	gatetable.RSSGrowth,
	gatetable.RSSSlope,
	gatetable.RTTP50,
	gatetable.RTTP95,
	gatetable.InputLatencyP50,
	gatetable.InputLatencyP95,
	gatetable.InputLatencyP99,
	gatetable.ConnectP95,
	gatetable.MaxGap,
	gatetable.WorkerDtP99,
	gatetable.SwarmCPU,
}

// value reads one figure of a leg's report; nil when the report or the
// figure is missing.
func value(f gatetable.Figure, r *report.Report) *float64 {
	if r == nil {
		return nil
	}
	v, _ := f.Value(gatetable.FromReport(r))
	return v
}

// ownRows are the rows of the profiles' own figures: every statistic
// either run's profile declares (docs/metrics.md, "Your own figures"),
// read through its gate's reader, so a figure one run does not have
// compares as missing.
func ownRows(pa, pb *profile.Profile, ra, rb *report.Report) []Row {
	var rows []Row
	seen := map[string]bool{}
	for _, p := range []*profile.Profile{pa, pb} {
		if p == nil {
			continue
		}
		for _, g := range p.Figures.OwnGates(p.Server.MetricsSource()) {
			if seen[g.Title] {
				continue
			}
			seen[g.Title] = true
			title := g.Title
			if g.Unit != "" {
				title += " " + g.Unit
			}
			rows = append(rows, Row{Metric: title, A: ownValue(g, ra), B: ownValue(g, rb)})
		}
	}
	return rows
}

// ownValue reads an own figure's statistic of a leg's report; nil when
// the report or the figure is missing.
func ownValue(g gatetable.Gate, r *report.Report) *float64 {
	if r == nil {
		return nil
	}
	v, err := g.Measure(gatetable.FromReport(r))
	if err != nil {
		return nil
	}
	return &v
}
