package compare

import (
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
