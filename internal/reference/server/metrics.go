package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// WindowTicks is the rolling window the percentiles and tick_hz are taken
// over: 10 s at 60 Hz.
const WindowTicks = 600

// wireSampleTicks is how often the transport's wire rates are sampled.
const wireSampleTicks = 30

// metrics collects per-tick figures and produces the metrics file. It is
// owned by the loop goroutine.
type metrics struct {
	phase     [numPhases]*stats.Window
	tick      *stats.Window
	buildW    *stats.Window // serialize split: snapshot builds
	sendW     *stats.Window // serialize split: Send, PeerDelay, Flush
	starts    []time.Time   // tick start times, ring of WindowTicks
	startNext int
	startN    int

	ticksTotal int64
	slowTicks  int64
	malformed  int64
	// inputsAccepted counts Inputs applied to an entity (after the
	// sequence and validation checks): what a trace records.
	inputsAccepted int64
	kicked         int64
	idle           int64
	refused        map[string]int64
	// kickLogsSuppressed counts kick log lines held back by the log's rate
	// limit (every kick is still counted in kicked).
	kickLogsSuppressed int64

	wire       wireAcc // traffic over the kept intervals
	wirePeers  int     // the peer count the kept intervals were taken at
	wireTaken  bool
	wireStable bool // the kept intervals had the same peer count at both ends
	wirePrev   int  // peer count at the previous sample

	rssStartupKB int64

	checks    []int32 // sensor checks per tick, ring aligned with starts
	checksSum int64

	// cum is the state since the server started (the file's cumulative
	// block): never restarted, by the warm-up or anything else.
	cum cumulative
	// cumOut are the cumulative block's histograms and maps, refilled by
	// every build instead of made afresh: see stats.LogLinear.SnapshotInto.
	cumOut cumulativeOut
}

// cumulativeOut is what a build's cumulative block points at: valid until
// the next build.
type cumulativeOut struct {
	tick   stats.Buckets
	phase  [numPhases]stats.Buckets
	sums   map[string]float64
	phases map[string]*stats.Buckets
}

// cumulative is what the metrics file's cumulative block is built from:
// every figure the gate reads over the hold, as state that only grows, so
// that two readings a hold apart give the figure over exactly that hold
// (docs/metrics.md, "Cumulative state").
type cumulative struct {
	tick     *stats.LogLinear // tick work times, ms
	phaseSum [numPhases]float64
	// phase are each phase's times, ms (the file's cumulative.phase_ms):
	// what a profile's own figure on one phase reads over the hold.
	phase [numPhases]*stats.LogLinear
	// lfS integrates the governor's load_factor over wall time: each tick
	// start adds the factor in force since the previous one.
	lfS       float64
	lfLast    float64
	lfAt      time.Time
	wire      wireAcc // every wire sample, whatever the peer count
	peerS     float64 // joined peers × the sample's seconds
	sensorSum int64
}

func newMetrics() *metrics {
	m := &metrics{
		tick:    stats.NewWindow(WindowTicks),
		buildW:  stats.NewWindow(WindowTicks),
		sendW:   stats.NewWindow(WindowTicks),
		starts:  make([]time.Time, WindowTicks),
		checks:  make([]int32, WindowTicks),
		refused: map[string]int64{},
		cum:     cumulative{tick: stats.NewLogLinear()},
	}
	for i := range m.phase {
		m.phase[i] = stats.NewWindow(WindowTicks)
		m.cum.phase[i] = stats.NewLogLinear()
	}
	return m
}

// record adds one tick: its start time, total work, phases and the split
// of serialize into building and sending.
func (m *metrics) record(start time.Time, total time.Duration, ph *[numPhases]time.Duration, build, send time.Duration) {
	m.checksSum -= int64(m.checks[m.startNext]) // the slot this tick's start overwrites
	m.checks[m.startNext] = 0
	m.buildW.Add(ms(build))
	m.sendW.Add(ms(send))
	m.ticksTotal++
	m.starts[m.startNext] = start
	m.startNext = (m.startNext + 1) % len(m.starts)
	m.startN = min(m.startN+1, len(m.starts))
	m.tick.Add(ms(total))
	m.cum.tick.Record(ms(total))
	for i, d := range ph {
		m.phase[i].Add(ms(d))
		m.cum.phaseSum[i] += ms(d)
		m.cum.phase[i].Record(ms(d))
	}
}

// loadFactorSAt is the load-factor integral up to now: what the ticks
// added, plus the factor in force since the last tick's start, so that it
// covers the same span as the uptime written beside it.
func (m *metrics) loadFactorSAt(now time.Time) float64 {
	c := &m.cum
	if c.lfAt.IsZero() || now.Before(c.lfAt) {
		return c.lfS
	}
	return c.lfS + c.lfLast*now.Sub(c.lfAt).Seconds()
}

// integrateLoadFactor adds the load factor in force since the previous
// tick's start (lf from then on).
func (m *metrics) integrateLoadFactor(start time.Time, lf float64) {
	if !m.cum.lfAt.IsZero() {
		m.cum.lfS += m.cum.lfLast * start.Sub(m.cum.lfAt).Seconds()
	}
	m.cum.lfAt, m.cum.lfLast = start, lf
}

// wireAcc accumulates wire traffic over several sample intervals so the
// reported rate is an average over them, not one half-second glimpse.
type wireAcc struct {
	bytesOut, bytesIn, dgramsOut, dgramsIn, seconds float64
}

// rates is the accumulated traffic as one sample over its whole span.
func (a *wireAcc) rates() transport.WireRates {
	if a.seconds <= 0 {
		return transport.WireRates{}
	}
	return transport.WireRates{Interval: time.Duration(a.seconds * float64(time.Second)),
		BytesOutPerSec: a.bytesOut / a.seconds, BytesInPerSec: a.bytesIn / a.seconds,
		DatagramsOutPerSec: a.dgramsOut / a.seconds, DatagramsInPerSec: a.dgramsIn / a.seconds}
}

func (a *wireAcc) add(r transport.WireRates) {
	s := r.Interval.Seconds()
	a.bytesOut += r.BytesOutPerSec * s
	a.bytesIn += r.BytesInPerSec * s
	a.dgramsOut += r.DatagramsOutPerSec * s
	a.dgramsIn += r.DatagramsInPerSec * s
	a.seconds += s
}

// sampleWire takes a wire-rate sample and keeps the traffic measured at the
// highest peer count seen. The gate reads only the final file: a live rate
// would report the drained server after the swarm left, so what describes
// the loaded server is what is kept. Every interval taken at
// that peak count is averaged (a single interval describes half a second of
// a run whose traffic drifts as the bots spread out), and once an interval
// with the peak count at both of its ends exists, intervals that straddle a
// join or a leave are no longer mixed in.
func (m *metrics) sampleWire(h transport.Host, peers int) {
	m.keepWire(h.WireRates(), peers)
}

// keepWire applies sampleWire's rule to a sample r taken with peers
// joined.
func (m *metrics) keepWire(r transport.WireRates, peers int) {
	stable := peers == m.wirePrev
	m.wirePrev = peers
	if r.Interval <= 0 {
		return
	}
	m.cum.wire.add(r)
	m.cum.peerS += float64(peers) * r.Interval.Seconds()
	switch {
	case !m.wireTaken || peers > m.wirePeers || (peers == m.wirePeers && stable && !m.wireStable):
		m.wire = wireAcc{}
		m.wire.add(r)
		m.wirePeers, m.wireTaken, m.wireStable = peers, true, stable
	case peers == m.wirePeers && (stable || !m.wireStable):
		m.wire.add(r)
	}
}

// recordSensing adds the sensor checks of the tick record last added.
func (m *metrics) recordSensing(checks int) {
	i := (m.startNext - 1 + len(m.starts)) % len(m.starts)
	m.checks[i] = int32(checks)
	m.checksSum += int64(checks)
	m.cum.sensorSum += int64(checks)
}

// sensorChecksPerS is the sensor check rate over the window: the checks of
// every tick but the oldest, over the window's span.
func (m *metrics) sensorChecksPerS() float64 {
	_, span := m.tickHz()
	if span <= 0 {
		return 0
	}
	oldest := (m.startNext - m.startN + len(m.starts)) % len(m.starts)
	return float64(m.checksSum-int64(m.checks[oldest])) / span
}

// tickHz is the actual tick rate over the window and the window's span.
func (m *metrics) tickHz() (hz, windowS float64) {
	if m.startN < 2 {
		return 0, 0
	}
	newest := m.starts[(m.startNext-1+len(m.starts))%len(m.starts)]
	oldest := m.starts[(m.startNext-m.startN+len(m.starts))%len(m.starts)]
	span := newest.Sub(oldest).Seconds()
	if span <= 0 {
		return 0, 0
	}
	return float64(m.startN-1) / span, span
}

// windowStart is the start of the oldest tick in the window (ok false
// before the first tick): the CPU window figures cover the same span as the
// tick percentiles.
func (m *metrics) windowStart() (time.Time, bool) {
	if m.startN == 0 {
		return time.Time{}, false
	}
	return m.starts[(m.startNext-m.startN+len(m.starts))%len(m.starts)], true
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func phaseOf(w *stats.Window) report.Phase {
	s := w.Summary()
	return report.Phase{Min: s.Min, Mean: s.Mean, P50: s.P50, Max: s.Max, P95: s.P95, P99: s.P99}
}

// restartTickStats empties the tick windows (the tick time, its phases,
// the serialize split, the tick starts and the sensor checks): the
// figures count from the next tick on.
func (m *metrics) restartTickStats() {
	for _, w := range m.phase {
		w.Reset()
	}
	m.tick.Reset()
	m.buildW.Reset()
	m.sendW.Reset()
	m.startNext, m.startN = 0, 0
	clear(m.checks)
	m.checksSum = 0
}

// warmup is [metrics] tick_stats_warmup_s: the tick statistics restart
// once, after from the first peer's join. It belongs to the loop.
type warmup struct {
	after     time.Duration // 0: off
	firstJoin time.Time
	done      bool
}

// joined notes a peer's join; the first one starts the warm-up.
func (w *warmup) joined(now time.Time) {
	if w.firstJoin.IsZero() {
		w.firstJoin = now
	}
}

// due reports, once, that the warm-up has ended at now.
func (w *warmup) due(now time.Time) bool {
	if w.after <= 0 || w.done || w.firstJoin.IsZero() || now.Sub(w.firstJoin) < w.after {
		return false
	}
	w.done = true
	return true
}

// pending is the metrics file's warmup_pending: nil without a warm-up,
// else whether the tick statistics still hold warm-up ticks.
func (w *warmup) pending() *bool {
	if w.after <= 0 {
		return nil
	}
	return ptr(!w.done)
}

// snapshotInputs are the figures the loop knows that metrics does not.
type snapshotInputs struct {
	peers, entities, contacts int
	dropped                   int64
	transport                 string
	workers, budget           int
	compress                  bool
	faults                    []string
	rt                        realtime
	gov                       *governor
	world                     worldFigures
	cc                        *congestion // nil: no controller ran (every peer at the tick rate)
}

// worldFigures are the populated world's figures at write time.
type worldFigures struct {
	contacts, fused, projectiles int
	weapons                      WeaponCounts
	ai                           [numControllers]int
}

// build assembles the ServerTick. Its cumulative block's histograms and
// maps are the metrics' own (cumOut): the ServerTick is for encoding
// before the next build, not for keeping.
func (m *metrics) build(in snapshotInputs) *report.ServerTick {
	if in.gov == nil {
		in.gov = newGovernor(false, 1000/float64(TickHz)) // nothing shed
	}
	if in.cc == nil {
		in.cc = newCongestion(false) // every peer at the tick rate
	}
	st := m.header(&in)
	m.putPhases(st)
	m.putCounters(st, &in)
	putGovernor(st, in.gov)
	m.putWorld(st, &in.world)
	build, send := phaseOf(m.buildW), phaseOf(m.sendW)
	st.SerializeBuildMs, st.SerializeSendMs = &build, &send
	st.Cumulative = m.cumulative(in)
	m.putWire(st)
	return st
}

// header starts the ServerTick with the windowed tick rate and the run-wide
// figures (size, load, memory, the congestion watermarks).
func (m *metrics) header(in *snapshotInputs) *report.ServerTick {
	hz, span := m.tickHz()
	return &report.ServerTick{
		SchemaVersion: report.ServerTickSchemaVersion,
		TickHz:        hz,
		TicksSampled:  int64(m.tick.Len()),
		TicksTotal:    m.ticksTotal,
		WindowS:       span,
		Peers:         in.peers,
		Entities:      in.entities,
		LoadFactor:    in.gov.loadFactor(),
		InterestScale: in.gov.interestScale(),
		DroppedTicks:  in.dropped,
		RSSKB:         readRSSKB(),
		RSSStartupKB:  m.rssStartupKB,
		// The congestion controller's run-long watermarks (congestion.go).
		CongestionMinSendHz:       in.cc.minHz,
		CongestionRecoveredSendHz: in.cc.recoveredHz,
		CongestionMaxLoss:         in.cc.maxLoss,
		Transport:                 in.transport,
	}
}

// putPhases adds the windowed tick time and its phases, so a slow run
// shows which part of the tick grew.
func (m *metrics) putPhases(st *report.ServerTick) {
	st.TickMs = phaseOf(m.tick)
	st.MaintenanceMs = phaseOf(m.phase[PhaseMaintenance])
	st.SensingMs = phaseOf(m.phase[PhaseSensing])
	st.IntegrateMs = phaseOf(m.phase[PhaseIntegrate])
	st.AIMs = phaseOf(m.phase[PhaseAI])
	st.CollisionMs = phaseOf(m.phase[PhaseCollision])
	st.SerializeMs = phaseOf(m.phase[PhaseSerialize])
	st.OtherMs = phaseOf(m.phase[PhaseOther])
}

// putCounters adds the run's event counts and the configuration the loop
// ran with, which a reader needs to interpret the timings.
func (m *metrics) putCounters(st *report.ServerTick, in *snapshotInputs) {
	st.MalformedDropped = m.malformed
	st.InputsAccepted = ptr(m.inputsAccepted)
	st.Kicked = m.kicked
	st.KickLogsSuppressed = m.kickLogsSuppressed
	st.Refused = m.refused
	st.SlowTicks = m.slowTicks
	st.Faults = append([]string{}, in.faults...)
	st.IdleTimeouts = m.idle
	st.CollisionContacts = in.contacts
	st.SimWorkerThreads = in.workers
	st.SnapshotBudgetBytes = in.budget
	st.CompressSnapshots = in.compress
	st.RealtimePriority, st.RealtimePriorityError = ptr(in.rt.prio), in.rt.why
}

// putGovernor adds the overrun governor's state: what it shed explains a
// run whose tick times look healthy.
func putGovernor(st *report.ServerTick, g *governor) {
	st.OverrunGovernor, st.LoadFactorMin, st.DegradedTicks = g.enabled, g.minLF, g.engaged
	st.SnapshotHz, st.AIStride, st.GovernorTickEWMAMs = g.snapshotHz(TickHz), g.aiStride(), g.ewmaMs
}

// putWorld adds the populated world's figures, with the sensor check rate
// beside the contacts it produced.
func (m *metrics) putWorld(st *report.ServerTick, wf *worldFigures) {
	st.Contacts, st.SensorChecksPerS, st.ProjectilesLive = wf.contacts, m.sensorChecksPerS(), wf.projectiles
	st.FusedContacts = wf.fused
	st.ShotsFiredTotal, st.HitsTotal = wf.weapons.ShotsFired, wf.weapons.Hits
	st.StoresReleasedTotal, st.DespawnsTotal = wf.weapons.StoresReleased, wf.weapons.Despawns
	st.AIByController = &report.AIByController{Loiter: wf.ai[CtlLoiter], Pursuit: wf.ai[CtlPursuit], Patrol: wf.ai[CtlPatrol]}
}

// putWire adds the kept wire rates; before the first sample they stay
// zero here and encodeMetrics leaves them out, since unknown is not zero.
func (m *metrics) putWire(st *report.ServerTick) {
	if !m.wireTaken {
		return
	}
	sec := m.wire.seconds
	st.WireOutKBs = m.wire.bytesOut / sec / 1000
	st.WireInKBs = m.wire.bytesIn / sec / 1000
	st.WireOutPPS = m.wire.dgramsOut / sec
	st.WirePeers = m.wirePeers
	if m.wirePeers > 0 {
		st.WireOutKBsPerClient = st.WireOutKBs / float64(m.wirePeers)
	}
}

// cumulative is the file's cumulative block from the loop's state; the
// process figures (CPU, GC, the send queue's mark) are added by the
// server's diagnostics at write time.
func (m *metrics) cumulative(in snapshotInputs) *report.Cumulative {
	c, o := &m.cum, &m.cumOut
	if o.sums == nil {
		o.sums, o.phases = map[string]float64{}, map[string]*stats.Buckets{}
	}
	c.tick.SnapshotInto(&o.tick)
	out := &report.Cumulative{
		Ticks:            m.ticksTotal,
		TickMs:           &o.tick,
		PhaseMsSum:       o.sums,
		PhaseMs:          o.phases,
		SlowTicks:        ptr(m.slowTicks),
		DroppedTicks:     ptr(in.dropped),
		DegradedTicks:    ptr(in.gov.engaged),
		SensorChecks:     ptr(c.sensorSum),
		InputsAccepted:   ptr(m.inputsAccepted),
		WireOutBytes:     ptr(c.wire.bytesOut),
		WireInBytes:      ptr(c.wire.bytesIn),
		WireOutDatagrams: ptr(c.wire.dgramsOut),
		WireS:            ptr(c.wire.seconds),
		PeerS:            ptr(c.peerS),
	}
	for i := range phaseNames {
		c.phase[i].SnapshotInto(&o.phase[i])
		out.PhaseMsSum[phaseKeys[i]] = c.phaseSum[i]
		out.PhaseMs[phaseKeys[i]] = &o.phase[i]
	}
	return out
}

// metricsEncoder renders the metrics document into buffers it keeps from
// one write to the next. The document is tens of KB and written up to ten
// times a second; encoded into fresh buffers (json.Marshal, then an
// indented copy) and with fresh histogram snapshots, each write allocated
// ~51 KB, and an 8-client server writing ten times a second collected
// garbage every ~2 s. Now 12-14 KB, a cycle every ~6 s. It belongs to the
// loop.
type metricsEncoder struct {
	compact bytes.Buffer
	enc     *json.Encoder
	out     []byte
}

// encode renders st, leaving out the omitted fields (the omit_metrics
// fault): a missing field must stay missing, never become a zero. The
// bytes it returns are valid until the next call.
func (e *metricsEncoder) encode(st *report.ServerTick, wireTaken bool, omit []string) ([]byte, error) {
	if !wireTaken {
		// No wire sample yet (the file written at bind): the rates are
		// unknown, not zero.
		omit = append(omit[:len(omit):len(omit)], wireFields...)
	}
	if e.enc == nil {
		e.enc = json.NewEncoder(&e.compact)
	}
	e.compact.Reset()
	if err := e.enc.Encode(st); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	b := bytes.TrimSuffix(e.compact.Bytes(), []byte{'\n'})
	if len(omit) > 0 {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
		for _, k := range omit {
			delete(raw, k)
		}
		var err error
		if b, err = json.Marshal(raw); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	e.out = append(report.AppendIndent(e.out[:0], b, metricsIndentDepth), '\n')
	return e.out, nil
}

// metricsIndentDepth is how deep the metrics document is indented: its
// fields, the cumulative block's, and each phase of it on lines of their
// own; a histogram stays on its line. Indented all the way down, its
// buckets one number a line, the document was 107 KB where this is 35:
// every swarm reads it once a second, beside the server it measures.
const metricsIndentDepth = 3

var wireFields = []string{"wire_out_kbs", "wire_in_kbs", "wire_out_pps", "wire_peers", "wire_out_kbs_per_client"}

// readRSSKB is the resident set size from /proc/self/statm, 0 when the
// platform has no such file (the metrics contract's "unavailable").
func readRSSKB() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize()) / 1024
}

func ptr[T any](v T) *T { return &v }
