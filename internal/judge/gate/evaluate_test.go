package gate

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

func f64(v float64) *float64 { return &v }

// healthyTick is a metrics file every gate of testProfile passes on.
func healthyTick() map[string]any {
	return map[string]any{
		"schema_version": 6, "transport": "enet", "rss_kb": 30000, "rss_startup_kb": 25000,
		"tick_ms":                 map[string]any{"min": 0.5, "mean": 1, "max": 3, "p95": 2, "p99": 2.5},
		"wire_out_kbs_per_client": 50.0, "wire_peers": 8, "entities": 8, "load_factor": 1.0, "dropped_ticks": 0,
		"congestion_min_send_hz": 60.0, "congestion_recovered_send_hz": 60.0,
	}
}

// healthyReport is a report every gate of testProfile passes on.
func healthyReport(tick map[string]any) *report.Report {
	raw, _ := json.Marshal(tick)
	return &report.Report{
		SchemaVersion: 5, Transport: "enet", ServerTransport: "enet", Pattern: "weave", Clients: 8, ClientsConnected: 8, SnapshotsReceived: 960,
		ObservedServerTickHz:   &report.MinMeanMax{Min: 59.5, Mean: 60, Max: 60.1},
		DownstreamKBsPerClient: &report.MeanMax{Mean: 60, Max: 62},
		WorkerLoopDtMs:         &report.Percentiles{P99: 1.2},
		RateHz:                 60,
		ServiceIntervalMs:      &report.Percentiles{Min: 15.1, Mean: 16.68, P50: 16.63, P95: 19.9, P99: 23.8, Max: 46.8},
		RSSSlopeKBPerMin:       f64(10),
		ServerTick:             raw,
		Delivery: &report.Delivery{AnnouncedHz: f64(60), UpdatesPerS: &report.MinMeanMax{Min: 59.2, Mean: 59.8, Max: 60}, Clients: 8,
			SlowestClient: intp(3), MaxGapMs: f64(48.1), GapClient: intp(5)},
	}
}

func intp(v int) *int { return &v }

func testProfile() *profile.Profile {
	return &profile.Profile{
		Name: "t", Tier: "pr", Transport: "enet", Clients: 8, Patterns: []string{"weave"}, Baselined: true,
		Baseline: profile.BaselinePolicy{TolerancePct: 10}, Harness: profile.Harness{ServiceIntervalP99MaxPeriods: 2, ServiceIntervalMeanMaxPct: 1},
		Gates: profile.Gates{
			"admission":                {Level: gatetable.LevelHard},
			"wire_kbs_max":             {Threshold: f64(150), Level: gatetable.LevelHard},
			"kbs_max":                  {Threshold: f64(100), Level: gatetable.LevelHard},
			"tick_hz_min":              {Threshold: f64(30), Level: gatetable.LevelHard},
			"tick_ms_p99_max":          {Threshold: f64(16.6)}, // no level: the tier rule
			"rss_growth_kb_max":        {Threshold: f64(10000), Level: gatetable.LevelHard},
			"rss_slope_kb_per_min_max": {Threshold: f64(128), Level: gatetable.LevelHard},
			"entities_min":             {Threshold: f64(8), Level: gatetable.LevelHard},
		},
	}
}

// setLevel changes a declared gate's level.
func setLevel(p *profile.Profile, gate string, level gatetable.Level) {
	spec := p.Gates[gate]
	spec.Level = level
	p.Gates[gate] = spec
}

func testBaseline() *baseline.Committed {
	return &baseline.Committed{Path: "b.json", File: baseline.File{Entries: map[string]baseline.Entry{"t/weave": {KBs: 60, WireKBs: 50}}}}
}

func find(checks []rundir.Check, gate string) (rundir.Check, bool) {
	for _, c := range checks {
		if c.Gate == gate {
			return c, true
		}
	}
	return rundir.Check{}, false
}

func TestEvaluate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(p *profile.Profile, tick map[string]any, r *report.Report, b *baseline.Committed)
		strict  bool
		gate    string // the check under test
		status  rundir.Status
		level   gatetable.Level
		verdict rundir.Verdict
	}{
		{"healthy", nil, false, "wire_kbs_max", rundir.StatusPass, gatetable.LevelHard, rundir.VerdictPassed},
		// wire ceiling
		{"wire over ceiling", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["wire_out_kbs_per_client"] = 151.0
		}, false, "wire_kbs_max", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"wire missing is unevaluable", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			delete(tk, "wire_out_kbs_per_client")
		}, false, "wire_kbs_max", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		{"wire null is unevaluable", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["wire_out_kbs_per_client"] = nil
		}, false, "wire_kbs_max", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		// admission
		{"refused client", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ClientsRefused, r.ClientsConnected = 1, 7
		}, false, "admission", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"dropped client", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ClientsDisconnected = 1
		}, false, "admission", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"swarm ran fewer clients", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.Clients, r.ClientsConnected = 4, 4
		}, false, "admission", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		// tick-Hz tripwire
		{"tick-Hz collapse", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ObservedServerTickHz.Min = 16
		}, false, "tick_hz_min", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"tick-Hz missing", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ObservedServerTickHz = nil
		}, false, "tick_hz_min", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		// tick ms p99: advisory in pr, hard in strict
		{"tick p99 over, pr tier: advisory", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["tick_ms"] = map[string]any{"min": 1, "mean": 20, "max": 30, "p95": 25, "p99": 25}
		}, false, "tick_ms_p99_max", rundir.StatusFail, gatetable.LevelAdvisory, rundir.VerdictPassed},
		// A declared level is honoured in every tier: a profile that writes
		// level: "hard" on the tick budget is failed by a slow tick in the pr
		// tier, never silently made advisory.
		{"tick p99 over, declared hard, pr tier: hard", func(p *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			p.Gates["tick_ms_p99_max"] = profile.GateSpec{Threshold: f64(20), Level: gatetable.LevelHard}
			tk["tick_ms"] = map[string]any{"min": 1, "mean": 20, "max": 50, "p95": 40, "p99": 47}
		}, false, "tick_ms_p99_max", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"tick p99 over, declared advisory, --strict: advisory", func(p *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			p.Gates["tick_ms_p99_max"] = profile.GateSpec{Threshold: f64(16.6), Level: gatetable.LevelAdvisory}
			tk["tick_ms"] = map[string]any{"min": 1, "mean": 20, "max": 30, "p95": 25, "p99": 25}
		}, true, "tick_ms_p99_max", rundir.StatusFail, gatetable.LevelAdvisory, rundir.VerdictPassed},
		{"tick p99 over, --strict: hard", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["tick_ms"] = map[string]any{"min": 1, "mean": 20, "max": 30, "p95": 25, "p99": 25}
		}, true, "tick_ms_p99_max", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"tick p99 over, strict profile tier", func(p *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			p.Tier = "strict"
			tk["tick_ms"] = map[string]any{"min": 1, "mean": 20, "max": 30, "p95": 25, "p99": 25}
		}, false, "tick_ms_p99_max", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"tick p99 missing, strict", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["tick_ms"] = map[string]any{"min": 1, "mean": 1, "max": 1, "p95": 1}
		}, true, "tick_ms_p99_max", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		// server CPU: machine-dependent like tick p99, and a timing figure
		{"cpu over, pr tier: advisory", func(p *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			p.Gates["server_cpu_pct_max"] = profile.GateSpec{Threshold: f64(50)}
			tk["cpu_pct"] = 80.0
		}, false, "server_cpu_pct_max", rundir.StatusFail, gatetable.LevelAdvisory, rundir.VerdictPassed},
		{"cpu over, --strict: hard", func(p *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			p.Gates["server_cpu_pct_max"] = profile.GateSpec{Threshold: f64(50)}
			tk["cpu_pct"] = 80.0
		}, true, "server_cpu_pct_max", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"cpu not written, strict: unevaluable", func(p *profile.Profile, _ map[string]any, _ *report.Report, _ *baseline.Committed) {
			p.Gates["server_cpu_pct_max"] = profile.GateSpec{Threshold: f64(50)}
		}, true, "server_cpu_pct_max", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		{"cpu over on a harness-bound leg: inconclusive", func(p *profile.Profile, tk map[string]any, r *report.Report, _ *baseline.Committed) {
			p.Gates["server_cpu_pct_max"] = profile.GateSpec{Threshold: f64(50)}
			tk["cpu_pct"] = 80.0
			r.ServiceIntervalMs.P99 = 40
		}, true, "server_cpu_pct_max", rundir.StatusInconclusive, gatetable.LevelHard, rundir.VerdictInconclusive},
		// RSS
		{"rss growth", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["rss_kb"] = 90000
		}, false, "rss_growth_kb_max", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"rss startup missing", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			delete(tk, "rss_startup_kb")
		}, false, "rss_growth_kb_max", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		{"rss unavailable (0)", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["rss_kb"], tk["rss_startup_kb"] = 0, 0
		}, false, "rss_growth_kb_max", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		{"rss slope", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.RSSSlopeKBPerMin = f64(500)
		}, false, "rss_slope_kb_per_min_max", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"rss slope null", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.RSSSlopeKBPerMin = nil
		}, false, "rss_slope_kb_per_min_max", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		// entities
		{"entities short", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["entities"] = 3
		}, false, "entities_min", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		// transport identity, both directions and both ends
		{"swarm spoke quic", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.Transport = "quic"
		}, false, "transport", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"server reports quic", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["transport"] = "quic"
		}, false, "transport", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"profile quic, ran enet", func(p *profile.Profile, _ map[string]any, _ *report.Report, _ *baseline.Committed) {
			p.Transport = "quic"
		}, false, "transport", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"welcome disagrees", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServerTransport = "quic"
		}, false, "transport", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"server transport missing", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			delete(tk, "transport")
		}, false, "transport", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		// A server that cannot say its transport, declared by the profile:
		// its side is the profile's word; the swarm's is still checked.
		{"server transport declared", func(p *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			p.Server.Metrics = &profile.ServerMetrics{Source: "prometheus", TransportDeclared: true}
			delete(tk, "transport")
		}, false, "transport", rundir.StatusPass, gatetable.LevelHard, rundir.VerdictPassed},
		{"server transport declared, swarm spoke quic", func(p *profile.Profile, tk map[string]any, r *report.Report, _ *baseline.Committed) {
			p.Server.Metrics = &profile.ServerMetrics{Source: "prometheus", TransportDeclared: true}
			delete(tk, "transport")
			r.Transport = "quic"
		}, false, "transport", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"server transport declared but observed quic", func(p *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			p.Server.Metrics = &profile.ServerMetrics{Source: "prometheus", TransportDeclared: true}
			tk["transport"] = "quic"
		}, false, "transport", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"welcome transport empty is unevaluable", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServerTransport = ""
		}, false, "transport", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		{"wire_peers 0 is unevaluable", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["wire_peers"] = 0
		}, false, "wire_kbs_max", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		{"wire_peers missing is unevaluable", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			delete(tk, "wire_peers")
		}, false, "wire_kbs_max", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		{"rss unavailable (negative)", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["rss_kb"] = -1
		}, false, "rss_growth_kb_max", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		// the load happened, whatever the profile declares
		{"nobody admitted", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ClientsConnected, r.ClientsNeverConnected, r.SnapshotsReceived = 0, 8, 0
		}, false, "load", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"no snapshot received", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.SnapshotsReceived = 0
		}, false, "load", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"load happened", nil, false, "load", rundir.StatusPass, gatetable.LevelHard, rundir.VerdictPassed},
		// an explicit advisory declaration stays advisory under --strict
		{"tick p99 declared advisory, --strict: advisory", func(p *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			setLevel(p, "tick_ms_p99_max", gatetable.LevelAdvisory)
			tk["tick_ms"] = map[string]any{"min": 1, "mean": 20, "max": 30, "p95": 25, "p99": 25}
		}, true, "tick_ms_p99_max", rundir.StatusFail, gatetable.LevelAdvisory, rundir.VerdictPassed},
		{"harness-bound carried swarm tick-Hz assert is inconclusive", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServiceIntervalMs.P99 = 40
			r.Asserts = []report.AssertResult{{Name: "assert-min-tick-hz", Threshold: 58, Passed: false}}
		}, false, "swarm_assert", rundir.StatusInconclusive, gatetable.LevelHard, rundir.VerdictInconclusive},
		{"no server_tick at all", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServerTick, r.ServerMetricsError = nil, "open: no such file"
		}, false, "wire_kbs_max", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		// baseline
		{"baseline within tolerance", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.DownstreamKBsPerClient.Mean = 65.9
		}, false, "baseline_kbs", rundir.StatusPass, gatetable.LevelHard, rundir.VerdictPassed},
		{"baseline kbs regression", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.DownstreamKBsPerClient.Mean = 66.1
		}, false, "baseline_kbs", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"baseline wire regression", func(_ *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			tk["wire_out_kbs_per_client"] = 55.1
		}, false, "baseline_wire_kbs", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"baseline key missing", func(_ *profile.Profile, _ map[string]any, _ *report.Report, b *baseline.Committed) {
			delete(b.Entries, "t/weave")
		}, false, "baseline_kbs", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		{"baseline tolerance from profile", func(p *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			p.Baseline.TolerancePct = 20
			r.DownstreamKBsPerClient.Mean = 71
		}, false, "baseline_kbs", rundir.StatusPass, gatetable.LevelHard, rundir.VerdictPassed},
		// harness-bound: inconclusive, not passed; but a failed gate still wins
		// the per-client service interval against the 60 Hz period (16.67 ms):
		// p99 ≤ 2 periods (33.33 ms), mean ≤ period +1 % (16.83 ms)
		{"harness-bound: p99 over", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServiceIntervalMs.P99 = 40
		}, false, "harness", rundir.StatusInconclusive, gatetable.LevelHard, rundir.VerdictInconclusive},
		{"harness-bound: mean over", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServiceIntervalMs.Mean = 16.9
		}, false, "harness", rundir.StatusInconclusive, gatetable.LevelHard, rundir.VerdictInconclusive},
		{"harness within both bounds", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServiceIntervalMs.P99, r.ServiceIntervalMs.Mean = 33.3, 16.83
		}, false, "harness", rundir.StatusPass, gatetable.LevelHard, rundir.VerdictPassed},
		{"harness bounds scale with the rate", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.RateHz = 30 // period 33.33 ms: p99 ≤ 66.67, mean ≤ 33.67
			r.ServiceIntervalMs.P99, r.ServiceIntervalMs.Mean = 60, 33.5
		}, false, "harness", rundir.StatusPass, gatetable.LevelHard, rundir.VerdictPassed},
		{"harness bounds from the profile", func(p *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			p.Harness = profile.Harness{ServiceIntervalP99MaxPeriods: 15, ServiceIntervalMeanMaxPct: 50}
			r.ServiceIntervalMs.P99, r.ServiceIntervalMs.Mean = 200, 24
		}, false, "harness", rundir.StatusPass, gatetable.LevelHard, rundir.VerdictPassed},
		{"harness worker dt over the period is not harness-bound", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.WorkerLoopDtMs.P99 = 20.29
		}, false, "harness", rundir.StatusPass, gatetable.LevelHard, rundir.VerdictPassed},
		{"harness-bound and failed", func(_ *profile.Profile, tk map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServiceIntervalMs.P99 = 40
			tk["wire_out_kbs_per_client"] = 200.0
		}, false, "harness", rundir.StatusInconclusive, gatetable.LevelHard, rundir.VerdictFailed},
		{"harness-bound timing failure is inconclusive", func(_ *profile.Profile, tk map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServiceIntervalMs.P99 = 40
			tk["tick_ms"] = map[string]any{"min": 1, "mean": 20, "max": 30, "p95": 25, "p99": 25}
			r.Asserts = []report.AssertResult{{Name: "assert-max-tick-ms", Threshold: 16.6, Passed: false}}
		}, true, "tick_ms_p99_max", rundir.StatusInconclusive, gatetable.LevelHard, rundir.VerdictInconclusive},
		{"harness-bound tripwire failure is inconclusive", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServiceIntervalMs.P99 = 40
			r.ObservedServerTickHz.Min = 12
		}, false, "tick_hz_min", rundir.StatusInconclusive, gatetable.LevelHard, rundir.VerdictInconclusive},
		{"harness-bound admission failure stands", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServiceIntervalMs.P99 = 40
			r.ClientsDisconnected = 2
		}, false, "admission", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"harness service interval missing", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.ServiceIntervalMs = nil
		}, false, "harness", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		{"harness rate 0", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) { r.RateHz = 0 }, false, "harness", rundir.StatusUnevaluable, gatetable.LevelHard, rundir.VerdictFailed},
		// advisory never fails; the swarm's own failed assert always does
		{"advisory wire over", func(p *profile.Profile, tk map[string]any, _ *report.Report, _ *baseline.Committed) {
			setLevel(p, "wire_kbs_max", gatetable.LevelAdvisory)
			p.Baselined = false
			tk["wire_out_kbs_per_client"] = 500.0
		}, false, "wire_kbs_max", rundir.StatusFail, gatetable.LevelAdvisory, rundir.VerdictPassed},
		{"swarm assert failed", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.Asserts = []report.AssertResult{{Name: "max-tick-ms", Threshold: 16.6, Passed: false}}
		}, false, "swarm_assert", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
		{"swarm aborted", func(_ *profile.Profile, _ map[string]any, r *report.Report, _ *baseline.Committed) {
			r.Aborted = "interrupted"
		}, false, "swarm_run", rundir.StatusFail, gatetable.LevelHard, rundir.VerdictFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, tick, b := testProfile(), healthyTick(), testBaseline()
			r := healthyReport(tick)
			if tc.mutate != nil {
				tc.mutate(p, tick, r, b)
				if r.ServerTick != nil {
					r.ServerTick, _ = json.Marshal(tick)
				}
			}
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Strict: tc.strict, Report: r, Baseline: b})
			c, ok := find(checks, tc.gate)
			if !ok {
				t.Fatalf("no %s check in %+v", tc.gate, checks)
			}
			if c.Status != tc.status || c.Level != tc.level {
				t.Errorf("%s: status %s level %s, want %s %s (%s)", tc.gate, c.Status, c.Level, tc.status, tc.level, c.Detail)
			}
			if got := LegVerdict(checks, Facts{}); got != tc.verdict {
				t.Errorf("verdict %s, want %s; checks %+v", got, tc.verdict, checks)
			}
		})
	}
}

func TestEvaluateUnreadReport(t *testing.T) {
	p := testProfile()
	checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], ReportErr: errors.New("open report.json: no such file")})
	if LegVerdict(checks, Facts{}) != rundir.VerdictFailed {
		t.Fatalf("unread report must fail the leg: %+v", checks)
	}
	// Every declared gate is listed, each unevaluable.
	for _, g := range []string{"report", "transport", "admission", "wire_kbs_max", "tick_ms_p99_max", "baseline_kbs"} {
		c, ok := find(checks, g)
		if !ok || c.Status != rundir.StatusUnevaluable {
			t.Errorf("%s: %+v, want unevaluable", g, c)
		}
	}
}

func TestMissingBaselineKeyMessage(t *testing.T) {
	p, b := testProfile(), &baseline.Committed{Path: "baselines/x.json", File: baseline.File{Entries: map[string]baseline.Entry{}}}
	checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: healthyReport(healthyTick()), Baseline: b})
	c, _ := find(checks, "baseline_kbs")
	if !strings.Contains(c.Detail, "--update-baseline") || !strings.Contains(c.Detail, `"t/weave"`) {
		t.Errorf("detail %q must name the key and --update-baseline", c.Detail)
	}
}

func TestUpdateModeRecords(t *testing.T) {
	p, b := testProfile(), &baseline.Committed{File: baseline.File{Entries: map[string]baseline.Entry{}}}
	checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: healthyReport(healthyTick()), Baseline: b, UpdateBaseline: true})
	if c, _ := find(checks, "baseline_kbs"); c.Status != rundir.StatusRecorded {
		t.Errorf("baseline_kbs under --update-baseline: %s", c.Status)
	}
	if LegVerdict(checks, Facts{}) != rundir.VerdictPassed {
		t.Errorf("a missing key under --update-baseline must not fail the leg")
	}
}

func TestRunVerdict(t *testing.T) {
	leg := func(v rundir.Verdict) rundir.LegResult { return rundir.LegResult{Verdict: v} }
	tests := []struct {
		legs        []rundir.LegResult
		interrupted bool
		want        rundir.Verdict
	}{
		{[]rundir.LegResult{leg(rundir.VerdictPassed), leg(rundir.VerdictPassed)}, false, rundir.VerdictPassed},
		{[]rundir.LegResult{leg(rundir.VerdictPassed), leg(rundir.VerdictInconclusive)}, false, rundir.VerdictInconclusive},
		{[]rundir.LegResult{leg(rundir.VerdictInconclusive), leg(rundir.VerdictFailed)}, false, rundir.VerdictFailed},
		{[]rundir.LegResult{leg(rundir.VerdictLaunchFailed), leg(rundir.VerdictInconclusive)}, false, rundir.VerdictLaunchFailed},
		{[]rundir.LegResult{leg(rundir.VerdictFailed), leg(rundir.VerdictLaunchFailed)}, false, rundir.VerdictFailed},
		{[]rundir.LegResult{leg(rundir.VerdictPassed)}, true, rundir.VerdictInterrupted},
		{nil, false, rundir.VerdictFailed},
	}
	for i, tc := range tests {
		if got := RunVerdict(&rundir.RunResult{Legs: tc.legs, Interrupted: tc.interrupted}); got != tc.want {
			t.Errorf("%d: %s, want %s", i, got, tc.want)
		}
	}
}

// Bytes per entity is baselined where either side has it: over tolerance
// fails, a swarm that stopped decoding fails against a baseline that has it,
// a decoded run against a baseline key without it is a missing figure, and
// an opaque server (neither side) is not judged on it.
func TestBaselineBytesPerEntity(t *testing.T) {
	withBPE := func(v *float64) *report.Report {
		r := healthyReport(healthyTick())
		r.SnapshotBytesPerEntity = v
		return r
	}
	base := func(v *float64) *baseline.Committed {
		return &baseline.Committed{Path: "b.json", File: baseline.File{Entries: map[string]baseline.Entry{"t/weave": {KBs: 60, WireKBs: 50, BytesPerEntity: v}}}}
	}
	cases := []struct {
		name     string
		report   *report.Report
		baseline *baseline.Committed
		want     rundir.Status // "" = the check must be absent
	}{
		{"within tolerance", withBPE(f64(25.5)), base(f64(24.5)), rundir.StatusPass},
		{"fatter records", withBPE(f64(30.6)), base(f64(24.5)), rundir.StatusFail},
		{"no longer decoded", withBPE(nil), base(f64(24.5)), rundir.StatusUnevaluable},
		{"baseline lacks it", withBPE(f64(24.5)), base(nil), rundir.StatusUnevaluable},
		{"opaque server", withBPE(nil), base(nil), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: tc.report, Baseline: tc.baseline})
			c, ok := find(checks, "baseline_bytes_per_entity")
			if tc.want == "" {
				if ok {
					t.Fatalf("judged without a figure on either side: %+v", c)
				}
				return
			}
			if !ok || c.Status != tc.want {
				t.Fatalf("got %+v, want %s", c, tc.want)
			}
			if k, _ := find(checks, "baseline_kbs"); k.Status != rundir.StatusPass {
				t.Errorf("baseline_kbs must not be affected: %+v", k)
			}
		})
	}
}

// TestEvaluateShards: a merged report passes only when every shard was
// merged exactly once; an incomplete one, or one shard's own report, is
// inconclusive, and a failure measured on it is inconclusive too — never a
// pass, never a plain fail.
func TestEvaluateShards(t *testing.T) {
	complete := &report.ShardsInfo{Count: 4, Merged: []int{0, 1, 2, 3}, Complete: true}
	missing := &report.ShardsInfo{Count: 4, Merged: []int{0, 1, 3}, Missing: []int{2}}
	dup := &report.ShardsInfo{Count: 2, Merged: []int{0, 1}, Duplicated: []int{1}}
	tests := []struct {
		name    string
		shards  *report.ShardsInfo
		shard   *report.ShardInfo
		profile int // profile shards
		lose    int // clients not admitted (fails admission)
		status  rundir.Status
		verdict rundir.Verdict
	}{
		{"complete", complete, nil, 4, 0, rundir.StatusPass, rundir.VerdictPassed},
		{"missing shard", missing, nil, 4, 0, rundir.StatusInconclusive, rundir.VerdictInconclusive},
		{"missing shard, admission short", missing, nil, 4, 2, rundir.StatusInconclusive, rundir.VerdictInconclusive},
		{"duplicate shard", dup, nil, 1, 0, rundir.StatusInconclusive, rundir.VerdictInconclusive},
		{"one shard's own report", nil, &report.ShardInfo{Index: 1, Count: 4}, 1, 0, rundir.StatusInconclusive, rundir.VerdictInconclusive},
		{"profile shards but no block", nil, nil, 4, 0, rundir.StatusUnevaluable, rundir.VerdictFailed},
		{"complete but admission short", complete, nil, 4, 2, rundir.StatusPass, rundir.VerdictFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			p.Shards = tc.profile
			r := healthyReport(healthyTick())
			r.Shards, r.Shard = tc.shards, tc.shard
			r.ClientsConnected -= tc.lose
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
			c, ok := find(checks, "shards")
			if !ok || c.Status != tc.status {
				t.Fatalf("shards check %+v (present %v), want %s", c, ok, tc.status)
			}
			if v := LegVerdict(checks, Facts{}); v != tc.verdict {
				t.Fatalf("verdict %s, want %s; checks %+v", v, tc.verdict, checks)
			}
		})
	}
	// An unsharded report of an unsharded profile has no shards check.
	p := testProfile()
	if _, ok := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: healthyReport(healthyTick()), Baseline: testBaseline()}), "shards"); ok {
		t.Error("an unsharded run must not grow a shards check")
	}
}

// TestHarnessCheckText: the harness check shows both bounds in ms for the
// run's rate, the p99 and mean measured, and names the bound exceeded.
func TestHarnessCheckText(t *testing.T) {
	tests := []struct {
		name           string
		p99, mean      float64
		status         rundir.Status
		detail, absent []string
	}{
		{"within", 23.8, 16.68, rundir.StatusPass, nil, []string{"over"}},
		{"p99 over", 40, 16.68, rundir.StatusInconclusive, []string{"p99 40.00 ms is 6.67 ms over its bound (2.40 periods of 16.67 ms)", "harness-bound"}, []string{"mean"}},
		{"mean over", 23.8, 33.4, rundir.StatusInconclusive, []string{"mean 33.40 ms is 16.57 ms over its bound (+100.4 % against the 16.67 ms period: clients were serviced 29.94 times a second, not 60)", "harness-bound"}, []string{"p99"}},
		{"both over", 40, 33.4, rundir.StatusInconclusive, []string{"p99 40.00 ms", "mean 33.40 ms"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, r := testProfile(), healthyReport(healthyTick())
			r.ServiceIntervalMs.P99, r.ServiceIntervalMs.Mean = tc.p99, tc.mean
			c, ok := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()}), "harness")
			if !ok {
				t.Fatal("no harness check")
			}
			if c.Status != tc.status {
				t.Errorf("status %s, want %s (%s)", c.Status, tc.status, c.Detail)
			}
			if want := "p99 ≤ 33.33 ms (2 periods), mean ≤ 16.83 ms (period +1 %)"; c.Threshold != want {
				t.Errorf("threshold %q, want %q", c.Threshold, want)
			}
			if c.Measured == nil || *c.Measured != tc.p99 {
				t.Errorf("measured %v, want the p99 %g", c.Measured, tc.p99)
			}
			if want := fmt.Sprintf("p99 %.2f ms, mean %.2f ms", tc.p99, tc.mean); c.MeasuredText != want {
				t.Errorf("measured text %q, want %q", c.MeasuredText, want)
			}
			for _, s := range tc.detail {
				if !strings.Contains(c.Detail, s) {
					t.Errorf("detail %q lacks %q", c.Detail, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(c.Detail, s) {
					t.Errorf("detail %q names %q", c.Detail, s)
				}
			}
		})
	}
}

// TestHarnessUnevaluableSaysWhatIsMissing: both missing inputs are named.
func TestHarnessUnevaluableSaysWhatIsMissing(t *testing.T) {
	p, r := testProfile(), healthyReport(healthyTick())
	r.RateHz, r.ServiceIntervalMs = 0, nil
	c, _ := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()}), "harness")
	if c.Status != rundir.StatusUnevaluable || !strings.Contains(c.Detail, "report.rate_hz is 0") || !strings.Contains(c.Detail, "report.service_interval_ms missing") {
		t.Errorf("%+v: want unevaluable naming rate_hz and service_interval_ms", c)
	}
}

// TestCheckIDsAreDeclared: every check the evaluator emits is named by a
// built-in check constant, a baseline check or a gate of the table, so the
// readers that look checks up by ID (the terminal summary, calibrate, the
// verdict's always-hard set) look up names that exist.
func TestCheckIDsAreDeclared(t *testing.T) {
	known := map[string]bool{gatetable.CheckBaselineKBs: true, gatetable.CheckBaselineWireKBs: true, gatetable.CheckBaselineBytesPerEntity: true, gatetable.CheckBaselineStale: true}
	for _, id := range gatetable.BuiltinChecks() {
		known[id] = true
	}
	p := testProfile()
	checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: healthyReport(healthyTick()), Baseline: testBaseline()})
	if len(checks) == 0 {
		t.Fatal("no checks evaluated")
	}
	for _, c := range checks {
		if _, ok := gatetable.Lookup(c.Gate); !ok && !known[c.Gate] {
			t.Errorf("check %q (%s) is neither a built-in check constant nor a gate of the table", c.Gate, c.Title)
		}
	}
}

// A declared server transport is shown as declared, never as observed.
func TestDeclaredTransportIsMarked(t *testing.T) {
	p, tick := testProfile(), healthyTick()
	p.Server.Metrics = &profile.ServerMetrics{Source: "prometheus", TransportDeclared: true}
	delete(tick, "transport")
	r := healthyReport(tick)
	r.ServerTick, _ = json.Marshal(tick)
	c, ok := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()}), "transport")
	if !ok || c.Status != rundir.StatusPass || !strings.Contains(c.MeasuredText, "server enet (declared, not observed)") ||
		!strings.Contains(c.Detail, "declared by the profile (server.metrics.transport_declared), not observed") {
		t.Errorf("transport check %+v: want a pass that says the server's side is declared, not observed", c)
	}
}

// TestBaselineStale: bytes per entity well under its baseline (an accepted
// bandwidth change not yet recorded) passes every baseline check and adds
// the advisory "baseline stale" check naming the figure; within the
// margin, or on a leg that failed a hard check, there is none.
func TestBaselineStale(t *testing.T) {
	withBPE := func(v float64, mutate func(*report.Report)) *report.Report {
		r := healthyReport(healthyTick())
		r.SnapshotBytesPerEntity = &v
		if mutate != nil {
			mutate(r)
		}
		return r
	}
	b := &baseline.Committed{Path: "b.json", File: baseline.File{Entries: map[string]baseline.Entry{"t/weave": {KBs: 60, WireKBs: 50, BytesPerEntity: f64(24.5)}}}}
	lost := func(r *report.Report) { r.DisconnectedByReason = map[string]int{gatetable.SilentReason: 1} }
	for _, tc := range []struct {
		name  string
		r     *report.Report
		stale bool
	}{
		{"ten bytes per entity against 24.5", withBPE(10, nil), true},
		{"within the margin below", withBPE(23, nil), false},
		{"at the baseline", withBPE(24.5, nil), false},
		{"smaller, but a client lost to silence", withBPE(10, lost), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: tc.r, Baseline: b})
			c, ok := find(checks, gatetable.CheckBaselineStale)
			if ok != tc.stale {
				t.Fatalf("stale check present %v, want %v: %+v", ok, tc.stale, c)
			}
			if !ok {
				return
			}
			if c.Level != gatetable.LevelAdvisory || c.Status != rundir.StatusFail ||
				!strings.Contains(c.Detail, "baseline stale: update it to lock in the gain") ||
				!strings.Contains(c.Detail, "bytes_per_entity 10, -59.2% against the baseline 24.50 (margin 2.45)") {
				t.Errorf("stale check %+v", c)
			}
			if k, _ := find(checks, gatetable.CheckBaselineBytesPerEntity); k.Status != rundir.StatusPass {
				t.Errorf("an improvement must pass its baseline check: %+v", k)
			}
			if v := LegVerdict(checks, Facts{}); v != rundir.VerdictPassed {
				t.Errorf("an advisory stale check changed the verdict: %v", v)
			}
		})
	}
}

// TestBuiltinSwarmHint: the built-in swarm against a team's own server
// that let nobody in says it speaks scalegate's load protocol; with the
// team's own bot, the reference server, or a client refused (an answer in
// the protocol), it does not.
func TestBuiltinSwarmHint(t *testing.T) {
	const hint = "a server that speaks its own protocol needs its own bot, swarm: {command: [...]}"
	nobody := func(r *report.Report) {
		r.ClientsConnected, r.ClientsNeverConnected, r.SnapshotsReceived = 0, 8, 0
		r.NeverConnectedByReason = map[string]int{"join_timeout": 8}
	}
	for _, tc := range []struct {
		name   string
		kind   string
		swarm  *profile.Swarm
		mutate func(*report.Report)
		want   bool
	}{
		{"custom server, built-in swarm, nobody in", "custom", nil, nobody, true},
		{"own bot", "custom", &profile.Swarm{Command: []string{"./bot"}}, nobody, false},
		{"reference server", "reference", nil, nobody, false},
		{"refused: the server answered", "custom", nil, func(r *report.Report) { nobody(r); r.ClientsRefused = 8 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testProfile()
			p.Server.Kind, p.Swarm = tc.kind, tc.swarm
			r := healthyReport(healthyTick())
			tc.mutate(r)
			c, ok := find(Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()}), gatetable.CheckLoad)
			if !ok || c.Status != rundir.StatusFail {
				t.Fatalf("load check %+v, want failed", c)
			}
			if got := strings.Contains(c.Detail, hint); got != tc.want {
				t.Errorf("hint %v, want %v: %q", got, tc.want, c.Detail)
			}
		})
	}
}

// TestSnapshotDecodeCheck: a leg whose bodies the swarm decoded fails on
// one that did not decode (a corrupted delta, say); a leg whose bodies were
// not decoded has no such check.
func TestSnapshotDecodeCheck(t *testing.T) {
	cases := []struct {
		name            string
		decoded, errors int64
		want            rundir.Status // "" : no check
	}{
		{"every body decoded", 1000, 0, rundir.StatusPass},
		{"one did not", 1000, 1, rundir.StatusFail},
		{"none decoded, all failed", 0, 40, rundir.StatusFail},
		{"opaque bodies", 0, 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := testProfile()
			r := healthyReport(healthyTick())
			r.SnapshotsDecoded, r.SnapshotDecodeErrors = c.decoded, c.errors
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
			got, ok := find(checks, gatetable.CheckSnapshotDecode)
			if !ok && c.want != "" || ok && got.Status != c.want {
				t.Fatalf("check %+v (present %v), want %q", got, ok, c.want)
			}
			if c.want == rundir.StatusFail && LegVerdict(checks, Facts{}) != rundir.VerdictFailed {
				t.Errorf("verdict %v with a decode error", LegVerdict(checks, Facts{}))
			}
		})
	}
}
