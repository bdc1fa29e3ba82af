// Package runner runs a profile's legs for gate runs, `scalegate ab` and
// `scalegate calibrate`.
//
// It owns a gate run's lifecycle: for each leg it starts the server and the
// swarm (internal/run/launcher), waits for them, stops them in stages and
// has the leg evaluated (internal/judge/gate); around the legs, a Session
// reads and updates the baseline, creates the run directory, writes every
// output and decides the exit code.
//
// It also orchestrates `scalegate ab` (AB, in ab.go) and `scalegate
// calibrate` (Calibration, in calibrate.go). An AB runs the legs of two
// builds of a server one after the other in rounds (A B, then B A, …), leg
// l of round r of build X in RUN/round-r/X/l. A Calibration runs the
// unchanged profile several times through Repeat (repeat.go; run i in
// RUN/run-i), as --update-baseline --runs does. Each writes its report
// (ab.md and ab.json, calibration.md and calibration.json) beside every
// leg's summary.md, and a leg that cannot complete ends it with the code a
// gate run would have. The statistics are not here: internal/judge/abtest
// schedules the rounds and judges B's change against A, and
// internal/judge/calibrate computes each gate's distribution, how many runs
// its current threshold would have failed, and the tightest threshold at
// the target false-alarm rate.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"time"

	"github.com/scalegate/scalegate/internal/config/catalog"
	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/guard/boundedfile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/gate"
	"github.com/scalegate/scalegate/internal/load/swarmcmd"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// Options configures one gate run.
type Options struct {
	Profile *profile.Profile
	// Strict forces the strict tier.
	Strict bool
	// UpdateBaseline rewrites the baseline from a fully passing run.
	UpdateBaseline bool
	// Baseline is the committed baseline (read before the run).
	Baseline *baseline.Committed
	// Dir is the run's artifact directory, already created and empty.
	Dir string
	// Self is the scalegate executable that runs `serve` and `swarm`.
	Self string
	// Progress receives one line per leg event; may be io.Discard.
	Progress io.Writer
	// Grace is the SIGINT→SIGKILL delay for each process.
	Grace time.Duration
	// Kill, when closed (a second SIGINT), kills every process of the leg
	// in progress at once instead of waiting out the grace.
	Kill <-chan struct{}
	// ServerCommand, when set, starts the server with this command template
	// instead of the profile's (scalegate ab's --a-server/--b-server): for a
	// custom server, in place of server.command (its config rendered as
	// declared); for the reference server, in place of `scalegate serve`,
	// with the reference server's TOML config written to {config} (another
	// build of scalegate: "./main/scalegate serve --config {config}"). The
	// placeholders are a custom command's (templateVars).
	ServerCommand []string
}

// Run runs every leg of the profile in order, one server and one swarm at a
// time (the machine running the gate is usually small; legs in parallel
// would measure each other). A cancelled ctx stops the leg in progress in
// stages, marks it interrupted and skips the rest.
func Run(ctx context.Context, o Options) *rundir.RunResult {
	res := newResult(o)
	ports := &launcher.PortAllocator{}
	for _, leg := range o.Profile.Legs() {
		if ctx.Err() != nil {
			res.Legs = append(res.Legs, rundir.LegResult{Leg: leg, Verdict: rundir.VerdictNotRun, Error: "not run: interrupted"})
			continue
		}
		lr := runLeg(ctx, o, leg, ports)
		fmt.Fprintf(o.Progress, "scalegate: leg %s: %s\n", leg.ID, lr.Verdict)
		res.Legs = append(res.Legs, lr)
	}
	res.Interrupted = ctx.Err() != nil
	return finishResult(res)
}

func newResult(o Options) *rundir.RunResult {
	return &rundir.RunResult{Profile: o.Profile, Tier: o.Profile.EffectiveTier(o.Strict), Strict: o.Strict,
		UpdateBaseline: o.UpdateBaseline, Dir: o.Dir, StartedAt: time.Now().UTC().Format(time.RFC3339)}
}

// finishResult runs the checks across legs, then folds the verdict and
// builds the capacity curves.
func finishResult(res *rundir.RunResult) *rundir.RunResult {
	res.Checks = gate.RunChecks(res, res.Strict)
	res.Verdict = gate.RunVerdict(res)
	res.Capacity = gate.Capacity(res)
	res.Matrix = gate.Matrix(res)
	res.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	return res
}

// legRun holds one leg's paths, processes and what happened to them while
// it runs.
type legRun struct {
	o   Options
	leg profile.Leg
	res *rundir.LegResult
	// serverStarted is when the server process started (its log's rate
	// is over its life).
	serverStarted time.Time
	metrics       string
	report        string
	facts         gate.Facts
	ports         *launcher.PortAllocator
	// startAt is the shards' shared start instant (zero: one swarm).
	startAt time.Time
	// host is what else the machine did during the hold (nil: not
	// sampled, as for a report gated offline).
	host *report.Host
	// prom is the leg's Prometheus metrics source (nil: the metrics file).
	prom *promLeg
	// zero is the swarms' start (the leg's clock origin); serverGone when
	// the wait saw the server exit, and died the server's death mid-run as
	// the leg's early end (nil: it did not die).
	zero       time.Time
	serverGone time.Time
	died       *serverDeath
	// witness is the runner's own record of the swarm's run (nil before
	// the leg got that far): the report is held to it.
	witness *witness
	// reportErr is why the leg's report could not be read (nil: read, or
	// not looked at yet); the headline names it when a report was there
	// but refused, rather than calling it missing.
	reportErr error
}

// serverDeath is a server that exited before the gate stopped it: when
// (seconds from the swarms' start) and what the summary says of it.
type serverDeath struct {
	atS    float64
	reason string
}

// runLeg runs one leg and times it, whichever way it ends.
func runLeg(ctx context.Context, o Options, leg profile.Leg, ports *launcher.PortAllocator) rundir.LegResult {
	start := time.Now()
	lr := rundir.LegResult{Leg: leg, Dir: filepath.Join(o.Dir, leg.ID), StartedAt: start.UTC().Format(time.RFC3339)}
	r := &legRun{o: o, leg: leg, res: &lr, ports: ports,
		metrics: filepath.Join(lr.Dir, "server_metrics.json"), report: filepath.Join(lr.Dir, "report.json")}
	r.run(ctx)
	r.decide()
	lr.ElapsedS = time.Since(start).Seconds()
	return lr
}

// run starts the leg's server, waits for it to be ready, runs the swarm
// (or its shards) to the end, and stops the server; every way it ends is
// recorded in r.facts and r.res for decide. The host watch and the
// server are started here, so their deferred stops stay run's: they run
// last, whichever step ends the leg.
func (r *legRun) run(ctx context.Context) {
	server, swarmSpecs, err := r.setUp()
	if err != nil {
		r.notRun(err)
		return
	}
	withdraw, err := r.announceTarget()
	if err != nil {
		r.notRun(err)
		return
	}
	defer withdraw()
	host, err := startHostWatch(ctx)
	if err != nil {
		r.notRun(err)
		return
	}
	defer host.s.Stop()
	proc, err := launcher.Start(ctx, server.spec)
	r.serverStarted = time.Now()
	if err != nil {
		r.notRun(err)
		return
	}
	defer r.stopServer(proc)
	if !r.awaitReady(ctx, proc, server) {
		return
	}
	swarms, ok := r.runSwarms(ctx, host, proc, swarmSpecs)
	if !ok {
		return
	}
	r.wrapUp(ctx, proc, swarms)
}

// setUp is everything before a process starts: the leg directory, the
// launch specs (prepare) and the witness, whose environment every swarm
// spec carries (kept in r.witness). An error is the leg's not-run reason
// as run records it.
func (r *legRun) setUp() (serverLaunch, []launcher.Spec, error) {
	if err := os.Mkdir(r.res.Dir, 0o755); err != nil {
		return serverLaunch{}, nil, fmt.Errorf("leg directory: %w", err)
	}
	server, swarmSpecs, err := r.prepare()
	if err != nil {
		return serverLaunch{}, nil, err
	}
	wt, err := r.newWitness(r.res.Port)
	if err != nil {
		return serverLaunch{}, nil, fmt.Errorf("witness: %w", err)
	}
	for i := range swarmSpecs {
		swarmSpecs[i].Env = append(swarmSpecs[i].Env, wt.env())
	}
	r.witness = wt
	return server, swarmSpecs, nil
}

// awaitReady waits for the started server to be ready; false when the
// leg ends there, recorded as interrupted (ctx done) or not run.
func (r *legRun) awaitReady(ctx context.Context, proc *launcher.Process, server serverLaunch) bool {
	if err := launcher.WaitReadyContext(ctx, proc, r.ready(), server.readyTimeout, 50*time.Millisecond); err != nil {
		if ctx.Err() != nil {
			r.facts.Interrupted = true
			r.res.Error = "interrupted before the swarm started"
			return false
		}
		r.notRun(err)
		return false
	}
	return true
}

// runSwarms is the measured part of the leg: it sets the leg's clock
// origin, starts the swarms against the ready server, waits them out and
// stops the host watch's sampling, then records a server that died
// mid-run. false (recorded as not run) when the swarms did not start.
func (r *legRun) runSwarms(ctx context.Context, host *hostWatch, proc *launcher.Process, swarmSpecs []launcher.Spec) ([]*launcher.Process, bool) {
	p := r.o.Profile
	zero := time.Now()
	if !r.startAt.IsZero() {
		zero = r.startAt
	}
	r.zero = zero
	host.swarmStarts(zero, p.ClientsFor(r.leg), time.Duration(p.RampMs)*time.Millisecond, time.Duration(p.DurationS*float64(time.Second)))
	r.witness.launching(ctx, r.metrics)
	swarms, err := startAll(ctx, swarmSpecs)
	if err != nil {
		r.notRun(err)
		return nil, false
	}
	r.waitSwarms(ctx, swarms, proc, r.swarmLimit())
	r.witness.exited(ctx, r.metrics, proc)
	r.host = host.stop()
	// A server gone before the gate stopped it died mid-run, whichever of
	// the two the wait noticed first.
	if ctx.Err() == nil && proc.Exited() {
		r.facts.NotRun = fmt.Sprintf("server exited (status %d) during the run; see %s", proc.ExitCode(), filepath.Join(r.res.Dir, "server.log"))
		r.res.Error = rundir.JoinDetail(r.res.Error, r.facts.NotRun)
		r.recordDeath(proc.ExitCode())
	}
	return swarms, true
}

// wrapUp is the leg's staged stop once the swarms are done: their exit
// code, the server stopped (before its figures are read), the report
// evaluated, and why the leg has no report when it has none.
func (r *legRun) wrapUp(ctx context.Context, proc *launcher.Process, swarms []*launcher.Process) {
	code := r.swarmExit(swarms)
	r.res.SwarmExit = &code
	r.stopServer(proc)
	r.evaluate(ctx)
	if ctx.Err() != nil {
		r.facts.Interrupted, r.res.Error = true, "interrupted: partial artifacts kept"
		return
	}
	if r.res.Report == nil && r.facts.NotRun == "" {
		why := r.noReportReason(code, crashLine(swarms))
		r.facts.NotRun, r.res.Error = why, rundir.JoinDetail(r.res.Error, why)
	}
}

// noReportReason is the not-run reason of a leg whose swarm exited code
// and left no report it could use: refused, crashed, usage or unsupported
// transport, or none. crash is the first line of a Go panic or fatal error
// in a swarm's log ("" when none): a panicking Go program exits 2 too, and
// calling that an unsupported transport sends the reader the wrong way.
func (r *legRun) noReportReason(code int, crash string) string {
	log := filepath.Join(r.res.Dir, "swarm.log")
	switch {
	case r.reportErr != nil && !errors.Is(r.reportErr, fs.ErrNotExist):
		return fmt.Sprintf("swarm exited %d; its report was refused: %v; see %s", code, r.reportErr, log)
	case crash != "":
		return fmt.Sprintf("swarm crashed (exit %d): %s; see %s", code, crash, log)
	case exitcode.Code(code) == exitcode.Usage:
		return fmt.Sprintf("swarm exited %d (a usage error, or transport %s unsupported by the swarm); see %s", code, r.o.Profile.TransportFor(r.leg), log)
	}
	return fmt.Sprintf("swarm exited %d without a report; see %s", code, log)
}

// crashLine is the first swarm's crash line, "" when none crashed.
func crashLine(swarms []*launcher.Process) string {
	for _, s := range swarms {
		if line := s.CrashLine(); line != "" {
			return line
		}
	}
	return ""
}

// serverLaunch is how the leg's server starts and how long it may take to
// become ready.
type serverLaunch struct {
	spec         launcher.Spec
	readyTimeout time.Duration
}

// prepare picks the leg's port, writes the server's config and the
// swarm's inputs into the leg directory and returns both launch specs,
// each under a guardian (the scalegate binary): whatever the server's
// command does, nothing it starts outlives the leg or the gate.
func (r *legRun) prepare() (serverLaunch, []launcher.Spec, error) {
	port, err := r.ports.Next()
	if err != nil {
		return serverLaunch{}, nil, err
	}
	r.res.Port = port
	if r.o.Profile.Server.Prometheus() {
		if err := r.preparePrometheus(); err != nil {
			return serverLaunch{}, nil, err
		}
	}
	server, err := r.serverSpec(port)
	if err != nil {
		return serverLaunch{}, nil, err
	}
	swarms, err := r.swarmSpecs(port)
	if err != nil {
		return serverLaunch{}, nil, err
	}
	server.spec.Guardian, server.spec.Kill = r.o.Self, r.o.Kill
	for i := range swarms {
		swarms[i].Guardian, swarms[i].Kill = r.o.Self, r.o.Kill
	}
	r.res.ServerCmd = launcher.CommandLine(server.spec.Path, server.spec.Args)
	r.res.SwarmCmd = swarmCommandLine(swarms, r.o.Self, r.report)
	return server, swarms, nil
}

// swarmSlack is how long past its duration, ramp and start lead a swarm
// may take to connect, write its report and exit before the gate stops it.
const swarmSlack = 60 * time.Second

// swarmLimit bounds a leg's swarm run: the shards' start lead plus
// duration plus the connect ramp plus swarmSlack.
func (r *legRun) swarmLimit() time.Duration {
	p := r.o.Profile
	return time.Duration(p.DurationS*float64(time.Second)) +
		time.Duration(p.ClientsFor(r.leg)*p.RampMs)*time.Millisecond + swarmSlack + shardLead(p.Shards)
}

// waitSwarms waits for every swarm process (one, or one per shard) to
// finish its run, for at most limit; a swarm that overstays is stopped and
// the leg did not run as declared. A server that dies mid-run stops the
// swarms too (nothing left to measure).
func (r *legRun) waitSwarms(ctx context.Context, swarms []*launcher.Process, server *launcher.Process, limit time.Duration) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for _, swarm := range swarms {
		select {
		case <-swarm.Done():
			continue
		case <-ctx.Done():
		case <-server.Done():
			r.serverGone = time.Now()
		case <-timer.C:
			// The harness failing to produce its output, not a finding
			// about the server: the report it wrote when stopped is cut
			// short (aborted).
			r.facts.NotRun = fmt.Sprintf("swarm still running %s after start (duration + ramp + start lead + %s): stopped; see %s",
				limit, swarmSlack, filepath.Join(r.res.Dir, "swarm.log"))
			r.res.Error = r.facts.NotRun
		}
		stopAll(swarms)
		return
	}
}

// recordDeath makes a server that died mid-run the leg's early end: when
// the wait saw it go (or now, when the swarm ended first), in seconds from
// the swarms' start, and why. The leg stays a launch failure (Facts.NotRun):
// nothing the swarm measured after the death is about the server.
func (r *legRun) recordDeath(status int) {
	gone := r.serverGone
	if gone.IsZero() {
		gone = time.Now()
	}
	at := max(0, gone.Sub(r.zero).Seconds())
	at = float64(int64(at*10+0.5)) / 10
	r.died = &serverDeath{atS: at, reason: fmt.Sprintf("server exited (status %d) at %.1f s of the %s s run: the leg ended there (see %s)",
		status, at, strconv.FormatFloat(r.o.Profile.DurationS, 'f', -1, 64), filepath.Join(r.res.Dir, "server.log"))}
	r.res.AbortedAtS, r.res.AbortReason = &r.died.atS, r.died.reason
}

func (r *legRun) stopServer(server *launcher.Process) {
	server.Stop()
	if r.res.ServerExit == nil {
		code := server.ExitCode()
		r.res.ServerExit = &code
	}
	r.res.ServerLog = logSummary(server.LogStats(), time.Since(r.serverStarted))
}

// logSummary is a process's log figures for the leg's result: what it
// wrote, at what rate over its life, and what the cap kept.
func logSummary(st launcher.LogStats, life time.Duration) *rundir.LogSummary {
	s := &rundir.LogSummary{Bytes: st.Bytes, Lines: st.Lines, KeptBytes: st.KeptBytes, CapBytes: st.CapBytes, Truncated: st.Truncated}
	if secs := life.Seconds(); secs > 0 {
		s.BytesPerS, s.LinesPerS = float64(st.Bytes)/secs, float64(st.Lines)/secs
	}
	return s
}

// decide sets the leg's verdict: once, by gate.LegVerdict, from its checks
// and what happened to its processes.
func (r *legRun) decide() {
	r.res.Verdict = gate.LegVerdict(r.res.Checks, r.facts)
}

// evaluate reads whatever report exists and checks it; partial runs keep
// their evidence. The report file is validated against the schema here
// (the gate package does not import CUE).
func (r *legRun) evaluate(ctx context.Context) {
	// The report is read even after an interrupt (partial evidence is
	// kept), so the read has its own bound, not the cancelled run's.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), reportReadTimeout)
	defer cancel()
	rep, err := report.ReadReportContext(ctx, r.report)
	r.reportErr = err
	if err := amendReport(r.report, rep, r.host, r.died); err != nil {
		r.artifactErr(err)
	}
	if rep != nil && rep.AbortedAtS != nil && r.res.AbortedAtS == nil {
		at := *rep.AbortedAtS
		r.res.AbortedAtS, r.res.AbortReason = &at, rep.AbortReason
	}
	in := gate.Input{Profile: r.o.Profile, Leg: r.leg, Strict: r.o.Strict, Report: rep, ReportErr: err,
		Baseline: r.o.Baseline, UpdateBaseline: r.o.UpdateBaseline}
	if r.witness != nil && !r.witness.w.Exited.IsZero() {
		in.Witness = &r.witness.w
	}
	if rep != nil {
		in.SchemaValidated, in.SchemaErr = true, validateReport(ctx, r.report)
	}
	r.res.Report = rep
	r.res.Checks = gate.Evaluate(in)
	if rep == nil {
		return
	}
	if err := rundir.WriteTimelineCSV(filepath.Join(r.res.Dir, "timeline.csv"), rep.Timeline); err != nil {
		r.artifactErr(err)
	}
	if err := rundir.WritePlayersCSV(filepath.Join(r.res.Dir, "players.csv"), rep.Players); err != nil {
		r.artifactErr(err)
	}
}

// reportReadTimeout bounds reading a leg's report (and validating it).
const reportReadTimeout = 10 * time.Second

// validateReport checks the report file against schema/report.cue #Report.
func validateReport(ctx context.Context, path string) error {
	b, err := boundedfile.ReadFile(ctx, path, report.MaxReportBytes)
	if err != nil {
		return err
	}
	return catalog.ValidateJSON("#Report", filepath.Base(path), b)
}

// artifactErr records a leg file that could not be written: the leg's
// evidence is incomplete, so it cannot pass.
func (r *legRun) artifactErr(err error) {
	r.facts.ArtifactErr = true
	r.res.Error = rundir.JoinDetail(r.res.Error, err.Error())
}

// notRun records why the leg could not run as declared, with every check
// unevaluable (no report) so the summary shows what was not checked.
func (r *legRun) notRun(err error) {
	r.facts.NotRun, r.res.Error = err.Error(), err.Error()
	r.res.Checks = gate.Evaluate(gate.Input{Profile: r.o.Profile, Leg: r.leg, ReportErr: errors.New("leg did not run: " + err.Error())})
}

// swarmSpec is one swarm process of the leg: `scalegate swarm …` built by
// swarmcmd with the profile's hard gates forwarded as --assert-* flags and
// the impairment schedule written to the leg's impairment.json.
func (r *legRun) swarmSpec(port int, o swarmcmd.Options) (launcher.Spec, error) {
	p := r.o.Profile
	o.Host, o.Port, o.ServerMetrics, o.Strict, o.Asserts = "127.0.0.1", strconv.Itoa(port), r.metrics, r.o.Strict, true
	if r.prom != nil {
		o.ServerMetrics = ""
		o.Prometheus = &swarmcmd.Prometheus{URL: r.prom.url, MapFile: r.prom.mapPath, Fallback: r.prom.fallback,
			PromQL: r.prom.client != nil, Labels: r.prom.labels}
	}
	if o.Report == "" {
		o.Report = r.report
	}
	if len(p.Figures) > 0 {
		o.FiguresFile = filepath.Join(r.res.Dir, "figures.json")
		if err := report.WriteJSONAtomic(o.FiguresFile, p.Figures); err != nil {
			return launcher.Spec{}, fmt.Errorf("own figures: %w", err)
		}
	}
	if len(p.Impairment) > 0 {
		o.ImpairmentFile = filepath.Join(r.res.Dir, "impairment.json")
		if err := report.WriteJSONAtomic(o.ImpairmentFile, p.Impairment); err != nil {
			return launcher.Spec{}, fmt.Errorf("impairment schedule: %w", err)
		}
	}
	if _, ok := profile.TracePath(r.leg.Pattern); ok {
		pat, err := r.materializeTrace()
		if err != nil {
			return launcher.Spec{}, err
		}
		o.Pattern = pat
	}
	path, args := r.o.Self, []string{"swarm"}
	if p.Swarm != nil {
		// A team's own swarm: its command, then the same arguments.
		path, args = p.Swarm.Command[0], append([]string(nil), p.Swarm.Command[1:]...)
	}
	return launcher.Spec{Name: "swarm", Path: path, Args: append(args, swarmcmd.Args(p, r.leg, o)...),
		LogPath: filepath.Join(r.res.Dir, "swarm.log"), Grace: r.o.Grace}, nil
}

// materializeTrace writes the leg's recording into its artifact directory
// (the embedded profiles' recordings exist only inside the binary, and the
// artifacts should hold what was replayed) and returns the swarm's
// --pattern value pointing at it.
func (r *legRun) materializeTrace() (string, error) {
	pat := r.leg.Pattern
	files, ok := r.o.Profile.Traces[pat]
	if !ok {
		return "", fmt.Errorf("pattern %s: recording not loaded with the profile", pat)
	}
	rel, _ := profile.TracePath(pat)
	dir := filepath.Join(r.res.Dir, "trace")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("trace: %w", err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			return "", fmt.Errorf("trace: %w", err)
		}
	}
	if len(files) == 1 && files[0].Path == path.Clean(rel) {
		return profile.TracePrefix + filepath.Join(dir, files[0].Name), nil
	}
	return profile.TracePrefix + dir, nil
}
