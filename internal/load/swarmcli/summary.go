package swarmcli

import (
	"fmt"
	"io"

	"github.com/scalegate/scalegate/internal/guard/safetext"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/swarm"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// printSummary prints the human-readable outcome of a run.
// WriteSummary prints the human-readable outcome of a run, escaped for the
// terminal: it carries what the server said (refuse and loss reasons, its
// metrics errors), the impairment schedule's phase names and file names.
func WriteSummary(w io.Writer, res *swarm.Result) { printSummary(safetext.Writer(w), res) }

func printSummary(w io.Writer, res *swarm.Result) {
	r := res.Report
	printOutcome(w, r)
	printFigures(w, r)
	printDelivery(w, res)
	printRunNotes(w, r)
}

// printOutcome says what ran and what became of its clients, first, since
// a run that admitted nobody or ended early makes every figure after it
// suspect.
func printOutcome(w io.Writer, r *report.Report) {
	fmt.Fprintf(w, "swarm: %s, protocol %s, pattern %s %v, %d clients, %d threads, %.1fs\n", r.Transport, r.Protocol, r.Pattern, r.PatternCounts, r.Clients, r.Threads, r.DurationS)
	if s := r.Shard; s != nil {
		fmt.Fprintf(w, "  shard %d/%d: clients %d..%d of %d, started %.1f ms late\n", s.Index, s.Count, s.FirstClient, s.FirstClient+r.Clients-1, s.ClientsTotal, s.StartLateMs)
	}
	fmt.Fprintf(w, "  admitted %d  refused %d %v  disconnected %d %v  never connected %d %v\n",
		r.ClientsConnected, r.ClientsRefused, r.RefusedByReason, r.ClientsDisconnected, r.DisconnectedByReason, r.ClientsNeverConnected, r.NeverConnectedByReason)
	if r.AbortedAtS != nil {
		fmt.Fprintf(w, "  ENDED EARLY at %.1fs (%s): %s\n", *r.AbortedAtS, r.AbortGate, r.AbortReason)
	}
	if h := r.HarnessErrors; h.Clients() > 0 {
		fmt.Fprintf(w, "  harness errors: %d clients without a socket, %d connects not issued, %d at the descriptor limit; first: %s\n", h.Socket, h.Dial, h.FDExhausted, h.FirstError)
	}
}

// printFigures prints the measured figures; one the run did not produce is
// left out rather than shown as zero.
func printFigures(w io.Writer, r *report.Report) {
	if h := r.ObservedServerTickHz; h != nil {
		fmt.Fprintf(w, "  observed tick-Hz min/mean/max %.2f / %.2f / %.2f\n", h.Min, h.Mean, h.Max)
	}
	if k := r.DownstreamKBsPerClient; k != nil {
		fmt.Fprintf(w, "  downstream KB/s per client mean %.2f max %.2f\n", k.Mean, k.Max)
	}
	if k := r.DownstreamLinkKBsPerClient; k != nil {
		fmt.Fprintf(w, "  on the link (IP/UDP headers included) mean %.2f max %.2f\n", k.Mean, k.Max)
	}
	rtt := "rtt"
	if r.RTTSource != "" {
		rtt += " (" + r.RTTSource + ")"
	}
	printPercentiles(w, rtt, r.RTTMs)
	if r.RTTSource != report.RTTSourceTransport {
		printPercentiles(w, "transport rtt", r.TransportRTTMs)
	}
	printPercentiles(w, "input latency", r.InputLatencyMs)
	printPercentiles(w, "peer delay", r.PeerDelayMs)
	printPercentiles(w, "connect", r.ConnectMs)
	printPercentiles(w, "worker loop dt", r.WorkerLoopDtMs)
	if p := r.ServiceIntervalMs; p != nil {
		fmt.Fprintf(w, "  %-18s p50 %.2f  p99 %.2f  max %.2f  mean %.3f ms\n", "service interval", p.P50, p.P99, p.Max, p.Mean)
	}
	if in := r.InputsPerSPerClient; in != nil {
		fmt.Fprintf(w, "  inputs/s per client min/mean/max %.2f / %.2f / %.2f (%d sent)\n", in.Min, in.Mean, in.Max, r.InputsSent)
	}
	if r.MaxSnapshotGapMs != nil {
		fmt.Fprintf(w, "  max snapshot gap %.1f ms, snapshots %d, decode errors %d\n", *r.MaxSnapshotGapMs, r.SnapshotsReceived, r.SnapshotDecodeErrors)
	}
	if r.DeltaSnapshotShare != nil {
		fmt.Fprintf(w, "  snapshots %s B each, %s B/entity (full %s, delta %s), %.1f %% deltas\n",
			optFigure(r.BytesPerSnapshot), optFigure(r.SnapshotBytesPerEntity), optFigure(r.SnapshotBytesPerEntityFull),
			optFigure(r.SnapshotBytesPerEntityDelta), 100**r.DeltaSnapshotShare)
	}
	printPercentiles(w, "state interval", r.StateIntervalMs)
}

// optFigure prints v to two decimals, "–" when absent.
func optFigure(v *float64) string {
	if v == nil {
		return "–"
	}
	return fmt.Sprintf("%.2f", *v)
}

// printPercentiles prints one latency line, aligned with its neighbours.
func printPercentiles(w io.Writer, name string, p *report.Percentiles) {
	if p != nil {
		fmt.Fprintf(w, "  %-18s p50 %.2f  p95 %.2f  p99 %.2f  max %.2f ms\n", name, p.P50, p.P95, p.P99, p.Max)
	}
}

// printDelivery prints the delivery verdict the way the gate table judges
// it, so the swarm and the gate never disagree.
func printDelivery(w io.Writer, res *swarm.Result) {
	d := gatetable.Delivered(res.Report, res.Delivery)
	verdict := "held"
	if !d.OK() {
		verdict = "FAILED: " + d.Why()
	}
	fmt.Fprintf(w, "  delivery %s: %s (must: %s)\n", verdict, d.Text, d.Threshold)
}

// printRunNotes prints what qualifies the figures: the warm-up, the
// harness's own cost, the server's metrics, replays, impairment and
// warnings.
func printRunNotes(w io.Writer, r *report.Report) {
	if r.WarmupEndS != nil {
		fmt.Fprintf(w, "  warm-up %gs: windowed figures count from t=%.1fs\n", r.WarmupS, *r.WarmupEndS)
	}
	if r.CPUUsPerClientTick != nil {
		fmt.Fprintf(w, "  harness CPU %.2fs, %.1f µs per client-tick (workers %s)\n", *r.HarnessCPUS, *r.CPUUsPerClientTick, r.WorkerPacing)
	}
	if r.ServerMetricsError != "" {
		fmt.Fprintf(w, "  server metrics: %s\n", r.ServerMetricsError)
	}
	for _, t := range r.Traces {
		fmt.Fprintf(w, "  %s: %d file(s), %d records; %d of %d clients replayed %d record(s), %d skipped, %d keepalive(s)\n",
			t.Pattern, len(t.Files), t.Records, t.ClientsReplayed, t.Clients, t.RecordsReplayed, t.RecordsSkipped, t.Keepalives)
	}
	printImpairment(w, r)
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", s)
	}
}
