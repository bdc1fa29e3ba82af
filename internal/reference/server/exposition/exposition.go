// Package exposition names the reference server's Prometheus series.
//
// The server registers these series and the gate reads them back through
// Map, so both sides import this small package instead of the gate
// importing the whole server. Map is what a profile gating the reference
// server through Prometheus alone writes as its server.metrics.map
// (docs/metrics.md shows it as a profile block).
package exposition

import "github.com/scalegate/scalegate/internal/sources/promsource"

// Path is the URL path of the Prometheus exposition.
const Path = "/metrics"

// The series the reference server exports, with the metrics-file field
// each one mirrors (docs/metrics.md).
const (
	TickDuration       = "scalegate_tick_duration_seconds"              // tick_ms, a histogram
	Peers              = "scalegate_peers"                              // peers
	Entities           = "scalegate_entities"                           // entities
	Contacts           = "scalegate_contacts"                           // contacts
	FusedContacts      = "scalegate_fused_contacts"                     // fused_contacts
	ProjectilesLive    = "scalegate_projectiles_live"                   // projectiles_live
	ShotsFired         = "scalegate_shots_fired_total"                  // shots_fired_total
	Hits               = "scalegate_hits_total"                         // hits_total
	StoresReleased     = "scalegate_stores_released_total"              // stores_released_total
	Despawns           = "scalegate_despawns_total"                     // despawns_total
	DroppedTicks       = "scalegate_dropped_ticks_total"                // dropped_ticks
	SlowTicks          = "scalegate_slow_ticks_total"                   // slow_ticks
	InputsAccepted     = "scalegate_inputs_accepted_total"              // inputs_accepted
	Kicked             = "scalegate_kicked_total"                       // kicked
	LoadFactor         = "scalegate_governor_load_factor"               // load_factor
	InterestScale      = "scalegate_governor_interest_scale"            // interest_scale
	DegradedTicks      = "scalegate_governor_degraded_ticks_total"      // degraded_ticks
	LoadFactorSeconds  = "scalegate_governor_load_factor_seconds_total" // cumulative load_factor_s
	CongestionMinHz    = "scalegate_congestion_min_send_hz"             // congestion_min_send_hz
	CongestionRecovHz  = "scalegate_congestion_recovered_send_hz"       // congestion_recovered_send_hz
	CongestionMaxLoss  = "scalegate_congestion_max_loss"                // congestion_max_loss
	WireSentBytes      = "scalegate_wire_sent_bytes_total"              // wire_out_kbs, as a rate
	WireReceivedBytes  = "scalegate_wire_received_bytes_total"          // wire_in_kbs, as a rate
	WireSentDatagrams  = "scalegate_wire_sent_datagrams_total"          // datagrams out, as a rate
	Info               = "scalegate_server_info"                        // transport, as its label
	InfoTransportLabel = "transport"
	// PhaseDuration is each tick phase's work time, a histogram with the
	// phase's name under PhaseLabel ("integrate"): no built-in figure
	// reads it; a profile's own figure can (docs/metrics.md, "Your own
	// figures"). The file's cumulative.phase_ms holds the same.
	PhaseDuration = "scalegate_phase_duration_seconds"
	PhaseLabel    = "phase"
)

// TickBuckets returns the tick duration histogram's upper bounds in
// seconds: 0.1 ms wide to 2 ms, 0.25 ms wide to 20 ms, then coarser to
// 1 s. A quantile estimated from them is off by at most its bucket's
// width: 0.25 ms around the 16.67 ms budget of a 60 Hz tick (1.5 %),
// 0.1 ms below 2 ms. Each call returns a new slice.
func TickBuckets() []float64 {
	var b []float64
	// Divisions, not products: i/10000 is the double nearest the decimal,
	// so the exposition reads le="0.0012", not le="0.0012000000000000001".
	for i := 1; i <= 20; i++ {
		b = append(b, float64(i)/10000)
	}
	for i := 9; i <= 80; i++ {
		b = append(b, float64(i)/4000)
	}
	return append(b, 0.0225, 0.025, 0.030, 1.0/30, 0.040, 0.050, 1.0/15, 0.100, 0.250, 0.500, 1.0)
}

// Map returns the mapping of these series onto the server_tick figures;
// rss_kb and cpu_pct come from the process_* defaults. Each call returns
// a new map, so no caller can change another's.
func Map() promsource.Map {
	return promsource.Map{
		"tick_ms":                      {Histogram: TickDuration, Scale: ptr(1000.0)},
		"peers":                        {Gauge: Peers},
		"entities":                     {Gauge: Entities},
		"contacts":                     {Gauge: Contacts},
		"fused_contacts":               {Gauge: FusedContacts},
		"projectiles_live":             {Gauge: ProjectilesLive},
		"shots_fired_total":            {Gauge: ShotsFired},
		"hits_total":                   {Gauge: Hits},
		"stores_released_total":        {Gauge: StoresReleased},
		"despawns_total":               {Gauge: Despawns},
		"dropped_ticks":                {Counter: DroppedTicks},
		"slow_ticks":                   {Counter: SlowTicks},
		"inputs_accepted":              {Gauge: InputsAccepted},
		"kicked":                       {Gauge: Kicked},
		"load_factor":                  {Gauge: LoadFactor},
		"interest_scale":               {Gauge: InterestScale},
		"degraded_ticks":               {Counter: DegradedTicks},
		"load_factor_mean":             {CounterRate: LoadFactorSeconds},
		"congestion_min_send_hz":       {Gauge: CongestionMinHz},
		"congestion_recovered_send_hz": {Gauge: CongestionRecovHz},
		"congestion_max_loss":          {Gauge: CongestionMaxLoss},
		"wire_out_kbs":                 {CounterRate: WireSentBytes, Scale: ptr(0.001)},
		"transport":                    {Info: Info, Label: InfoTransportLabel},
	}
}

func ptr[T any](v T) *T { return &v }
