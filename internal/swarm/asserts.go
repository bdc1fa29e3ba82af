package swarm

import (
	"encoding/json"
	"fmt"

	"github.com/scalegate/scalegate/internal/report"
)

// Off is the disabled value of a negative-disabled assert threshold: 0 is a
// real threshold for most of them (0 dropped ticks, 0 KB/min of growth).
const Off = -1

// Asserts are the --assert-* thresholds. A threshold < 0 is off, except the
// congestion pair, where the seed uses 0 = off (a send rate of 0 Hz is not a
// meaningful bound).
type Asserts struct {
	MinTickHz             float64 // observed_server_tick_hz.min < X fails
	MaxKBs                float64 // downstream_kbs_per_client.max > X fails
	MaxTickMs             float64 // server_tick.tick_ms.p99 > X fails
	MinEntities           float64 // server_tick.entities < X fails
	MaxRSSGrowthKB        float64 // server_tick.rss_kb − rss_startup_kb > X fails
	MaxRSSSlopeKBPerMin   float64 // rss_slope_kb_per_min > X fails
	MaxLoadFactor         float64 // server_tick.load_factor > X fails
	MaxDroppedTicks       float64 // server_tick.dropped_ticks > X fails
	MaxWireKBs            float64 // server_tick.wire_out_kbs_per_client > X fails
	CongestionEngagedHz   float64 // server_tick.congestion_min_send_hz > X fails (0 = off)
	CongestionRecoveredHz float64 // server_tick.congestion_recovered_send_hz < X fails (0 = off)
	// Admission fails unless every client was admitted and none was
	// refused, lost or left unconnected.
	Admission bool
}

// NoAsserts is an Asserts with every check off.
func NoAsserts() Asserts {
	return Asserts{
		MinTickHz: Off, MaxKBs: Off, MaxTickMs: Off, MinEntities: Off, MaxRSSGrowthKB: Off,
		MaxRSSSlopeKBPerMin: Off, MaxLoadFactor: Off, MaxDroppedTicks: Off, MaxWireKBs: Off,
	}
}

// check is one assert: its flag name, threshold, whether it is on, the
// direction, and how to measure it (ok false: the metric is missing).
type check struct {
	name      string
	threshold float64
	on        bool
	atMost    bool // measured must be ≤ threshold (else ≥)
	metric    string
	measure   func(*Result) (float64, bool, string)
}

func (a Asserts) checks() []check {
	on := func(v float64) bool { return v >= 0 }
	return []check{
		{"assert-min-tick-hz", a.MinTickHz, on(a.MinTickHz), false, "observed_server_tick_hz.min", measureTickHz},
		{"assert-max-kbs", a.MaxKBs, on(a.MaxKBs), true, "downstream_kbs_per_client.max", measureKBs},
		{"assert-max-tick-ms", a.MaxTickMs, on(a.MaxTickMs), true, "server_tick.tick_ms.p99", serverPhaseP99("tick_ms")},
		{"assert-min-entities", a.MinEntities, on(a.MinEntities), false, "server_tick.entities", serverField("entities")},
		{"assert-max-rss-growth-kb", a.MaxRSSGrowthKB, on(a.MaxRSSGrowthKB), true, "server_tick.rss_kb - rss_startup_kb", measureRSSGrowth},
		{"assert-max-rss-slope-kb-per-min", a.MaxRSSSlopeKBPerMin, on(a.MaxRSSSlopeKBPerMin), true, "rss_slope_kb_per_min", measureRSSSlope},
		{"assert-max-load-factor", a.MaxLoadFactor, on(a.MaxLoadFactor), true, "server_tick.load_factor", serverField("load_factor")},
		{"assert-max-dropped-ticks", a.MaxDroppedTicks, on(a.MaxDroppedTicks), true, "server_tick.dropped_ticks", serverField("dropped_ticks")},
		{"assert-max-wire-kbs", a.MaxWireKBs, on(a.MaxWireKBs), true, "server_tick.wire_out_kbs_per_client", measureWireKBs},
		{"assert-congestion-engaged-hz", a.CongestionEngagedHz, a.CongestionEngagedHz > 0, true, "server_tick.congestion_min_send_hz", serverField("congestion_min_send_hz")},
		{"assert-congestion-recovered-hz", a.CongestionRecoveredHz, a.CongestionRecoveredHz > 0, false, "server_tick.congestion_recovered_send_hz", serverField("congestion_recovered_send_hz")},
	}
}

// Evaluate checks every enabled assert against res, stores the outcomes in
// the report (asserts, passed) and returns the failures. A missing metric
// fails: an unevaluable gate is not a passed gate. passed also requires an
// unaborted run in which no admitted client was lost and at least one was
// admitted.
func Evaluate(a Asserts, res *Result) []report.AssertResult {
	r := res.Report
	r.Asserts = []report.AssertResult{}
	var failed []report.AssertResult
	for _, c := range a.checks() {
		if !c.on {
			continue
		}
		ar := report.AssertResult{Name: c.name, Threshold: c.threshold}
		v, ok, why := c.measure(res)
		switch {
		case !ok:
			ar.Detail = fmt.Sprintf("%s missing: %s", c.metric, why)
		case c.atMost:
			ar.Measured, ar.Passed = &v, v <= c.threshold
		default:
			ar.Measured, ar.Passed = &v, v >= c.threshold
		}
		if ar.Detail == "" {
			ar.Detail = c.metric
		}
		r.Asserts = append(r.Asserts, ar)
		if !ar.Passed {
			failed = append(failed, ar)
		}
	}
	if a.Admission {
		ar := admission(r)
		r.Asserts = append(r.Asserts, ar)
		if !ar.Passed {
			failed = append(failed, ar)
		}
	}
	r.Passed = len(failed) == 0 && r.Aborted == "" && r.ClientsDisconnected == 0 && r.ClientsConnected > 0
	return failed
}

// admission: threshold and measured are client counts (all must be
// admitted and stay connected).
func admission(r *report.Report) report.AssertResult {
	held := float64(r.ClientsConnected - r.ClientsDisconnected)
	ar := report.AssertResult{Name: "assert-admission", Threshold: float64(r.Clients), Measured: &held}
	ar.Passed = r.ClientsConnected == r.Clients && r.ClientsRefused == 0 && r.ClientsDisconnected == 0 && r.ClientsNeverConnected == 0
	ar.Detail = fmt.Sprintf("clients admitted and held (connected %d, refused %d %v, disconnected %d %v, never connected %d %v)",
		r.ClientsConnected, r.ClientsRefused, r.RefusedByReason, r.ClientsDisconnected, r.DisconnectedByReason,
		r.ClientsNeverConnected, r.NeverConnectedByReason)
	return ar
}

// FailureLine is the one line printed for a failed assert: its name, the
// threshold and the measured value (or why it is missing).
func FailureLine(ar report.AssertResult) string {
	if ar.Measured == nil {
		return fmt.Sprintf("FAIL %s: threshold %g, measured missing (%s)", ar.Name, ar.Threshold, ar.Detail)
	}
	return fmt.Sprintf("FAIL %s: threshold %g, measured %.4g (%s)", ar.Name, ar.Threshold, *ar.Measured, ar.Detail)
}

func measureTickHz(res *Result) (float64, bool, string) {
	if h := res.Report.ObservedServerTickHz; h != nil {
		return h.Min, true, ""
	}
	return 0, false, "no client received two snapshots"
}

func measureKBs(res *Result) (float64, bool, string) {
	if k := res.Report.DownstreamKBsPerClient; k != nil {
		return k.Max, true, ""
	}
	return 0, false, "no client received two snapshots"
}

func measureRSSSlope(res *Result) (float64, bool, string) {
	r := res.Report
	if r.RSSSlopeKBPerMin != nil {
		return *r.RSSSlopeKBPerMin, true, ""
	}
	if r.ServerMetricsPath == "" {
		return 0, false, "no --server-metrics"
	}
	return 0, false, fmt.Sprintf("RSS series too short to fit (%d samples)", len(r.RSSSeries))
}

// serverNumber looks a numeric field of the metrics file up by name: a
// field the server did not write is missing, not zero.
func serverNumber(res *Result, key string) (float64, bool, string) {
	if res.ServerTickRaw == nil {
		if res.Report.ServerMetricsError != "" {
			return 0, false, res.Report.ServerMetricsError
		}
		return 0, false, "no --server-metrics"
	}
	raw, ok := res.ServerTickRaw[key]
	if !ok {
		return 0, false, fmt.Sprintf("server metrics file has no %q", key)
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, false, fmt.Sprintf("server metrics %q is not a number", key)
	}
	return v, true, ""
}

func serverField(key string) func(*Result) (float64, bool, string) {
	return func(res *Result) (float64, bool, string) { return serverNumber(res, key) }
}

func serverPhaseP99(key string) func(*Result) (float64, bool, string) {
	return func(res *Result) (float64, bool, string) {
		if _, ok, why := serverNumber(res, "schema_version"); !ok {
			return 0, false, why
		}
		var ph struct {
			P99 *float64 `json:"p99"`
		}
		raw, ok := res.ServerTickRaw[key]
		if !ok || json.Unmarshal(raw, &ph) != nil || ph.P99 == nil {
			return 0, false, fmt.Sprintf("server metrics file has no %s.p99", key)
		}
		return *ph.P99, true, ""
	}
}

func measureRSSGrowth(res *Result) (float64, bool, string) {
	rss, ok, why := serverNumber(res, "rss_kb")
	if !ok {
		return 0, false, why
	}
	startup, ok, why := serverNumber(res, "rss_startup_kb")
	if !ok {
		return 0, false, why
	}
	if rss == 0 || startup == 0 {
		return 0, false, "server reported rss_kb 0 (unavailable on its platform)"
	}
	return rss - startup, true, ""
}

func measureWireKBs(res *Result) (float64, bool, string) {
	peers, ok, why := serverNumber(res, "wire_peers")
	if !ok {
		return 0, false, why
	}
	if peers <= 0 {
		return 0, false, "server kept no wire sample with peers (wire_peers 0)"
	}
	return serverNumber(res, "wire_out_kbs_per_client")
}
