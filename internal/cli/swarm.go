package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/scalegate/scalegate/internal/exitcode"
	"github.com/scalegate/scalegate/internal/gatetable"
	"github.com/scalegate/scalegate/internal/promsource"
	"github.com/scalegate/scalegate/internal/relay"
	"github.com/scalegate/scalegate/internal/report"
	"github.com/scalegate/scalegate/internal/safetext"
	"github.com/scalegate/scalegate/internal/swarm"
	"github.com/scalegate/scalegate/internal/transport"
	_ "github.com/scalegate/scalegate/internal/transport/enet" // registers "enet"
)

const swarmUsage = `usage: scalegate swarm [host] [port] [options]

Runs N synthetic 60 Hz clients against a server speaking the scalegate load
protocol and reports what a real client observes. host and port default to
$SCALEGATE_HOST (else 127.0.0.1) and $SCALEGATE_PORT.

Asserts whose threshold is < 0 are off (the default); the congestion pair is
off at 0. An assert whose metric is missing fails. Exit status: 0 passed,
1 an assert failed or clients were lost, 2 usage (or a --transport this build
cannot speak), 130 interrupted (the report is still written, marked aborted).

options:
`

// swarmFlags are the parsed command line of `scalegate swarm`.
type swarmFlags struct {
	cfg       swarm.Config
	asserts   swarm.Asserts
	jsonPath  string
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
}

// degradeFlags are the --degrade-* options: one impairment window on the
// command line, or a whole schedule from a JSON file.
type degradeFlags struct {
	phase    relay.Phase
	schedule string
	seed     uint64
	set      map[string]bool // which window flags were given
}

func init() {
	register("swarm", "run the bot swarm against a server and report what clients observe", runSwarm)
}

// newSwarmFlagSet declares every option on fs, writing into f.
func newSwarmFlagSet(f *swarmFlags, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("swarm", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), swarmUsage)
		fs.PrintDefaults()
	}
	a := &f.asserts
	*a = swarm.NoAsserts()
	fs.IntVar(&f.cfg.Clients, "clients", swarm.DefaultClients, "synthetic clients")
	fs.Float64Var(&f.durationS, "duration", swarm.DefaultDuration.Seconds(), "run `seconds`, counted from the first connect (includes the ramp)")
	fs.Float64Var(&f.cfg.RateHz, "rate", swarm.DefaultRateHz, "Input rate per client and worker loop rate (Hz)")
	fs.StringVar(&f.cfg.Transport, "transport", swarm.DefaultTransport, "transport `name`; one this build cannot speak exits 2, never falls back")
	fs.Float64Var(&f.rampMs, "ramp-ms", swarm.DefaultRamp.Seconds()*1000, "delay between successive connects (ms)")
	fs.StringVar(&f.threads, "threads", "auto", "worker goroutines, or auto = min(cores, ceil(clients/32))")
	fs.StringVar(&f.pattern, "pattern", "weave", "flight pattern: "+strings.Join(swarm.PatternNames(), " | ")+" | trace:PATH (a FLIT file or a directory of them)")
	fs.StringVar(&f.mix, "pattern-mix", "", "weighted mix, e.g. \"weave:80,aggressive:20\" or \"trace:t.flit:30,weave:70\" (supersedes --pattern)")
	fs.StringVar(&f.jsonPath, "json", "", "write the JSON report to `path`")
	fs.StringVar(&f.cfg.ServerMetrics, "server-metrics", "", "server metrics `source` to sample and embed as server_tick: a file path or an http(s) URL ([metrics] http_listen)")
	fs.StringVar(&f.cfg.ServerMetricsPrometheus, "server-metrics-prometheus", "", "scrape the server's Prometheus `URL` (text or OpenMetrics) instead of a metrics file, and embed the figures over the hold as server_tick (docs/metrics.md, \"From Prometheus\")")
	fs.StringVar(&f.promMap, "server-metrics-map", "", "JSON `file` mapping server_tick figures to the endpoint's series (with --server-metrics-prometheus; without it only rss_kb and cpu_pct, from process_*)")
	fs.StringVar(&f.cfg.ServerMetricsFallback, "server-metrics-fallback-format", "", "exposition `format` assumed when the endpoint sends no usable Content-Type: text | openmetrics (default: such an answer is an error)")
	fs.Float64Var(&f.rssS, "rss-sample-interval-s", swarm.DefaultRSSSampleInterval.Seconds(), "server RSS sampling interval into rss_series (s)")
	fs.StringVar(&f.cfg.EntityType, "entity-type", "builtin:debug-entity", "entity_type each client requests in its Join")
	fs.Float64Var(&f.timeoutS, "timeout-s", swarm.DefaultTimeout.Seconds(), "a joined client hearing nothing this long is lost; also the transport peer timeout (s)")
	fs.BoolVar(&f.decode, "decode-bodies", true, "decode snapshot bodies of a known body_format and count failures (false: a benchmark knob)")
	fs.Float64Var(&f.testBusyUs, "test-busy-us", 0, "test knob: spin `N` µs of CPU per client per worker iteration, starving the harness on purpose (the gate's harness-bound bite test)")
	fs.BoolVar(&f.hold, "hold-threads", true, "on ENet without impairment, each worker keeps its OS thread between ticks instead of parking on a Go timer (false: a benchmark knob)")
	fs.BoolVar(&f.batch, "batch", true, "send and service all of a worker's ENet clients in one call per tick (false: one call per client, a benchmark knob)")
	fs.StringVar(&f.progress, "progress", "auto", "live progress on stderr: auto | tty | plain | off")
	declareDegradeFlags(fs, &f.degrade)
	fs.StringVar(&f.shard, "shard", "", "run shard `I/N` of the --clients run: clients [⌊I·C/N⌋, ⌊(I+1)·C/N⌋) with their unsharded indices, names, ramp slots and patterns")
	fs.StringVar(&f.startAt, "start-at", "", "shared start instant (RFC 3339): the ramp, duration and timeline count from it; a late start is recorded in the report")
	fs.StringVar(&f.cpuProf, "cpuprofile", "", "write a pprof CPU profile of the run to `path` (where the harness spends its time)")
	fs.StringVar(&f.memProf, "memprofile", "", "write a pprof allocation profile to `path` at the end of the run")
	declareAssertFlags(fs, *a)
	return fs
}

// parseSwarmArgs parses `[host] [port] [options]` (positionals may also
// follow the options) into a validated config. Every error is a usage error.
func parseSwarmArgs(env *Env, args []string) (*swarmFlags, error) {
	f := &swarmFlags{}
	fs := newSwarmFlagSet(f, env.Stderr)
	var pos []string
	for len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		pos, args = append(pos, args[0]), args[1:]
	}
	if err := parseFlags(env, fs, args); err != nil {
		return nil, err
	}
	pos = append(pos, fs.Args()...)
	f.degrade.set = map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { f.degrade.set[fl.Name] = true })
	if err := f.finish(env, pos); err != nil {
		return nil, exitcode.With(exitcode.Usage, err)
	}
	return f, nil
}

// finish resolves positionals, environment defaults and derived values.
func (f *swarmFlags) finish(env *Env, pos []string) error {
	if len(pos) > 2 {
		return fmt.Errorf("swarm: too many arguments %q (want [host] [port])", pos)
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
		return errors.New("swarm: no port: give [host] PORT or set SCALEGATE_PORT")
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return fmt.Errorf("swarm: port %q is not a number in 1..65535", port)
	}
	f.cfg.Addr = net.JoinHostPort(host, port)
	var err error
	if f.cfg.Threads, err = parseThreads(f.threads); err != nil {
		return err
	}
	if f.mix != "" {
		f.cfg.Mix, err = swarm.ParseMix(f.mix)
	} else {
		f.cfg.Mix, err = swarm.SinglePattern(f.pattern)
	}
	if err != nil {
		return fmt.Errorf("swarm: %w", err)
	}
	for _, d := range []struct {
		name string
		v    float64
		unit time.Duration
	}{{"duration", f.durationS, time.Second}, {"ramp-ms", f.rampMs, time.Millisecond}, {"rss-sample-interval-s", f.rssS, time.Second},
		{"timeout-s", f.timeoutS, time.Second}, {"test-busy-us", f.testBusyUs, time.Microsecond}} {
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
	f.cfg.Duration = seconds(f.durationS)
	f.cfg.Ramp = time.Duration(f.rampMs * float64(time.Millisecond))
	f.cfg.RSSSampleInterval = seconds(f.rssS)
	f.cfg.Timeout = seconds(f.timeoutS)
	f.cfg.SkipBodyDecode = !f.decode
	f.cfg.PerClientService = !f.batch
	f.cfg.HoldThreads = f.hold
	f.cfg.TestBusy = time.Duration(f.testBusyUs * float64(time.Microsecond))
	if err := f.parseShard(); err != nil {
		return err
	}
	if f.cfg.Threads == 0 {
		f.cfg.Threads = swarm.AutoThreads(f.cfg.ShardClients())
	}
	if f.cfg.Impairment, err = f.degrade.resolve(); err != nil {
		return fmt.Errorf("swarm: %w", err)
	}
	f.cfg.ImpairSeed = f.degrade.seed
	if f.promMap != "" {
		if f.cfg.ServerMetricsPrometheus == "" {
			return errors.New("swarm: --server-metrics-map goes with --server-metrics-prometheus")
		}
		if f.cfg.ServerMetricsMap, err = promsource.LoadMap(f.promMap); err != nil {
			return fmt.Errorf("swarm: --server-metrics-map: %w", err)
		}
	}
	if err := f.cfg.Validate(); err != nil {
		return fmt.Errorf("swarm: %w", err)
	}
	switch f.progress {
	case "auto", "tty", "plain", "off":
	default:
		return fmt.Errorf("swarm: --progress %q: want auto, tty, plain or off", f.progress)
	}
	return nil
}

// maxStartAhead bounds --start-at: an instant further ahead is almost
// certainly a typo (a wrong date), and the process would sit idle for it.
const maxStartAhead = 24 * time.Hour

// parseShard resolves --shard and --start-at.
func (f *swarmFlags) parseShard() error {
	if f.shard != "" {
		sh, err := swarm.ParseShard(f.shard)
		if err != nil {
			return fmt.Errorf("swarm: --shard: %w", err)
		}
		f.cfg.Shard = sh
	}
	if f.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, f.startAt)
		if err != nil {
			return fmt.Errorf("swarm: --start-at %q: want RFC 3339, e.g. 2026-12-01T10:00:00Z", f.startAt)
		}
		if time.Until(t) > maxStartAhead {
			return fmt.Errorf("swarm: --start-at %s is more than %s ahead", f.startAt, maxStartAhead)
		}
		f.cfg.StartAt = t
	}
	return nil
}

// seconds converts a flag's seconds to a Duration, saturating instead of
// overflowing (1e308 s must read as "too long", not as a negative time).
func seconds(s float64) time.Duration {
	if ns := s * float64(time.Second); ns >= math.MaxInt64 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(s * float64(time.Second))
}

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

// isTerminal reports whether w is a terminal. Asking the tty driver (not
// the file mode) matters: /dev/null is a character device too, and a CI
// job that sends stderr there must get plain progress lines, not
// carriage-return redraws.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && isatty.IsTerminal(f.Fd())
}

func runSwarm(ctx context.Context, env *Env, args []string) error {
	f, err := parseSwarmArgs(env, args)
	if err != nil {
		return err
	}
	if _, err := transport.Lookup(f.cfg.Transport); err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("swarm: --transport: %w", err))
	}
	switch f.progress {
	case "auto":
		f.cfg.Progress, f.cfg.ProgressTTY = env.Stderr, isTerminal(env.Stderr)
	case "tty", "plain":
		f.cfg.Progress, f.cfg.ProgressTTY = env.Stderr, f.progress == "tty"
	}
	stopProf, err := startProfiles(f.cpuProf, f.memProf)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("swarm: %w", err))
	}
	res, err := swarm.Run(ctx, f.cfg)
	if perr := stopProf(); perr != nil {
		fmt.Fprintf(env.Stderr, "swarm: %v\n", perr)
	}
	if err != nil {
		var ub *transport.UnknownBackendError
		var te *swarm.TraceError
		if errors.As(err, &te) {
			return exitcode.With(exitcode.InvalidProfile, fmt.Errorf("swarm: --pattern: %w", err))
		}
		if errors.As(err, &ub) {
			return exitcode.With(exitcode.Usage, fmt.Errorf("swarm: --transport: %w", err))
		}
		return exitcode.With(exitcode.Usage, fmt.Errorf("swarm: %w", err))
	}
	failed := swarm.Evaluate(f.asserts, res)
	writeSummary(env.Stdout, res)
	for _, ar := range failed {
		fmt.Fprintf(env.Stderr, "swarm: %s\n", safetext.Terminal(swarm.FailureLine(ar)))
	}
	if f.jsonPath != "" {
		if err := report.WriteJSONAtomic(f.jsonPath, res.Report); err != nil {
			return exitcode.With(exitcode.Internal, fmt.Errorf("swarm: %w", err))
		}
	}
	return swarmOutcome(res, len(failed))
}

// swarmOutcome maps a finished run to its exit status: interrupted, then
// the load not happening (the gate's own rule, gatetable.LoadHappened),
// then a failed assert.
func swarmOutcome(res *swarm.Result, failed int) error {
	r := res.Report
	if r.Aborted != "" {
		return exitcode.Errorf(exitcode.Interrupted, "swarm: interrupted after %.1fs; report marked aborted", r.DurationS)
	}
	if why := gatetable.LoadHappened(r); len(why) > 0 {
		msg := "swarm: " + strings.Join(why, "; ")
		if r.ClientsConnected == 0 && res.DialError != nil {
			msg += fmt.Sprintf("; first error: %v", res.DialError)
		}
		return exitcode.Errorf(exitcode.GateFailed, "%s", msg)
	}
	if failed > 0 {
		return printed(exitcode.GateFailed)
	}
	return nil
}

// writeSummary prints the summary escaped for the terminal: it carries
// what the server said (refuse and loss reasons, its metrics errors), the
// impairment schedule's phase names and file names.
func writeSummary(w io.Writer, res *swarm.Result) { printSummary(safetext.Writer(w), res) }

// printSummary prints the human-readable outcome of a run.
func printSummary(w io.Writer, res *swarm.Result) {
	r := res.Report
	fmt.Fprintf(w, "swarm: %s, pattern %s %v, %d clients, %d threads, %.1fs\n", r.Transport, r.Pattern, r.PatternCounts, r.Clients, r.Threads, r.DurationS)
	if s := r.Shard; s != nil {
		fmt.Fprintf(w, "  shard %d/%d: clients %d..%d of %d, started %.1f ms late\n", s.Index, s.Count, s.FirstClient, s.FirstClient+r.Clients-1, s.ClientsTotal, s.StartLateMs)
	}
	fmt.Fprintf(w, "  admitted %d  refused %d %v  disconnected %d %v  never connected %d %v\n",
		r.ClientsConnected, r.ClientsRefused, r.RefusedByReason, r.ClientsDisconnected, r.DisconnectedByReason, r.ClientsNeverConnected, r.NeverConnectedByReason)
	if h := r.ObservedServerTickHz; h != nil {
		fmt.Fprintf(w, "  observed tick-Hz min/mean/max %.2f / %.2f / %.2f\n", h.Min, h.Mean, h.Max)
	}
	if k := r.DownstreamKBsPerClient; k != nil {
		fmt.Fprintf(w, "  downstream KB/s per client mean %.2f max %.2f\n", k.Mean, k.Max)
	}
	pct := func(name string, p *report.Percentiles) {
		if p != nil {
			fmt.Fprintf(w, "  %-18s p50 %.2f  p95 %.2f  p99 %.2f  max %.2f ms\n", name, p.P50, p.P95, p.P99, p.Max)
		}
	}
	pct("rtt", r.RTTMs)
	pct("peer delay", r.PeerDelayMs)
	pct("connect", r.ConnectMs)
	pct("worker loop dt", r.WorkerLoopDtMs)
	if p := r.ServiceIntervalMs; p != nil {
		fmt.Fprintf(w, "  %-18s p50 %.2f  p99 %.2f  max %.2f  mean %.3f ms\n", "service interval", p.P50, p.P99, p.Max, p.Mean)
	}
	if in := r.InputsPerSPerClient; in != nil {
		fmt.Fprintf(w, "  inputs/s per client min/mean/max %.2f / %.2f / %.2f (%d sent)\n", in.Min, in.Mean, in.Max, r.InputsSent)
	}
	if r.MaxSnapshotGapMs != nil {
		fmt.Fprintf(w, "  max snapshot gap %.1f ms, snapshots %d, decode errors %d\n", *r.MaxSnapshotGapMs, r.SnapshotsReceived, r.SnapshotDecodeErrors)
	}
	if r.CPUUsPerClientTick != nil {
		fmt.Fprintf(w, "  harness CPU %.2fs, %.1f µs per client-tick (workers %s)\n", *r.HarnessCPUS, *r.CPUUsPerClientTick, r.WorkerPacing)
	}
	if r.ServerMetricsError != "" {
		fmt.Fprintf(w, "  server metrics: %s\n", r.ServerMetricsError)
	}
	for _, t := range r.Traces {
		fmt.Fprintf(w, "  %s: %d file(s), %d records; %d of %d clients replayed %d record(s), %d skipped, %d keepalive(s)\n",
			t.Pattern, len(t.Files), t.Records, t.ClientsReplayed, t.Clients, t.RecordsReplayed, t.RecordsSkipped, t.Keepalives)
	}
	printImpairment(w, r)
	for _, s := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", s)
	}
}
