// Package server is scalegate's reference game server.
//
// It runs a 60 Hz authoritative tick over a populated world (player
// aircraft flown from their Input plus test-spawned AI loiterers), with
// per-peer snapshots under a byte budget, admission control, and the
// metrics file every gate reads. It is the worked example of the contract a
// team's own server implements (docs/protocol.md, docs/metrics.md);
// docs/server.md describes its behaviour and measured figures.
//
// One goroutine owns the loop, the transport host and the world; the
// data-parallel passes (AI, integration, interest, snapshot build) borrow a
// worker pool inside a tick and hand everything back before it ends.
package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
	"github.com/scalegate/scalegate/internal/guard/boundedhttp"
	"github.com/scalegate/scalegate/internal/load/held"
	"github.com/scalegate/scalegate/internal/load/trace"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reference/admin"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// BindHost is the address the server binds by default ([server] bind):
// load traffic stays on loopback unless the config says otherwise.
const BindHost = "127.0.0.1"

// slotHeadroom is how many transport slots exist beyond max_peers, so a
// peer over the limit can still be told why (Refuse(server_full)) instead
// of being dropped silently by the transport.
const slotHeadroom = 64

// maxClientMessage is the largest message a client sends: a Join with two
// strings of proto.MaxString bytes (type, client_index, two length-prefixed
// strings). Input is 25 bytes.
const maxClientMessage = 1 + 4 + 2*(1+proto.MaxString)

// maxRecvMessage is the largest message the transport reassembles from a
// peer. A little above maxClientMessage, so a slightly oversize message
// still reaches the decoder and is struck as malformed; anything larger is
// dropped by the transport before it allocates it (ENet's default let one
// peer make the server allocate 32 MiB and keep it).
const maxRecvMessage = 1 << 10

// maxRecvWaiting bounds the bytes one peer may have received but not yet
// delivered: a client sends one Input a tick and the server drains every
// tick, so 32 messages' worth is far above any honest backlog.
const maxRecvWaiting = 32 * maxRecvMessage

// peerDelayTicks is how often a joined peer is sent PeerDelay (2 Hz).
const peerDelayTicks = 30

// shutdownGrace bounds how long shutdown waits for peers to take their
// Notice(shutdown) and disconnect.
const shutdownGrace = 2 * time.Second

// ListenError is a failure to bind the configured port.
type ListenError struct {
	Addr string
	Err  error
}

// Error names the address that could not be bound.
func (e *ListenError) Error() string {
	return fmt.Sprintf("cannot listen on %s (port in use or not permitted): %v", e.Addr, e.Err)
}

// Unwrap returns the transport's error.
func (e *ListenError) Unwrap() error { return e.Err }

// MetricsPathError is a metrics file that cannot be written where the
// config ([metrics] tick_json_path, or --metrics-json) puts it.
type MetricsPathError struct {
	Path string
	Err  error
}

// Error names the path and the key that set it.
func (e *MetricsPathError) Error() string {
	return fmt.Sprintf("metrics file %s ([metrics] tick_json_path / --metrics-json) cannot be written: %v", e.Path, e.Err)
}

// Unwrap returns the file system's error.
func (e *MetricsPathError) Unwrap() error { return e.Err }

// Server is one running reference server.
type Server struct {
	cfg    Config
	log    *log.Logger
	host   transport.Host
	sim    *Sim
	met    *metrics
	pacer  *Pacer
	leak   *leaker
	churn  *churner
	decay  *decayer
	faults []string
	pad    []byte
	// padInBudget: the pad is paid for out of the snapshot budget
	// (fatten_records_bytes), so fewer records fit and the bytes stay put.
	padInBudget bool
	reported    string // the transport named in Welcome and the metrics file
	// rt is what became of [world] realtime_priority, for the metrics
	// file: set by Run once the loop's thread is pinned.
	rt realtime

	peers   map[transport.PeerID]*peer
	viewers []*Viewer
	vpeers  []*peer // vpeers[i] owns viewers[i]
	gov     *governor
	// due / duePeers: the viewers (and their peers) sent a snapshot this
	// tick — all of them unless the governor sheds the snapshot rate.
	due      []*Viewer
	duePeers []*peer
	// sendOut is the tick's sending so far: the loop goroutine's time in
	// Host.Send and Flush, and the sends since the last flush (sendBuilt).
	sendOut   time.Duration
	unflushed int
	sendBuilt func(i int) // s.sendOne, bound once: Ready of every build
	// cc is the per-peer congestion controller (congestion.go).
	cc *congestion
	// dfault is the delivery faults (snapshots_then_silent,
	// snapshot_interval_ms); warm the tick statistics' warm-up.
	dfault deliveryFault
	warm   warmup
	admit  admission
	joins  int64
	input  inputScratch
	rec    *trace.Recorder // nil: [trace] input_trace_dir unset
	trRec  trace.Record    // reused: a fresh one per Input would escape
	// traceErrsLogged is the recorder error count already logged.
	traceErrsLogged int64
	// traceMaxBytes is [trace] max_file_bytes, for a recorder started by
	// the admin trace-start command.
	traceMaxBytes int64

	closing   bool // shutdown has begun
	tick      uint32
	started   time.Time
	lastWrite time.Time
	menc      metricsEncoder // the metrics document's buffers
	http      *metricsHTTP   // nil without [metrics] http_listen
	prom      *promExport    // nil without [metrics] prometheus_listen
	// wirePending sums the per-tick wire samples taken for prom until the
	// next 30-tick interval of the metrics file.
	wirePending wireAcc
	lastSlow    time.Time
	slowQuiet   int64 // slow ticks not logged since the last line
	// lastKickLog and kickQuiet rate-limit the kick log line (logKick).
	lastKickLog time.Time
	kickQuiet   int64
	diag        *diag
	msgBuf      []byte
	// faultScope is [faults] only_on_transport ("" = unscoped), for the
	// startup log.
	faultScope string

	// The admin channel: its socket (nil when off), the commands waiting
	// for the loop, and how reload re-reads the config.
	adm        *admin.Server
	adminq     chan adminJob
	reloadPath string
	reload     Reloader

	// stdout is where the server's own output goes (the stdout_flood
	// fault writes there); the log writer unless SetStdout says otherwise.
	stdout io.Writer
}

// SetStdout sets where the server writes its own output (before Run).
func (s *Server) SetStdout(w io.Writer) { s.stdout = w }

// New builds the world for cfg. Log lines go to logw.
func New(cfg Config, logw io.Writer) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	scope := cfg.Faults.OnlyOnTransport
	cfg.Faults = cfg.Faults.scoped(cfg.Server.Transport)
	sim, err := NewSim(&cfg, cfg.Workers())
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:    cfg,
		log:    log.New(logw, "scalegate serve: ", log.LstdFlags|log.Lmicroseconds),
		stdout: logw,
		sim:    sim,
		met:    newMetrics(),
		leak:   newLeaker(&cfg.Faults),
		decay:  newDecayer(&cfg.Faults),
		faults: cfg.Faults.Active(),
		peers:  map[transport.PeerID]*peer{},
		admit:  newAdmission(&cfg.Security),
		churn:  newChurner(&cfg.Faults),
		diag:   newDiag(time.Now()),
		adminq: make(chan adminJob, adminQueue),
		gov:    newGovernor(cfg.World.OverrunGovernor, 1000/float64(TickHz)),
		cc:     newCongestion(cfg.Network.CongestionControl && !cfg.Faults.DisableCongestionControl),
		dfault: newDeliveryFault(&cfg.Faults),
		warm:   warmup{after: time.Duration(cfg.Metrics.TickStatsWarmupS * float64(time.Second))},

		traceMaxBytes: cfg.Trace.MaxFileBytes,
		faultScope:    scope,
	}
	s.sendBuilt = s.sendOne
	s.cc.stuck = cfg.Faults.CongestionStuckAtFloor
	if dir := cfg.Trace.InputTraceDir; dir != "" {
		if s.rec, err = trace.NewRecorder(dir, TickHz, cfg.Trace.MaxFileBytes); err != nil {
			sim.Close()
			return nil, &ConfigError{Key: "trace.input_trace_dir", Msg: err.Error()}
		}
	}
	if n := cfg.Faults.InflateSnapshotBytes; n > 0 {
		s.pad = padBytes(n)
	}
	if n := cfg.Faults.FattenRecordsBytes; n > 0 {
		s.pad, s.padInBudget = padBytes(n), true
	}
	return s, nil
}

// Listen checks that the metrics file can be written, then binds the admin
// socket (when configured) and the transport on 127.0.0.1 and the
// configured port. The check comes first: a server that cannot write its
// metrics file can never become ready, and must fail before it claims to
// listen.
func (s *Server) Listen() error {
	if err := s.checkMetricsPath(); err != nil {
		return err
	}
	addr := net.JoinHostPort(s.cfg.Server.Bind, strconv.Itoa(s.cfg.Server.Port))
	b, err := transport.Lookup(s.cfg.Server.Transport)
	if err != nil {
		return err
	}
	if err := s.listenAdmin(); err != nil {
		return err
	}
	h, err := b.Listen(addr, s.transportOptions())
	if err != nil {
		s.closeAdmin()
		return &ListenError{Addr: addr, Err: err}
	}
	if err := s.listenMetricsHTTP(); err != nil {
		h.Close()
		s.closeAdmin()
		return err
	}
	s.attach(h)
	if err := s.listenPrometheus(); err != nil {
		if s.http != nil {
			s.http.stop()
		}
		h.Close()
		s.closeAdmin()
		return err
	}
	return nil
}

// transportOptions are the host's limits: slots beyond max_peers so a full
// server can still refuse a connect politely, and the [security] connect
// guard.
func (s *Server) transportOptions() transport.Options {
	sec := &s.cfg.Security
	return transport.Options{
		MaxPeers:        s.cfg.Server.MaxPeers + slotHeadroom,
		RecvBufferBytes: 4 << 20,
		SendBufferBytes: 4 << 20,
		MaxRecvMessage:  maxRecvMessage,
		MaxRecvWaiting:  maxRecvWaiting,
		ConnectGuard: transport.ConnectGuard{
			PerSource: sec.SourceConnectLimitCount,
			Window:    seconds(sec.SourceConnectLimitWindowS),
			HalfOpen:  seconds(sec.HalfOpenTimeoutS),
		},
	}
}

// listenMetricsHTTP serves the metrics document when [metrics] http_listen
// asks for it, warning when the address exposes it beyond this machine.
// On failure nothing is left listening; the caller releases the rest.
func (s *Server) listenMetricsHTTP() error {
	a := s.cfg.Metrics.HTTPListen
	if a == "" {
		return nil
	}
	m, err := startMetricsHTTP(a)
	if err != nil {
		return err
	}
	s.http = m
	if boundedhttp.AllInterfaces(m.addr()) {
		s.log.Printf("metrics over HTTP on every interface (%s): anyone who can reach this machine can read them", m.addr())
	}
	return nil
}

// listenPrometheus serves the Prometheus exposition when [metrics]
// prometheus_listen asks for it. On failure nothing is left listening; the
// caller releases the rest.
func (s *Server) listenPrometheus() error {
	a := s.cfg.Metrics.PrometheusListen
	if a == "" {
		return nil
	}
	p := newPromExport(s.reported)
	if err := p.listen(a, defaultPromLimits); err != nil {
		return err
	}
	s.prom = p
	return nil
}

// PrometheusURL is the URL of the Prometheus exposition, "" without
// [metrics] prometheus_listen.
func (s *Server) PrometheusURL() string { return s.prom.url() }

// MetricsURL is the URL the metrics document is served at, "" without
// [metrics] http_listen.
func (s *Server) MetricsURL() string {
	if s.http == nil {
		return ""
	}
	return "http://" + s.http.addr() + MetricsPath
}

// attach makes h the server's host (tests attach an in-memory one).
func (s *Server) attach(h transport.Host) {
	s.host = h
	s.reported = h.Backend()
	if s.cfg.Faults.ReportTransport != "" {
		s.reported = s.cfg.Faults.ReportTransport
	}
	s.started = time.Now()
	s.met.rssStartupKB = readRSSKB()
	s.logStartup()
}

// Addr is the bound address ("127.0.0.1:PORT").
func (s *Server) Addr() string { return s.host.Addr() }

// Backend is the transport actually spoken (never the faulted name).
func (s *Server) Backend() string { return s.host.Backend() }

func (s *Server) logStartup() {
	c := &s.cfg
	s.log.Printf("transport=%s workers=%d max_peers=%d budget=%dB compress=%v interest=%.0fm cell=%.0fm ai=%d spread=%.1fkm agl=%.0fm",
		s.host.Backend(), s.sim.Workers(), c.Server.MaxPeers, c.World.SnapshotBudgetBytes, c.Network.CompressSnapshots,
		c.World.InterestRadiusM, c.CellSize(), c.World.TestSpawnAICount, c.World.TestSpawnSpreadKm, c.World.TestSpawnAGLM)
	s.log.Printf("world: ai_mix=%q projectile_rate=%g/s ttl=%gs sensor_check_hz=%g",
		c.World.TestSpawnAIMix, c.World.TestProjectileRate, c.World.TestProjectileTTLS, c.World.SensorCheckHz)
	if s.rec != nil {
		s.log.Printf("recording every peer's accepted Input to %s (trace_peer<id>_<n>.flit)", s.rec.Dir())
	}
	if s.faultScope != "" {
		s.log.Printf("faults scoped to transport %s (only_on_transport): %d on for this server (%s)", s.faultScope, len(s.faults), c.Server.Transport)
	}
	for _, f := range s.faults {
		s.log.Printf("FAULT ENABLED: %s (a deliberate defect for proving gates bite; docs/faults.md)", f)
	}
}

// checkMetricsPath creates and removes a temp file beside the metrics file,
// as each atomic write will, and refuses a directory in the file's place
// (the rename would fail).
func (s *Server) checkMetricsPath() error {
	path := s.cfg.Metrics.TickJSONPath
	if path == "" {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return &MetricsPathError{Path: path, Err: err}
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return &MetricsPathError{Path: path, Err: err}
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return &MetricsPathError{Path: path, Err: errors.New("it is a directory")}
	}
	return nil
}

// WriteMetrics writes the metrics file and publishes the document on the
// HTTP endpoint now (a no-op without either). It reads state the tick loop
// owns, so it is for before Run (as `scalegate serve` calls it, so the
// file exists when the address is announced) or after it; while Run runs,
// Run writes on its own interval.
func (s *Server) WriteMetrics() error {
	path := s.cfg.Metrics.TickJSONPath
	if path == "" && s.http == nil {
		return nil
	}
	st := s.met.build(snapshotInputs{cc: s.cc,
		peers: len(s.viewers), entities: s.sim.World.Len(), contacts: s.sim.Contacts,
		dropped: s.droppedTicks(), transport: s.reported, workers: s.sim.Workers(),
		budget: s.cfg.World.SnapshotBudgetBytes, compress: s.cfg.Network.CompressSnapshots, faults: s.faults, rt: s.rt,
		gov: s.gov,
		world: worldFigures{contacts: s.sim.ContactEntries, fused: s.sim.FusedEntries, projectiles: s.sim.ProjectilesLive(),
			weapons: s.sim.Weapons, ai: s.sim.AIByController()},
	})
	if g, ok := s.host.(transport.Guarded); ok {
		gs := g.GuardStats()
		dropped, reset := int64(gs.ConnectsDropped), int64(gs.HalfOpenReset)
		st.ConnectAttemptsDropped, st.HalfOpenReset = &dropped, &reset
	}
	s.logTraceErrors()
	if s.rec != nil {
		ts := s.rec.Stats()
		st.TraceRecords, st.TraceFiles, st.TraceErrors = &ts.Records, &ts.Files, &ts.Errors
	}
	now := time.Now()
	if path != "" {
		s.honourResetRequest(path)
	}
	s.fillDiag(st, now)
	st.WarmupPending = s.warm.pending()
	b, err := s.menc.encode(st, s.met.wireTaken, s.cfg.Faults.OmitMetrics)
	if err != nil {
		return err
	}
	s.lastWrite = now
	if s.http != nil {
		// The endpoint serves the document after the encoder's buffer
		// has moved on: it gets its own copy.
		s.http.publish(bytes.Clone(b))
	}
	if path == "" {
		return nil
	}
	return report.WriteFileAtomic(path, b)
}

// seconds converts a config value in seconds.
func seconds(v float64) time.Duration { return time.Duration(v * float64(time.Second)) }

func (s *Server) droppedTicks() int64 {
	if s.pacer == nil {
		return 0
	}
	return s.pacer.Dropped()
}

// Run ticks until ctx is done, then shuts down: the admin channel closes,
// Notice(shutdown) goes to every peer, a bounded wait for them to go, a
// final metrics write. It returns nil on a clean shutdown. The admin
// channel's goroutines run for as long as Run does.
func (s *Server) Run(ctx context.Context) error {
	defer s.sim.Close()
	defer s.host.Close()
	if s.http != nil {
		defer s.http.stop()
	}
	if s.prom != nil {
		defer s.prom.stop()
	}
	defer s.closeAdmin()
	if s.adm != nil {
		s.adm.Serve(s.handleAdmin)
	}
	if rate := s.cfg.Faults.StdoutFloodMBPerS; rate > 0 {
		defer s.startFlood(rate)()
	}
	unpin, prio, err := s.sim.PinCaller()
	defer unpin()
	s.rt = realtimeOf(s.cfg.World.RealtimePriority, prio, err, s.sim.Pinned())
	if s.rt.why != "" {
		s.log.Printf("world.realtime_priority=%d not applied, the sim workers run at normal priority: %s", s.cfg.World.RealtimePriority, s.rt.why)
	} else if prio > 0 {
		s.log.Printf("sim workers pinned to CPUs %v under SCHED_FIFO at priority %d", s.sim.PinnedCPUs(), prio)
	}
	period := time.Second / TickHz
	s.pacer = NewPacer(time.Now(), period)
	interval := time.Duration(s.cfg.Metrics.TickJSONIntervalMs) * time.Millisecond
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := time.Now()
		if err := s.crashDue(now); err != nil {
			return err
		}
		if wait := s.pacer.Next(now); wait > 0 {
			if !s.waitTick(ctx, t, wait) {
				return s.shutdown()
			}
			continue
		}
		late := now.Sub(s.pacer.Due())
		s.runTick(now, late)
		s.pacer.Ran()
		if time.Since(s.lastWrite) >= interval {
			s.writeInterval()
		}
		s.drainAdmin()
		if ctx.Err() != nil {
			return s.shutdown()
		}
	}
}

// floodStopWait bounds how long Run waits for the flood goroutine after
// stopping it: a write blocked on a full pipe cannot be interrupted, and
// the process is about to exit, which ends it.
const floodStopWait = 2 * time.Second

// startFlood runs the stdout_flood_mb_per_s fault on its own goroutine
// and returns its stop: cancel, then wait for it (bounded).
func (s *Server) startFlood(rate float64) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		flood(ctx, s.stdout, rate)
	}()
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(floodStopWait):
		}
	}
}

// crashDue is the exit_after_s fault: once its time since the bind has
// come, Run returns at once without the shutdown (no Notice(shutdown) to
// the peers, no final metrics write), as a crashed process would.
func (s *Server) crashDue(now time.Time) error {
	d := s.cfg.Faults.ExitAfterS
	if d <= 0 {
		return nil
	}
	if up := now.Sub(s.started); up >= time.Duration(d*float64(time.Second)) {
		s.log.Printf("FAULT exit_after_s=%g: stopping dead %.1fs after the bind (a deliberate crash)", d, up.Seconds())
		return &CrashFault{After: up}
	}
	return nil
}

// fillDiag adds the why-was-it-slow figures to a metrics write and starts
// the next write window.
func (s *Server) fillDiag(st *report.ServerTick, now time.Time) {
	if pct, ok := s.diag.cpuWindow(now); ok {
		st.CPUPct = &pct
	}
	if since, ok := s.met.windowStart(); ok {
		if mean, peak, ok := s.diag.hold.window(since); ok {
			st.CPUPctMean, st.CPUPctMax = &mean, &peak
		}
	}
	st.GCPauseMs = s.diag.gcPauses()
	st.GCCount = int64(s.diag.gcCount())
	st.SendQueueMax = s.diag.takeQueueMax()
	st.SlowSends = s.diag.slowSends
	c := st.Cumulative
	c.UptimeS = now.Sub(s.started).Seconds()
	c.LoadFactorS = ptr(s.met.loadFactorSAt(now))
	if cpu, ok := cpuTime(); ok {
		c.CPUS = ptr(cpu.Seconds())
	}
	c.GCCount, c.GCPauseMs, c.SlowSends = ptr(st.GCCount), s.diag.pauseBuckets(), ptr(s.diag.slowSends)
	c.SendQueueHWM, c.MarksReset = ptr(int64(s.diag.queueHWM)), ptr(s.diag.marksReset)
}

// resetRequestLimit bounds the reset request file's read: one number.
const resetRequestLimit = 64

// honourResetRequest reads the metrics file's reset request (the file
// named as the metrics file plus report.ResetRequestSuffix) and restarts
// the marks when it asks for a reset the server has not yet made. A
// missing or unreadable request is no request; the file is refused unless
// it is a regular file, so a FIFO there cannot stall the loop.
func (s *Server) honourResetRequest(path string) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	b, err := boundedfile.ReadFile(ctx, path+report.ResetRequestSuffix, resetRequestLimit)
	if err != nil {
		return
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err == nil && n > s.diag.marksReset {
		s.diag.resetMarks(n)
	}
}

// tickDiag is one tick's share of the diagnostics, for its SLOW TICK line.
type tickDiag struct {
	cpu       time.Duration // process CPU during the tick
	cpuOK     bool
	gcCycles  uint64
	queue     int   // deepest backlog after the tick's flush
	slowSends int64 // slow sends during the tick
}

// runTick is one tick: drain and admit, simulate, sense, build and send.
func (s *Server) runTick(start time.Time, late time.Duration) {
	var ph [numPhases]time.Duration
	t := timer{at: start, sum: &ph}
	s.met.integrateLoadFactor(start, s.gov.loadFactor())
	s.diag.sampleCPU(start)
	base := s.baseline()
	s.sim.Warm()
	s.service(start)
	s.applyDelayed(start)
	s.maintain(start)
	t.lap(PhaseMaintenance)
	s.sim.Tick, s.sim.AIStride, s.sim.InterestScale = s.tick, s.gov.aiStride(), s.gov.interestScale()
	s.sim.Simulate(&t)
	s.pickDue(start)
	s.sim.Sense(&t)
	build, send := s.serialize(&t)
	td := tickDiag{queue: s.diag.sampleQueues(s.host, s.vpeers)}
	s.injectTickDelay(start)
	total := time.Since(start)
	ph[PhaseOther] = otherPhase(&ph, total)
	s.gov.observe(ms(total))
	s.recordTick(start, total, &ph, build, send)
	// A slow tick is counted before the exposition is published: published
	// first, the Prometheus counter lagged the file's slow_ticks by this
	// tick until the next one.
	if ms(total) > s.cfg.SlowTick() {
		s.tickDelta(&base, &td)
		s.slowTick(total, late, &ph, build, send, &td)
	}
	s.sampleWireAndPublish(total, &ph)
	s.tick++
}

// tickBaseline is the process state a slow tick's diagnostics are measured
// against; it is taken at every tick's start because whether the tick is
// slow is known only at its end.
type tickBaseline struct {
	cpu       time.Duration
	cpuOK     bool
	gcCycles  uint64
	slowSends int64
}

// baseline reads the process state at a tick's start (after the CPU
// sample, so the tick's own figures do not include it).
func (s *Server) baseline() tickBaseline {
	cpu, ok := cpuTime()
	return tickBaseline{cpu: cpu, cpuOK: ok, gcCycles: s.diag.gcCount(), slowSends: s.diag.slowSends}
}

// tickDelta fills td with what the process spent since base, read only for
// a slow tick so an ordinary one pays no second CPU clock read.
func (s *Server) tickDelta(base *tickBaseline, td *tickDiag) {
	cpu1, ok := cpuTime()
	td.cpu, td.cpuOK = cpu1-base.cpu, ok && base.cpuOK
	td.gcCycles, td.slowSends = s.diag.gcCount()-base.gcCycles, s.diag.slowSends-base.slowSends
}

// nextDue is when the tick after this one is due (the zero time outside
// Run's loop, as in tests that drive ticks themselves).
func (s *Server) nextDue() time.Time {
	if s.pacer == nil {
		return time.Time{}
	}
	return s.pacer.Following()
}

// serialize builds and sends the due snapshots as the serialize phase,
// returning its split: the slow-tick line and the metrics file report the
// build and the send apart. The loop goroutine sends each snapshot once it
// is built (sendOne), while the other workers still build, so the split is
// of time, not of a sequence: send is the loop goroutine's time in the
// transport, build the rest of the phase.
func (s *Server) serialize(t *timer) (build, send time.Duration) {
	start := t.at
	s.sendOut, s.unflushed = 0, 0
	s.stampAcks()
	s.buildSnapshots()
	s.sim.Cool(s.nextDue()) // the tick's last pass: the rest is this goroutine's alone
	s.finishSends()
	t.lap(PhaseSerialize)
	total := t.at.Sub(start)
	return max(total-s.sendOut, 0), min(s.sendOut, total)
}

// injectTickDelay adds the time the extra_tick_ms and slow-stretch faults
// owe (spun or slept, as delay_mode says), inside the tick's measured time
// so the gate sees a slower server.
func (s *Server) injectTickDelay(start time.Time) {
	f := &s.cfg.Faults
	if d := f.ExtraTickMs; d > 0 {
		delayTick(f.DelayMode, time.Duration(d*float64(time.Millisecond)))
	}
	if d := f.SlowStretch.extraAt(start.Sub(s.started)); d > 0 {
		delayTick(f.DelayMode, d)
	}
}

// otherPhase is the tick time no named phase accounts for, so the phases
// sum to the tick's total.
func otherPhase(ph *[numPhases]time.Duration, total time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ph[:PhaseOther] {
		sum += d
	}
	return max(total-sum, 0)
}

// recordTick adds the tick to the metrics, restarting the tick statistics
// first when the warm-up ends on it so this tick is the first one counted.
func (s *Server) recordTick(start time.Time, total time.Duration, ph *[numPhases]time.Duration, build, send time.Duration) {
	if s.warm.due(start) {
		// The connect ramp and the warm-up are over: the figures the gate
		// reads start here ([metrics] tick_stats_warmup_s).
		s.met.restartTickStats()
	}
	s.met.record(start, total, ph, build, send)
	s.met.recordSensing(s.sim.SensorChecks)
}

// sampleWireAndPublish takes the tick's wire sample and, with Prometheus on,
// publishes the exposition: the exporter needs the traffic every tick, the
// metrics file at least every wireSampleTicks and at every write
// (takeWireSample).
func (s *Server) sampleWireAndPublish(total time.Duration, ph *[numPhases]time.Duration) {
	if s.prom != nil {
		// The Prometheus byte counters take the traffic every tick, so a
		// rate over a scrape window is exact to a tick at its edges; the
		// metrics file keeps longer intervals, the same samples summed.
		r := s.host.WireRates()
		s.prom.addWire(r)
		s.wirePending.add(r)
		s.prom.publish(s, total, ph)
	}
	if s.tick%wireSampleTicks == 0 {
		s.takeWireSample()
	}
}

// writeInterval is the loop's periodic write: the wire interval open since
// the last sample is closed first, so every write carries the traffic up to
// it.
func (s *Server) writeInterval() {
	s.takeWireSample()
	if err := s.WriteMetrics(); err != nil {
		s.log.Printf("metrics: %v", err)
	}
}

// takeWireSample closes the metrics file's current wire interval. The loop
// calls it before every write as well as every wireSampleTicks: the file's
// cumulative wire counters must move between any two writes that a hold
// spans, or a hold shorter than the sampling period (a short smoke leg on a
// loaded machine) reads no wire traffic at all.
func (s *Server) takeWireSample() {
	if s.prom == nil {
		s.met.sampleWire(s.host, len(s.viewers))
		return
	}
	s.met.keepWire(s.wirePending.rates(), len(s.viewers))
	s.wirePending = wireAcc{}
}

// buildSnapshots builds every joined peer's snapshot in parallel.
func (s *Server) buildSnapshots() {
	p := SnapshotParams{
		Tick:        s.tick,
		BudgetBytes: s.cfg.World.SnapshotBudgetBytes,
		Compress:    s.cfg.Network.CompressSnapshots,
		Pad:         s.pad,
		PadInBudget: s.padInBudget,

		CorruptDeltaEvery: s.cfg.Faults.CorruptDeltaEveryNth,
		Ready:             s.sendBuilt,
	}
	s.sim.Build(s.due, &p)
}

// flushEvery is how many snapshots the loop goroutine hands to the host
// between two flushes while the build runs. A flush is what makes the
// datagrams (sendmsg, and on loopback the receiver's side of the kernel's
// work too), so flushing along the way is what overlaps the sending with
// the other workers' builds; flushing after every send would cost each
// flush's walk over every peer.
const flushEvery = 16

// pickDue selects the viewers that get a snapshot this tick: the ones the
// congestion controller owes one (its per-peer send rate) and the overrun
// governor does not shed. Interest queries and builds run only for them, so
// shedding the snapshot rate sheds the per-peer work with it.
func (s *Server) pickDue(now time.Time) {
	owed := s.cc.schedule(s.host, s.vpeers, s.tick)
	s.due, s.duePeers = s.due[:0], s.duePeers[:0]
	for i, v := range s.viewers {
		if owed[i] && s.gov.snapshotDue(s.tick, v.stagger()) && s.dfault.allow(s.vpeers[i], now) {
			s.due, s.duePeers = append(s.due, v), append(s.duePeers, s.vpeers[i])
		}
	}
}

// sendOne hands due snapshot i, just built, to the host (which belongs to
// this goroutine), with the peer's PeerDelay when one is due, flushing
// every flushEvery of them. The PeerDelay goes with the snapshot so that
// the two share a datagram, as they did when every send preceded one
// flush: sent after the snapshots were flushed, the PeerDelays of a 2 Hz
// tick cost a datagram each (at 128 peers about 0.8 ms of that tick, and
// one tick in 30 is over 1 %: it set the tick's p99).
func (s *Server) sendOne(i int) {
	t0 := time.Now()
	p := s.duePeers[i]
	if err := s.send(p.id, transport.Unreliable, s.due[i].In.Msg); err != nil {
		s.log.Printf("peer %d: send snapshot: %v", p.id, err)
	}
	s.maybePeerDelay(p)
	if s.unflushed++; s.unflushed >= flushEvery {
		s.flush()
	}
	s.sendOut += time.Since(t0)
}

// finishSends sends PeerDelay at 2 Hz to every peer once every snapshot is
// handed over, and flushes the rest.
func (s *Server) finishSends() {
	t0 := time.Now()
	for _, p := range s.vpeers {
		s.maybePeerDelay(p) // the peers not sent a snapshot this tick
	}
	s.flush()
	s.sendOut += time.Since(t0)
}

// maybePeerDelay sends p its PeerDelay if one is due this tick (2 Hz) and
// it has not been sent it yet.
func (s *Server) maybePeerDelay(p *peer) {
	if s.tick%peerDelayTicks != 0 || p.delayTick == s.tick && p.delaySent || s.dfault.silent(p) {
		return
	}
	p.delayTick, p.delaySent = s.tick, true
	s.sendPeerDelay(p.id)
}

func (s *Server) flush() {
	s.unflushed = 0
	if err := s.host.Flush(); err != nil {
		s.log.Printf("flush: %v", err)
	}
}

// slowTick logs a SLOW TICK line: work and lateness, then why — the
// process's CPU during the tick (well under 100 % of the work time: the loop
// was descheduled or blocked, not working), GC cycles during it and the run's
// GC pauses, the outbound backlog and slow sends — then the phase breakdown
// and the population, so one line says where a stall went and what it was
// not. At most one line a second is written; the ones held back are counted
// on the next line, and every slow tick is counted in the metrics file.
func (s *Server) slowTick(total, late time.Duration, ph *[numPhases]time.Duration, build, send time.Duration, td *tickDiag) {
	s.met.slowTicks++
	now := time.Now()
	if now.Sub(s.lastSlow) < time.Second {
		s.slowQuiet++
		return
	}
	var b strings.Builder
	for i, d := range ph {
		fmt.Fprintf(&b, " %s %.2f", Phase(i), ms(d))
		if Phase(i) == PhaseSerialize {
			fmt.Fprintf(&b, " (build %.2f send %.2f)", ms(build), ms(send))
		}
	}
	held := ""
	if s.slowQuiet > 0 {
		held = fmt.Sprintf(" (+%d slow tick(s) not logged since the last line)", s.slowQuiet)
	}
	cpu := "cpu n/a"
	if td.cpuOK && total > 0 {
		cpu = fmt.Sprintf("cpu %.0f%% of the work", 100*float64(td.cpu)/float64(total))
	}
	gp := s.diag.gcPauses()
	s.log.Printf("SLOW TICK: tick %d work %.2fms (threshold %.2fms), late %.2fms, %s, gc %d cycle(s) (run: %d, pause max %.2fms p99 %.2fms), send queue max %d, slow sends %d (run: %d) —%s ms — %d peer(s), %d entities (%d AI), %d contact(s)%s",
		s.tick, ms(total), s.cfg.SlowTick(), ms(max(late, 0)), cpu, td.gcCycles, s.diag.gcCount(), gp.Max, gp.P99,
		td.queue, td.slowSends, s.diag.slowSends, b.String(),
		len(s.viewers), s.sim.World.Len(), len(s.sim.aiSlots), s.sim.Contacts, held)
	s.lastSlow, s.slowQuiet = now, 0
}

// shutdown tells every peer, waits (bounded) for them to disconnect,
// writes the final metrics and returns.
func (s *Server) shutdown() error {
	s.closing = true
	s.closeAdmin()
	for id, p := range s.peers {
		if p.state == peerClosing {
			continue
		}
		s.sendNotice(id, noticeShutdown)
		s.host.Disconnect(id, uint32(noticeShutdown.kind))
		p.state = peerClosing
	}
	if err := s.host.Flush(); err != nil {
		s.log.Printf("shutdown flush: %v", err)
	}
	deadline := time.Now().Add(shutdownGrace)
	for len(s.peers) > 0 && time.Now().Before(deadline) {
		s.service(time.Now())
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(s.peers); n > 0 {
		s.log.Printf("shutdown: %d peer(s) did not acknowledge the disconnect within %v", n, shutdownGrace)
	}
	s.log.Printf("shutdown after %d ticks (%d dropped, %d slow)", s.met.ticksTotal, s.droppedTicks(), s.met.slowTicks)
	if err := s.closeRecorder(); err != nil {
		s.log.Printf("trace: %v", err)
	}
	if err := s.WriteMetrics(); err != nil {
		return fmt.Errorf("final metrics write: %w", err)
	}
	return nil
}

// heldWait is the last stretch before a tick is due that a pinned loop
// sleeps in the kernel (held.Sleep) rather than on a Go timer: woken
// through the timer, the loop goroutine (locked to its thread) started its
// tick 0.6–1 ms late, and now and then 4–4.6 ms late, past its helpers'
// spin; held, 0.06–0.07 ms (docs/server.md, "The tick").
const heldWait = 2 * time.Millisecond

// blockChunk is the longest kernel sleep of a pinned loop or helper
// between ticks: how soon each sees a stop.
const blockChunk = 20 * time.Millisecond

// waitTick waits up to wait, the time left until the next tick is due, or
// part of it (the caller loops): on the timer t; in a pinned loop in the
// kernel, the last heldWait of it held. A pinned loop does not wait on a
// Go timer: the thread that runs the runtime's timers is an ordinary one,
// and with the workers at real-time priority and a swarm on the same two
// CPUs it fired the loop's timer up to 7 ms late (SLOW TICK lines of a
// 128-client weave leg: half the ticks over 4 ms started 4.1–4.8 ms late,
// and ran on one worker, past their helper's spin). It reports false when
// ctx ended first.
func (s *Server) waitTick(ctx context.Context, t *time.Timer, wait time.Duration) bool {
	if !s.sim.Pinned() {
		return waitTimer(ctx, t, wait)
	}
	waitPinned(wait)
	return ctx.Err() == nil
}

// waitPinned is one step of a pinned loop's wait for the tick due in wait
// (the caller loops on the clock): a kernel sleep (blockStep), or within
// heldWait of the tick the held one.
func waitPinned(wait time.Duration) {
	if wait <= heldWait {
		held.Sleep(wait)
		return
	}
	blockStep(wait, heldWait)
}

// yieldLead is how long before a tick is due each pinned worker (the loop
// and every helper) yields its processor, once a tick (runtime.Gosched).
//
// The Go scheduler preempts a goroutine it has seen run 10 ms without
// being scheduled afresh, and a kernel sleep (held.Block) is not a fresh
// start: a pinned worker, which never parks, was preempted about every
// 10 ms of its life. Each time the preemption fell at the first Go code
// after a sleep, the helper's wake 1 ms before the tick or the loop's
// 2 ms before it, or within a tick (a uprobe on runtime.stoplockedm in a
// 128-client weave leg: about 100 a second, all from the preemption
// check). A goroutine locked to its thread that is preempted runs again
// only after another thread has taken its processor through the
// scheduler and handed it back, and that thread is an ordinary one,
// which waits its turn behind the swarm: the helper came late and the
// tick built on one worker. Yielding here pays that hand-over 4 ms before
// the held wait, and the next preemption cannot come before 10 ms later,
// 4 ms into the tick, when a tick of the usual 2–3 ms is done.
const yieldLead = 6 * time.Millisecond

// blockStep is one kernel sleep of a pinned worker (the loop or a helper)
// whose next tick is due in due: at most blockChunk, ending no later than
// stop before the tick (the caller loops on the clock). The sleep that
// ends yieldLead before the tick is followed by the worker's yield.
func blockStep(due, stop time.Duration) {
	switch toYield := due - yieldLead; {
	case toYield > blockChunk:
		held.Block(blockChunk)
	case toYield > 0:
		held.Block(toYield)
		runtime.Gosched()
	default:
		held.Block(due - stop)
	}
}

func waitTimer(ctx context.Context, t *time.Timer, d time.Duration) bool {
	t.Reset(d)
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
