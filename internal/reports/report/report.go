// Package report holds the two JSON contracts: the server metrics file and
// the swarm report.
//
// The server metrics file is server_tick (docs/metrics.md); the swarm
// report is described in docs/swarm.md. The server writes the first, the
// swarm reads it and writes the second, the gate reads both: one definition
// keeps them from drifting.
//
// Both formats are additive and name-keyed: readers look fields up by name
// and ignore what they do not know. A field a reader needs but that is absent
// is *missing*, which is not zero: optional metrics are pointers so that
// "not reported" survives the round trip and a gate can refuse to pass on it.
package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
)

// ServerTickSchemaVersion is the metrics-file schema written by scalegate.
// The cumulative block is an addition, which does not change it
// (docs/compatibility.md).
const ServerTickSchemaVersion = 6

// ReportSchemaVersion is the swarm report schema.
//
// 6: impairment (the relay's schedule), relay (its counts) and phases (the
// run's stretches before, during and after each impairment phase).
// 7: server_tick's figures are over the hold where the server's
// cumulative state allows (its hold object says which, and over what);
// timeline rows carry the second's tick histogram (tick_hist).
const ReportSchemaVersion = 7

// Phase is a per-phase timing summary in milliseconds. P50 is additive
// (the reference server writes it since percentile budgets could gate
// it): a file without it leaves a p50 gate unevaluable, never at 0.
type Phase struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	Max  float64 `json:"max"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
}

// ServerTick is the server metrics file (`--metrics-json`), field for field
// the seed's server_tick block.
type ServerTick struct {
	SchemaVersion             int     `json:"schema_version"`
	TickHz                    float64 `json:"tick_hz"`
	TicksSampled              int64   `json:"ticks_sampled"`
	TicksTotal                int64   `json:"ticks_total"`
	WindowS                   float64 `json:"window_s"`
	Peers                     int     `json:"peers"`
	Entities                  int     `json:"entities"`
	LoadFactor                float64 `json:"load_factor"`
	InterestScale             float64 `json:"interest_scale"`
	DroppedTicks              int64   `json:"dropped_ticks"`
	RSSKB                     int64   `json:"rss_kb"`
	RSSStartupKB              int64   `json:"rss_startup_kb"`
	CongestionMinSendHz       float64 `json:"congestion_min_send_hz"`
	CongestionRecoveredSendHz float64 `json:"congestion_recovered_send_hz"`
	CongestionMaxLoss         float64 `json:"congestion_max_loss"`
	WireOutKBs                float64 `json:"wire_out_kbs"`
	WireInKBs                 float64 `json:"wire_in_kbs"`
	WireOutPPS                float64 `json:"wire_out_pps"`
	WirePeers                 int     `json:"wire_peers"`
	WireOutKBsPerClient       float64 `json:"wire_out_kbs_per_client"`
	Transport                 string  `json:"transport"`
	TickMs                    Phase   `json:"tick_ms"`
	MaintenanceMs             Phase   `json:"maintenance_ms"`
	SensingMs                 Phase   `json:"sensing_ms"`
	IntegrateMs               Phase   `json:"integrate_ms"`
	AIMs                      Phase   `json:"ai_ms"`
	CollisionMs               Phase   `json:"collision_ms"`
	SerializeMs               Phase   `json:"serialize_ms"`
	OtherMs                   Phase   `json:"other_ms"`
	// Extra fields the reference server adds (additive, name-keyed).
	MalformedDropped int64            `json:"malformed_dropped"`
	Kicked           int64            `json:"kicked"`
	Refused          map[string]int64 `json:"refused"`
	SlowTicks        int64            `json:"slow_ticks"`
	Faults           []string         `json:"faults"`
	// Reference-server additions (additive): peers timed out for silence,
	// entity-entity contacts found by the last tick, and the settings the
	// figures were measured under.
	IdleTimeouts        int64 `json:"idle_timeouts"`
	CollisionContacts   int   `json:"collision_contacts"`
	SimWorkerThreads    int   `json:"sim_worker_threads"`
	SnapshotBudgetBytes int   `json:"snapshot_budget_bytes"`
	CompressSnapshots   bool  `json:"compress_snapshots"`
	// RealtimePriority is the SCHED_FIFO priority the pinned sim workers
	// ran at (0: normal priority), and RealtimePriorityError why it is not
	// the [world] realtime_priority asked for (the kernel refused it, or
	// the workers were not pinned). Reference server, additive: absent
	// from servers without the setting.
	RealtimePriority      *int   `json:"realtime_priority,omitempty"`
	RealtimePriorityError string `json:"realtime_priority_error,omitempty"`
	// serialize_ms split (reference server, additive): building the
	// snapshots (encode, select, compress) vs handing them to the transport
	// (Send, PeerDelay, Flush). Absent from servers that do not split it.
	SerializeBuildMs *Phase `json:"serialize_build_ms,omitempty"`
	SerializeSendMs  *Phase `json:"serialize_send_ms,omitempty"`
	// Hostile traffic (reference server, additive): kick log lines held
	// back by the log's rate limit; connection attempts the transport
	// dropped before they took a peer slot, and half-open handshakes it
	// reset (both absent when the transport has no connect guard).
	KickLogsSuppressed     int64  `json:"kick_logs_suppressed"`
	ConnectAttemptsDropped *int64 `json:"connect_attempts_dropped,omitempty"`
	HalfOpenReset          *int64 `json:"half_open_reset,omitempty"`
	// The overrun governor (reference server, additive): whether it runs,
	// the lowest load_factor it reached, ticks run degraded, and its levers'
	// current settings (effective snapshot Hz per peer, AI-sample stride)
	// and the tick-work EWMA it steers by.
	OverrunGovernor    bool    `json:"overrun_governor"`
	LoadFactorMin      float64 `json:"load_factor_min"`
	DegradedTicks      int64   `json:"degraded_ticks"`
	SnapshotHz         float64 `json:"snapshot_hz"`
	AIStride           int     `json:"ai_stride"`
	GovernorTickEWMAMs float64 `json:"governor_tick_ewma_ms"`
	// InputsAccepted counts Inputs the server applied (after validation
	// and the sequence check); absent from servers that do not count them.
	// A trace leg reads it to prove the replayed inputs reached the server.
	InputsAccepted *int64 `json:"inputs_accepted,omitempty"`
	// Input-trace recording ([trace] input_trace_dir); absent when off.
	TraceRecords *int64 `json:"trace_records,omitempty"`
	TraceFiles   *int64 `json:"trace_files,omitempty"`
	TraceErrors  *int64 `json:"trace_errors,omitempty"`
	// The populated world (reference server, additive): contact-table
	// entries at write time, sensor checks per second over the window, the
	// fire path's run-long totals, live projectiles, and the AI entities by
	// controller. A world without them reports zeros, which the
	// contacts_min / shots_min gates fail.
	Contacts int `json:"contacts"`
	// FusedContacts is how many of Contacts are known to their owner only
	// through its team's datalink, not its own sensor.
	FusedContacts       int             `json:"fused_contacts"`
	SensorChecksPerS    float64         `json:"sensor_checks_per_s"`
	ShotsFiredTotal     int64           `json:"shots_fired_total"`
	HitsTotal           int64           `json:"hits_total"`
	StoresReleasedTotal int64           `json:"stores_released_total"`
	ProjectilesLive     int             `json:"projectiles_live"`
	DespawnsTotal       int64           `json:"despawns_total"`
	AIByController      *AIByController `json:"ai_by_controller,omitempty"`
	// Why a tick was slow (additive; docs/metrics.md defines each so any
	// server can write them): the process's user+system CPU over the write
	// window as a percentage of one core (nil: unavailable on the platform,
	// left out of the file), GC pauses and cycles since the server started,
	// the deepest per-peer outbound backlog over the write window, and
	// sends that failed or stalled the loop, since the server started.
	CPUPct *float64 `json:"cpu_pct,omitempty"`
	// CPUPctMean and CPUPctMax are the process CPU over the tick window
	// (window_s) from samples a second apart: its mean, and its busiest
	// second (nil: unavailable, or fewer than two samples in the window).
	CPUPctMean   *float64 `json:"cpu_pct_mean,omitempty"`
	CPUPctMax    *float64 `json:"cpu_pct_max,omitempty"`
	GCPauseMs    GCPause  `json:"gc_pause_ms"`
	GCCount      int64    `json:"gc_count"`
	SendQueueMax int      `json:"send_queue_max"`
	SlowSends    int64    `json:"slow_sends"`
	// WarmupPending (additive; [metrics] tick_stats_warmup_s) is true
	// while the tick statistics still hold the ticks of the connect ramp
	// and the warm-up, false once they restarted after it; absent without
	// a warm-up. A gate reading a windowed tick figure of a file that
	// says true is unevaluable: it would judge the warm-up.
	WarmupPending *bool `json:"warmup_pending,omitempty"`
	// Cumulative (additive, schema 7) is the server's state since it
	// started: the swarm reads it at the start of the hold and at its end
	// and computes the figures over the hold from the difference. Absent
	// from servers that do not write it: their figures are the file's own
	// windows.
	Cumulative *Cumulative `json:"cumulative,omitempty"`
}

// Cumulative is the metrics file's state since the server started
// (docs/metrics.md, "Cumulative state"). Every field only grows while the
// server runs, except the marks, which restart on a reset request; a
// field a server does not keep is left out (nil), and every figure the
// gate would compute from it is then read from the file's own window.
type Cumulative struct {
	// UptimeS is the server's time since it started, on a monotonic clock,
	// when the file was written: the span between two readings.
	UptimeS float64 `json:"uptime_s"`
	// Ticks run; TickMs their work times as bucket counts.
	Ticks  int64          `json:"ticks"`
	TickMs *stats.Buckets `json:"tick_ms,omitempty"`
	// PhaseMsSum is each tick phase's total time in ms, by the phase's
	// field name ("ai_ms"): a phase's mean over a window is its
	// difference over the ticks'.
	PhaseMsSum map[string]float64 `json:"phase_ms_sum,omitempty"`
	// PhaseMs is each tick phase's times as bucket counts, by the phase's
	// field name: no built-in figure reads it; a profile's own figure can
	// (a physics step's p99 over the hold).
	PhaseMs map[string]*stats.Buckets `json:"phase_ms,omitempty"`
	// CPUS is the process's user+system CPU time in seconds.
	CPUS *float64 `json:"cpu_s,omitempty"`
	// Tick counters: over the slow-tick line, dropped by the loop's
	// catch-up cap, run with the overrun governor engaged.
	SlowTicks     *int64 `json:"slow_ticks,omitempty"`
	DroppedTicks  *int64 `json:"dropped_ticks,omitempty"`
	DegradedTicks *int64 `json:"degraded_ticks,omitempty"`
	// LoadFactorS is the governor's load_factor integrated over wall time
	// (seconds): its time-weighted mean over a window is the difference
	// over the uptime's.
	LoadFactorS *float64 `json:"load_factor_s,omitempty"`
	// Wire traffic: bytes and datagrams out and in, over WireS seconds of
	// sampling, and PeerS the joined peers integrated over the same
	// samples (peer-seconds): the per-client rate over a window is the
	// bytes' difference over PeerS's.
	WireOutBytes     *float64 `json:"wire_out_bytes,omitempty"`
	WireInBytes      *float64 `json:"wire_in_bytes,omitempty"`
	WireOutDatagrams *float64 `json:"wire_out_datagrams,omitempty"`
	WireS            *float64 `json:"wire_s,omitempty"`
	PeerS            *float64 `json:"peer_s,omitempty"`
	// SensorChecks run; InputsAccepted applied.
	SensorChecks   *int64 `json:"sensor_checks,omitempty"`
	InputsAccepted *int64 `json:"inputs_accepted,omitempty"`
	// GC cycles completed and their stop-the-world pauses (ms); slow or
	// failed sends.
	GCCount   *int64         `json:"gc_count,omitempty"`
	GCPauseMs *stats.Buckets `json:"gc_pause_ms,omitempty"`
	SlowSends *int64         `json:"slow_sends,omitempty"`
	// SendQueueHWM is the deepest per-peer outbound backlog since the
	// server started or since the reset request MarksReset it last
	// honoured (0: none yet). A client of the file asks for a reset by
	// writing a number above MarksReset into the file named as the
	// metrics file plus ResetRequestSuffix (docs/metrics.md).
	SendQueueHWM *int64 `json:"send_queue_hwm,omitempty"`
	MarksReset   *int64 `json:"marks_reset,omitempty"`
}

// ResetRequestSuffix names the file beside a metrics file in which a
// reader asks the server to restart its marks (SendQueueHWM): it holds one
// decimal number, the request's sequence.
const ResetRequestSuffix = ".reset"

// AIByController counts live AI entities by flight controller.
type AIByController struct {
	Loiter  int `json:"loiter"`
	Pursuit int `json:"pursuit"`
	Patrol  int `json:"patrol"`
}

// GCPause is the longest and the 99th-percentile stop-the-world GC pause,
// in milliseconds.
type GCPause struct {
	Max float64 `json:"max"`
	P99 float64 `json:"p99"`
}

// ParseServerTick decodes a metrics file. It requires a JSON object with at
// least schema_version, tick_ms (with all of min, mean, max, p95, p99),
// transport and rss_kb, none of them null, so a truncated or foreign file is
// an error naming what is wrong, never a zero-valued struct a gate could pass.
//
// A valid document is decoded once and its members split by splitObject;
// anything else takes the path that names the error (parseServerTickSlow).
func ParseServerTick(b []byte) (*ServerTick, map[string]json.RawMessage, error) {
	var st ServerTick
	own := bytes.Clone(b) // the members alias it, as encoding/json's copies would not alias b
	if raw, ok := splitObject(own); ok && json.Unmarshal(b, &st) == nil && checkServerTick(raw) == nil {
		return &st, raw, nil
	}
	return parseServerTickSlow(b)
}

// checkServerTick is ParseServerTick's check of the required fields.
func checkServerTick(raw map[string]json.RawMessage) error {
	if err := requireFields("server metrics", raw, "schema_version", "tick_ms", "transport", "rss_kb"); err != nil {
		return err
	}
	var tick map[string]json.RawMessage
	if err := json.Unmarshal(raw["tick_ms"], &tick); err != nil {
		return fmt.Errorf("server metrics: field \"tick_ms\": %w", err)
	}
	return requireFields("server metrics: tick_ms", tick, "min", "mean", "max", "p95", "p99")
}

// parseServerTickSlow is ParseServerTick through encoding/json alone,
// each check in turn, the first that fails named.
func parseServerTickSlow(b []byte) (*ServerTick, map[string]json.RawMessage, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, nil, fmt.Errorf("server metrics: not a JSON object: %w", err)
	}
	if err := checkServerTick(raw); err != nil {
		return nil, nil, err
	}
	var st ServerTick
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, nil, fmt.Errorf("server metrics: %w", err)
	}
	return &st, raw, nil
}

// ReadServerTick reads and parses a metrics document from a file path or
// an http(s) URL (ReadServerMetrics), naming the source on error. The read
// is bounded in size and in time (metricsReadTimeout).
func ReadServerTick(path string) (*ServerTick, map[string]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(context.Background(), metricsReadTimeout)
	defer cancel()
	return ReadServerTickContext(ctx, path)
}

// ReadServerTickContext is ReadServerTick abandoning the read when ctx
// ends: the gate's readiness wait passes its own context, so neither a
// FIFO nor a hung endpoint can outlive ready_timeout_s.
func ReadServerTickContext(ctx context.Context, path string) (*ServerTick, map[string]json.RawMessage, error) {
	b, err := ReadServerMetricsContext(ctx, path)
	if err != nil {
		return nil, nil, fmt.Errorf("read server metrics: %w", err)
	}
	st, raw, err := ParseServerTick(b)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return st, raw, nil
}

// MinMeanMax summarises a per-client figure across clients.
type MinMeanMax struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// MeanMax summarises a per-client figure across clients.
type MeanMax struct {
	Mean float64 `json:"mean"`
	Max  float64 `json:"max"`
}

// rtt_source values.
const (
	RTTSourcePing      = "ping"
	RTTSourceTransport = "transport"
	RTTSourceMixed     = "mixed"
)

// PercentilesOf is the report's form of a distribution summary, nil when
// it has no value (missing, never zero).
func PercentilesOf(s stats.Summary) *Percentiles {
	if s.Count == 0 {
		return nil
	}
	return &Percentiles{Min: s.Min, Mean: s.Mean, P50: s.P50, P95: s.P95, P99: s.P99, Max: s.Max}
}

// Percentiles is a distribution summary.
type Percentiles struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
}

// RSSPoint is one sample of the server's RSS.
type RSSPoint struct {
	TS    float64 `json:"t_s"`
	RSSKB int64   `json:"rss_kb"`
}

// TimelinePoint is one per-second row of what the swarm saw, with the
// server's figures of the same second when a metrics file was wired.
type TimelinePoint struct {
	TS          float64  `json:"t_s"`
	Connected   int      `json:"connected"`
	TickHzMin   *float64 `json:"tick_hz_min"`
	KBs         float64  `json:"kbs"`
	RTTP95Ms    *float64 `json:"rtt_p95_ms"`
	TickMsP99   *float64 `json:"tick_ms_p99"`
	RSSKB       *int64   `json:"rss_kb"`
	WorkerDtP99 float64  `json:"worker_dt_p99_ms"`
	// ServiceIntervalMeanMs is the mean of the joined clients' service
	// intervals in this second (the figure the gate's harness check judges
	// over the run), nil when there was none.
	ServiceIntervalMeanMs *float64 `json:"service_interval_mean_ms,omitempty"`
	// InputLatencyP95Ms is the p95 of the input latencies timed in this
	// second (acknowledgements that arrived in it), nil when none was.
	InputLatencyP95Ms *float64 `json:"input_latency_p95_ms,omitempty"`
	// Mergeable parts of the row (additive): how many clients the kbs mean
	// is over, the RTT estimates rtt_p95_ms summarises (a shard's rows
	// only: what a merge needs; held encoded: a live histogram per second
	// of a day-long run would not fit in memory), and how many intervals
	// the service interval mean is over.
	KBsClients       int            `json:"kbs_clients,omitempty"`
	RTTHist          *stats.Encoded `json:"rtt_hist,omitempty"`
	ServiceIntervals int64          `json:"service_intervals,omitempty"`
	// TickHist is the server's ticks since the previous row, as bucket
	// counts (the difference of two readings of its cumulative tick
	// histogram, or of a Prometheus histogram's buckets): what the
	// worst-window gates slide over. Absent when the server keeps no
	// cumulative histogram or it restarted in between.
	TickHist *stats.Buckets `json:"tick_hist,omitempty"`
	// Own are the profile's own figures over the second since the
	// previous row, by "NAME.STAT" ("physics_ms.p99"): a histogram's
	// quantiles of the second's observations, a gauge's reading, a
	// counter's increase and rate. Absent: not measured that second.
	Own map[string]float64 `json:"own,omitempty"`
	// The host's figures of the same second (Host.Series joined in by the gate; the swarm
	// does not measure them), absent when not measured that second. timeline.csv carries
	// them as host_other_cores, host_steal_pct and host_cpu_pressure_avg10.
	HostOtherCores       *float64 `json:"host_other_cores,omitempty"`
	HostStealPct         *float64 `json:"host_steal_pct,omitempty"`
	HostCPUPressureAvg10 *float64 `json:"host_cpu_pressure_avg10,omitempty"`
	// The server's diagnostics of the second (additive, flattened into the
	// row): read from the metrics file the swarm sampled.
	TimelineServer
}

// TimelineServer is what the server's metrics file said in one second of
// the timeline (docs/metrics.md): its CPU over its last write window, the
// wire rate per client it gates on, and its run-long counters (slow ticks,
// GC cycles and pause p99, slow sends) with the deepest send backlog of
// its last write window. A field the server did not write is nil, never
// 0; a reader diffs two rows of a counter for a per-second rate.
type TimelineServer struct {
	ServerCPUPct     *float64 `json:"server_cpu_pct,omitempty"`
	WireKBsPerClient *float64 `json:"wire_kbs_per_client,omitempty"`
	SlowTicks        *float64 `json:"slow_ticks,omitempty"`
	GCCount          *float64 `json:"gc_count,omitempty"`
	GCPauseP99Ms     *float64 `json:"gc_pause_p99_ms,omitempty"`
	SendQueueMax     *float64 `json:"send_queue_max,omitempty"`
	SlowSends        *float64 `json:"slow_sends,omitempty"`
}

// Fields are the row's server figures by their timeline.csv column name,
// in column order (pointers into s: a reader fills or reads them).
func (s *TimelineServer) Fields() []NamedValue {
	return []NamedValue{
		{"server_cpu_pct", &s.ServerCPUPct}, {"wire_kbs_per_client", &s.WireKBsPerClient},
		{"slow_ticks", &s.SlowTicks}, {"gc_count", &s.GCCount}, {"gc_pause_p99_ms", &s.GCPauseP99Ms},
		{"send_queue_max", &s.SendQueueMax}, {"slow_sends", &s.SlowSends},
	}
}

// NamedValue is one optional figure and its column name.
type NamedValue struct {
	Name string
	V    **float64
}

// Measured reports whether the server wrote any of the row's figures.
func (s *TimelineServer) Measured() bool {
	for _, f := range s.Fields() {
		if *f.V != nil {
			return true
		}
	}
	return false
}

// Clone is a copy that shares no pointer with s (a merged row must not
// alias a shard's).
func (s *TimelineServer) Clone() TimelineServer {
	var c TimelineServer
	src, dst := s.Fields(), c.Fields()
	for i := range src {
		if v := *src[i].V; v != nil {
			x := *v
			*dst[i].V = &x
		}
	}
	return c
}

// Values of Report.WorkerPacing.
const (
	PacingHeld   = "held"   // each worker kept its OS thread between iterations
	PacingTicker = "ticker" // workers parked on a Go timer
	PacingMixed  = "mixed"  // merged shards that paced differently
)

// Player outcomes: how one client's run ended.
const (
	// OutcomeConnected: admitted and still connected when the run ended.
	OutcomeConnected = "connected"
	// OutcomeRefused: the server answered Join with Refuse (reason: its reason).
	OutcomeRefused = "refused"
	// OutcomeDisconnected: admitted, then lost (reason: how).
	OutcomeDisconnected = "disconnected"
	// OutcomeNeverConnected: never admitted and never refused (reason: how,
	// "not_started" or "run_ended" when the run ended first).
	OutcomeNeverConnected = "never_connected"
)

// Player is one client's own figures, so a bad tail can be traced to the
// clients that make it (the report's other figures are across clients).
// A nil figure was not measured for this client (fewer than two snapshots,
// no RTT sample), which is not zero.
type Player struct {
	Index            int      `json:"index"`
	Pattern          string   `json:"pattern"`
	Outcome          string   `json:"outcome"`
	Reason           string   `json:"reason,omitempty"`
	ConnectMs        *float64 `json:"connect_ms"`
	Snapshots        int64    `json:"snapshots"`
	KBs              *float64 `json:"kbs"`
	TickHz           *float64 `json:"tick_hz"`
	RTTP95Ms         *float64 `json:"rtt_p95_ms"`
	MaxSnapshotGapMs *float64 `json:"max_snapshot_gap_ms"`
	// InputsPerS is the rate of the client's Inputs from its first to its
	// latest (null with fewer than two).
	InputsPerS *float64 `json:"inputs_per_s"`
	// LinkKBs (additive) is KBs with the IP and UDP headers each state
	// update carried on the link (LinkHeaderBytes): reported only where
	// every message is one datagram (raw UDP), so the harness knows them.
	LinkKBs *float64 `json:"link_kbs,omitempty"`
	// Delivery (additive): UpdatesPerS is the client's state updates per
	// second over its joined time after the warm-up (from its admission,
	// or the warm-up's end, to its loss or the run's end), null when that
	// time was under MinDeliveryWindowS. MaxStateGapMs is the longest it
	// went without a state update in that time, the stretch from its
	// start to the first update and from the last update to its end
	// included (a client that got one update and then nothing has the
	// whole rest as its gap); null when it had no joined time after the
	// warm-up. StateIntervalMs is the distribution of the times between
	// its consecutive state updates (null with fewer than two).
	UpdatesPerS     *float64         `json:"updates_per_s,omitempty"`
	MaxStateGapMs   *float64         `json:"max_state_gap_ms,omitempty"`
	StateIntervalMs *IntervalSummary `json:"state_interval_ms,omitempty"`
	// InputLatencyP95Ms is the client's own input latency p95 (its
	// bucket's upper bound), absent when none of its Inputs was
	// acknowledged after the warm-up (additive).
	InputLatencyP95Ms *float64 `json:"input_latency_p95_ms,omitempty"`
}

// IntervalSummary is one client's interval percentiles in milliseconds.
// The swarm keeps per client a bucketed count (1,000 clients cannot each
// keep every interval), so each percentile is the upper bound of its
// bucket (stats.HistogramPercentile): never under the true value, and
// over it by at most the bucket's width (0.25 ms below 20 ms, 0.5 ms to
// 50 ms, 1 ms to 100 ms, then coarser).
type IntervalSummary struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// MinDeliveryWindowS is the shortest joined time (after the warm-up) over
// which a client's state-update rate is measured: over less, one update
// more or less moves the rate by more than it says.
const MinDeliveryWindowS = 1.0

// Delivery is how steadily the admitted clients received state: the
// evidence of the built-in delivery check (docs/gate.md).
type Delivery struct {
	// AnnouncedHz is the state-update rate the server announced when it
	// admitted the clients (load protocol v1: Welcome tick_hz); null when
	// the protocol announces none.
	AnnouncedHz *float64 `json:"announced_hz"`
	// UpdatesPerS spans the players' updates_per_s (null: no client was
	// joined MinDeliveryWindowS after the warm-up); Clients counts them
	// and SlowestClient is the index of the one at the minimum.
	UpdatesPerS   *MinMeanMax `json:"updates_per_s"`
	Clients       int         `json:"clients"`
	SlowestClient *int        `json:"slowest_client,omitempty"`
	// MaxGapMs is the largest of the players' max_state_gap_ms (null:
	// none measured), GapClient the client it is of.
	MaxGapMs  *float64 `json:"max_gap_ms"`
	GapClient *int     `json:"gap_client,omitempty"`
}

// DeliveryOf summarises the players' delivery figures with the rate the
// server announced; nil when no player has any. The swarm and the shard
// merge both use it, so a merged run's figure is its players'.
func DeliveryOf(players []Player, announcedHz *float64) *Delivery {
	d := &Delivery{AnnouncedHz: announcedHz}
	var rates []float64
	slowest := math.Inf(1)
	for _, p := range players {
		if p.UpdatesPerS != nil {
			if *p.UpdatesPerS < slowest {
				i := p.Index
				slowest, d.SlowestClient = *p.UpdatesPerS, &i
			}
			rates = append(rates, *p.UpdatesPerS)
		}
		if p.MaxStateGapMs != nil && (d.MaxGapMs == nil || *p.MaxStateGapMs > *d.MaxGapMs) {
			v, i := *p.MaxStateGapMs, p.Index
			d.MaxGapMs, d.GapClient = &v, &i
		}
	}
	if lo, mean, hi, ok := stats.MinMeanMax(rates); ok {
		d.UpdatesPerS = &MinMeanMax{Min: lo, Mean: mean, Max: hi}
		d.Clients = len(rates)
	}
	if d.UpdatesPerS == nil && d.MaxGapMs == nil && announcedHz == nil {
		return nil
	}
	return d
}

// AssertResult is one --assert-* outcome.
type AssertResult struct {
	Name      string   `json:"name"`
	Threshold float64  `json:"threshold"`
	Measured  *float64 `json:"measured"` // nil: metric missing, which fails
	Passed    bool     `json:"passed"`
	Detail    string   `json:"detail,omitempty"`
}

// Has reports whether a parsed report carried key (a top-level field,
// not null). A report built in memory (the swarm's own, before it is
// written) has every field. A custom swarm may leave counts out (a field
// absent decodes as 0): a reader of such a count asks Has first, so that
// missing stays missing.
func (r *Report) Has(key string) bool {
	if r.fields == nil {
		return true
	}
	return r.fields[key]
}

// RunIDEnv is the environment variable through which the gate gives a
// swarm its run's id, for the report's run_id.
const RunIDEnv = "SCALEGATE_RUN_ID"

// ProtocolLoadV1 is the report's protocol name for load protocol v1.
const ProtocolLoadV1 = "sg-load/1"

// Report is the swarm's JSON report.
type Report struct {
	// fields are the top-level keys a parsed report carried (nil for a
	// report built in memory).
	fields        map[string]bool
	SchemaVersion int    `json:"schema_version"`
	Transport     string `json:"transport"`
	// Protocol names the game protocol the swarm spoke: "sg-load/1" (load
	// protocol v1) or a custom swarm's own (docs/own-protocol.md).
	// Empty in reports of swarms that predate it.
	Protocol        string `json:"protocol,omitempty"`
	ServerTransport string `json:"server_transport"`
	BodyFormat      string `json:"body_format"`
	Pattern         string `json:"pattern"`
	// RunID, StartedAt and ServerAddr say which run this report is of:
	// the id the gate gave the swarm ($SCALEGATE_RUN_ID), when the swarm
	// started (RFC 3339, UTC) and the server address it dialled. The gate
	// refuses a report whose values are not its leg's (a swarm that copied
	// an earlier run's report); absent, the gate's own witness of the run
	// (how long the swarm lived, what the server counted) still applies.
	RunID                  string         `json:"run_id,omitempty"`
	StartedAt              string         `json:"started_at,omitempty"`
	ServerAddr             string         `json:"server_addr,omitempty"`
	PatternCounts          map[string]int `json:"pattern_counts"`
	Clients                int            `json:"clients"`
	Threads                int            `json:"threads"`
	RateHz                 float64        `json:"rate_hz"`
	DurationS              float64        `json:"duration_s"`
	ClientsConnected       int            `json:"clients_connected"`
	ClientsRefused         int            `json:"clients_refused"`
	RefusedByReason        map[string]int `json:"refused_by_reason"`
	ClientsDisconnected    int            `json:"clients_disconnected"`
	ClientsNeverConnected  int            `json:"clients_never_connected"`
	ObservedServerTickHz   *MinMeanMax    `json:"observed_server_tick_hz"`
	DownstreamKBsPerClient *MeanMax       `json:"downstream_kbs_per_client"`
	// DownstreamLinkKBsPerClient (additive) spans the players' link_kbs:
	// payload plus IP/UDP headers, on raw UDP only (LinkKBsOf).
	DownstreamLinkKBsPerClient *MeanMax     `json:"downstream_link_kbs_per_client,omitempty"`
	RTTMs                      *Percentiles `json:"rtt_ms"`
	PeerDelayMs                *Percentiles `json:"peer_delay_ms"`
	ConnectMs                  *Percentiles `json:"connect_ms"`
	WorkerLoopDtMs             *Percentiles `json:"worker_loop_dt_ms"`
	// ServiceIntervalMs is, per joined client, the time between two
	// consecutive services of its host (its Input send and receive drain):
	// the loop period when the harness keeps every client on time, however
	// long one iteration over all of them takes.
	ServiceIntervalMs    *Percentiles `json:"service_interval_ms,omitempty"`
	MaxSnapshotGapMs     *float64     `json:"max_snapshot_gap_ms"`
	SnapshotsReceived    int64        `json:"snapshots_received"`
	SnapshotDecodeErrors int64        `json:"snapshot_decode_errors"`
	InputsSent           int64        `json:"inputs_sent"`
	// InputsPerSPerClient spans the players' inputs_per_s: its min says
	// whether every client was driven at the input rate.
	InputsPerSPerClient *MinMeanMax     `json:"inputs_per_s_per_client,omitempty"`
	ServerMetricsPath   string          `json:"server_metrics_path,omitempty"`
	ServerMetricsError  string          `json:"server_metrics_error,omitempty"`
	ServerTick          json.RawMessage `json:"server_tick,omitempty"`
	RSSSeries           []RSSPoint      `json:"rss_series,omitempty"`
	RSSSlopeKBPerMin    *float64        `json:"rss_slope_kb_per_min"`
	RSSStepMaxKB        *float64        `json:"rss_step_max_kb"`
	RSSStepAtS          *float64        `json:"rss_step_at_s"`
	Timeline            []TimelinePoint `json:"timeline,omitempty"`
	Asserts             []AssertResult  `json:"asserts"`
	Passed              bool            `json:"passed"`
	// Aborted is "interrupted" when a signal cut the run short.
	Aborted string `json:"aborted,omitempty"`
	// AbortedAtS is when (seconds from the run's start) the run ended
	// early because a hard gate could no longer pass, AbortReason why in
	// words and AbortGate the check it names (a gate of the table, or
	// "load" when every client ended, or "server" when the server died).
	// Absent when the run was not ended early. An abort is never a pass:
	// the named check fails.
	AbortedAtS  *float64 `json:"aborted_at_s,omitempty"`
	AbortReason string   `json:"abort_reason,omitempty"`
	AbortGate   string   `json:"abort_gate,omitempty"`
	// HarnessErrors are the swarm's own failures to drive the load (its
	// sockets and descriptors, never the server's doing); absent when the
	// swarm did not check (a report from before it did).
	HarnessErrors *HarnessErrors `json:"harness_errors,omitempty"`
	// Leave is the goodbyes the bots of a protocol with one (a bot's
	// Leaver) said when the hold ended, before the server's figures were
	// read for the last time; absent when the protocol has none.
	Leave *Leave `json:"leave,omitempty"`
	// Added by the swarm (additive, name-keyed).
	DisconnectedByReason   map[string]int `json:"disconnected_by_reason"`
	NeverConnectedByReason map[string]int `json:"never_connected_by_reason"`
	SnapshotsDecoded       int64          `json:"snapshots_decoded"`
	// EntitiesPerSnapshot is the mean entity count of the snapshots that
	// decoded; SnapshotBytesPerEntity their Snapshot message bytes (as
	// delivered, compressed or not) per entity. Both are null when no body
	// was decoded ("opaque" servers). Under a binding snapshot budget payload
	// KB/s is pinned, and a fatter record shows here instead.
	EntitiesPerSnapshot    *float64 `json:"entities_per_snapshot"`
	SnapshotBytesPerEntity *float64 `json:"snapshot_bytes_per_entity"`
	// SnapshotsDelta is how many of the decoded snapshots were deltas
	// against one the client acknowledged (sg-entities/3), and
	// SnapshotEntitiesDelta the entity records they carried
	// (SnapshotEntitiesFull those the other decoded snapshots carried);
	// DeltaSnapshotShare is SnapshotsDelta / SnapshotsDecoded (null when
	// none decoded; 0 when the server sent full bodies only, as it does to
	// a client that never acknowledges). SnapshotBytesPerEntityFull and
	// ...Delta split snapshot_bytes_per_entity between the full and the
	// delta snapshots (null when there were none of the kind).
	// BytesPerSnapshot is the state updates' bytes per update received.
	SnapshotsDelta              int64    `json:"snapshots_delta"`
	SnapshotEntitiesDelta       int64    `json:"snapshot_entities_delta"`
	SnapshotEntitiesFull        int64    `json:"snapshot_entities_full"`
	DeltaSnapshotShare          *float64 `json:"delta_snapshot_share"`
	SnapshotBytesPerEntityFull  *float64 `json:"snapshot_bytes_per_entity_full"`
	SnapshotBytesPerEntityDelta *float64 `json:"snapshot_bytes_per_entity_delta"`
	BytesPerSnapshot            *float64 `json:"bytes_per_snapshot"`
	ProtocolErrors              int64    `json:"protocol_errors"`
	RSSSlopeMethod              string   `json:"rss_slope_method,omitempty"`
	ClientTicks                 int64    `json:"client_ticks"`
	HarnessCPUS                 *float64 `json:"harness_cpu_s"`
	CPUUsPerClientTick          *float64 `json:"cpu_us_per_client_tick"`
	// WorkerPacing is how the workers waited between iterations: "held"
	// (each kept its OS thread) or "ticker" (parked on a Go timer);
	// "mixed" after merging shards that differed. It moves harness_cpu_s.
	WorkerPacing string   `json:"worker_pacing,omitempty"`
	Warnings     []string `json:"warnings,omitempty"`
	// Sharded runs (docs/scale-out.md): Shard is the part this swarm
	// process ran, Shards what `scalegate merge` merged; Histograms carries
	// every distribution in mergeable form.
	Shard      *ShardInfo  `json:"shard,omitempty"`
	Shards     *ShardsInfo `json:"shards,omitempty"`
	Histograms *Histograms `json:"histograms,omitempty"`
	// Players holds one entry per client, in client index order.
	Players []Player `json:"players,omitempty"`
	// Traces: one entry per "trace:PATH" pattern the run replayed.
	Traces []TraceReplay `json:"traces,omitempty"`
	// Impairment is the schedule the relay applied (empty: no relay, the
	// clients talked to the server directly); Relay its counts and Phases
	// the run cut at the schedule's edges.
	Impairment []impairment.Phase `json:"impairment,omitempty"`
	Relay      *RelayStats        `json:"relay,omitempty"`
	Phases     []Stretch          `json:"phases,omitempty"`
	// Host is what else the machine was doing during the leg (docs/host-contention.md).
	// The gate measures and adds it; absent when it was not measured.
	Host *Host `json:"host,omitempty"`
	// WarmupS is the warm-up the swarm left out of every windowed figure
	// (per-client rates, gaps, intervals and RTT, the stretches, the RSS
	// fit, the service interval): the first warmup_s seconds of the hold,
	// which starts at the whole run's last connect slot. WarmupEndS is
	// where that is on the run's clock (absent without a warm-up). Counts
	// (snapshots_received, inputs_sent, outcomes) are never windowed.
	WarmupS    float64  `json:"warmup_s"`
	WarmupEndS *float64 `json:"warmup_end_s,omitempty"`
	// Delivery is how steadily the admitted clients received state
	// (additive; absent from reports that predate it): the built-in
	// delivery check reads it.
	Delivery *Delivery `json:"delivery,omitempty"`
	// StateIntervalMs pools every joined client's times between two
	// consecutive state updates (after the warm-up): the client-observed
	// "ms per step".
	StateIntervalMs *Percentiles `json:"state_interval_ms,omitempty"`
	// InputLatencyMs pools every client's input latencies (after the
	// warm-up): for each Input, the arrival of the first state update
	// acknowledging it minus when it was sent (docs/protocol.md, "The
	// input acknowledgement"). Absent when no Input was acknowledged: the
	// server does not acknowledge inputs, or applied none.
	InputLatencyMs *Percentiles `json:"input_latency_ms,omitempty"`
	// InputsAcked counts the Inputs timed in InputLatencyMs by an
	// acknowledgement; InputsUnanswered those given up on unanswered (a
	// client's 128 later Inputs went out first, or it ended with them over
	// 1 s old), which are in InputLatencyMs with their age then: a lower
	// bound, so a server that stops applying inputs cannot pass on the
	// ones it answered before.
	InputsAcked      int64 `json:"inputs_acked,omitempty"`
	InputsUnanswered int64 `json:"inputs_unanswered,omitempty"`
	// RTTSource says what rtt_ms measured: "ping" (application round
	// trips, load protocol v1.1 or a bot's Pinger), "transport" (the
	// transport's own estimate, for a server or protocol that cannot
	// ping) or "mixed". TransportRTTMs is the transport's estimate,
	// sampled once a second per client, whichever rtt_ms is (additive).
	RTTSource      string       `json:"rtt_source,omitempty"`
	TransportRTTMs *Percentiles `json:"transport_rtt_ms,omitempty"`
}

// Abort gates that are not entries of the gate table.
const (
	// AbortLoad: every client ended (refused, lost, failed) before the
	// run's duration; the built-in load check names it.
	AbortLoad = "load"
	// AbortServer: the server process died mid-run (recorded by the gate,
	// which stops the swarm).
	AbortServer = "server"
)

// HarnessErrors are failures on the swarm's side of the wire: the harness
// ran out of something (descriptors, ports, buffers) and could not open a
// client's socket or issue its connect. The server never saw those
// clients, so what they did not do says nothing about it.
type HarnessErrors struct {
	// Socket counts clients whose own socket (transport host) could not
	// be created; Dial those whose connect could not be issued locally.
	Socket int `json:"socket"`
	Dial   int `json:"dial"`
	// FDExhausted counts the ones among them whose error was a descriptor
	// limit: the process's (EMFILE) or the system's (ENFILE).
	FDExhausted int `json:"fd_exhausted"`
	// FirstError is the first of those errors as the system gave it.
	FirstError string `json:"first_error,omitempty"`
	// FDLimit is the process's descriptor limit against what the run
	// needed; nil where the platform has none to read.
	FDLimit *FDLimit `json:"fd_limit,omitempty"`
}

// Leave counts the goodbyes said at the end of a run (a bot's Leaver):
// after the hold, before the final read of the server's figures, so what
// the server does on a goodbye is in that read.
type Leave struct {
	// Sent counts the bots whose goodbye went out; Answered those of them
	// the server answered (a Leaving message, or the transport's
	// disconnect) within TimeoutMs; Errors the bots whose Leave returned an
	// error or whose send failed (counted, never fatal).
	Sent     int64 `json:"sent"`
	Answered int64 `json:"answered"`
	Errors   int64 `json:"errors"`
	// WaitedMs is how long the goodbyes took, until the last answer or
	// the timeout (the slowest worker's); TimeoutMs the bound.
	WaitedMs  float64 `json:"waited_ms"`
	TimeoutMs float64 `json:"timeout_ms"`
}

// Clients is how many clients the harness failed to start.
func (h *HarnessErrors) Clients() int {
	if h == nil {
		return 0
	}
	return h.Socket + h.Dial
}

// FDLimit is RLIMIT_NOFILE as the swarm ran with it, and its need.
type FDLimit struct {
	// Soft is the limit the run had (after the swarm raised it), Hard its
	// ceiling, SoftBefore the soft limit the swarm found.
	Soft       int64 `json:"soft"`
	Hard       int64 `json:"hard"`
	SoftBefore int64 `json:"soft_before"`
	// Needed is Clients × PerClient + Spare: one socket per client (its
	// own host), one more per client behind the impairment relay, and
	// the process's own descriptors.
	Needed    int64 `json:"needed"`
	Clients   int   `json:"clients"`
	PerClient int   `json:"per_client"`
	Spare     int   `json:"spare"`
}

// Short reports whether the limit the run had is below its need.
func (l *FDLimit) Short() bool { return l != nil && l.Soft < l.Needed }

// RelayStats is what the impairment relay did, with the seed that makes it
// reproducible.
type RelayStats struct {
	Seed uint64 `json:"seed"`
	impairment.Stats
}

// Stretch is one stretch of an impaired run: "before" the first phase,
// each phase by name, the clean stretch after each phase ("after-NAME"
// between phases, "after" after the last). Figures are what the swarm
// observed in it; a figure it could not measure there is null.
type Stretch struct {
	Name                   string       `json:"name"`
	StartS                 float64      `json:"start_s"`
	EndS                   float64      `json:"end_s"`
	ObservedServerTickHz   *MinMeanMax  `json:"observed_server_tick_hz"`
	DownstreamKBsPerClient *MeanMax     `json:"downstream_kbs_per_client"`
	RTTMs                  *Percentiles `json:"rtt_ms"`
	SnapshotsReceived      int64        `json:"snapshots_received"`
	// SnapshotsPerS is the whole swarm's snapshot arrivals per second.
	SnapshotsPerS    *float64 `json:"snapshots_per_s"`
	MaxSnapshotGapMs *float64 `json:"max_snapshot_gap_ms"`
	// StateIntervalMs pools the clients' times between consecutive state
	// updates that arrived in the stretch (additive).
	StateIntervalMs *Percentiles `json:"state_interval_ms,omitempty"`
	// InputLatencyMs pools the input latencies whose acknowledgement
	// arrived in the stretch (additive).
	InputLatencyMs *Percentiles `json:"input_latency_ms,omitempty"`
	// RecoverS (on "after" only) is the seconds from the end of the last
	// phase until the swarm's per-second snapshot rate is back within 5 %
	// of the "before" rate and stays there 2 s; null if it never is.
	RecoverS *float64 `json:"recover_s"`
	// RecoverNote says why RecoverS is null when it is.
	RecoverNote string `json:"recover_note,omitempty"`
}

// Phase returns the stretch named name, or nil.
func (r *Report) Phase(name string) *Stretch {
	for i := range r.Phases {
		if r.Phases[i].Name == name {
			return &r.Phases[i]
		}
	}
	return nil
}

// TraceReplay is what one "trace:PATH" pattern replayed: the evidence that
// a trace leg put the recording on the server.
type TraceReplay struct {
	Pattern string   `json:"pattern"` // "trace:PATH"
	Files   []string `json:"files"`
	// Records is how many complete records the files hold.
	Records        int64 `json:"records"`
	TruncatedFiles int   `json:"truncated_files"`
	// Clients were assigned the pattern; ClientsJoined of them were
	// admitted; ClientsReplayed sent at least one record.
	Clients         int `json:"clients"`
	ClientsJoined   int `json:"clients_joined"`
	ClientsReplayed int `json:"clients_replayed"`
	// RecordsReplayed Inputs carried a record; RecordsSkipped records were
	// passed over because a client fell more than 1 s behind the
	// recording; Keepalives repeated the last record during a pause.
	RecordsReplayed int64 `json:"records_replayed"`
	// RecordsCovered is how many distinct records of the files some client
	// played (its cursor passed them): a swarm that replays a fragment of
	// the recording over and over covers few.
	RecordsCovered int64 `json:"records_covered"`
	RecordsSkipped int64 `json:"records_skipped"`
	Keepalives     int64 `json:"keepalives"`
}

// ServerTickParsed decodes the embedded server_tick block, if any.
func (r *Report) ServerTickParsed() (*ServerTick, error) {
	if len(r.ServerTick) == 0 || bytes.Equal(r.ServerTick, []byte("null")) {
		if r.ServerMetricsError != "" {
			return nil, fmt.Errorf("server metrics unavailable: %s", r.ServerMetricsError)
		}
		return nil, fmt.Errorf("report carries no server_tick block")
	}
	st, _, err := ParseServerTick(r.ServerTick)
	return st, err
}

// ParseReport decodes a swarm report, requiring the keys every gate reads.
func ParseReport(b []byte) (*Report, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("report: not a JSON object: %w", err)
	}
	if err := requireFields("report", raw, "schema_version", "transport", "clients", "clients_connected"); err != nil {
		return nil, err
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	if r.SchemaVersion < 1 || r.SchemaVersion > ReportSchemaVersion {
		// A report of a schema this scalegate does not know would be read
		// by rules it was not written for: its figures may mean other things.
		return nil, fmt.Errorf("report: schema_version %d: this scalegate reads reports of schema 1 to %d (docs/compatibility.md)", r.SchemaVersion, ReportSchemaVersion)
	}
	r.fields = map[string]bool{}
	for k, v := range raw {
		r.fields[k] = !bytes.Equal(bytes.TrimSpace(v), []byte("null"))
	}
	if err := r.Validate(); err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	return &r, nil
}

// requireFields returns an error naming the first of keys that raw lacks or
// holds as null: a required figure that is null is as missing as an absent
// one, and decoding it would silently give zero.
func requireFields(what string, raw map[string]json.RawMessage, keys ...string) error {
	for _, k := range keys {
		v, ok := raw[k]
		if !ok {
			return fmt.Errorf("%s: required field %q missing", what, k)
		}
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return fmt.Errorf("%s: required field %q is null", what, k)
		}
	}
	return nil
}

// MaxReportBytes bounds a report file. Its size grows with the run's
// length, a timeline row a second with the server's tick histogram of
// that second (about 1.7 KB at 128 clients: a 62-minute soak leg writes
// 6.4 MB), and with the players, a row each: 256 MiB holds two days of
// rows, more than any soak a profile declares. Counted on bytes read
// (internal/guard/boundedfile).
const MaxReportBytes = 256 << 20

// ReadReport reads and parses a report file, naming the path on error. Only
// a regular file of at most MaxReportBytes is read.
func ReadReport(path string) (*Report, error) {
	return ReadReportContext(context.Background(), path)
}

// ReadReportContext is ReadReport abandoning the read when ctx ends.
func ReadReportContext(ctx context.Context, path string) (*Report, error) {
	b, err := boundedfile.ReadFile(ctx, path, MaxReportBytes)
	if err != nil {
		return nil, fmt.Errorf("read report: %w", err)
	}
	r, err := ParseReport(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// WriteFileAtomic writes b to path through a temporary file in the same
// directory and a rename, so a concurrent reader sees the old file or the
// new one, never a partial one.
func WriteFileAtomic(path string, b []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	// CreateTemp makes 0600 files; artifacts and baselines are meant to be
	// read by others (CI uploaders, teammates), like any file os.Create makes.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteJSONAtomic marshals v with indentation and writes it atomically.
func WriteJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return WriteFileAtomic(path, append(b, '\n'))
}

// LinkHeaderBytes is what IP and UDP add to each datagram on the link:
// 20 + 8 bytes over IPv4, 40 + 8 over IPv6 (no IP options, no tunnel).
func LinkHeaderBytes(ipv6 bool) int {
	if ipv6 {
		return 48
	}
	return 28
}

// LinkKBsOf spans the players' link_kbs, nil when none has one: the one
// rule of the swarm's report and of the merge of shards.
func LinkKBsOf(players []Player) *MeanMax {
	s := playerSpan(players, func(p Player) *float64 { return p.LinkKBs })
	if s == nil {
		return nil
	}
	return &MeanMax{Mean: s.Mean, Max: s.Max}
}

// playerSpan is the min, mean and max of one per-player figure over the
// players that have it, nil when none does.
func playerSpan(players []Player, of func(Player) *float64) *MinMeanMax {
	var v []float64
	for _, p := range players {
		if x := of(p); x != nil {
			v = append(v, *x)
		}
	}
	lo, mean, hi, ok := stats.MinMeanMax(v)
	if !ok {
		return nil
	}
	return &MinMeanMax{Min: lo, Mean: mean, Max: hi}
}

// InputRates is the min, mean and max of the players' inputs_per_s, nil
// when no player sent two Inputs. The swarm and the shard merge both use
// it, so a merged run's figure is its players', not an average of shards.
func InputRates(players []Player) *MinMeanMax {
	return playerSpan(players, func(p Player) *float64 { return p.InputsPerS })
}

// ReportIndentDepth is how deep WriteReportAtomic indents a report: the
// top level, each block's fields, and each element of a list (a timeline
// row, a player, a phase) as its own block of lines; anything deeper (a
// row's histograms) stays on its row's line. A fully indented day-long
// report put every bucket of every second's histogram on lines of their
// own, 4.9 KB a second where the same content is 1.7 KB.
const ReportIndentDepth = 3

// WriteReportAtomic writes a swarm report as WriteJSONAtomic does, indented
// to ReportIndentDepth.
func WriteReportAtomic(path string, r *Report) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	return WriteFileAtomic(path, append(IndentTo(b, ReportIndentDepth), '\n'))
}

// IndentTo indents compact JSON (as json.Marshal writes it) with two
// spaces a level, as json.MarshalIndent would, down to depth levels of
// objects and arrays; what is nested deeper is left compact on its line.
// Strings are copied as they are. Input that is not compact JSON gives
// output that is not JSON either: callers pass json.Marshal's output.
func IndentTo(compact []byte, depth int) []byte {
	return AppendIndent(make([]byte, 0, len(compact)+len(compact)/8), compact, depth)
}

// AppendIndent is IndentTo appending to dst, for a writer that renders the
// same document over and over (the reference server's metrics file, ten
// times a second in the tests) and keeps one buffer for it instead of a
// fresh large allocation each time.
func AppendIndent(dst, compact []byte, depth int) []byte {
	out := dst
	level, inString, escaped := 0, false, false
	newline := func(l int) {
		out = append(out, '\n')
		for range l {
			out = append(out, ' ', ' ')
		}
	}
	for i := 0; i < len(compact); i++ {
		c := compact[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			out = append(out, c)
		case '{', '[':
			out = append(out, c)
			level++
			if level <= depth && i+1 < len(compact) && compact[i+1] != '}' && compact[i+1] != ']' {
				newline(level)
			}
		case '}', ']':
			if level <= depth && i > 0 && compact[i-1] != '{' && compact[i-1] != '[' {
				newline(level - 1)
			}
			level--
			out = append(out, c)
		case ',':
			out = append(out, c)
			if level <= depth {
				newline(level)
			}
		case ':':
			out = append(out, c)
			if level <= depth {
				out = append(out, ' ')
			}
		default:
			out = append(out, c)
		}
	}
	return out
}
