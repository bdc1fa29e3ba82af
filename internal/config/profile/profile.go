// Package profile is a resolved scale-gate profile as plain data. That data
// is the load it declares, the gates it requires, and its expansion into
// legs. Loading and checking the CUE files that produce it is
// internal/config/catalog's job; this package imports no CUE, so everything
// that only reads a profile (the gate's evaluation, the run directory,
// reports) stays light.
package profile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
)

// Profile is a resolved profile: the CUE file unified with #Profile, every
// default filled. Field names are the CUE names.
type Profile struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Tier        gatetable.Tier `json:"tier"`
	// Transport is what both ends speak on every leg; "" when the profile
	// runs each leg on several (Transports) instead.
	Transport string `json:"transport,omitempty"`
	// Transports runs every leg once per transport (leg IDs suffixed
	// "_enet", "_quic"), so the run can compare them (the
	// transport_overhead_kbs_max gate); nil for a single-transport profile.
	Transports []string `json:"transports,omitempty"`
	Clients    int      `json:"clients"`
	DurationS  float64  `json:"duration_s"`
	RateHz     float64  `json:"rate_hz"`
	RampMs     int      `json:"ramp_ms"`
	Threads    int      `json:"threads"`
	// Shards is how many swarm processes share each leg's clients.
	Shards             int                 `json:"shards"`
	Patterns           []string            `json:"patterns,omitempty"`
	PatternMix         string              `json:"pattern_mix,omitempty"`
	EntityType         string              `json:"entity_type"`
	Baselined          bool                `json:"baselined"`
	Baseline           BaselinePolicy      `json:"baseline"`
	History            HistoryPolicy       `json:"history"`
	RSSSampleIntervalS float64             `json:"rss_sample_interval_s"`
	Server             Server              `json:"server"`
	World              World               `json:"world"`
	Network            Network             `json:"network"`
	Sweep              *Sweep              `json:"sweep,omitempty"`
	Impairment         impairment.Schedule `json:"impairment,omitempty"`
	ImpairmentSeed     uint64              `json:"impairment_seed,omitempty"`
	Harness            Harness             `json:"harness"`
	// Swarm is a team's own swarm binary; nil runs `scalegate swarm`.
	Swarm *Swarm `json:"swarm,omitempty"`
	// Host says when the machine was too busy with other work for a timing
	// verdict to describe the server (docs/host-contention.md).
	Host HostPolicy `json:"host"`
	// AbortOnBreach opts every gate that can end a leg early into doing
	// so (nil: only gates that opt in themselves); see AbortRules.
	AbortOnBreach *AbortPolicy `json:"abort_on_breach,omitempty"`
	Gates         Gates        `json:"gates"`
	// Figures are the team's own figures (docs/metrics.md, "Your own
	// figures"): each statistic they offer is a gate Gates can name.
	Figures gatetable.OwnFigures `json:"figures,omitempty"`
	// WarmupS is the first seconds of the hold (after the connect ramp)
	// left out of every windowed figure, the swarm's and the reference
	// server's tick statistics (the report's warmup_s).
	WarmupS float64 `json:"warmup_s"`
	// Delivery is the built-in delivery check's policy: the rate a leg's
	// clients must receive state at and the longest gap.
	Delivery gatetable.DeliveryPolicy `json:"delivery"`

	// TraceSHA256 is the SHA-256 of every recording a trace pattern
	// replays, keyed by its path relative to the profile directory.
	TraceSHA256 map[string]string `json:"trace_sha256,omitempty"`

	// Source is the file the profile came from ("embedded:pr.cue" or a path).
	Source string `json:"-"`
	// Overrides are the --set PATH=VALUE applied on top of Source, in order
	// ("clients=4"); the fields above already carry their values.
	Overrides []string `json:"-"`
	// Traces holds the recordings of the trace patterns, by pattern, read
	// with the profile (the runner writes them into the leg's directory).
	Traces map[string][]TraceFile `json:"-"`
}

// BaselinePolicy is the profile's baseline tolerance.
type BaselinePolicy struct {
	TolerancePct float64 `json:"tolerance_pct"`
	// SpreadK is k of the spread term k·σ̂ in the limit of a baseline
	// recorded from several runs (internal/judge/baseline.NewLimit).
	SpreadK float64 `json:"spread_k"`
}

// HistoryPolicy is the profile's run history and history gate
// (internal/judge/history).
type HistoryPolicy struct {
	// Dir is where records are appended and read ("" = no history unless
	// the command line names one).
	Dir          string  `json:"dir"`
	MinRuns      int     `json:"min_runs"`
	PValue       float64 `json:"p_value"`
	MaxChangePct float64 `json:"max_change_pct"`
}

// Server is the server under test.
type Server struct {
	Kind               string  `json:"kind"`
	ReadyTimeoutS      float64 `json:"ready_timeout_s"`
	TickJSONIntervalMs int     `json:"tick_json_interval_ms,omitempty"`
	// LogMaxMB caps the leg's server.log (MiB; 0: the launcher's
	// default): a server that floods its output neither fills the disk
	// nor stalls the run.
	LogMaxMB     float64        `json:"log_max_mb,omitempty"`
	Faults       map[string]any `json:"faults,omitempty"`
	Command      []string       `json:"command,omitempty"`
	ConfigFormat string         `json:"config_format,omitempty"`
	Config       map[string]any `json:"config,omitempty"`
	// Metrics says where the server's metrics come from; nil is the
	// metrics file.
	Metrics *ServerMetrics `json:"metrics,omitempty"`
}

// ServerMetrics is a server's metrics source: "file" (the JSON metrics
// file), "prometheus" (its endpoint at URL, read through Map) or "promql"
// (a Prometheus server at URL that scrapes it, read through Queries).
type ServerMetrics struct {
	Source string `json:"source"`
	// URL may hold {metrics_port}; empty for the reference server (its
	// own /metrics). For "promql", the Prometheus server's root.
	URL string `json:"url,omitempty"`
	// Map is the figure → series mapping as the profile wrote it
	// (promsource.ParseMap reads it); nil for the reference server's own.
	Map map[string]any `json:"map,omitempty"`
	// Queries is a "promql" source's mapping, the same shape as Map; nil
	// for the reference server's own.
	Queries map[string]any `json:"queries,omitempty"`
	// Labels are matchers every series of a "promql" source must carry:
	// the leg's server among all Prometheus scrapes. Values may hold
	// {leg} and {pod}, as may the labels of Queries.
	Labels map[string]string `json:"labels,omitempty"`
	// Pod is the value of {pod}.
	Pod string `json:"pod,omitempty"`
	// TargetsFile, for "promql", is a Prometheus file_sd file the runner
	// writes each leg's server endpoint into, with Labels: how a
	// Prometheus on the gate's machine finds a port picked per leg.
	TargetsFile string `json:"targets_file,omitempty"`
	// FallbackFormat is the exposition format assumed when the endpoint
	// sends no usable Content-Type.
	FallbackFormat string `json:"fallback_format,omitempty"`
	// TransportDeclared: the server cannot say its transport; the
	// transport check takes the profile's, marked declared, not observed.
	TransportDeclared bool `json:"transport_declared,omitempty"`
}

// TransportDeclared reports whether the profile declares the server's
// transport instead of reading it (server.metrics.transport_declared).
func (s Server) TransportDeclared() bool { return s.Metrics != nil && s.Metrics.TransportDeclared }

// Prometheus reports whether the server's metrics are Prometheus series:
// scraped from its endpoint, or queried from a Prometheus server (PromQL).
func (s Server) Prometheus() bool {
	return s.Metrics != nil && (s.Metrics.Source == "prometheus" || s.Metrics.Source == "promql")
}

// PromQL reports whether the server's series are queried from a
// Prometheus server rather than scraped.
func (s Server) PromQL() bool { return s.Metrics != nil && s.Metrics.Source == "promql" }

// MetricsSource is where the server's metrics come from: "prometheus"
// or "file" (gatetable.SourceFile, SourcePrometheus).
func (s Server) MetricsSource() string {
	if s.Prometheus() {
		return gatetable.SourcePrometheus
	}
	return gatetable.SourceFile
}

// GateList is every gate the profile can name, in the summary's order:
// the gate table's, then those on its own figures (read from its metrics
// source). Whatever walks the declared gates walks this list, so a gate
// on an own figure is evaluated, forwarded, compared and recorded where a
// table gate is.
func (p *Profile) GateList() []gatetable.Gate {
	return gatetable.AllWith(p.Figures, p.Server.MetricsSource())
}

// LookupGate finds a gate of GateList by name.
func (p *Profile) LookupGate(name string) (gatetable.Gate, bool) {
	return gatetable.LookupWith(name, p.Figures, p.Server.MetricsSource())
}

// World holds the built-in server's [world] knobs. Optional knobs are kept
// as a map so only what the profile set reaches the server's config.
type World struct {
	OverrunGovernor  bool `json:"overrun_governor"`
	SimWorkerThreads int  `json:"sim_worker_threads"`
	TestSpawnAICount int  `json:"test_spawn_ai_count"`
	// Extra is every other [world] key the profile set.
	Extra map[string]any `json:"-"`
}

// RealtimePriority is the [world] realtime_priority the profile asks of
// the built-in server (0 when unset): the SCHED_FIFO priority of its
// pinned sim workers. The schema makes it an int, which the CUE decoder
// gives as int64.
func (w World) RealtimePriority() int {
	v, _ := w.Extra["realtime_priority"].(int64)
	return int(v)
}

// Network holds the built-in server's [network] knobs.
type Network struct {
	CompressSnapshots bool `json:"compress_snapshots"`
	CongestionControl bool `json:"congestion_control"`
	// SnapshotDeltas offers sg-entities/3 deltas to clients that ask.
	SnapshotDeltas bool `json:"snapshot_deltas"`
}

// Sweep multiplies legs by client count × entity count × sim worker
// threads × snapshot budget; an absent axis keeps the profile's single
// value.
type Sweep struct {
	Clients             []int `json:"clients,omitempty"`
	EntityCounts        []int `json:"entity_counts,omitempty"`
	SimWorkerThreads    []int `json:"sim_worker_threads,omitempty"`
	SnapshotBudgetBytes []int `json:"snapshot_budget_bytes,omitempty"`
}

// Harness bounds the swarm's own cadence, per joined client: the time
// between two services of its host, in periods of the input rate.
type Harness struct {
	// ServiceIntervalP99MaxPeriods bounds the interval's p99, in periods.
	ServiceIntervalP99MaxPeriods float64 `json:"service_interval_p99_max_periods"`
	// ServiceIntervalMeanMaxPct bounds the interval's mean, in percent over
	// the period (1 % at 60 Hz: at least 59.4 services a second).
	ServiceIntervalMeanMaxPct float64 `json:"service_interval_mean_max_pct"`
	// TestBusyUsPerClient slows the swarm on purpose (forwarded as the
	// swarm's --test-busy-us): a test knob for the harness-bound bite test.
	TestBusyUsPerClient float64 `json:"test_busy_us_per_client,omitempty"`
}

// Swarm is a team's own swarm: the argv the gate runs before the swarm's
// arguments (docs/swarm-contract.md).
type Swarm struct {
	Command []string `json:"command"`
}

// HostPolicy bounds what other processes may use of the machine during a
// leg before its failed timing gates are inconclusive instead of failed.
type HostPolicy struct {
	// MaxOtherCores: CPU other processes used on average over the hold, in
	// cores.
	MaxOtherCores float64 `json:"max_other_cores"`
	// MaxCPUPressureAvg10 and MaxStealPct: optional further ceilings (CPU
	// pressure some avg10 %, steal % of the machine).
	MaxCPUPressureAvg10 *float64 `json:"max_cpu_pressure_avg10,omitempty"`
	MaxStealPct         *float64 `json:"max_steal_pct,omitempty"`
}

// GateSpec is one gate as a profile declares it: a threshold gate carries
// Threshold, a switch gate (admission, spawn_took) does not.
type GateSpec struct {
	Threshold *float64        `json:"threshold,omitempty"`
	Level     gatetable.Level `json:"level,omitempty"`
	// Phase scopes the gate to one stretch of an impaired run ("" = the
	// whole run); see gatetable.Metrics.Narrow.
	Phase string `json:"phase,omitempty"`
	// AbortAfterS and AbortMarginPct are the gate's own early-abort
	// setting (either opts it in; AbortAfterS 0 opts it out of the
	// profile's abort_on_breach); nil takes the profile's.
	AbortAfterS    *int     `json:"abort_after_s,omitempty"`
	AbortMarginPct *float64 `json:"abort_margin_pct,omitempty"`
	// WindowS is a worst-window gate's window width in seconds
	// (gatetable.Gate.Windowed; nil elsewhere).
	WindowS *float64 `json:"window_s,omitempty"`
}

// AbortPolicy is abort_on_breach: AfterS consecutive seconds beyond a
// gate's threshold by more than MarginPct of it end the leg.
type AbortPolicy struct {
	AfterS    int     `json:"after_s"`
	MarginPct float64 `json:"margin_pct"`
}

// Gates is what a profile requires to hold, keyed by the gate's name in
// the gate table (internal/judge/gatetable); an absent gate is not evaluated.
type Gates map[string]GateSpec

// Has reports whether the profile declares the gate.
func (g Gates) Has(name string) bool {
	_, ok := g[name]
	return ok
}

// Canonical renders the resolved profile as JSON (stable key order), the
// form hashed into metadata.json and printed by `profiles show`.
func (p *Profile) Canonical() ([]byte, error) {
	var buf bytes.Buffer
	enc := jsonEncoder(&buf)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func jsonEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc
}

// MarshalJSON merges the optional knobs back into the [world] table.
func (w World) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	for k, v := range w.Extra {
		m[k] = v
	}
	m["overrun_governor"] = w.OverrunGovernor
	m["sim_worker_threads"] = w.SimWorkerThreads
	m["test_spawn_ai_count"] = w.TestSpawnAICount
	return json.Marshal(m)
}

// Hash is the sha256 of the resolved profile's canonical JSON, recorded in
// metadata.json so two runs can tell whether they ran the same profile.
func Hash(p *Profile) (string, error) {
	b, err := p.Canonical()
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// EffectiveTier is the tier the gates are evaluated in: "strict" under
// --strict, else the profile's own.
func (p *Profile) EffectiveTier(strict bool) gatetable.Tier {
	if strict {
		return gatetable.TierStrict
	}
	return p.Tier
}
