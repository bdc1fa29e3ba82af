package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/config/catalog"
	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/run/runner"
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
	history                string
	historyReadOnly, wide  bool
	runs                   int
}

// setFlags collects repeatable --set PATH=VALUE flags.
type setFlags []catalog.Override

func (s *setFlags) String() string {
	parts := make([]string, len(*s))
	for i, o := range *s {
		parts[i] = o.String()
	}
	return strings.Join(parts, " ")
}

// Set parses one PATH=VALUE; the path and value meet the schema later.
func (s *setFlags) Set(v string) error {
	o, err := catalog.ParseOverride(v)
	if err != nil {
		return err
	}
	*s = append(*s, o)
	return nil
}

// graceUsage is the --grace help text shared by gate, ab and calibrate. A
// Go duration, unlike the swarm's time flags (seconds or ms, the unit in
// the name or the placeholder), so the syntax is spelt out.
const graceUsage = "SIGINT→SIGKILL grace for each process, a Go `duration` (5s, 1m30s)"

// setUsage is the --set help text shared by gate, profiles show and vet.
const setUsage = "override one profile field, `PATH=VALUE` (repeatable): clients=256, world.test_spawn_ai_count=2000, patterns=[\"idle\"]"

func parseGateFlags(env *Env, args []string) (*gateFlags, error) {
	f := &gateFlags{}
	fs := f.flagSet()
	if err := parseFlags(env, fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "unexpected argument %q (did you mean a subcommand? see scalegate help)", fs.Arg(0))
	}
	if err := f.check(); err != nil {
		return nil, err
	}
	return f, nil
}

// flagSet registers the gate's flags on f, in the order the help prints
// them.
func (f *gateFlags) flagSet() *flag.FlagSet {
	fs := flag.NewFlagSet("scalegate", flag.ContinueOnError)
	fs.StringVar(&f.profile, "profile", "", "profile to run (scalegate profiles lists them)")
	fs.StringVar(&f.profilesDir, "profiles", "", "directory of the team's own profiles (default: the built-in ones)")
	fs.BoolVar(&f.strict, "strict", false, "force the strict tier: server tick-ms p99 becomes a hard gate")
	fs.BoolVar(&f.updateBaseline, "update-baseline", false, "rewrite the baseline from this run if every leg passes")
	fs.IntVar(&f.runs, "runs", 1, "with --update-baseline: run every leg `N` times and record each figure's median and spread (N ≥ 3; 10 recommended, docs/baselines.md)")
	fs.StringVar(&f.baseline, "baseline", baseline.DefaultPath, "baseline file")
	fs.StringVar(&f.out, "out", "", "run directory to create (must not exist; default results/<profile>_<UTC timestamp>)")
	fs.StringVar(&f.results, "results", "results", "parent of the default run directories")
	fs.StringVar(&f.summary, "summary", "", "also write the Markdown summary to this file")
	fs.StringVar(&f.junit, "junit", "", "also write the result as JUnit XML to this file (one testsuite per leg, one testcase per gate)")
	fs.DurationVar(&f.grace, "grace", launcher.DefaultGrace, graceUsage)
	fs.Var(&f.sets, "set", setUsage+"; a run with overrides never updates the baseline")
	fs.StringVar(&f.history, "history", "", "run history `DIR` (overrides the profile's history.dir): judge every leg against it (the history gate) and append one record per leg; docs/history.md")
	fs.BoolVar(&f.historyReadOnly, "history-read-only", false, "with a history: judge against it, append nothing (a pull request's run)")
	fs.StringVar(&f.report, "report", "", "evaluate the profile's gates on this swarm report (e.g. what scalegate merge made of a sharded run elsewhere) without launching anything")
	fs.StringVar(&f.leg, "leg", "", "with --report: the leg `ID` the report is (needed when the profile has several)")
	fs.BoolVar(&f.wide, "wide", false, "print the full table of every check (leg, gate, level, threshold, measured, baseline, status) instead of one line of at most 100 columns per check")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scalegate --profile NAME [--set PATH=VALUE]... [--strict] [--update-baseline [--runs N]] [--profiles DIR] [--out DIR] [--summary PATH] [--junit PATH] [--history DIR [--history-read-only]] [--wide]")
		fmt.Fprintln(fs.Output(), "       scalegate --profile NAME --report REPORT.json [--leg ID] [--set PATH=VALUE]... [--strict] [--out DIR]")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), exitCodesHelp())
	}
	return fs
}

// exitCodesHelp is the gate help's list of exit codes, every code of
// internal/run/exitcode (exitcode.All) with its name and meaning: CI
// scripts branch on them (docs/exit-codes.md has the full table).
func exitCodesHelp() string {
	var b strings.Builder
	b.WriteString("\nexit codes of the gate (docs/exit-codes.md):\n")
	for _, c := range exitcode.All() {
		fmt.Fprintf(&b, "  %3d  %-16s %s\n", int(c), c, c.Meaning())
	}
	return b.String()
}

// check refuses flag combinations before anything runs, so a mistake costs
// no launch.
func (f *gateFlags) check() error {
	if f.profile == "" {
		return exitcode.Errorf(exitcode.Usage, "--profile NAME is required (see `scalegate profiles`)")
	}
	if f.updateBaseline && len(f.sets) > 0 {
		// Refused before anything runs: a baseline is the committed
		// profile's figures, and this run would measure an edited profile.
		return exitcode.Errorf(exitcode.Usage, "--update-baseline with --set %s: a baseline records the committed profile, and overrides measure a different one; commit the change to the profile file, or drop --set", f.sets.String())
	}
	if f.report == "" && f.leg != "" {
		return exitcode.Errorf(exitcode.Usage, "--leg goes with --report")
	}
	if f.runs != 1 && !f.updateBaseline {
		return exitcode.Errorf(exitcode.Usage, "--runs %d goes with --update-baseline (scalegate calibrate runs a profile N times without recording it)", f.runs)
	}
	if f.runs < 1 || f.runs == 2 {
		return exitcode.Errorf(exitcode.Usage, "--runs %d: use 1, or at least %d: a spread needs at least %d runs (from two, the median absolute deviation is half their distance whatever the runner does); 10 keep the false-alarm rate near 1 in 100 (docs/baselines.md)",
			f.runs, baseline.MinRuns, baseline.MinRuns)
	}
	if f.runs > runner.MaxRuns {
		return exitcode.Errorf(exitcode.Usage, "--runs %d: at most %d (10 keep the false-alarm rate near 1 in 100, docs/baselines.md)", f.runs, runner.MaxRuns)
	}
	if f.report != "" && f.updateBaseline {
		return exitcode.Errorf(exitcode.Usage, "--update-baseline records the gate's own runs only, not a --report made elsewhere")
	}
	return nil
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
	s := &runner.Session{Profile: p, Strict: f.strict, UpdateBaseline: f.updateBaseline, BaselinePath: f.baseline,
		Out: f.out, Results: f.results, Summary: f.summary, JUnit: f.junit, StepSummary: env.Getenv("GITHUB_STEP_SUMMARY"),
		HistoryDir: f.history, HistoryReadOnly: f.historyReadOnly,
		Report: f.report, Leg: f.leg, Runs: f.runs, Grace: f.grace, Wide: f.wide, Kill: env.Kill, Version: Version, Commit: Commit, CommandLine: commandLine(args),
		Stdout: env.Stdout, Stderr: env.Stderr}
	return s.Run(ctx)
}

// loadProfile resolves a profile with its overrides, printing a profile
// error in full.
func loadProfile(env *Env, dir, name string, sets []catalog.Override) (*profile.Profile, error) {
	cat, err := catalog.NewCatalog(dir)
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
	var pe *catalog.ProfileError
	var unknown *catalog.UnknownProfileError
	switch {
	case errors.As(err, &pe):
		fmt.Fprintln(env.Stderr, catalog.FormatError(err))
		fmt.Fprintln(env.Stderr, "scalegate: invalid profile")
		return printed(exitcode.InvalidProfile)
	case errors.As(err, &unknown):
		return exitcode.With(exitcode.InvalidProfile, err)
	}
	return exitcode.With(exitcode.InvalidProfile, err)
}

func commandLine(args []string) string {
	return launcher.CommandLine("scalegate", args)
}
