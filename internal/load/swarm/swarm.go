// Package swarm is scalegate's headless bot swarm: synthetic clients that
// load a server.
//
// It runs N synthetic clients, each its own transport endpoint (its own UDP
// socket on ENet), that connect on a ramp, join, send input at a fixed
// rate, and measure what a real client observes (server tick rate from
// snapshot tick numbers, downstream payload KB/s, RTT, connect time,
// snapshot gaps, decode errors) plus the harness's own loop time, so a run
// whose harness was the bottleneck can be told apart. What the clients say
// is a Protocol's: load protocol v1 by default, or a team's own through the
// public bot package.
//
// Clients are sharded over worker goroutines; a worker owns its clients'
// hosts outright (transport.Host is single-owner), and publishes per-second
// figures to the monitor under a mutex. The monitor (the caller's goroutine)
// samples the server's metrics file, builds the per-second timeline and
// prints progress. The package knows nothing of flags or exit codes.
package swarm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"runtime"
	"sync"
	"time"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/relay"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
	"github.com/scalegate/scalegate/internal/load/swarm/hold"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/promsource"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// Defaults of Config's zero values.
const (
	DefaultClients  = 32
	DefaultDuration = 30 * time.Second
	// MaxDuration bounds --duration (and every other time given in
	// seconds): 7 days. A float of seconds past about 292 years overflows
	// a time.Duration into a negative one.
	MaxDuration   = 7 * 24 * time.Hour
	DefaultRateHz = 60
	// MinRateHz is the lowest Input and worker loop rate.
	MinRateHz                = 1
	DefaultTransport         = "enet"
	DefaultRamp              = 20 * time.Millisecond
	DefaultRSSSampleInterval = 30 * time.Second
	// DefaultTimeout is how long a joined client may hear nothing before it
	// counts as lost; also the transport's peer timeout. Short enough that a
	// killed server ends a run in seconds, long enough for a loaded box.
	DefaultTimeout = 5 * time.Second
	// DefaultConnectTimeout bounds the transport connect and the Join.
	DefaultConnectTimeout = 10 * time.Second
	// ClientsPerThread is the auto --threads divisor (the seed's 32).
	ClientsPerThread = 32
)

// Config is one swarm run.
type Config struct {
	Addr string // server "host:port"
	// RunID is the id the gate gave this run ($SCALEGATE_RUN_ID), echoed
	// in the report so that the gate can tell it from another run's.
	RunID    string
	Clients  int
	Duration time.Duration // from the first connect; includes the ramp
	RateHz   float64       // Input rate and worker loop rate
	// PingHz is how often each client of a Pinger protocol pings (load
	// protocol v1.1 does); 0 takes DefaultPingHz, < 0 sends no ping
	// (rtt_ms is then the transport's estimate).
	PingHz     float64
	Transport  string
	Ramp       time.Duration // between successive connects
	Threads    int           // worker goroutines; 0 = auto
	Mix        Mix           // pattern assignment
	EntityType string        // Join entity_type
	// SkipBodyDecode turns snapshot body decoding off (a benchmark knob:
	// decode errors are then not measured, and the report says so).
	SkipBodyDecode bool
	// PerClientService services each client's host with its own calls
	// instead of one batch per worker iteration on a backend that batches
	// (a benchmark knob: the figures it yields are the same, at a higher
	// harness cost).
	PerClientService bool
	// HoldThreads lets workers keep their OS thread between iterations
	// when the transport and the run allow it (see pacing). Set it only
	// when the process is the swarm's own: a held worker's processor is not
	// available to other goroutines for 10–20 ms at a time.
	HoldThreads bool
	// TestBusy is CPU each worker spins per client per iteration, just
	// before the client's step, so later clients are serviced late the way
	// a costly decoder would make them. A test knob: it starves the swarm
	// on purpose so the gate's harness-bound rule can be shown to bite.
	TestBusy          time.Duration
	ServerMetrics     string // server metrics file to sample; "" = none
	RSSSampleInterval time.Duration
	Timeout           time.Duration
	ConnectTimeout    time.Duration
	// Progress receives live progress; nil = none. ProgressTTY selects the
	// in-place status line; otherwise a plain line every ProgressEvery.
	Progress      io.Writer
	ProgressTTY   bool
	ProgressEvery time.Duration
	// Impairment routes every client through its own socket of the
	// impairment relay, which applies this schedule (normalized, relative
	// to the run's start). Empty: clients talk to the server directly.
	Impairment impairment.Schedule
	// ImpairSeed seeds the relay's decisions.
	ImpairSeed uint64
	// Shard is the part of the Clients-client run this process drives;
	// the zero value is all of it.
	Shard Shard
	// StartAt is the shared clock of a sharded run: every shard starts its
	// ramp (client i at StartAt + i·Ramp) and counts its duration and
	// timeline from this instant. Zero: start now.
	StartAt time.Time
	// ServerMetricsPrometheus is a Prometheus endpoint to scrape instead
	// of a metrics file (internal/sources/promsource); ServerMetricsMap says which
	// series gives which figure (the process_* defaults are added), and
	// ServerMetricsFallback the exposition format assumed when the
	// endpoint's Content-Type names none ("", "text", "openmetrics").
	ServerMetricsPrometheus string
	ServerMetricsMap        promsource.Map
	ServerMetricsFallback   string
	// ServerMetricsPromQL is a Prometheus server to ask for the server's
	// series instead of scraping it (internal/sources/promql): the same
	// mapping, read through PromQL, with ServerMetricsLabels selecting
	// this server's series among all Prometheus holds.
	ServerMetricsPromQL string
	ServerMetricsLabels map[string]string
	// OwnFile and OwnPrometheus are the profile's own figures (--server-
	// figures) from the source this swarm reads: the metrics file's JSON
	// paths or the endpoint's series. Each is computed over the hold into
	// server_tick.NAME.
	OwnFile       map[string]serverwindow.FileFigure
	OwnPrometheus promsource.Map
	// Protocol is the game protocol the clients speak; nil is load
	// protocol v1 (LoadV1).
	Protocol Protocol
	// Abort are the early-abort rules: the run ends as soon as one fires
	// (gatetable.AbortWatch over the timeline), and the report says when
	// and why. None: the run takes its duration.
	Abort []gatetable.AbortRule
	// Warmup is left out of every windowed figure: the first Warmup of
	// the hold, which starts at the whole run's last connect slot (the
	// report's warmup_s). Zero: every figure counts from each client's
	// admission.
	Warmup time.Duration
	// Delivery is what the run's delivery is judged by (the report's
	// passed and the exit status, with gatetable.Delivered: the gate's
	// own rule); its zero fields take the defaults.
	Delivery gatetable.DeliveryPolicy
	// LeaveTimeout bounds the goodbyes of a Leaver protocol at the end of
	// the run: how long the swarm waits for the server's answers before
	// its final read. 0 takes DefaultLeaveTimeout.
	LeaveTimeout time.Duration
}

// warmupEnd is where the warm-up ends on the run's clock: the whole run's
// last connect slot plus Warmup; zero without a warm-up (nothing is left
// out, the ramp included, as before warm-ups existed).
func (c *Config) warmupEnd(start time.Time) time.Time {
	if c.Warmup <= 0 {
		return time.Time{}
	}
	return start.Add(time.Duration(max(c.Clients-1, 0))*c.Ramp + c.Warmup)
}

// holdStart is where the hold starts on the run's clock: the whole run's
// last connect slot (the same instant in every shard) plus the warm-up.
// The server figures over the hold start at the first reading after it.
func (c *Config) holdStart(start time.Time) time.Time {
	return start.Add(time.Duration(max(c.Clients-1, 0))*c.Ramp + max(c.Warmup, 0))
}

// protocol is the run's protocol, v1 unless the config names another.
func (c *Config) protocol() Protocol {
	if c.Protocol == nil {
		return LoadV1
	}
	return c.Protocol
}

// AutoThreads is the default worker count: min(cores, ceil(clients/32)),
// where cores is GOMAXPROCS, the CPUs the runtime runs Go code on at once
// (since Go 1.25 it follows a container's CPU limit, which NumCPU does not):
// more workers than that would only take turns, and held pacing needs each
// worker to keep a P of its own.
func AutoThreads(clients int) int {
	n := (clients + ClientsPerThread - 1) / ClientsPerThread
	return max(1, min(runtime.GOMAXPROCS(0), n))
}

func (c *Config) defaults() {
	if c.RateHz == 0 {
		c.RateHz = DefaultRateHz
	}
	if c.PingHz == 0 {
		c.PingHz = DefaultPingHz
	}
	if c.Transport == "" {
		c.Transport = DefaultTransport
	}
	if c.Threads == 0 {
		c.Threads = AutoThreads(c.ShardClients())
	}
	if c.RSSSampleInterval == 0 {
		c.RSSSampleInterval = DefaultRSSSampleInterval
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = DefaultConnectTimeout
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = 5 * time.Second
	}
	if c.LeaveTimeout == 0 {
		c.LeaveTimeout = DefaultLeaveTimeout
	}
	if len(c.Mix) == 0 {
		c.Mix = Mix{{Name: "weave", Weight: 1}}
	}
}

// Validate reports every problem with c at once.
func (c *Config) Validate() error {
	var errs []error
	errs = append(errs, c.loadErrors()...)
	errs = append(errs, c.spreadErrors()...)
	errs = append(errs, c.metricsErrors()...)
	return errors.Join(errs...)
}

// loadErrors checks the load itself: address, clients, duration, rate,
// ramp, warm-up, delivery budgets, threads.
func (c *Config) loadErrors() []error {
	var errs []error
	if c.Addr == "" {
		errs = append(errs, errors.New("no server address"))
	}
	if c.Clients < 1 {
		errs = append(errs, fmt.Errorf("clients must be ≥ 1, got %d", c.Clients))
	}
	if c.Duration <= 0 || c.Duration > MaxDuration {
		errs = append(errs, fmt.Errorf("duration must be in (0, %s], got %s", MaxDuration, c.Duration))
	}
	// The rate is also the worker loop's: below 1 Hz a client's transport
	// is serviced too rarely to keep its connection, and a rate near 0
	// made the loop interval overflow into a negative one (a flood).
	if !(c.RateHz >= MinRateHz && c.RateHz <= 1000) {
		errs = append(errs, fmt.Errorf("rate must be in [%g, 1000] Hz, got %g", float64(MinRateHz), c.RateHz))
	}
	// A ping goes out on a worker turn, so no faster than the loop runs.
	if c.PingHz > 0 && c.RateHz > 0 && c.PingHz > c.RateHz {
		errs = append(errs, fmt.Errorf("ping-hz must be at most the rate (%g Hz): pings go out on the worker's turns, got %g", c.RateHz, c.PingHz))
	}
	if c.Ramp < 0 {
		errs = append(errs, fmt.Errorf("ramp must be ≥ 0, got %s", c.Ramp))
	}
	if c.Clients > 0 && c.Duration > 0 && !hold.RampFits(c.Clients, c.Ramp, c.Duration) {
		errs = append(errs, fmt.Errorf("the connect ramp (%d × %s) does not fit in the duration %s", c.Clients-1, c.Ramp, c.Duration))
	}
	if c.Warmup < 0 {
		errs = append(errs, fmt.Errorf("warm-up must be ≥ 0, got %s", c.Warmup))
	} else if c.Clients > 0 && c.Duration > 0 && !hold.WarmupFits(c.Clients, c.Ramp, c.Warmup, c.Duration) {
		errs = append(errs, fmt.Errorf("warm-up %s leaves under %gs of the hold (the duration after the last connect slot, %s) to measure",
			c.Warmup, report.MinDeliveryWindowS, c.Duration-time.Duration(c.Clients-1)*c.Ramp))
	}
	if err := c.Delivery.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("delivery: %w", err))
	}
	if c.Threads < 0 {
		errs = append(errs, fmt.Errorf("threads must be ≥ 0 (0 = auto), got %d", c.Threads))
	}
	if c.TestBusy < 0 {
		errs = append(errs, fmt.Errorf("test busy time must be ≥ 0, got %s", c.TestBusy))
	}
	if c.LeaveTimeout < 0 {
		errs = append(errs, fmt.Errorf("leave timeout must be ≥ 0 (0 = %s), got %s", DefaultLeaveTimeout, c.LeaveTimeout))
	}
	return errs
}

// spreadErrors checks how the load is shaped and split: impairment phases
// and the shard.
func (c *Config) spreadErrors() []error {
	var errs []error
	if len(c.Impairment) > 0 {
		if _, err := c.Impairment.Normalize(); err != nil {
			errs = append(errs, fmt.Errorf("impairment: %w", err))
		}
		if c.Duration > 0 && c.Impairment[0].Start() >= c.Duration {
			errs = append(errs, fmt.Errorf("impairment: the first phase starts at %gs, after the run ends (%s): it would impair nothing", c.Impairment[0].StartS, c.Duration))
		}
	}
	if c.Shard != (Shard{}) {
		if err := c.Shard.validate(); err != nil {
			errs = append(errs, err)
		} else if c.Clients > 0 && c.Shard.Count > c.Clients {
			errs = append(errs, fmt.Errorf("shard %s: %d shards of %d clients would leave a shard with none", c.Shard, c.Shard.Count, c.Clients))
		}
	}
	return errs
}

// metricsErrors checks where the server's figures come from, the abort
// rules that read them, and the RSS sampling.
func (c *Config) metricsErrors() []error {
	var errs []error
	if c.ServerMetrics != "" && c.ServerMetricsPrometheus != "" {
		errs = append(errs, errors.New("server metrics: give a metrics file/URL or a Prometheus endpoint, not both"))
	}
	if c.ServerMetricsPromQL != "" && (c.ServerMetrics != "" || c.ServerMetricsPrometheus != "") {
		errs = append(errs, errors.New("server metrics: give one source: a metrics file/URL, a Prometheus endpoint or a Prometheus server to query"))
	}
	if c.ServerMetricsPrometheus != "" && !report.IsMetricsURL(c.ServerMetricsPrometheus) {
		errs = append(errs, fmt.Errorf("server metrics: the Prometheus endpoint %q is not an http(s) URL", c.ServerMetricsPrometheus))
	}
	if c.ServerMetricsPromQL != "" && !report.IsMetricsURL(c.ServerMetricsPromQL) {
		errs = append(errs, fmt.Errorf("server metrics: the Prometheus server %q is not an http(s) URL", c.ServerMetricsPromQL))
	}
	if c.promSource() {
		if err := c.ServerMetricsMap.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("server metrics map: %w", err))
		}
		if err := promsource.ValidateLabels(c.ServerMetricsLabels); err != nil {
			errs = append(errs, fmt.Errorf("server metrics %w", err))
		}
	}
	for _, r := range c.Abort {
		if err := r.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("abort on breach: %w", err))
		}
	}
	switch c.ServerMetricsFallback {
	case "", promsource.FormatText, promsource.FormatOpenMetrics:
	default:
		errs = append(errs, fmt.Errorf("server metrics fallback format %q: want text or openmetrics", c.ServerMetricsFallback))
	}
	if c.RSSSampleInterval < 0 {
		errs = append(errs, fmt.Errorf("rss sample interval must be > 0, got %s", c.RSSSampleInterval))
	}
	if c.RSSSampleInterval > 0 && c.RSSSampleInterval < time.Second && c.promSource() {
		errs = append(errs, fmt.Errorf("rss sample interval %s: a Prometheus source is read once a second, so its RSS is sampled no faster; give 1 s or more, or read the metrics file", c.RSSSampleInterval))
	}
	return errs
}

// promSource reports whether the server's series are read through
// Prometheus: its endpoint scraped, or a Prometheus server queried.
func (c *Config) promSource() bool {
	return c.ServerMetricsPrometheus != "" || c.ServerMetricsPromQL != ""
}

// Result is a finished run: the report plus the parsed server metrics the
// asserts read (nil when none were wired or readable).
type Result struct {
	Report        *report.Report
	ServerTick    *report.ServerTick
	ServerTickRaw map[string]json.RawMessage
	// DialError is the first error creating or connecting a host, if any.
	DialError error
	// Delivery is the policy the run's delivery is judged by (Config's,
	// defaults filled).
	Delivery gatetable.DeliveryPolicy
}

// Run runs the swarm until the duration ends, ctx is cancelled (the report
// is then marked aborted) or every client has ended (refused, lost, failed).
// It returns an error only when nothing could be run at all: an invalid
// config, a trace that cannot be replayed, or a transport this build cannot
// speak (*transport.UnknownBackendError).
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	backend, factories, traces, err := prepare(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	fdLimit := CheckFileLimit(&cfg)

	start, late := waitStart(ctx, cfg.StartAt)
	cpu0 := processCPU()
	var prom *promSampler
	if cfg.promSource() {
		if prom, err = newPromSampler(&cfg, start); err != nil {
			return nil, err
		}
	}
	rl, err := startRelay(&cfg, start)
	if err != nil {
		return nil, err
	}
	if rl != nil && relayStarted != nil {
		relayStarted(rl)
	}
	workers := buildWorkers(&cfg, factories, backend, start, time.Now(), rl)
	held := pacing(&cfg, backend, rl != nil, len(workers))
	fds := fdBudget(fdLimit)
	for _, w := range workers {
		w.held, w.fds = held, fds
	}
	mon := newMonitor(&cfg, workers, start)
	mon.prom = prom
	end := drive(ctx, &cfg, workers, mon, start)
	cpu1 := processCPU()

	res := &Result{Delivery: cfg.Delivery.WithDefaults()}
	res.Report = buildReport(&cfg, workers, start, end)
	addTraceReport(res.Report, traces, workers)
	addRelay(res.Report, &cfg, rl, workers, start, end)
	res.Report.Shard = shardInfo(&cfg, start, late)
	mon.finish(res, end)
	fillCPU(res.Report, cpu0, cpu1)
	res.Report.WorkerPacing = pacingName(held)
	if ctx.Err() != nil {
		res.Report.Aborted = "interrupted"
	}
	addHarness(res, workers, fdLimit)
	addLeave(res.Report, &cfg, workers)
	recordEarlyEnd(res.Report, &cfg, mon.abort, ctx.Err() != nil, start, end)
	return res, nil
}

// pacingName is the report's worker_pacing: how the workers waited.
func pacingName(held bool) string {
	if held {
		return report.PacingHeld
	}
	return report.PacingTicker
}

// prepare checks cfg and resolves what the run needs before anything
// starts: the transport, the pattern factories and the traces they replay.
func prepare(ctx context.Context, cfg *Config) (transport.Backend, map[string]PatternFactory, []*replaySet, error) {
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, err
	}
	backend, err := transport.Lookup(cfg.Transport)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(cfg.Impairment) > 0 {
		if err := transport.CheckImpairable(cfg.Transport); err != nil {
			return nil, nil, nil, fmt.Errorf("impairment: %w", err)
		}
	}
	factories, traces, err := cfg.Mix.factories(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return backend, factories, traces, nil
}

// drive runs the workers until the duration ends, ctx is cancelled, the
// monitor stops the run (an early abort) or every client has ended, and
// returns when all of them have. The end is one sequence: every worker's
// loop ends (the hold is over); the bots of a Leaver protocol say goodbye,
// the server's population gauges frozen first (monitor.endHold); every
// worker parks before disconnecting its clients; once all have, the
// monitor reads the server's metrics one last time, then they are
// released to disconnect.
func drive(ctx context.Context, cfg *Config, workers []*worker, mon *monitor, start time.Time) time.Time {
	runCtx, cancel := context.WithDeadline(ctx, start.Add(cfg.Duration))
	defer cancel()
	mon.stop = cancel
	var over, parked sync.WaitGroup
	over.Add(len(workers))
	parked.Add(len(workers))
	leave, release := make(chan struct{}), make(chan struct{})
	for _, w := range workers {
		w.holdOver = func() { over.Done(); <-leave }
		w.park = func() { parked.Done(); <-release }
	}
	go func() {
		over.Wait()
		goodbyes := 0
		for _, w := range workers {
			goodbyes += w.leave.goodbyes
		}
		if goodbyes > 0 {
			mon.endHold()
		}
		close(leave)
		parked.Wait()
		mon.captureFinal()
		close(release)
	}()

	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.run(runCtx, start) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	mon.loop(done)
	return time.Now()
}

// addRelay records what the impairment relay did, when the run had one.
func addRelay(r *report.Report, cfg *Config, rl *relay.Relay, workers []*worker, start, end time.Time) {
	if rl == nil {
		return
	}
	rl.Close()
	r.Impairment = cfg.Impairment
	r.Relay = &report.RelayStats{Seed: cfg.ImpairSeed, Stats: rl.Stats()}
	if n := r.Relay.Stray; n > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("relay: %d stray datagram(s) dropped: sent to a relay port by neither the server nor that link's own client (something else on this machine); they never reached the server and are not its doing", n))
	}
	r.Phases = buildPhases(cfg, workers, start, end)
}

// addHarness records the swarm's own failures: the first dial error, the
// harness errors and, when the descriptor limit was short, what to raise.
func addHarness(res *Result, workers []*worker, fdLimit *report.FDLimit) {
	for _, w := range workers {
		if w.firstDialErr != nil {
			res.DialError = w.firstDialErr
			break
		}
	}
	res.Report.HarnessErrors = harnessErrors(workers, fdLimit)
	if fdLimit.Short() {
		res.Report.Warnings = append(res.Report.Warnings, FileLimitAdvice(fdLimit))
	}
}

// buildWorkers assigns patterns, ramp slots and workers to the shard's
// clients: client i (its index in the whole run) gets the pattern and name
// it has unsharded, connects at start + i·ramp and belongs to worker
// (i − first) mod threads, so the ramp is spread over the workers. A slot
// already past at now (a shard that started late) moves to now: its
// connect time is then measured from when it could first connect, and the
// lateness is in the report.
//
// With a relay, client i connects to the relay's socket i instead of the
// server, and every client keeps figures per stretch of the schedule. The
// relay has a socket per client of the whole run, so a shard's client i
// meets the same link (and the same seeded decisions) as unsharded.
func buildWorkers(cfg *Config, factories map[string]PatternFactory, b transport.Backend, start, now time.Time, rl *relay.Relay) []*worker {
	interval := time.Duration(float64(time.Second) / cfg.RateHz)
	lo, hi := cfg.Shard.Range(cfg.Clients)
	threads := max(1, min(cfg.Threads, hi-lo))
	workers := make([]*worker, threads)
	sts := cfg.Impairment.Stretches()
	for i := range workers {
		workers[i] = newWorker(i, cfg, b, interval)
		workers[i].warmEnd = cfg.warmupEnd(start)
		if rl != nil {
			workers[i].clock = &phaseClock{start: start, stretches: sts}
		}
	}
	for i := lo; i < hi; i++ {
		name := cfg.Mix.Assign(i, cfg.Clients)
		p := factories[name](i, cfg.Clients)
		slot := start.Add(time.Duration(i) * cfg.Ramp)
		if slot.Before(now) && !cfg.StartAt.IsZero() {
			slot = now
		}
		w := workers[(i-lo)%threads]
		c := newClient(i, name, p, slot, w.proto.NewBot(i))
		c.addr = cfg.Addr
		if rl != nil {
			c.addr, c.relay = rl.Addr(i), rl
			c.stretch = make([]stretchAcc, len(sts))
		}
		c.addr = target(cfg.protocol(), i, c.addr)
		c.header = header(cfg.protocol(), i)
		w.add(c)
	}
	return workers
}

// relayStarted, when set (tests only), is called with the relay before
// any client exists: the stray test sends to its ports then.
var relayStarted func(*relay.Relay)

// startRelay opens the impairment relay in front of the server when the
// run has a schedule: one socket per client, the schedule timed from start.
func startRelay(cfg *Config, start time.Time) (*relay.Relay, error) {
	if len(cfg.Impairment) == 0 {
		return nil, nil
	}
	ua, err := net.ResolveUDPAddr("udp4", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("impairment relay: server address %s: %w", cfg.Addr, err)
	}
	sched, err := cfg.Impairment.Normalize()
	if err != nil {
		return nil, fmt.Errorf("impairment: %w", err)
	}
	cfg.Impairment = sched
	rl, err := relay.New(relay.Config{Server: ua.String(), Links: cfg.Clients, Schedule: sched, Seed: cfg.ImpairSeed, Start: start})
	if err != nil {
		return nil, fmt.Errorf("impairment %w", err)
	}
	return rl, nil
}

func nanPtr(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}
