package swarm

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// buildReport turns the workers' finished clients into the report. It runs
// after every worker has returned, so it reads their state without locks.
func buildReport(cfg *Config, workers []*worker, start, end time.Time) *report.Report {
	r := &report.Report{
		SchemaVersion:          report.ReportSchemaVersion,
		Pattern:                cfg.Mix.String(),
		PatternCounts:          shardPatternCounts(cfg),
		Clients:                cfg.ShardClients(),
		Threads:                len(workers),
		RateHz:                 cfg.RateHz,
		DurationS:              round3(end.Sub(start).Seconds()),
		RefusedByReason:        map[string]int{},
		DisconnectedByReason:   map[string]int{},
		NeverConnectedByReason: map[string]int{},
		Asserts:                []report.AssertResult{},
		Protocol:               cfg.protocol().Name(),
		RunID:                  cfg.RunID,
		StartedAt:              start.UTC().Format(time.RFC3339Nano),
		ServerAddr:             cfg.Addr,
	}
	col := newCollected()
	for _, w := range workers {
		col.addWorker(r, w)
	}
	col.fill(r)
	if cfg.Warmup > 0 {
		r.WarmupS = cfg.Warmup.Seconds()
		end := round3(cfg.warmupEnd(start).Sub(start).Seconds())
		r.WarmupEndS = &end
	}
	r.Warnings = append(r.Warnings, col.warnings(r, workers, end)...)
	sort.Strings(r.Warnings)
	// Workers hold clients round-robin: order the list by client index.
	sort.Slice(r.Players, func(i, j int) bool { return r.Players[i].Index < r.Players[j].Index })
	r.Delivery = report.DeliveryOf(r.Players, announcedOrNil(col.announced))
	return r
}

// collected is what buildReport gathers across every worker's clients
// before it computes the report's distributions.
type collected struct {
	hz, kbs, conn              []float64 // one per client: bounded by the swarm's size
	entBytes, entities, ticked int64
	// deltaBytes and deltaEntities: entBytes and entities of the deltas;
	// stateBytes and stateSnaps: the state updates after the warm-up.
	deltaBytes, deltaEntities, stateBytes, stateSnaps int64
	gap                                               time.Duration // -1: no client had two updates
	warned                                            map[string]bool
	svc, states, dts, rtt, pd                         *stats.Histogram
	lat, trtt                                         *stats.Histogram
	pinged, estimated                                 int64   // rtt samples from pings and from the transport
	announced                                         float64 // the first rate a server announced; 0 none
	// linkHeader is the IP/UDP bytes of each datagram where every message
	// is one (transport.Capabilities.MessageDatagram); 0 elsewhere, and
	// the players then carry no link_kbs.
	linkHeader int
}

func newCollected() *collected {
	return &collected{gap: -1, warned: map[string]bool{}, svc: stats.NewHistogram(), states: stats.NewHistogram(),
		dts: stats.NewHistogram(), rtt: stats.NewHistogram(), pd: stats.NewHistogram(),
		lat: stats.NewHistogram(), trtt: stats.NewHistogram()}
}

// addWorker folds one worker's counters, distributions, warnings and
// clients into r and col.
func (col *collected) addWorker(r *report.Report, w *worker) {
	if r.Transport == "" {
		r.Transport = w.spoken
	}
	if w.backend != nil && w.backend.Capabilities().MessageDatagram {
		col.linkHeader = report.LinkHeaderBytes(isIPv6(w.cfg.Addr))
	}
	col.dts.Merge(w.dtHist)
	col.rtt.Merge(w.rttHist)
	col.pd.Merge(w.pdHist)
	col.svc.Merge(w.svcInterval)
	col.states.Merge(w.stateInterval)
	col.lat.Merge(w.latHist)
	col.trtt.Merge(w.trttHist)
	col.pinged += w.rttPinged
	col.estimated += w.rttEstimated
	r.InputsUnanswered += w.latUnanswered
	r.InputsSent += w.inputsSent
	r.ClientTicks += w.clientTicks
	r.ProtocolErrors += w.protocolErrors
	for _, s := range w.proto.Warnings() {
		if !col.warned[s] {
			col.warned[s] = true
			r.Warnings = append(r.Warnings, s)
		}
	}
	for _, c := range w.clients {
		tallyClient(r, c)
		p := c.player(w)
		if col.linkHeader > 0 {
			p.LinkKBs = nanPtr(c.linkKBs(col.linkHeader))
		}
		r.Players = append(r.Players, p)
		col.addClient(c)
	}
}

// addClient gathers one client's figures for the across-client ones.
func (col *collected) addClient(c *client) {
	col.ticked += c.ticks
	if col.announced == 0 && c.announcedHz > 0 {
		col.announced = c.announcedHz
	}
	col.entBytes += c.decodedBytes
	col.entities += c.decodedEntities
	col.deltaBytes += c.deltaBytes
	col.deltaEntities += c.deltaEntities
	col.stateBytes += c.snapBytes
	col.stateSnaps += c.snaps
	if c.snaps >= 2 && c.maxGap > col.gap {
		col.gap = c.maxGap
	}
	col.hz = append(col.hz, c.tickHz())
	col.kbs = append(col.kbs, c.kbs())
	col.conn = append(col.conn, c.connectMs)
}

// fill sets r's across-client figures and distributions from col.
func (col *collected) fill(r *report.Report) {
	if lo, mean, hi, ok := stats.MinMeanMax(col.hz); ok {
		r.ObservedServerTickHz = &report.MinMeanMax{Min: lo, Mean: mean, Max: hi}
	}
	r.InputsPerSPerClient = report.InputRates(r.Players)
	r.DownstreamLinkKBsPerClient = report.LinkKBsOf(r.Players)
	if _, mean, hi, ok := stats.MinMeanMax(col.kbs); ok {
		r.DownstreamKBsPerClient = &report.MeanMax{Mean: mean, Max: hi}
	}
	if col.entities > 0 {
		r.EntitiesPerSnapshot = nanPtr(float64(col.entities) / float64(r.SnapshotsDecoded))
		r.SnapshotBytesPerEntity = nanPtr(float64(col.entBytes) / float64(col.entities))
	}
	col.fillDeltas(r)
	r.Histograms = &report.Histograms{
		RTTMs: nonEmpty(col.rtt), PeerDelayMs: nonEmpty(col.pd), ConnectMs: stats.HistogramOf(col.conn),
		WorkerLoopDtMs: nonEmpty(col.dts), TickHzPerClient: stats.HistogramOf(col.hz), KBsPerClient: stats.HistogramOf(col.kbs),
	}
	if col.svc.Count() > 0 { // an empty distribution is absent, never an empty histogram
		r.Histograms.ServiceIntervalMs = col.svc
		r.ServiceIntervalMs = report.PercentilesOf(col.svc.Summary())
	}
	if col.states.Count() > 0 {
		r.Histograms.StateIntervalMs = col.states
		r.StateIntervalMs = report.PercentilesOf(col.states.Summary())
	}
	if col.lat.Count() > 0 {
		r.Histograms.InputLatencyMs = col.lat
		r.InputLatencyMs = report.PercentilesOf(col.lat.Summary())
		r.InputsAcked = col.lat.Count() - r.InputsUnanswered
	}
	r.Histograms.TransportRTTMs = nonEmpty(col.trtt)
	r.TransportRTTMs = report.PercentilesOf(col.trtt.Summary())
	r.RTTSource = rttSource(col.pinged, col.estimated)
	r.RTTMs = report.PercentilesOf(col.rtt.Summary())
	r.PeerDelayMs = report.PercentilesOf(col.pd.Summary())
	r.ConnectMs = percentiles(col.conn)
	r.WorkerLoopDtMs = report.PercentilesOf(col.dts.Summary())
	if col.gap >= 0 {
		r.MaxSnapshotGapMs = nanPtr(float64(col.gap) / float64(time.Millisecond))
	}
}

// fillDeltas sets the delta figures: the share of decoded snapshots that
// were deltas and the bytes per entity of each kind.
func (col *collected) fillDeltas(r *report.Report) {
	r.SnapshotEntitiesDelta, r.SnapshotEntitiesFull = col.deltaEntities, col.entities-col.deltaEntities
	if r.SnapshotsDecoded > 0 {
		r.DeltaSnapshotShare = nanPtr(float64(r.SnapshotsDelta) / float64(r.SnapshotsDecoded))
	}
	if full := col.entities - col.deltaEntities; full > 0 {
		r.SnapshotBytesPerEntityFull = nanPtr(float64(col.entBytes-col.deltaBytes) / float64(full))
	}
	if col.deltaEntities > 0 {
		r.SnapshotBytesPerEntityDelta = nanPtr(float64(col.deltaBytes) / float64(col.deltaEntities))
	}
	if col.stateSnaps > 0 {
		r.BytesPerSnapshot = nanPtr(float64(col.stateBytes) / float64(col.stateSnaps))
	}
}

// rttSource names what the rtt_ms samples were: pings, transport
// estimates, both, or "" when there was none.
func rttSource(pinged, estimated int64) string {
	switch {
	case pinged > 0 && estimated > 0:
		return report.RTTSourceMixed
	case pinged > 0:
		return report.RTTSourcePing
	case estimated > 0:
		return report.RTTSourceTransport
	}
	return ""
}

// nonEmpty is h, or nil when it holds nothing: an empty distribution is
// absent from the report, never an empty histogram.
func nonEmpty(h *stats.Histogram) *stats.Histogram {
	if h.Count() == 0 {
		return nil
	}
	return h
}

// warnings are the run-level warnings the collected figures call for.
func (col *collected) warnings(r *report.Report, workers []*worker, end time.Time) []string {
	var out []string
	if n := starved(workers, end); n > 0 {
		out = append(out, fmt.Sprintf("%d admitted client(s) held to the end received fewer than two state updates in %s or more: the server kept them connected without sending them state (their tick_hz and kbs are null, and the across-client figures leave them out)", n, starvedAfter))
	}
	if r.SnapshotsReceived > 0 && col.ticked == 0 {
		out = append(out, fmt.Sprintf("protocol %s: no state update carried a server tick, so observed_server_tick_hz is missing (a tick_hz_min gate cannot be evaluated); payload KB/s, snapshot gaps and counts were measured", r.Protocol))
	}
	return out
}

// announcedOrNil is the announced rate as the report's optional figure.
func announcedOrNil(hz float64) *float64 {
	if hz <= 0 {
		return nil
	}
	return &hz
}

// starvedAfter is how long a client must have been admitted before too few
// state updates says something about the server rather than the timing.
const starvedAfter = 2 * time.Second

// starved counts the clients admitted at least starvedAfter before the end
// and still held that got fewer than two state updates: a server that
// stops sending state to some players while something else (a pong, v1's
// PeerDelay) keeps them from going silent.
func starved(workers []*worker, end time.Time) int {
	n := 0
	for _, w := range workers {
		for _, c := range w.clients {
			if c.phase == phaseDone && !c.welcomedAt.IsZero() && end.Sub(c.windowFrom(w.warmEnd)) >= starvedAfter && c.snaps < 2 {
				n++
			}
		}
	}
	return n
}

// shardPatternCounts counts the patterns of the shard's clients, each
// assigned as in the whole run.
func shardPatternCounts(cfg *Config) map[string]int {
	lo, hi := cfg.Shard.Range(cfg.Clients)
	c := map[string]int{}
	for i := lo; i < hi; i++ {
		c[cfg.Mix.Assign(i, cfg.Clients)]++
	}
	return c
}

// shardInfo is the report's shard block; nil for a run that is neither
// sharded nor on a shared clock.
func shardInfo(cfg *Config, start time.Time, late time.Duration) *report.ShardInfo {
	if !cfg.sharded() {
		return nil
	}
	lo, _ := cfg.Shard.Range(cfg.Clients)
	si := &report.ShardInfo{Index: cfg.Shard.Index, Count: cfg.Shard.count(), ClientsTotal: cfg.Clients, FirstClient: lo,
		StartLateMs: round3(float64(late) / float64(time.Millisecond))}
	if !cfg.StartAt.IsZero() {
		si.StartAt = start.UTC().Format(time.RFC3339Nano)
	}
	return si
}

// tallyClient adds one client's outcome and Welcome to the report counts.
func tallyClient(r *report.Report, c *client) {
	if !c.welcomedAt.IsZero() {
		r.ClientsConnected++
		if r.ServerTransport == "" && r.BodyFormat == "" {
			r.ServerTransport, r.BodyFormat = c.serverTransport, c.bodyFormat
		}
	}
	switch c.phase {
	case phaseRefused:
		r.ClientsRefused++
		r.RefusedByReason[c.reason]++
	case phaseLost:
		r.ClientsDisconnected++
		r.DisconnectedByReason[c.reason]++
	case phaseFailed:
		r.ClientsNeverConnected++
		r.NeverConnectedByReason[c.reason]++
	}
	r.SnapshotsReceived += c.received
	r.SnapshotDecodeErrors += c.decodeErrors
	r.SnapshotsDecoded += c.decoded
	r.SnapshotsDelta += c.deltas
}

// player is the client's own row of the report's players list (w is its
// worker: the warm-up's end and when the run stopped for it).
func (c *client) player(w *worker) report.Player {
	p := report.Player{Index: c.index, Pattern: c.patternName, Snapshots: c.received,
		ConnectMs: nanPtr(c.connectMs), KBs: nanPtr(c.kbs()), TickHz: nanPtr(c.tickHz()), InputsPerS: nanPtr(c.inputsPerS())}
	perS, gap := c.delivery(w.warmEnd, w.stoppedAt)
	p.UpdatesPerS, p.MaxStateGapMs = nanPtr(perS), nanPtr(gap)
	p.StateIntervalMs = c.intervalSummary()
	p.Outcome, p.Reason = c.outcome()
	p.RTTP95Ms = nanPtr(bucketP95(c.rttCounts))
	if v := bucketP95(c.acks.counts); !math.IsNaN(v) {
		p.InputLatencyP95Ms = &v
	}
	if c.snaps >= 2 {
		p.MaxSnapshotGapMs = nanPtr(float64(c.maxGap) / float64(time.Millisecond))
	}
	return p
}

// outcome names how the client's run ended, with the reason when it ended
// early; a client that joined and was never lost counts as connected.
// Worker shutdown has made every phase terminal by now: a client still
// pending or connecting ended as failed with "not_started" or "run_ended".
func (c *client) outcome() (string, string) {
	switch c.phase {
	case phaseRefused:
		return report.OutcomeRefused, c.reason
	case phaseLost:
		return report.OutcomeDisconnected, c.reason
	case phaseJoined, phaseDone:
		return report.OutcomeConnected, ""
	}
	return report.OutcomeNeverConnected, c.reason
}

// percentiles summarises values with the shared implementation; nil (the
// metric is missing) when there are none.
func percentiles(values []float64) *report.Percentiles {
	return report.PercentilesOf(stats.Summarize(values))
}

// fillCPU records the harness's own CPU time and its cost per client-tick
// (one client serviced for one worker iteration), from getrusage.
func fillCPU(r *report.Report, cpu0, cpu1 float64) {
	if math.IsNaN(cpu0) || math.IsNaN(cpu1) {
		return
	}
	used := cpu1 - cpu0
	r.HarnessCPUS = &used
	if r.ClientTicks > 0 {
		us := used / float64(r.ClientTicks) * 1e6
		r.CPUUsPerClientTick = &us
	}
}
