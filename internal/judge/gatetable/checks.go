package gatetable

// The IDs of the built-in checks: the checks every leg gets whatever its
// profile declares, beside the table's gates (All) and the baseline's
// figures. summary.json's "gate" field carries them; code that looks for a
// check by ID uses these names, so a misspelt ID does not compile.
const (
	CheckReport        string = "report"         // the swarm's report was read
	CheckReportSchema  string = "report_schema"  // and matched its JSON Schema
	CheckTransport     string = "transport"      // both ends spoke the profile's transport
	CheckLoad          string = "load"           // the load happened (one rule: report.LoadHappened)
	CheckDelivery      string = "delivery"       // every client was served its state
	CheckImpairment    string = "impairment"     // the relay impaired what the schedule asked
	CheckShards        string = "shards"         // every shard's report was merged
	CheckHarness       string = "harness"        // the swarm was not the bottleneck
	CheckHarnessErrors string = "harness_errors" // the swarm's own errors
	CheckSwarmRun      string = "swarm_run"      // the swarm ran to its end
	CheckSwarmAssert   string = "swarm_assert"   // the swarm's own --assert-* checks
	CheckTraceReplay   string = "trace_replay"   // a replayed trace's inputs were accepted
	CheckHost          string = "host"           // nothing else on the machine took the legs' CPU
	CheckAbort         string = "abort"          // an early-abort gate ended the leg
	// CheckSnapshotDecode: every snapshot body the swarm decoded did (a
	// leg whose bodies were decoded; opaque bodies have no such check).
	CheckSnapshotDecode string = "snapshot_decode"
	// CheckRealtimePriority: the built-in server's pinned workers ran at
	// the [world] realtime_priority the profile asked (advisory; only on
	// profiles that ask).
	CheckRealtimePriority string = "realtime_priority"
)

// The baseline's checks, one per baselined figure.
const (
	CheckBaselineKBs            string = "baseline_kbs"
	CheckBaselineWireKBs        string = "baseline_wire_kbs"
	CheckBaselineBytesPerEntity string = "baseline_bytes_per_entity"
	// CheckBaselineInputLatency judges a timing figure: hard only in the
	// strict tier (StrictOnlyLevel).
	CheckBaselineInputLatency string = "baseline_input_latency_p95_ms"
	// CheckBaselineStale is advisory, and present only when some figure
	// is better than its baseline by more than the limit's margin.
	CheckBaselineStale string = "baseline_stale"
)

// CheckHistory is the history gate's check, one per leg, evaluated after
// every leg ran against the run history (internal/judge/history).
const CheckHistory string = "history"

// BuiltinChecks returns every built-in check ID (a new slice each call).
func BuiltinChecks() []string {
	return []string{CheckReport, CheckReportSchema, CheckTransport, CheckLoad, CheckDelivery, CheckImpairment,
		CheckShards, CheckHarness, CheckHarnessErrors, CheckSwarmRun, CheckSwarmAssert, CheckTraceReplay, CheckHost, CheckAbort, CheckSnapshotDecode, CheckRealtimePriority}
}
