package compare

import (
	"github.com/scalegate/scalegate/internal/report"
)

// metric is one compared figure of a report.
type metric struct {
	name string
	get  func(r *report.Report, st *report.ServerTick) *float64
}

func f(v float64) *float64 { return &v }

// metrics are the figures a reviewer asks about, in the summary's order:
// admission, what the clients saw, what the server spent, the harness.
var metrics = []metric{
	{"clients connected", func(r *report.Report, _ *report.ServerTick) *float64 { return f(float64(r.ClientsConnected)) }},
	{"observed tick-Hz min", func(r *report.Report, _ *report.ServerTick) *float64 {
		if r.ObservedServerTickHz == nil {
			return nil
		}
		return f(r.ObservedServerTickHz.Min)
	}},
	{"observed tick-Hz mean", func(r *report.Report, _ *report.ServerTick) *float64 {
		if r.ObservedServerTickHz == nil {
			return nil
		}
		return f(r.ObservedServerTickHz.Mean)
	}},
	{"payload KB/s per client mean", func(r *report.Report, _ *report.ServerTick) *float64 {
		if r.DownstreamKBsPerClient == nil {
			return nil
		}
		return f(r.DownstreamKBsPerClient.Mean)
	}},
	{"payload KB/s per client max", func(r *report.Report, _ *report.ServerTick) *float64 {
		if r.DownstreamKBsPerClient == nil {
			return nil
		}
		return f(r.DownstreamKBsPerClient.Max)
	}},
	{"wire KB/s per client", server(func(st *report.ServerTick) float64 { return st.WireOutKBsPerClient })},
	{"snapshot bytes per entity", func(r *report.Report, _ *report.ServerTick) *float64 { return r.SnapshotBytesPerEntity }},
	{"server entities", server(func(st *report.ServerTick) float64 { return float64(st.Entities) })},
	{"server tick ms mean", server(func(st *report.ServerTick) float64 { return st.TickMs.Mean })},
	{"server tick ms p99", server(func(st *report.ServerTick) float64 { return st.TickMs.P99 })},
	{"server serialize ms mean", server(func(st *report.ServerTick) float64 { return st.SerializeMs.Mean })},
	{"server RSS growth KB", server(func(st *report.ServerTick) float64 { return float64(st.RSSKB - st.RSSStartupKB) })},
	{"server RSS slope KB/min", func(r *report.Report, _ *report.ServerTick) *float64 { return r.RSSSlopeKBPerMin }},
	{"RTT ms p95", func(r *report.Report, _ *report.ServerTick) *float64 {
		if r.RTTMs == nil {
			return nil
		}
		return f(r.RTTMs.P95)
	}},
	{"connect ms p95", func(r *report.Report, _ *report.ServerTick) *float64 {
		if r.ConnectMs == nil {
			return nil
		}
		return f(r.ConnectMs.P95)
	}},
	{"max snapshot gap ms", func(r *report.Report, _ *report.ServerTick) *float64 { return r.MaxSnapshotGapMs }},
	{"swarm worker dt p99 ms", func(r *report.Report, _ *report.ServerTick) *float64 {
		if r.WorkerLoopDtMs == nil {
			return nil
		}
		return f(r.WorkerLoopDtMs.P99)
	}},
	{"swarm CPU µs per client-tick", func(r *report.Report, _ *report.ServerTick) *float64 { return r.CPUUsPerClientTick }},
}

// server reads a figure of the report's embedded server metrics.
func server(get func(*report.ServerTick) float64) func(*report.Report, *report.ServerTick) *float64 {
	return func(_ *report.Report, st *report.ServerTick) *float64 {
		if st == nil {
			return nil
		}
		return f(get(st))
	}
}

// value reads one metric of a leg's report; nil when the report or the
// figure is missing.
func value(m metric, r *report.Report) *float64 {
	if r == nil {
		return nil
	}
	st, err := r.ServerTickParsed()
	if err != nil {
		st = nil
	}
	return m.get(r, st)
}
