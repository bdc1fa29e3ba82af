package report

import "github.com/scalegate/scalegate/internal/judge/stats"

// ShardInfo says which part of a larger run a swarm report covers.
type ShardInfo struct {
	Index int `json:"index"`
	Count int `json:"count"`
	// ClientsTotal is the whole run's client count; the report's clients
	// is this shard's [FirstClient, FirstClient+clients) part of it.
	ClientsTotal int `json:"clients_total"`
	FirstClient  int `json:"first_client"`
	// StartAt is the shared start instant (RFC 3339, UTC) every shard's
	// ramp and timeline count from; empty when the shard started on its
	// own clock.
	StartAt string `json:"start_at,omitempty"`
	// StartLateMs is how far past StartAt this process could begin.
	StartLateMs float64 `json:"start_late_ms"`
}

// ShardsInfo is what a merged report was merged from. Complete is false
// when a shard is missing or given twice: such a report describes less
// (or other) load than the profile declares, and a gate never passes it.
type ShardsInfo struct {
	Count      int   `json:"count"`
	Merged     []int `json:"merged"`
	Missing    []int `json:"missing,omitempty"`
	Duplicated []int `json:"duplicated,omitempty"`
	Complete   bool  `json:"complete"`
	// ClientsTotal is the whole run's client count (every shard's), so a
	// partial merge's player indices are read against the run, not the part.
	ClientsTotal int `json:"clients_total,omitempty"`
	// StartLateMsMax is the latest any merged shard started.
	StartLateMsMax float64 `json:"start_late_ms_max"`
}

// Histograms are the report's distributions in mergeable form
// (stats.Histogram): the samples behind rtt_ms, peer_delay_ms, connect_ms
// and worker_loop_dt_ms, and the per-client figures behind
// observed_server_tick_hz and downstream_kbs_per_client. Nil when the
// distribution has no value.
type Histograms struct {
	RTTMs             *stats.Histogram `json:"rtt_ms,omitempty"`
	PeerDelayMs       *stats.Histogram `json:"peer_delay_ms,omitempty"`
	ConnectMs         *stats.Histogram `json:"connect_ms,omitempty"`
	WorkerLoopDtMs    *stats.Histogram `json:"worker_loop_dt_ms,omitempty"`
	ServiceIntervalMs *stats.Histogram `json:"service_interval_ms,omitempty"`
	StateIntervalMs   *stats.Histogram `json:"state_interval_ms,omitempty"`
	InputLatencyMs    *stats.Histogram `json:"input_latency_ms,omitempty"`
	TransportRTTMs    *stats.Histogram `json:"transport_rtt_ms,omitempty"`
	TickHzPerClient   *stats.Histogram `json:"tick_hz_per_client,omitempty"`
	KBsPerClient      *stats.Histogram `json:"kbs_per_client,omitempty"`
}
