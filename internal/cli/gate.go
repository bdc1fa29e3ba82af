package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/exitcode"
	"github.com/scalegate/scalegate/internal/gate"
	"github.com/scalegate/scalegate/internal/htmlreport"
	"github.com/scalegate/scalegate/internal/junit"
	"github.com/scalegate/scalegate/internal/launcher"
	"github.com/scalegate/scalegate/internal/report"
	"github.com/scalegate/scalegate/internal/transport"
)

func init() {
	register("gate", "run a profile's scale gate (the default command: scalegate --profile NAME)", runGate)
}

// gateFlags are the gate runner's flags.
type gateFlags struct {
	profile, profilesDir   string
	strict, updateBaseline bool
	baseline, out, results string
	summary, junit         string
	grace                  time.Duration
	sets                   setFlags
	report, leg            string
}

// setFlags collects repeatable --set PATH=VALUE flags.
type setFlags []gate.Override

func (s *setFlags) String() string {
	parts := make([]string, len(*s))
	for i, o := range *s {
		parts[i] = o.String()
	}
	return strings.Join(parts, " ")
}

// Set parses one PATH=VALUE; the path and value meet the schema later.
func (s *setFlags) Set(v string) error {
	o, err := gate.ParseOverride(v)
	if err != nil {
		return err
	}
	*s = append(*s, o)
	return nil
}

// setUsage is the --set help text shared by gate, profiles show and vet.
const setUsage = "override one profile field, `PATH=VALUE` (repeatable): clients=256, world.test_spawn_ai_count=2000, patterns=[\"idle\"]"

func parseGateFlags(env *Env, args []string) (*gateFlags, error) {
	f := &gateFlags{}
	fs := flag.NewFlagSet("scalegate", flag.ContinueOnError)
	fs.StringVar(&f.profile, "profile", "", "profile to run (see `scalegate profiles`)")
	fs.StringVar(&f.profilesDir, "profiles", "", "directory of the team's own profiles (default: the built-in ones)")
	fs.BoolVar(&f.strict, "strict", false, "force the strict tier: server tick-ms p99 becomes a hard gate")
	fs.BoolVar(&f.updateBaseline, "update-baseline", false, "rewrite the baseline from this run if every leg passes")
	fs.StringVar(&f.baseline, "baseline", gate.DefaultBaselinePath, "baseline file")
	fs.StringVar(&f.out, "out", "", "run directory to create (must not exist; default results/<profile>_<UTC timestamp>)")
	fs.StringVar(&f.results, "results", "results", "parent of the default run directories")
	fs.StringVar(&f.summary, "summary", "", "also write the Markdown summary to this file")
	fs.StringVar(&f.junit, "junit", "", "also write the result as JUnit XML to this file (one testsuite per leg, one testcase per gate)")
	fs.DurationVar(&f.grace, "grace", launcher.DefaultGrace, "SIGINT→SIGKILL grace for each process")
	fs.Var(&f.sets, "set", setUsage+"; a run with overrides never updates the baseline")
	fs.StringVar(&f.report, "report", "", "evaluate the profile's gates on this swarm report (e.g. `scalegate merge` of a sharded run elsewhere) without launching anything")
	fs.StringVar(&f.leg, "leg", "", "with --report: the leg `ID` the report is (needed when the profile has several)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scalegate --profile NAME [--set PATH=VALUE]... [--strict] [--update-baseline] [--profiles DIR] [--out DIR] [--summary PATH] [--junit PATH]")
		fmt.Fprintln(fs.Output(), "       scalegate --profile NAME --report REPORT.json [--leg ID] [--set PATH=VALUE]... [--strict] [--out DIR]")
		fs.PrintDefaults()
	}
	if err := parseFlags(env, fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "unexpected argument %q (did you mean a subcommand? see scalegate help)", fs.Arg(0))
	}
	if f.profile == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "--profile NAME is required (see `scalegate profiles`)")
	}
	if f.updateBaseline && len(f.sets) > 0 {
		// Refused before anything runs: a baseline is the committed
		// profile's figures, and this run would measure an edited profile.
		return nil, exitcode.Errorf(exitcode.Usage, "--update-baseline with --set %s: a baseline records the committed profile, and overrides measure a different one; commit the change to the profile file, or drop --set", f.sets.String())
	}
	if f.report == "" && f.leg != "" {
		return nil, exitcode.Errorf(exitcode.Usage, "--leg goes with --report")
	}
	if f.report != "" && f.updateBaseline {
		return nil, exitcode.Errorf(exitcode.Usage, "--update-baseline records the gate's own runs only, not a --report made elsewhere")
	}
	return f, nil
}

func runGate(ctx context.Context, env *Env, args []string) error {
	f, err := parseGateFlags(env, args)
	if err != nil {
		return err
	}
	p, err := loadProfile(env, f.profilesDir, f.profile, f.sets)
	if err != nil {
		return err
	}
	if f.report != "" {
		return gateReport(env, f, p, args)
	}
	if err := p.TransportError(lookupTransport); err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	var base *gate.Baseline
	if p.Baselined {
		cleanBaselineTemps(env, f.baseline)
		if base, err = gate.ReadBaseline(f.baseline); err != nil {
			return exitcode.With(exitcode.InvalidProfile, err)
		}
		if f.updateBaseline {
			if err := gate.CheckBaselineWritable(f.baseline); err != nil {
				return exitcode.With(exitcode.Internal, err)
			}
		}
	}
	self, err := launcher.Self()
	if err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	dir, err := gate.CreateRunDir(f.out, f.results, p.Name, time.Now())
	if err != nil {
		if errors.Is(err, gate.ErrRunDirExists) {
			return exitcode.With(exitcode.Usage, err)
		}
		return exitcode.With(exitcode.Internal, err)
	}
	meta, err := gate.NewMetadata(p, f.strict, f.updateBaseline, Version, commandLine(args))
	if err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	if err := report.WriteJSONAtomic(dir+"/metadata.json", meta); err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	fmt.Fprintf(env.Stderr, "scalegate: profile %s: %d leg(s), %d clients × %s s, transport %s; artifacts in %s\n",
		p.Name, len(p.Legs()), p.Clients, strings.TrimSuffix(fmt.Sprint(p.DurationS), ".0"), p.Transport, dir)
	if len(p.Overrides) > 0 {
		fmt.Fprintf(env.Stderr, "scalegate: overrides: %s (this run is not the committed profile; the baseline is never updated from it)\n", strings.Join(p.Overrides, " "))
	}
	stopNotes := noteInterrupts(ctx, env, f.grace)
	res := gate.Run(ctx, gate.Options{Profile: p, Strict: f.strict, UpdateBaseline: f.updateBaseline,
		Baseline: base, Dir: dir, Self: self, Progress: env.Stderr, Grace: f.grace, Kill: env.Kill})
	stopNotes()
	var baselineErr error
	if f.updateBaseline {
		baselineErr = updateBaseline(res, base, p, f.baseline, meta.Git.Head)
	}
	res.ExitCode = int(exitFor(res.Verdict))
	if baselineErr != nil {
		// Every gate held but the file the user asked for was not written:
		// an I/O failure of scalegate, not a finding about the server.
		res.ExitCode = int(exitcode.Internal)
	}
	meta.Finish(res)
	return writeOutputs(env, f, res, meta, baselineErr)
}

// gateReport evaluates the profile's gates on --report: nothing is
// launched; the run directory, summaries and exit code are a gate run's.
func gateReport(env *Env, f *gateFlags, p *gate.Profile, args []string) error {
	leg, err := p.LegByID(f.leg)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	if _, err := report.ReadReport(f.report); err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	var base *gate.Baseline
	if p.Baselined {
		if base, err = gate.ReadBaseline(f.baseline); err != nil {
			return exitcode.With(exitcode.InvalidProfile, err)
		}
	}
	dir, err := gate.CreateRunDir(f.out, f.results, p.Name, time.Now())
	if err != nil {
		if errors.Is(err, gate.ErrRunDirExists) {
			return exitcode.With(exitcode.Usage, err)
		}
		return exitcode.With(exitcode.Internal, err)
	}
	meta, err := gate.NewMetadata(p, f.strict, false, Version, commandLine(args))
	if err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	fmt.Fprintf(env.Stderr, "scalegate: profile %s: gating %s as leg %s (nothing launched); artifacts in %s\n", p.Name, f.report, leg.ID, dir)
	res := gate.EvaluateReport(gate.Options{Profile: p, Strict: f.strict, Baseline: base, Dir: dir}, leg, f.report)
	res.ExitCode = int(exitFor(res.Verdict))
	meta.Finish(res)
	return writeOutputs(env, f, res, meta, nil)
}

// cleanBaselineTemps removes what a killed --update-baseline left beside
// the baseline, saying so. Failing to is worth a warning, not the run.
func cleanBaselineTemps(env *Env, path string) {
	removed, err := gate.CleanBaselineTemps(path)
	for _, r := range removed {
		fmt.Fprintf(env.Stderr, "scalegate: removed %s (a temp file left by an --update-baseline that was killed)\n", r)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "scalegate: warning: %v\n", err)
	}
}

// noteInterrupts tells the user what the first and second interrupt do,
// as they happen, until the returned func is called.
func noteInterrupts(ctx context.Context, env *Env, grace time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-ctx.Done():
			fmt.Fprintf(env.Stderr, "scalegate: interrupted: stopping the leg in progress (SIGINT, then SIGKILL after %s); interrupt again to kill it now\n", grace)
		case <-done:
			return
		}
		select {
		case <-env.Kill:
			fmt.Fprintln(env.Stderr, "scalegate: interrupted again: killing every process of the leg now")
		case <-done:
		}
	}()
	return func() { close(done); <-finished }
}

// loadProfile resolves a profile with its overrides, printing a profile
// error in full.
func loadProfile(env *Env, dir, name string, sets []gate.Override) (*gate.Profile, error) {
	cat, err := gate.NewCatalog(dir)
	if err != nil {
		return nil, profileErr(env, err)
	}
	p, _, err := cat.Load(name, sets...)
	if err != nil {
		return nil, profileErr(env, err)
	}
	return p, nil
}

// profileErr prints every error of an invalid profile with its position.
func profileErr(env *Env, err error) error {
	var pe *gate.ProfileError
	var unknown *gate.UnknownProfileError
	switch {
	case errors.As(err, &pe):
		fmt.Fprintln(env.Stderr, gate.FormatError(err))
		fmt.Fprintln(env.Stderr, "scalegate: invalid profile")
		return printed(exitcode.InvalidProfile)
	case errors.As(err, &unknown):
		return exitcode.With(exitcode.InvalidProfile, err)
	}
	return exitcode.With(exitcode.InvalidProfile, err)
}

// updateBaseline records the run in the baseline file and notes the
// outcome in res. A run that did not pass is refused by design (its exit
// code already says why); it returns an error only when a passing run's
// baseline could not be written, which must not end in exit 0.
func updateBaseline(res *gate.RunResult, base *gate.Baseline, p *gate.Profile, path, head string) error {
	if !p.Baselined {
		res.BaselineNote = fmt.Sprintf("profile %s is baselined: false; %s not touched", p.Name, path)
		return nil
	}
	ok, err := gate.UpdateBaseline(base, res, time.Now(), head)
	switch {
	case err != nil:
		res.BaselineNote = fmt.Sprintf("%v; %s left unchanged", err, path)
		if res.Verdict == gate.VerdictPassed {
			return err
		}
	case ok:
		res.BaselineUpdated = true
		res.BaselineNote = fmt.Sprintf("updated %s for %d key(s) of profile %s (other keys kept)", path, len(res.Legs), p.Name)
	}
	return nil
}

// exitFor maps a run verdict to the documented exit code.
func exitFor(v gate.Verdict) exitcode.Code {
	switch v {
	case gate.VerdictPassed:
		return exitcode.OK
	case gate.VerdictFailed:
		return exitcode.GateFailed
	case gate.VerdictInconclusive:
		return exitcode.Inconclusive
	case gate.VerdictLaunchFailed, gate.VerdictNotRun:
		return exitcode.LaunchFailure
	case gate.VerdictInterrupted:
		return exitcode.Interrupted
	}
	return exitcode.Internal
}

// writeOutputs writes summary.md, summary.json, metadata.json, report.html
// (rendered from those files, as `scalegate report` would), the step
// summary, --summary and --junit, then prints the table. They are written even for
// an interrupted run: partial evidence is kept, and marked.
func writeOutputs(env *Env, f *gateFlags, res *gate.RunResult, meta *gate.Metadata, baselineErr error) error {
	md := gate.Markdown(res)
	var errs []error
	errs = append(errs, report.WriteFileAtomic(res.Dir+"/summary.md", []byte(md)))
	errs = append(errs, report.WriteJSONAtomic(res.Dir+"/summary.json", res))
	errs = append(errs, report.WriteJSONAtomic(res.Dir+"/metadata.json", meta))
	errs = append(errs, htmlreport.Write(res.Dir))
	if p := env.Getenv("GITHUB_STEP_SUMMARY"); p != "" {
		errs = append(errs, gate.AppendFile(p, md))
	}
	if f.summary != "" {
		errs = append(errs, report.WriteFileAtomic(f.summary, []byte(md)))
	}
	if f.junit != "" {
		errs = append(errs, junit.WriteFile(f.junit, res))
	}
	errs = append(errs, gate.WriteTable(env.Stdout, res))
	if err := errors.Join(errs...); err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	code := exitcode.Code(res.ExitCode)
	if code == exitcode.OK {
		return nil
	}
	if baselineErr != nil {
		return exitcode.Errorf(code, "profile %s: %s, but the baseline was not written: %w (exit %d: %s)", res.Profile.Name, res.Verdict, baselineErr, int(code), code)
	}
	return exitcode.Errorf(code, "profile %s: %s (exit %d: %s)", res.Profile.Name, res.Verdict, int(code), code)
}

func commandLine(args []string) string {
	return launcher.CommandLine("scalegate", args)
}

func lookupTransport(name string) error {
	_, err := transport.Lookup(name)
	return err
}
