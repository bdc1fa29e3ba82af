package gatetable

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// Figure is one named number of a leg and its one reader. A gate reads its
// figure through it, and so does every other consumer (the baseline,
// compare, the capacity curve, the HTML report), so a figure has one
// definition of where it comes from and one rule for when it is missing:
// a field the server or the swarm left out is an error naming it, never 0.
type Figure struct {
	// Name is the figure's id ("wire_kbs_per_client").
	Name string
	// Title is its row title in tables ("wire KB/s per client").
	Title string
	// Path says what is read, as a path into the report or server_tick.
	Path string
	// Unit of the value ("" for counts).
	Unit string
	// Read returns the value, or why it is missing.
	Read func(*Metrics) (float64, error)
}

// Value reads the figure of m; nil (with the reason) when it is missing.
func (f Figure) Value(m *Metrics) (*float64, error) {
	v, err := f.Read(m)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// The figures. Gates (All) and the consumers above name them here.
var (
	ClientsConnected = Figure{Name: "clients_connected", Title: "clients connected", Path: "report.clients_connected",
		Read: func(m *Metrics) (float64, error) { return float64(m.Report.ClientsConnected), nil }}
	TickHzMin  = Figure{Name: "tick_hz_min", Title: "observed tick-Hz min", Path: "report.observed_server_tick_hz.min", Unit: "Hz", Read: tickHz(func(h *report.MinMeanMax) float64 { return h.Min })}
	TickHzMean = Figure{Name: "tick_hz_mean", Title: "observed tick-Hz mean", Path: "report.observed_server_tick_hz.mean", Unit: "Hz", Read: tickHz(func(h *report.MinMeanMax) float64 { return h.Mean })}
	KBsMean    = Figure{Name: "kbs_mean", Title: "payload KB/s per client mean", Path: "report.downstream_kbs_per_client.mean", Unit: "KB/s", Read: kbs(func(k *report.MeanMax) float64 { return k.Mean })}
	KBsMax     = Figure{Name: "kbs_max", Title: "payload KB/s per client max", Path: "report.downstream_kbs_per_client.max", Unit: "KB/s", Read: kbs(func(k *report.MeanMax) float64 { return k.Max })}
	// WireKBs is the server's wire rate per client. A per-client rate is
	// only a measurement when the server kept a sample interval with peers
	// connected: wire_peers must be present and > 0, else the figure
	// (usually 0) would pass any ceiling without having measured anything.
	WireKBs        = Figure{Name: "wire_kbs_per_client", Title: "wire KB/s per client", Path: "server_tick.wire_out_kbs_per_client", Unit: "KB/s", Read: wireKBs}
	BytesPerEntity = Figure{Name: "bytes_per_entity", Title: "snapshot bytes per entity", Path: "report.snapshot_bytes_per_entity", Read: optional("report.snapshot_bytes_per_entity", "no snapshot body was decoded", func(r *report.Report) *float64 { return r.SnapshotBytesPerEntity })}
	// The delta figures (sg-entities/3): bytes per entity of the full and
	// of the delta snapshots, the share of snapshots that were deltas, and
	// the state updates' bytes per update.
	BytesPerEntityFull  = Figure{Name: "bytes_per_entity_full", Title: "snapshot bytes per entity, full snapshots", Path: "report.snapshot_bytes_per_entity_full", Read: optional("report.snapshot_bytes_per_entity_full", "no full snapshot was decoded", func(r *report.Report) *float64 { return r.SnapshotBytesPerEntityFull })}
	BytesPerEntityDelta = Figure{Name: "bytes_per_entity_delta", Title: "snapshot bytes per entity, delta snapshots", Path: "report.snapshot_bytes_per_entity_delta", Read: optional("report.snapshot_bytes_per_entity_delta", "no delta snapshot was decoded", func(r *report.Report) *float64 { return r.SnapshotBytesPerEntityDelta })}
	DeltaShare          = Figure{Name: "delta_snapshot_share", Title: "share of snapshots that were deltas", Path: "report.delta_snapshot_share", Read: optional("report.delta_snapshot_share", "no snapshot body was decoded", func(r *report.Report) *float64 { return r.DeltaSnapshotShare })}
	BytesPerSnapshot    = Figure{Name: "bytes_per_snapshot", Title: "snapshot bytes per snapshot", Path: "report.bytes_per_snapshot", Unit: "B", Read: optional("report.bytes_per_snapshot", "no state update was received after the warm-up", func(r *report.Report) *float64 { return r.BytesPerSnapshot })}
	// IdleFloor is the wire KB/s per client of a leg whose every client
	// flew StationaryPattern: what the server sends a client whose own
	// entity changes only along the line a delta predicts (an aircraft
	// cannot hover; constant controls are its stationary state). Missing
	// on any other leg.
	IdleFloor   = Figure{Name: "idle_floor_kbs", Title: "idle floor: wire KB/s per client, every bot flying " + StationaryPattern, Path: "server_tick.wire_out_kbs_per_client when report.pattern_counts is " + StationaryPattern + " alone", Unit: "KB/s", Read: idleFloor}
	Entities    = gaugeFigure("entities", "server entities", true)
	TickMsMean  = tickFigure("tick_ms_mean", "server tick ms mean", "ms", "tick_ms", "mean")
	TickMsP50   = tickFigure("tick_ms_p50", "server tick ms p50", "ms", "tick_ms", "p50")
	TickMsP95   = tickFigure("tick_ms_p95", "server tick ms p95", "ms", "tick_ms", "p95")
	TickMsP99   = tickFigure("tick_ms_p99", "server tick ms p99", "ms", "tick_ms", "p99")
	TickMsMax   = tickFigure("tick_ms_max", "server tick ms max", "ms", "tick_ms", "max")
	SerializeMs = tickFigure("serialize_ms_mean", "server serialize ms mean", "ms", "serialize_ms", "mean")
	// RSSGrowth is rss_kb − rss_startup_kb. A value ≤ 0 in either field
	// means the server could not read its RSS on its platform:
	// unavailable, which is missing, never "no growth".
	RSSGrowth  = Figure{Name: "rss_growth_kb", Title: "server RSS growth KB", Path: "server_tick.rss_kb - server_tick.rss_startup_kb", Unit: "KB", Read: rssGrowth}
	RSSSlope   = Figure{Name: "rss_slope_kb_per_min", Title: "server RSS slope KB/min", Path: "report.rss_slope_kb_per_min", Unit: "KB/min", Read: rssSlope}
	RTTP95     = Figure{Name: "rtt_p95_ms", Title: "RTT ms p95", Path: "report.rtt_ms.p95", Unit: "ms", Read: pct("report.rtt_ms", "no client measured a round trip", func(r *report.Report) *report.Percentiles { return r.RTTMs }, p95)}
	ConnectP95 = Figure{Name: "connect_p95_ms", Title: "connect ms p95", Path: "report.connect_ms.p95", Unit: "ms", Read: pct("report.connect_ms", "no client connected", func(r *report.Report) *report.Percentiles { return r.ConnectMs }, p95)}
	MaxGap     = Figure{Name: "max_snapshot_gap_ms", Title: "max snapshot gap ms", Path: "report.max_snapshot_gap_ms", Unit: "ms", Read: optional("report.max_snapshot_gap_ms", "no client received two snapshots", func(r *report.Report) *float64 { return r.MaxSnapshotGapMs })}
	// StateInterval* are the client-observed times between two
	// consecutive state updates, pooled over the joined clients (after the
	// warm-up): the "ms per step" a player sees.
	StateIntervalP50 = stateInterval("p50", p50)
	StateIntervalP95 = stateInterval("p95", p95)
	StateIntervalP99 = stateInterval("p99", p99)
	// InputLatency* are the times from each Input to the first state
	// update acknowledging it, pooled over the clients (after the
	// warm-up): the command latency a player feels.
	InputLatencyP50 = inputLatency("p50", p50)
	InputLatencyP95 = inputLatency("p95", p95)
	InputLatencyP99 = inputLatency("p99", p99)
	// RTTP50 is the median round trip: pings where the protocol answers
	// them (report.rtt_source), else the transport's estimate.
	RTTP50 = Figure{Name: "rtt_p50_ms", Title: "RTT ms p50", Path: "report.rtt_ms.p50", Unit: "ms", Read: pct("report.rtt_ms", "no client measured a round trip", func(r *report.Report) *report.Percentiles { return r.RTTMs }, p50)}
	// UpdatesPerSMin is the slowest client's state updates per second over
	// its joined time; DeliveryGap the longest any client went without one
	// (its admission and its end included).
	UpdatesPerSMin     = Figure{Name: "updates_per_s_min", Title: "state updates/s per client min", Path: "report.delivery.updates_per_s.min", Read: updatesPerSMin}
	DeliveryGap        = Figure{Name: "delivery_gap_ms", Title: "longest time without state ms", Path: "report.delivery.max_gap_ms", Unit: "ms", Read: deliveryGap}
	WorkerDtP99        = Figure{Name: "worker_dt_p99_ms", Title: "swarm worker dt p99 ms", Path: "report.worker_loop_dt_ms.p99", Unit: "ms", Read: pct("report.worker_loop_dt_ms", "no worker iteration was timed", func(r *report.Report) *report.Percentiles { return r.WorkerLoopDtMs }, p99)}
	ServiceIntervalP99 = Figure{Name: "service_interval_p99_ms", Title: "per-client service interval p99 ms", Path: "report.service_interval_ms.p99", Unit: "ms", Read: pct("report.service_interval_ms", "no client was serviced twice while joined", func(r *report.Report) *report.Percentiles { return r.ServiceIntervalMs }, p99)}
	// InputsAccepted is the share of the Inputs the swarm sent that the
	// server applied (server_tick.inputs_accepted / report.inputs_sent):
	// proof the load reached the simulation, not only the socket. A server
	// that drops every Input still sends snapshots and passes every other
	// gate.
	InputsAccepted = Figure{Name: "inputs_accepted_ratio", Title: "inputs accepted / sent", Path: "server_tick.inputs_accepted / report.inputs_sent", Read: inputsAccepted}
	// Contacts is the sensor contact-table entries; FusedContacts those
	// of them known only through the team datalink (fusion's share).
	Contacts      = gaugeFigure("contacts", "sensor contacts", true)
	FusedContacts = gaugeFigure("fused_contacts", "datalink-fused contacts", true)
	// The overrun governor over the hold: the highest load_factor any
	// reading saw, its time-weighted mean, and the share of the hold's
	// ticks it ran degraded (load_factor < 1).
	LoadFactorMax  = gaugeFigure("load_factor", "governor load_factor (highest reading)", false)
	LoadFactorMean = tickFigure("load_factor_mean", "governor load_factor, time-weighted mean", "", "load_factor_mean")
	DegradedShare  = tickFigure("degraded_ticks_share", "share of ticks run degraded", "", "degraded_ticks_share")
	// TickP99Worst is the p99 of the server's ticks over the worst window
	// of the hold (Metrics.WindowS seconds wide).
	TickP99Worst = Figure{Name: "tick_ms_p99_worst_window", Title: "server tick ms p99, worst window", Path: "timeline[].tick_hist over window_s", Unit: "ms", Read: tickP99Worst}
	SwarmCPU     = Figure{Name: "cpu_us_per_client_tick", Title: "swarm CPU µs per client-tick", Path: "report.cpu_us_per_client_tick", Unit: "µs", Read: optional("report.cpu_us_per_client_tick", "the swarm could not read its CPU time", func(r *report.Report) *float64 { return r.CPUUsPerClientTick })}
)

// The server's why-was-it-slow figures (docs/metrics.md, "Why a tick was
// slow"). CPUPct covers the server's last metrics-write window (250 ms
// under the gate); CPUPctMean and CPUPctMax the tick window (window_s).
var (
	CPUPct       = tickFigure("cpu_pct", "server CPU % of one core (last write window)", "%", "cpu_pct")
	CPUPctMean   = tickFigure("cpu_pct_mean", "server CPU % of one core, mean over the tick window", "%", "cpu_pct_mean")
	CPUPctMax    = tickFigure("cpu_pct_max", "server CPU % of one core, busiest second of the tick window", "%", "cpu_pct_max")
	SlowTicks    = tickFigure("slow_ticks", "server slow ticks (since start)", "", "slow_ticks")
	GCPauseP99   = tickFigure("gc_pause_p99_ms", "server GC pause p99 ms (since start)", "ms", "gc_pause_ms", "p99")
	GCCount      = tickFigure("gc_count", "server GC cycles (since start)", "", "gc_count")
	SendQueueMax = tickFigure("send_queue_max", "server send queue max (last write window)", "", "send_queue_max")
	SlowSends    = tickFigure("slow_sends", "server slow sends (since start)", "", "slow_sends")
	// SimWorkers is how many threads the server's tick may use at once
	// (the reference server's sim worker pool, its loop goroutine included).
	SimWorkers = tickFigure("sim_worker_threads", "server sim worker threads", "", "sim_worker_threads")
)

// Diagnostics are the figures that say why a tick was slow, in the order
// the summary's diagnostics line and compare show them.
func Diagnostics() []Figure { return slices.Clone(diagnostics) }

// diagnostics backs Diagnostics; never handed out itself, so no caller can change it.
var diagnostics = []Figure{CPUPctMean, CPUPctMax, SlowTicks, GCPauseP99, GCCount, SendQueueMax, SlowSends}

// WireKBsFields are the server_tick fields WireKBs reads.
func WireKBsFields() []string { return slices.Clone(wireKBsFields) }

// wireKBsFields backs WireKBsFields; never handed out itself, so no caller can change it.
var wireKBsFields = []string{"wire_out_kbs_per_client", "wire_peers"}

// TickPhases are the server's per-phase tick costs (mean ms), in the tick's
// order: what the HTML report's phase chart draws.
func TickPhases() []Figure { return slices.Clone(tickPhases) }

// tickPhases backs TickPhases; never handed out itself, so no caller can change it.
var tickPhases = []Figure{
	tickFigure("maintenance_ms_mean", "maintenance", "ms", "maintenance_ms", "mean"),
	tickFigure("sensing_ms_mean", "sensing", "ms", "sensing_ms", "mean"),
	tickFigure("integrate_ms_mean", "integrate", "ms", "integrate_ms", "mean"),
	tickFigure("ai_ms_mean", "ai", "ms", "ai_ms", "mean"),
	tickFigure("collision_ms_mean", "collision", "ms", "collision_ms", "mean"),
	tickFigure("serialize_ms_mean", "serialize", "ms", "serialize_ms", "mean"),
	tickFigure("other_ms_mean", "other", "ms", "other_ms", "mean"),
}

// tickFigure is a number of the server block read by name.
func tickFigure(name, title, unit string, path ...string) Figure {
	p := "server_tick"
	for _, k := range path {
		p += "." + k
	}
	return Figure{Name: name, Title: title, Path: p, Unit: unit, Read: tick(path...)}
}

// tick reads a number of the server block. A timing object (tick_ms,
// the phases) is over the server's tick-statistics window, which a
// warm-up restarts: a file that says the warm-up is still in it
// (warmup_pending) would have the gate judge the ramp and the warm-up.
func tick(path ...string) func(*Metrics) (float64, error) {
	windowed := len(path) > 1 && strings.HasSuffix(path[0], "_ms")
	return func(m *Metrics) (float64, error) {
		if windowed && !m.OverHold(strings.Join(path, ".")) {
			if pending, err := m.TickBool("warmup_pending"); err == nil && pending {
				return 0, fmt.Errorf("server_tick.%s is over a window that still holds the warm-up (server_tick.warmup_pending is true: the run ended before the server's tick statistics restarted)", strings.Join(path, "."))
			}
		}
		return m.Tick(path...)
	}
}

// gaugeFigure is a gauge of the server block read over the hold: its
// lowest reading (low) or its highest, of the once-a-second readings from
// the hold's start to its end (serverwindow.Extremes); a block without
// extremes (a report from before they were kept) is read as it stands,
// at the final reading.
func gaugeFigure(name, title string, low bool) Figure {
	return Figure{Name: name, Title: title, Path: "server_tick." + name, Read: func(m *Metrics) (float64, error) {
		if v, _, ok := m.Extreme(name, low); ok {
			return v, nil
		}
		return m.Tick(name)
	}}
}

// tickP99Worst is the worst WindowS-second window's tick p99 over the
// hold, from the timeline's per-second tick histograms.
func tickP99Worst(m *Metrics) (float64, error) {
	w, err := WorstTickWindow(m, 0.99)
	if err != nil {
		return 0, err
	}
	return w.Value, nil
}

// WorstTickWindow is the window of m.WindowS seconds within the hold
// whose q-quantile tick time is highest (serverwindow.WorstWindow over
// the report's timeline), or why there is none.
func WorstTickWindow(m *Metrics, q float64) (serverwindow.Worst, error) {
	if m.Scope != "" {
		return serverwindow.Worst{}, fmt.Errorf("a worst window is over the hold: it cannot be scoped to phase %q", m.Scope)
	}
	if !(m.WindowS > 0) {
		return serverwindow.Worst{}, errors.New("window_s missing: a worst-window gate needs the window's width")
	}
	if err := m.TickErr(); err != nil {
		return serverwindow.Worst{}, err
	}
	h := m.Hold()
	if h == nil {
		return serverwindow.Worst{}, errors.New("server_tick.hold missing: the report does not say where the hold is (a swarm from before worst windows)")
	}
	return serverwindow.WorstWindow(m.Report.Timeline, h.FromS, h.ToS, m.WindowS, q)
}

const noTwoSnapshots = "no client received two snapshots"

// scoped names the stretch a report-side figure was read from.
func scoped(m *Metrics, what string) string {
	if m.Scope != "" {
		return what + " in phase " + m.Scope
	}
	return what
}

// optional reads a nullable report figure; absent says why it would be.
func optional(path, absent string, get func(*report.Report) *float64) func(*Metrics) (float64, error) {
	return func(m *Metrics) (float64, error) {
		if v := get(m.Report); v != nil {
			return *v, nil
		}
		return 0, errors.New(scoped(m, path) + " missing (" + absent + ")")
	}
}

func p50(p *report.Percentiles) float64 { return p.P50 }
func p95(p *report.Percentiles) float64 { return p.P95 }
func p99(p *report.Percentiles) float64 { return p.P99 }

// pct reads one percentile of a nullable percentile object.
func pct(path, absent string, get func(*report.Report) *report.Percentiles, at func(*report.Percentiles) float64) func(*Metrics) (float64, error) {
	return func(m *Metrics) (float64, error) {
		if p := get(m.Report); p != nil {
			return at(p), nil
		}
		return 0, errors.New(scoped(m, path) + " missing (" + absent + ")")
	}
}

// stateInterval is one percentile of report.state_interval_ms.
func stateInterval(stat string, at func(*report.Percentiles) float64) Figure {
	return Figure{Name: "state_interval_ms_" + stat, Title: "state update interval ms " + stat, Path: "report.state_interval_ms." + stat, Unit: "ms",
		Read: pct("report.state_interval_ms", "no client received two state updates after the warm-up", func(r *report.Report) *report.Percentiles { return r.StateIntervalMs }, at)}
}

// inputLatencyAbsent says why report.input_latency_ms can be missing.
const inputLatencyAbsent = "no Input was acknowledged after the warm-up: the server does not acknowledge inputs " +
	"(load protocol v1.1: Welcome flag minor_1 and the Snapshot input ack; a bot: Msg.InputAck), or applied none"

// inputLatency is one percentile of report.input_latency_ms.
func inputLatency(stat string, at func(*report.Percentiles) float64) Figure {
	return Figure{Name: "input_latency_ms_" + stat, Title: "input latency ms " + stat, Path: "report.input_latency_ms." + stat, Unit: "ms",
		Read: pct("report.input_latency_ms", inputLatencyAbsent, func(r *report.Report) *report.Percentiles { return r.InputLatencyMs }, at)}
}

func updatesPerSMin(m *Metrics) (float64, error) {
	if d := m.Report.Delivery; d != nil && d.UpdatesPerS != nil {
		return d.UpdatesPerS.Min, nil
	}
	return 0, errors.New(scoped(m, "report.delivery.updates_per_s") + " missing (no client was joined long enough after the warm-up)")
}

func deliveryGap(m *Metrics) (float64, error) {
	if d := m.Report.Delivery; d != nil && d.MaxGapMs != nil {
		return *d.MaxGapMs, nil
	}
	return 0, errors.New(scoped(m, "report.delivery.max_gap_ms") + " missing (no client had joined time after the warm-up)")
}

func tickHz(at func(*report.MinMeanMax) float64) func(*Metrics) (float64, error) {
	return func(m *Metrics) (float64, error) {
		if h := m.Report.ObservedServerTickHz; h != nil {
			return at(h), nil
		}
		return 0, errors.New(scoped(m, "report.observed_server_tick_hz") + " missing (" + noTwoSnapshots + ")")
	}
}

// StationaryPattern is the swarm pattern whose legs give the idle floor:
// straight and level at constant controls.
const StationaryPattern = "level"

func idleFloor(m *Metrics) (float64, error) {
	if pc := m.Report.PatternCounts; len(pc) != 1 || pc[StationaryPattern] == 0 {
		return 0, errors.New(scoped(m, "report.pattern_counts") + " missing (not every client flew " + StationaryPattern + ": the idle floor is a leg of stationary bots)")
	}
	return wireKBs(m)
}

func kbs(at func(*report.MeanMax) float64) func(*Metrics) (float64, error) {
	return func(m *Metrics) (float64, error) {
		if k := m.Report.DownstreamKBsPerClient; k != nil {
			return at(k), nil
		}
		return 0, errors.New(scoped(m, "report.downstream_kbs_per_client") + " missing (" + noTwoSnapshots + ")")
	}
}

func wireKBs(m *Metrics) (float64, error) {
	peers, err := m.Tick("wire_peers")
	if err != nil {
		return 0, fmt.Errorf("%w (wire_kbs_max reads wire_peers to know a per-client rate was measured)", err)
	}
	if peers <= 0 {
		return 0, errors.New("server_tick.wire_peers is 0: the server kept no wire sample with peers connected, so no per-client rate was measured")
	}
	return m.Tick("wire_out_kbs_per_client")
}

func rssGrowth(m *Metrics) (float64, error) {
	cur, err := m.Tick("rss_kb")
	if err != nil {
		return 0, err
	}
	start, err := m.Tick("rss_startup_kb")
	if err != nil {
		return 0, err
	}
	if cur <= 0 || start <= 0 {
		return 0, fmt.Errorf("server reports rss_kb=%s rss_startup_kb=%s: RSS unavailable on its platform", FormatNumber(cur), FormatNumber(start))
	}
	return cur - start, nil
}

func rssSlope(m *Metrics) (float64, error) {
	r := m.Report
	if r.RSSSlopeKBPerMin != nil {
		return *r.RSSSlopeKBPerMin, nil
	}
	if err := m.TickErr(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("report.rss_slope_kb_per_min is null: the RSS series (%d samples) is too short to fit", len(r.RSSSeries))
}

func inputsAccepted(m *Metrics) (float64, error) {
	accepted, err := m.Tick("inputs_accepted")
	if err != nil {
		return 0, fmt.Errorf("%w (the server must count the Inputs it applied for the load to be shown to reach it)", err)
	}
	if m.Report.InputsSent < 1 {
		return 0, errors.New(scoped(m, "report.inputs_sent") + " is 0: the swarm sent no Input, so none could be taken")
	}
	return accepted / float64(m.Report.InputsSent), nil
}

// timelineFigures read the server columns of a timeline row, by column
// name (report.TimelineServer.Fields).
var timelineFigures = map[string]Figure{
	"server_cpu_pct":      CPUPct,
	"wire_kbs_per_client": WireKBs,
	"slow_ticks":          SlowTicks,
	"gc_count":            GCCount,
	"gc_pause_p99_ms":     GCPauseP99,
	"send_queue_max":      SendQueueMax,
	"slow_sends":          SlowSends,
}

// TimelineServer is one timeline row's server figures, read from the
// metrics file the swarm sampled that second (FromServerTick of its fields
// by name) through each figure's reader: a field the server did not write
// stays nil, and the wire rate is nil until the server kept a sample with
// peers connected.
func TimelineServer(m *Metrics) report.TimelineServer {
	var s report.TimelineServer
	for _, f := range s.Fields() {
		if v, err := timelineFigures[f.Name].Value(m); err == nil {
			*f.V = v
		}
	}
	return s
}
