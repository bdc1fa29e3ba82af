package gate

import (
	"fmt"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// Thresholds of the trace_replay check.
const (
	// traceAcceptedMin: the server must have accepted this share of the
	// Inputs the swarm sent (loopback; the last few in flight at each
	// disconnect are lost, and the final metrics read may be up to one
	// write interval old).
	traceAcceptedMin = 0.9
	// traceSkippedMax: more records skipped than this share of those
	// replayed, and the swarm was not reproducing the recording.
	traceSkippedMax = 0.05
	// traceCoveredMin: the clients together must have played this share
	// of the recording (or of what they replayed, when the run is shorter
	// than the recording).
	traceCoveredMin = 0.9
)

// traceCheck is the trace_replay check every trace leg carries, hard, with
// no profile declaration: a leg named after a recording must prove the
// recording was played to the server. A hollow pass would be a swarm that
// loaded the file and sent nothing (or another pattern), one fragment
// replayed over and over, a swarm too slow to keep up that skipped most of
// it, or a server that dropped the Inputs; each fails here.
//
// Skipped records are a harness symptom: the swarm's own loop fell more
// than a second behind the recording (the server cannot make it skip), so
// a failure on that ground alone makes the leg inconclusive, like a
// harness-bound leg's timing gates; every other failure stands.
func traceCheck(rep *report.Report, repErr error) rundir.Check {
	c := rundir.Check{Gate: gatetable.CheckTraceReplay, Title: "recording replayed to the server", Level: gatetable.LevelHard,
		Threshold: fmt.Sprintf("every admitted client replayed; ≥ %.0f%% of the recording covered; ≤ %.0f%% skipped; server accepted ≥ %.0f%% of inputs",
			traceCoveredMin*100, traceSkippedMax*100, traceAcceptedMin*100),
		MeasuredText: "—"}
	if rep == nil {
		c.Status, c.Detail = rundir.StatusUnevaluable, fmt.Sprintf("no report: %v", repErr)
		return c
	}
	if len(rep.Traces) != 1 {
		c.Status, c.Detail = rundir.StatusUnevaluable, fmt.Sprintf("the report carries %d traces entries, want 1: the swarm did not replay the recording", len(rep.Traces))
		return c
	}
	t := rep.Traces[0]
	replayed := float64(t.RecordsReplayed)
	c.Measured = &replayed
	c.MeasuredText = fmt.Sprintf("%d/%d clients replayed %d records (%d of %d covered, %d skipped)",
		t.ClientsReplayed, rep.ClientsConnected, t.RecordsReplayed, t.RecordsCovered, t.Records, t.RecordsSkipped)
	why, skippedTooMany := replayFindings(rep, t)
	m := gatetable.FromReport(rep)
	accepted, err := m.Tick("inputs_accepted")
	if err != nil {
		c.Status, c.Detail = rundir.StatusUnevaluable, fmt.Sprintf("cannot prove the server took the replayed inputs: %v (docs/metrics.md)", err)
		return c
	}
	c.MeasuredText += fmt.Sprintf("; server accepted %d of %d inputs", int64(accepted), rep.InputsSent)
	// The share is the gate table's inputs-accepted figure, the one the
	// inputs_accepted_ratio_min gate reads; it refuses 0 inputs sent.
	if share, err := gatetable.InputsAccepted.Read(m); err != nil || share < traceAcceptedMin {
		why = append(why, fmt.Sprintf("server accepted %d of the %d inputs sent", int64(accepted), rep.InputsSent))
	}
	c.Status = rundir.StatusPass
	switch {
	case len(why) == 1 && skippedTooMany:
		c.Status, c.Detail = rundir.StatusInconclusive, why[0]+": the harness could not keep the recording's pace, so the leg cannot judge the server"
	case len(why) > 0:
		c.Status, c.Detail = rundir.StatusFail, strings.Join(why, "; ")
	}
	return c
}

// replayFindings is what the swarm's own side of the replay says is wrong
// (clients that replayed nothing, records skipped, too little of the
// recording covered, fewer inputs sent than records replayed), before the
// server's side is read; skippedTooMany marks the harness symptom that
// alone makes the leg inconclusive.
func replayFindings(rep *report.Report, t report.TraceReplay) (why []string, skippedTooMany bool) {
	if rep.ClientsConnected == 0 || t.ClientsReplayed < rep.ClientsConnected {
		why = append(why, fmt.Sprintf("%d of %d admitted clients replayed any record", t.ClientsReplayed, rep.ClientsConnected))
	}
	skippedTooMany = float64(t.RecordsSkipped) > traceSkippedMax*float64(t.RecordsReplayed)
	if skippedTooMany {
		why = append(why, fmt.Sprintf("%d records skipped against %d replayed: the swarm fell behind the recording", t.RecordsSkipped, t.RecordsReplayed))
	}
	if want := traceCoveredMin * float64(min(t.Records, t.RecordsReplayed)); float64(t.RecordsCovered) < want || t.RecordsCovered == 0 {
		why = append(why, fmt.Sprintf("only %d of %d records covered: a fragment was replayed, not the recording", t.RecordsCovered, t.Records))
	}
	if rep.InputsSent < t.RecordsReplayed {
		why = append(why, fmt.Sprintf("inputs_sent %d < records_replayed %d", rep.InputsSent, t.RecordsReplayed))
	}
	return why, skippedTooMany
}
