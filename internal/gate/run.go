package gate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/scalegate/scalegate/internal/gatetable"
	"github.com/scalegate/scalegate/internal/launcher"
	"github.com/scalegate/scalegate/internal/report"
)

// Options configures one gate run.
type Options struct {
	Profile *Profile
	// Strict forces the strict tier.
	Strict bool
	// UpdateBaseline rewrites the baseline from a fully passing run.
	UpdateBaseline bool
	// Baseline is the committed baseline (read before the run).
	Baseline *Baseline
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
}

// LegResult is one evaluated leg.
type LegResult struct {
	Leg        Leg     `json:"leg"`
	Dir        string  `json:"dir"`
	Port       int     `json:"port"`
	Verdict    Verdict `json:"verdict"`
	Checks     []Check `json:"checks"`
	Error      string  `json:"error,omitempty"`
	ServerCmd  string  `json:"server_command,omitempty"`
	SwarmCmd   string  `json:"swarm_command,omitempty"`
	SwarmExit  *int    `json:"swarm_exit,omitempty"`
	ServerExit *int    `json:"server_exit,omitempty"`
	StartedAt  string  `json:"started_at"`
	ElapsedS   float64 `json:"elapsed_s"`
	// Shards is how many swarm processes ran the leg (profile shards > 1);
	// ShardExits their exit statuses, by shard index.
	Shards     int   `json:"shards,omitempty"`
	ShardExits []int `json:"shard_exits,omitempty"`

	Report *report.Report `json:"-"`
}

// RunResult is a whole gate run.
type RunResult struct {
	Profile         *Profile    `json:"profile"`
	Tier            string      `json:"tier"`
	Strict          bool        `json:"strict"`
	UpdateBaseline  bool        `json:"update_baseline"`
	Dir             string      `json:"dir"`
	Legs            []LegResult `json:"legs"`
	Verdict         Verdict     `json:"verdict"`
	Interrupted     bool        `json:"interrupted"`
	BaselineUpdated bool        `json:"baseline_updated"`
	BaselineNote    string      `json:"baseline_note,omitempty"`
	// Capacity is the client sweep's curves and knees (sweep.clients).
	Capacity   []CapacityCurve `json:"capacity,omitempty"`
	ExitCode   int             `json:"exit_code"`
	StartedAt  string          `json:"started_at"`
	FinishedAt string          `json:"finished_at"`
}

// Run runs every leg of the profile in order, one server and one swarm at a
// time (the machine running the gate is usually small; legs in parallel
// would measure each other). A cancelled ctx stops the leg in progress in
// stages, marks it interrupted and skips the rest.
func Run(ctx context.Context, o Options) *RunResult {
	res := &RunResult{Profile: o.Profile, Tier: EffectiveTier(o.Profile, o.Strict), Strict: o.Strict,
		UpdateBaseline: o.UpdateBaseline, Dir: o.Dir, StartedAt: time.Now().UTC().Format(time.RFC3339)}
	ports := &launcher.PortAllocator{}
	for _, leg := range o.Profile.Legs() {
		if ctx.Err() != nil {
			res.Legs = append(res.Legs, LegResult{Leg: leg, Verdict: VerdictNotRun, Error: "not run: interrupted"})
			continue
		}
		lr := runLeg(ctx, o, leg, ports)
		fmt.Fprintf(o.Progress, "scalegate: leg %s: %s\n", leg.ID, lr.Verdict)
		res.Legs = append(res.Legs, lr)
	}
	res.Interrupted = ctx.Err() != nil
	res.Verdict = RunVerdict(res)
	res.Capacity = Capacity(res)
	res.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	return res
}

// RunVerdict folds the legs: interrupted, then failed, then launch failure,
// then inconclusive, then passed.
func RunVerdict(r *RunResult) Verdict {
	if r.Interrupted {
		return VerdictInterrupted
	}
	has := map[Verdict]bool{}
	for _, l := range r.Legs {
		has[l.Verdict] = true
	}
	for _, v := range []Verdict{VerdictInterrupted, VerdictFailed, VerdictLaunchFailed, VerdictNotRun, VerdictInconclusive} {
		if has[v] {
			if v == VerdictNotRun {
				return VerdictLaunchFailed
			}
			return v
		}
	}
	if len(r.Legs) == 0 {
		return VerdictFailed
	}
	return VerdictPassed
}

// legRun holds one leg's paths and processes while it runs.
type legRun struct {
	o       Options
	leg     Leg
	res     *LegResult
	metrics string
	report  string
	// serverDied: the server exited before the gate stopped it.
	serverDied bool
	// swarmOverran: a swarm was still running at its time limit and the
	// gate stopped it.
	swarmOverran bool
}

// runLeg runs one leg and times it, whichever way it ends.
func runLeg(ctx context.Context, o Options, leg Leg, ports *launcher.PortAllocator) LegResult {
	start := time.Now()
	lr := runLegUntimed(ctx, o, leg, ports, start)
	lr.ElapsedS = time.Since(start).Seconds()
	return lr
}

func runLegUntimed(ctx context.Context, o Options, leg Leg, ports *launcher.PortAllocator, start time.Time) LegResult {
	lr := LegResult{Leg: leg, Dir: filepath.Join(o.Dir, leg.ID), StartedAt: start.UTC().Format(time.RFC3339)}
	r := &legRun{o: o, leg: leg, res: &lr,
		metrics: filepath.Join(lr.Dir, "server_metrics.json"), report: filepath.Join(lr.Dir, "report.json")}
	if err := os.Mkdir(lr.Dir, 0o755); err != nil {
		return r.launchFailed(fmt.Errorf("leg directory: %w", err))
	}
	port, err := ports.Next()
	if err != nil {
		return r.launchFailed(err)
	}
	lr.Port = port
	serverSpec, readyTimeout, err := r.serverSpec(port)
	if err != nil {
		return r.launchFailed(err)
	}
	pattern := r.leg.Pattern
	if _, ok := tracePath(pattern); ok {
		if pattern, err = r.materializeTrace(); err != nil {
			return r.launchFailed(err)
		}
	}
	swarmSpecs, err := r.swarmSpecs(port, pattern)
	if err != nil {
		return r.launchFailed(err)
	}
	// Both run under a guardian (the scalegate binary): whatever the
	// server's command does, nothing it starts outlives the leg or the gate.
	serverSpec.Guardian, serverSpec.Kill = o.Self, o.Kill
	for i := range swarmSpecs {
		swarmSpecs[i].Guardian, swarmSpecs[i].Kill = o.Self, o.Kill
	}
	lr.ServerCmd, lr.SwarmCmd = launcher.CommandLine(serverSpec.Path, serverSpec.Args), swarmCommandLine(swarmSpecs, r.report)

	server, err := launcher.Start(ctx, serverSpec)
	if err != nil {
		return r.launchFailed(err)
	}
	defer r.stopServer(server)
	ready := func() error { _, _, err := report.ReadServerTick(r.metrics); return err }
	if err := launcher.WaitReady(ctx, server, ready, readyTimeout, 50*time.Millisecond); err != nil {
		if ctx.Err() != nil {
			return r.interrupted()
		}
		return r.launchFailed(err)
	}
	swarms, err := startAll(ctx, swarmSpecs)
	if err != nil {
		return r.launchFailed(err)
	}
	r.waitSwarms(ctx, swarms, server, r.swarmLimit())
	// A server gone before the gate stopped it died mid-run, whichever of
	// the two the wait noticed first.
	if ctx.Err() == nil && server.Exited() {
		r.serverDied = true
		lr.Error = joinDetail(lr.Error, fmt.Sprintf("server exited (status %d) during the run; see %s", server.ExitCode(), filepath.Join(lr.Dir, "server.log")))
	}
	code := r.swarmExit(swarms)
	lr.SwarmExit = &code
	r.stopServer(server)
	if ctx.Err() != nil {
		r.evaluate()
		lr.Verdict, lr.Error = VerdictInterrupted, "interrupted: partial artifacts kept"
		return lr
	}
	return r.finish(code)
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
// the leg marked swarmOverran. A server that dies mid-run stops the swarms
// too (nothing left to measure).
func (r *legRun) waitSwarms(ctx context.Context, swarms []*launcher.Process, server *launcher.Process, limit time.Duration) {
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for _, swarm := range swarms {
		select {
		case <-swarm.Done():
			continue
		case <-ctx.Done():
		case <-server.Done():
		case <-timer.C:
			r.swarmOverran = true
			r.res.Error = fmt.Sprintf("swarm still running %s after start (duration + ramp + start lead + %s): stopped; see %s",
				limit, swarmSlack, filepath.Join(r.res.Dir, "swarm.log"))
		}
		stopAll(swarms)
		return
	}
}

func (r *legRun) stopServer(server *launcher.Process) {
	server.Stop()
	if r.res.ServerExit == nil {
		code := server.ExitCode()
		r.res.ServerExit = &code
	}
}

// finish reads the report and evaluates every gate. A server that died
// mid-run, or a swarm the gate had to stop at its time limit, is a launch
// failure (exit 5), as docs/exit-codes.md says.
func (r *legRun) finish(swarmExit int) LegResult {
	r.evaluate()
	lr := r.res
	switch {
	case r.serverDied, r.swarmOverran:
		// Whatever the checks say, the run did not happen as declared; the
		// checks stay in the summary as evidence. An overrun swarm is the
		// harness failing to produce its output, not a finding about the
		// server: the report it wrote when stopped is cut short (aborted).
		lr.Verdict = VerdictLaunchFailed
	case lr.Report == nil && swarmExit == 2:
		lr.Verdict = VerdictLaunchFailed
		lr.Error = joinDetail(lr.Error, fmt.Sprintf("swarm exited 2 (transport %s unsupported by the swarm); see %s", r.o.Profile.Transport, filepath.Join(lr.Dir, "swarm.log")))
	case lr.Report == nil:
		lr.Verdict = VerdictLaunchFailed
		lr.Error = joinDetail(lr.Error, fmt.Sprintf("swarm exited %d without a report; see %s", swarmExit, filepath.Join(lr.Dir, "swarm.log")))
	default:
		lr.Verdict = LegVerdict(lr.Checks)
		if lr.Error != "" && lr.Verdict != VerdictFailed {
			lr.Verdict = VerdictFailed
		}
	}
	return *lr
}

// evaluate reads whatever report exists and checks it; partial runs keep
// their evidence.
func (r *legRun) evaluate() {
	rep, err := report.ReadReport(r.report)
	in := Input{Profile: r.o.Profile, Leg: r.leg, Strict: r.o.Strict, Report: rep, ReportErr: err,
		Baseline: r.o.Baseline, UpdateBaseline: r.o.UpdateBaseline}
	r.res.Report = rep
	r.res.Checks = Evaluate(in)
	if _, ok := tracePath(r.leg.Pattern); ok {
		r.res.Checks = append(r.res.Checks, traceCheck(rep, err))
	}
	if rep != nil {
		r.res.Checks = append(r.res.Checks, schemaCheck(r.report))
	}
	if rep != nil {
		if err := WriteTimelineCSV(filepath.Join(r.res.Dir, "timeline.csv"), rep.Timeline); err != nil {
			r.res.Error = joinDetail(r.res.Error, err.Error())
		}
		if err := WritePlayersCSV(filepath.Join(r.res.Dir, "players.csv"), rep.Players); err != nil {
			r.res.Error = joinDetail(r.res.Error, err.Error())
		}
	}
}

func (r *legRun) launchFailed(err error) LegResult {
	r.res.Verdict, r.res.Error = VerdictLaunchFailed, err.Error()
	r.res.Checks = Evaluate(Input{Profile: r.o.Profile, Leg: r.leg, ReportErr: errors.New("leg did not run: " + err.Error())})
	if _, ok := tracePath(r.leg.Pattern); ok {
		r.res.Checks = append(r.res.Checks, traceCheck(nil, errors.New("leg did not run")))
	}
	return *r.res
}

func (r *legRun) interrupted() LegResult {
	r.res.Verdict, r.res.Error = VerdictInterrupted, "interrupted before the swarm started"
	return *r.res
}

// swarmSpec builds `scalegate swarm …` with the profile's hard gates
// forwarded as --assert-* flags, and the impairment schedule written to
// the leg's impairment.json and passed as --degrade-schedule.
func (r *legRun) swarmSpec(port int, pattern string) (launcher.Spec, error) {
	p := r.o.Profile
	args := []string{"swarm", "127.0.0.1", strconv.Itoa(port),
		"--clients", strconv.Itoa(p.ClientsFor(r.leg)),
		"--duration", fmtFlag(p.DurationS),
		"--rate", fmtFlag(p.RateHz),
		"--transport", p.Transport,
		"--ramp-ms", strconv.Itoa(p.RampMs),
		"--json", r.report,
		"--server-metrics", r.metrics,
		"--rss-sample-interval-s", fmtFlag(p.RSSSampleIntervalS),
	}
	if r.leg.PatternMix != "" {
		args = append(args, "--pattern-mix", r.leg.PatternMix)
	} else {
		args = append(args, "--pattern", pattern)
	}
	if p.Threads > 0 {
		args = append(args, "--threads", strconv.Itoa(p.Threads))
	}
	if p.EntityType != "" {
		args = append(args, "--entity-type", p.EntityType)
	}
	if p.Harness.TestBusyUsPerClient > 0 {
		args = append(args, "--test-busy-us", fmtFlag(p.Harness.TestBusyUsPerClient))
	}
	if len(p.Impairment) > 0 {
		path := filepath.Join(r.res.Dir, "impairment.json")
		if err := report.WriteJSONAtomic(path, p.Impairment); err != nil {
			return launcher.Spec{}, fmt.Errorf("impairment schedule: %w", err)
		}
		args = append(args, "--degrade-schedule", path, "--degrade-seed", strconv.FormatUint(p.ImpairmentSeed, 10))
	}
	args = append(args, AssertFlags(p, r.leg, r.o.Strict)...)
	return launcher.Spec{Name: "swarm", Path: r.o.Self, Args: args,
		LogPath: filepath.Join(r.res.Dir, "swarm.log"), Grace: r.o.Grace}, nil
}

// AssertFlags are the swarm --assert-* flags for the gates the profile
// declares that are hard on this leg, in the gate table's order. Advisory
// gates are not forwarded (the swarm would fail on them), and neither are
// gates without a swarm flag, nor phase-scoped ones (a swarm assert reads
// the whole run).
func AssertFlags(p *Profile, leg Leg, strict bool) []string {
	var out []string
	tier := EffectiveTier(p, strict)
	for _, g := range gatetable.All {
		spec, declared := p.Gates[g.Name]
		if !declared || g.Flag == "" || spec.Phase != "" {
			continue
		}
		if level, _ := Level(g, spec, tier); level != LevelHard {
			continue
		}
		if g.Kind == gatetable.Switch {
			out = append(out, "--"+g.Flag)
			continue
		}
		if thr, ok := Threshold(g, spec, p, leg); ok {
			out = append(out, "--"+g.Flag, fmtFlag(thr))
		}
	}
	return out
}

func fmtFlag(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// schemaCheck validates the report file against schema/report.cue: a
// report that breaks the contract is not evidence.
func schemaCheck(path string) Check {
	c := Check{Gate: "report_schema", Title: "report matches schema #Report", Level: LevelHard,
		Threshold: "valid", MeasuredText: "valid", Status: StatusPass}
	b, err := os.ReadFile(path)
	if err == nil {
		err = ValidateJSON("#Report", filepath.Base(path), b)
	}
	if err != nil {
		c.MeasuredText, c.Status, c.Detail = "invalid", StatusFail, err.Error()
	}
	return c
}
