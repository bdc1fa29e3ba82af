package swarmcli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
	"github.com/scalegate/scalegate/internal/load/swarm"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// usageTail follows a command's own first lines in its usage text.
const usageTail = `host and port default to $SCALEGATE_HOST (else 127.0.0.1) and
$SCALEGATE_PORT.

Asserts whose threshold is < 0 are off (the default); the congestion pair is
off at 0. An assert whose metric is missing fails. --abort-on-breach ends the
run as soon as an assert's figure is beyond its threshold (by more than the
margin) for that many consecutive seconds; the report says when and why. Exit
status: 0 passed, 1 an assert failed, clients were lost, state was not
delivered or the run ended early on a breach, 2 usage (or a --transport this
build cannot speak), 3 the swarm could not start all its clients itself (its
sockets or descriptors: a harness error, not the server's), 130 interrupted
(the report is still written, marked aborted).

options:
`

// Flags are a parsed swarm command line.
type Flags struct {
	// Cfg is the run, Asserts the enabled --assert-* checks, JSONPath the
	// --json report path ("" = none).
	Cfg      swarm.Config
	Asserts  swarm.Asserts
	JSONPath string

	pattern   string
	mix       string
	threads   string
	progress  string
	durationS float64
	rampMs    float64
	rssS      float64
	timeoutS  float64
	// testBusyUs is --test-busy-us (cfg.TestBusy, a test knob).
	testBusyUs float64
	decode     bool
	batch      bool
	hold       bool
	degrade    degradeFlags
	shard      string
	startAt    string
	cpuProf    string
	memProf    string
	// promMap is --server-metrics-map (the Prometheus mapping file).
	promMap string
	// ownFigures is --server-figures (the profile's own figures), and
	// ownDecl what it declares.
	ownFigures string
	ownDecl    gatetable.OwnFigures
	// abortOn are the --abort-on-breach values, in order.
	abortOn []string
	// warmupS is --warmup-s (Cfg.Warmup).
	warmupS float64
}

// degradeFlags are the --degrade-* options: one impairment window on the
// command line, or a whole schedule from a JSON file.
type degradeFlags struct {
	phase    impairment.Phase
	schedule string
	seed     uint64
	set      map[string]bool // which window flags were given
}

// NewFlagSet declares every option of cmd's command line on a new flag
// set, writing into f. Every swarm binary, `scalegate swarm` and a team's
// bot alike, is declared here: one set of flags, which the gate's command
// line (docs/swarm-contract.md) is written against.
func (cmd Command) NewFlagSet(f *Flags, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd.name(), flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [host] [port] [options]\n\n%s\n%s", cmd.name(), cmd.about(), usageTail)
		fs.PrintDefaults()
	}
	a := &f.Asserts
	*a = swarm.NoAsserts()
	fs.IntVar(&f.Cfg.Clients, "clients", swarm.DefaultClients, "synthetic clients")
	fs.Float64Var(&f.durationS, "duration", swarm.DefaultDuration.Seconds(), "run `seconds`, counted from the first connect (includes the ramp)")
	fs.Float64Var(&f.Cfg.RateHz, "rate", swarm.DefaultRateHz, "Input rate per client and worker loop rate (Hz)")
	fs.Var(pingHz{&f.Cfg.PingHz}, "ping-hz", "application pings per second per client, for a protocol that answers them (load protocol v1.1, a bot's Pinger): rtt_ms; 0 = none, rtt_ms is then the transport's estimate (default 10)")
	fs.StringVar(&f.Cfg.Transport, "transport", cmd.transport(), "transport `name` ("+strings.Join(transport.Available(), ", ")+"); one this build cannot speak exits 2, never falls back")
	fs.Float64Var(&f.rampMs, "ramp-ms", swarm.DefaultRamp.Seconds()*1000, "delay between successive connects, in `ms`")
	fs.StringVar(&f.threads, "threads", "auto", "worker goroutines, or auto = min(cores, ceil(clients/32))")
	fs.StringVar(&f.pattern, "pattern", "weave", "flight pattern: "+strings.Join(swarm.PatternNames(), " | ")+" | trace:PATH (a FLIT file or a directory of them)")
	fs.StringVar(&f.mix, "pattern-mix", "", "weighted mix, e.g. \"weave:80,aggressive:20\" or \"trace:t.flit:30,weave:70\" (supersedes --pattern)")
	fs.StringVar(&f.JSONPath, "json", "", "write the JSON report to `path`")
	fs.StringVar(&f.Cfg.ServerMetrics, "server-metrics", "", "server metrics `source` to sample and embed as server_tick: a file path or an http(s) URL ([metrics] http_listen)")
	fs.StringVar(&f.Cfg.ServerMetricsPrometheus, "server-metrics-prometheus", "", "scrape the server's Prometheus `URL` (text or OpenMetrics) instead of a metrics file, and embed the figures over the hold as server_tick (docs/metrics.md, \"From Prometheus\")")
	fs.StringVar(&f.ownFigures, "server-figures", "", "JSON `file` of the profile's own figures (its figures: block): each is computed over the hold from the source this swarm reads (the metrics file or --server-metrics-prometheus) into server_tick.NAME")
	fs.StringVar(&f.Cfg.ServerMetricsPromQL, "server-metrics-promql", "", "ask the Prometheus server at `URL` for the server's series instead of scraping it (the same mapping, read through PromQL; the figures over the hold are its increase, rate and histogram_quantile: docs/metrics.md, \"PromQL\")")
	fs.Var(labelFlag{&f.Cfg.ServerMetricsLabels}, "server-metrics-label", "`name=value` every mapped series must carry (repeatable): this server's series among all a Prometheus server holds (pod=game-0)")
	fs.StringVar(&f.promMap, "server-metrics-map", "", "JSON `file` mapping server_tick figures to the endpoint's series (with --server-metrics-prometheus or --server-metrics-promql; without it only rss_kb and cpu_pct, from process_*)")
	fs.StringVar(&f.Cfg.ServerMetricsFallback, "server-metrics-fallback-format", "", "exposition `format` assumed when the endpoint sends no usable Content-Type: text | openmetrics (default: such an answer is an error)")
	fs.Float64Var(&f.rssS, "rss-sample-interval-s", swarm.DefaultRSSSampleInterval.Seconds(), "server RSS sampling interval into rss_series, in `seconds`")
	fs.StringVar(&f.Cfg.EntityType, "entity-type", "builtin:debug-entity", "entity type each client asks for when it joins (load protocol v1: the Join's entity_type)")
	fs.Float64Var(&f.timeoutS, "timeout-s", swarm.DefaultTimeout.Seconds(), "a joined client hearing nothing for this many `seconds` is lost; also the transport's own peer timeout, where it has one (not raw UDP)")
	fs.BoolVar(&f.decode, "decode-bodies", true, "decode snapshot bodies of a known body_format and count failures (false: a benchmark knob)")
	fs.Float64Var(&f.testBusyUs, "test-busy-us", 0, "test knob: spin this many `µs` of CPU per client per worker iteration, starving the harness on purpose (the gate's harness-bound bite test)")
	fs.BoolVar(&f.hold, "hold-threads", true, "on ENet without impairment, each worker keeps its OS thread between ticks instead of parking on a Go timer (false: a benchmark knob)")
	fs.BoolVar(&f.batch, "batch", true, "send and service all of a worker's ENet clients in one call per tick (false: one call per client, a benchmark knob)")
	fs.StringVar(&f.progress, "progress", "auto", "live progress on stderr: auto | tty | plain | off")
	fs.Float64Var(&f.warmupS, "warmup-s", 0, "leave the first `seconds` of the hold (from the last connect slot) out of every windowed figure: per-client rates, gaps, intervals and RTT, the stretches, the RSS fit, the service interval")
	fs.Float64Var(&f.Cfg.Delivery.RateHz, "delivery-rate-hz", 0, "the state-update `rate` delivery is judged against (0: the rate the server announced, else the observed server tick rate)")
	fs.Float64Var(&f.Cfg.Delivery.MinRateFraction, "delivery-min-rate-fraction", gatetable.DefaultMinRateFraction, "fail unless every admitted client received at least this `share` of the delivery rate (updates/s over its joined time)")
	fs.Float64Var(&f.Cfg.Delivery.MaxGapMs, "delivery-max-gap-ms", gatetable.DefaultMaxGapMs, "fail if an admitted client went longer than this (`ms`) without a state update")
	declareDegradeFlags(fs, &f.degrade)
	fs.StringVar(&f.shard, "shard", "", "run shard `I/N` of the --clients run: clients [⌊I·C/N⌋, ⌊(I+1)·C/N⌋) with their unsharded indices, names, ramp slots and patterns")
	fs.StringVar(&f.startAt, "start-at", "", "shared start instant (RFC 3339): the ramp, duration and timeline count from it; a late start is recorded in the report")
	fs.StringVar(&f.cpuProf, "cpuprofile", "", "write a pprof CPU profile of the run to `path` (where the harness spends its time)")
	fs.StringVar(&f.memProf, "memprofile", "", "write a pprof allocation profile to `path` at the end of the run")
	declareAssertFlags(fs, *a)
	fs.Func("abort-on-breach", "`GATE:AFTER_S[:MARGIN_PCT]`: end the run once GATE's figure is beyond its --assert-* threshold by more than MARGIN_PCT % of it (default "+
		strconv.Itoa(gatetable.DefaultAbortMarginPct)+") for AFTER_S consecutive seconds (repeatable; GATE one of "+strings.Join(gatetable.Abortable(), ", ")+")",
		func(s string) error { f.abortOn = append(f.abortOn, s); return nil })
	return fs
}

// parseAbort resolves the --abort-on-breach values against the asserts:
// each names a gate that can end a run early and whose assert is on (its
// threshold is the assert's), or a gate on one of the profile's own
// figures (--server-figures), which has no assert and names its
// threshold as the value's fourth part.
func (f *Flags) parseAbort() error {
	f.Cfg.Abort = nil
	for _, v := range f.abortOn {
		r, err := f.abortRule(v)
		if err != nil {
			return err
		}
		if err := r.Validate(); err != nil {
			return fmt.Errorf("swarm: --abort-on-breach %q: %w", v, err)
		}
		f.Cfg.Abort = append(f.Cfg.Abort, r)
	}
	return nil
}

// abortRule reads one --abort-on-breach value.
func (f *Flags) abortRule(v string) (gatetable.AbortRule, error) {
	parts := strings.Split(v, ":")
	g, ok := gatetable.LookupWith(parts[0], f.ownDecl, f.ownSource())
	if len(parts) < 2 || len(parts) > 4 || !ok || len(parts) == 4 != g.Own {
		return gatetable.AbortRule{}, fmt.Errorf("swarm: --abort-on-breach %q: want GATE:AFTER_S[:MARGIN_PCT], GATE one of %s, or OWN_GATE:AFTER_S:MARGIN_PCT:THRESHOLD for a gate on a figure of --server-figures", v, strings.Join(gatetable.Abortable(), ", "))
	}
	after, err := strconv.Atoi(parts[1])
	if err != nil {
		return gatetable.AbortRule{}, fmt.Errorf("swarm: --abort-on-breach %q: AFTER_S %q is not a whole number of seconds", v, parts[1])
	}
	margin := float64(gatetable.DefaultAbortMarginPct)
	if len(parts) >= 3 {
		if margin, err = strconv.ParseFloat(parts[2], 64); err != nil {
			return gatetable.AbortRule{}, fmt.Errorf("swarm: --abort-on-breach %q: MARGIN_PCT %q is not a number", v, parts[2])
		}
	}
	thr, on := f.Asserts[g.Name]
	switch {
	case g.Own:
		if thr, err = strconv.ParseFloat(parts[3], 64); err != nil {
			return gatetable.AbortRule{}, fmt.Errorf("swarm: --abort-on-breach %q: THRESHOLD %q is not a number", v, parts[3])
		}
	case !on && g.CanAbort():
		return gatetable.AbortRule{}, fmt.Errorf("swarm: --abort-on-breach %s needs --%s: the threshold it watches is the assert's", g.Name, g.Flag)
	}
	return gatetable.AbortRule{Gate: g, Threshold: thr, AfterS: after, MarginPct: margin}, nil
}

// Parse parses `[host] [port] [options]` (positionals may come before,
// between or after the options) into a validated config. Every error is a usage error; help
// that was asked for prints on env.Stdout and is exitcode.Printed(OK).
func (cmd Command) Parse(env *Env, args []string) (*Flags, error) {
	f := &Flags{}
	fs := cmd.NewFlagSet(f, env.Stderr)
	// Positionals and options may come in any order: a team's swarm
	// command may carry its own options before the gate's HOST PORT.
	var pos []string
	for {
		for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			pos, args = append(pos, args[0]), args[1:]
		}
		if err := ParseFlags(env.Stdout, env.Stderr, fs, args); err != nil {
			return nil, err
		}
		if args = fs.Args(); len(args) == 0 {
			break
		}
	}
	f.degrade.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.degrade.set[fl.Name] = true })
	if err := f.finish(env, pos); err != nil {
		return nil, exitcode.With(exitcode.Usage, err)
	}
	f.Cfg.Protocol = cmd.Protocol
	return f, nil
}

// finish resolves positionals, environment defaults and derived values.
func (f *Flags) finish(env *Env, pos []string) error {
	var err error
	if f.Cfg.Addr, err = serverAddr(env, pos); err != nil {
		return err
	}
	f.Cfg.RunID = env.Getenv(report.RunIDEnv)
	if f.Cfg.Threads, err = parseThreads(f.threads); err != nil {
		return err
	}
	if f.mix != "" {
		f.Cfg.Mix, err = swarm.ParseMix(f.mix)
	} else {
		f.Cfg.Mix, err = swarm.SinglePattern(f.pattern)
	}
	if err != nil {
		return fmt.Errorf("swarm: %w", err)
	}
	if err := f.checkDurations(); err != nil {
		return err
	}
	if err := f.loadPromMap(); err != nil {
		return err
	}
	if err := f.loadOwnFigures(); err != nil {
		return err
	}
	f.setDurations()
	if err := f.parseShard(); err != nil {
		return err
	}
	if err := f.parseAbort(); err != nil {
		return err
	}
	if f.Cfg.Threads == 0 {
		f.Cfg.Threads = swarm.AutoThreads(f.Cfg.ShardClients())
	}
	if f.Cfg.Impairment, err = f.degrade.resolve(); err != nil {
		return fmt.Errorf("swarm: %w", err)
	}
	f.Cfg.ImpairSeed = f.degrade.seed
	if err := f.Cfg.Validate(); err != nil {
		return fmt.Errorf("swarm: %w", err)
	}
	switch f.progress {
	case "auto", "tty", "plain", "off":
	default:
		return fmt.Errorf("swarm: --progress %q: want auto, tty, plain or off", f.progress)
	}
	return nil
}

// serverAddr is the server's host:port from the positionals [host] [port],
// falling back to SCALEGATE_HOST (default 127.0.0.1) and SCALEGATE_PORT.
func serverAddr(env *Env, pos []string) (string, error) {
	if len(pos) > 2 {
		return "", fmt.Errorf("swarm: too many arguments %q (want [host] [port])", pos)
	}
	host, port := env.Getenv("SCALEGATE_HOST"), env.Getenv("SCALEGATE_PORT")
	if host == "" {
		host = "127.0.0.1"
	}
	if len(pos) > 0 {
		host = pos[0]
	}
	if len(pos) > 1 {
		port = pos[1]
	}
	if port == "" {
		return "", errors.New("swarm: no port: give [host] PORT or set SCALEGATE_PORT")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("swarm: port %q is not a number in 1..65535", port)
	}
	return net.JoinHostPort(host, port), nil
}

// checkDurations refuses a time flag that is negative, not finite, or
// longer than the swarm's longest run.
func (f *Flags) checkDurations() error {
	for _, d := range []struct {
		name string
		v    float64
		unit time.Duration
	}{{"duration", f.durationS, time.Second}, {"ramp-ms", f.rampMs, time.Millisecond}, {"rss-sample-interval-s", f.rssS, time.Second},
		{"timeout-s", f.timeoutS, time.Second}, {"test-busy-us", f.testBusyUs, time.Microsecond}, {"warmup-s", f.warmupS, time.Second}} {
		if math.IsNaN(d.v) || math.IsInf(d.v, 0) || d.v < 0 {
			return fmt.Errorf("swarm: --%s must be a finite number ≥ 0, got %g", d.name, d.v)
		}
		// Checked before the conversion, which would overflow.
		if limit := float64(swarm.MaxDuration / d.unit); d.v > limit {
			return fmt.Errorf("swarm: --%s must be at most %g (7 days), got %g", d.name, limit, d.v)
		}
	}
	if f.rssS <= 0 || f.timeoutS <= 0 {
		return errors.New("swarm: --rss-sample-interval-s and --timeout-s must be > 0")
	}
	return nil
}

// loadPromMap reads --server-metrics-map, which only means something
// beside --server-metrics-prometheus.
func (f *Flags) loadPromMap() error {
	if f.promMap == "" {
		return nil
	}
	if f.Cfg.ServerMetricsPrometheus == "" && f.Cfg.ServerMetricsPromQL == "" {
		return errors.New("swarm: --server-metrics-map goes with --server-metrics-prometheus or --server-metrics-promql")
	}
	var err error
	if f.Cfg.ServerMetricsMap, err = promsource.LoadMap(f.promMap); err != nil {
		return fmt.Errorf("swarm: --server-metrics-map: %w", err)
	}
	return nil
}

// setDurations converts the checked time flags into the swarm's config,
// with the switches that go beside them.
func (f *Flags) setDurations() {
	f.Cfg.Duration = seconds(f.durationS)
	f.Cfg.Ramp = time.Duration(f.rampMs * float64(time.Millisecond))
	f.Cfg.RSSSampleInterval = seconds(f.rssS)
	f.Cfg.Timeout = seconds(f.timeoutS)
	f.Cfg.SkipBodyDecode = !f.decode
	f.Cfg.PerClientService = !f.batch
	f.Cfg.HoldThreads = f.hold
	f.Cfg.TestBusy = time.Duration(f.testBusyUs * float64(time.Microsecond))
	f.Cfg.Warmup = seconds(f.warmupS)
}

// maxStartAhead bounds --start-at: an instant further ahead is almost
// certainly a typo (a wrong date), and the process would sit idle for it.
const maxStartAhead = 24 * time.Hour

// parseShard resolves --shard and --start-at.
func (f *Flags) parseShard() error {
	if f.shard != "" {
		sh, err := swarm.ParseShard(f.shard)
		if err != nil {
			return fmt.Errorf("swarm: --shard: %w", err)
		}
		f.Cfg.Shard = sh
	}
	if f.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, f.startAt)
		if err != nil {
			return fmt.Errorf("swarm: --start-at %q: want RFC 3339, e.g. 2026-12-01T10:00:00Z", f.startAt)
		}
		if time.Until(t) > maxStartAhead {
			return fmt.Errorf("swarm: --start-at %s is more than %s ahead", f.startAt, maxStartAhead)
		}
		f.Cfg.StartAt = t
	}
	return nil
}

// seconds converts a flag's seconds to a Duration (bounded above before
// it is called, so it cannot overflow).
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// parseThreads accepts "auto" (0) or a positive integer.
func parseThreads(s string) (int, error) {
	if s == "auto" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("swarm: --threads %q: want auto or a positive integer", s)
	}
	return n, nil
}

// pingHz is --ping-hz: Config.PingHz, whose 0 is the default, with the
// flag's 0 meaning no pings (stored as -1).
type pingHz struct{ v *float64 }

func (p pingHz) String() string {
	if p.v == nil || *p.v == 0 {
		return ""
	}
	return strconv.FormatFloat(max(*p.v, 0), 'g', -1, 64)
}

func (p pingHz) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || v > 1000 || math.IsNaN(v) {
		return fmt.Errorf("want a rate in [0, 1000] Hz, got %q", s)
	}
	if v == 0 {
		v = -1
	}
	*p.v = v
	return nil
}

// labelFlag is --server-metrics-label name=value, repeatable.
type labelFlag struct{ m *map[string]string }

func (l labelFlag) String() string {
	if l.m == nil || *l.m == nil {
		return ""
	}
	parts := make([]string, 0, len(*l.m))
	for _, k := range slices.Sorted(maps.Keys(*l.m)) {
		parts = append(parts, k+"="+(*l.m)[k])
	}
	return strings.Join(parts, ",")
}

func (l labelFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want name=value", s)
	}
	if *l.m == nil {
		*l.m = map[string]string{}
	}
	if _, dup := (*l.m)[k]; dup {
		return fmt.Errorf("%q: label %s given twice", s, k)
	}
	(*l.m)[k] = v
	return nil
}
