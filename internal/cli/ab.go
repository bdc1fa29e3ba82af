package cli

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/judge/abtest"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/run/runner"
)

func init() {
	register("ab", "compare two server builds in alternating legs on this runner (A B B A …): per figure, the change with a confidence interval (docs/baselines.md)", runAB)
}

// abFlags are ab's flags.
type abFlags struct {
	profile, profilesDir  string
	aServer, bServer      string
	aLabel, bLabel        string
	aSets, bSets          setFlags
	rounds                int
	untilDecided          bool
	maxRounds             int
	confidence, tolerance float64
	gates, out, results   string
	grace                 time.Duration
}

func parseABFlags(env *Env, args []string) (*abFlags, error) {
	f := &abFlags{}
	fs := flag.NewFlagSet("scalegate ab", flag.ContinueOnError)
	fs.StringVar(&f.profile, "profile", "", "profile whose legs both builds run (scalegate profiles lists them)")
	fs.StringVar(&f.profilesDir, "profiles", "", "directory of the team's own profiles (default: the built-in ones)")
	fs.StringVar(&f.aServer, "a-server", "", "build A's server `COMMAND`, split on spaces, with {port}, {config}, {metrics_json}, {transport}, {clients} (default: the profile's server)")
	fs.StringVar(&f.bServer, "b-server", "", "build B's server `COMMAND` (as --a-server)")
	fs.StringVar(&f.aLabel, "a-label", "A", "build A's name in the report")
	fs.StringVar(&f.bLabel, "b-label", "B", "build B's name in the report")
	fs.Var(&f.aSets, "a-set", "override one profile field for build A only, `PATH=VALUE` (repeatable, as --set)")
	fs.Var(&f.bSets, "b-set", "override one profile field for build B only, `PATH=VALUE` (repeatable, as --set): server.faults.extra_tick_ms=40")
	fs.IntVar(&f.rounds, "rounds", abtest.DefaultRounds, "rounds (legs per build)")
	fs.BoolVar(&f.untilDecided, "until-decided", false, "while the answer is UNKNOWN after --rounds, add rounds two at a time up to --max-rounds (the confidence is divided among the planned looks)")
	fs.IntVar(&f.maxRounds, "max-rounds", 0, "with --until-decided: the cap (default 3 × --rounds)")
	fs.Float64Var(&f.confidence, "confidence", abtest.DefaultConfidence, "confidence, simultaneous over the figures judged")
	fs.Float64Var(&f.tolerance, "tolerance-pct", 0, "a change within ± this percent of A's median is not a regression")
	fs.StringVar(&f.gates, "gates", "", "comma-separated gates whose figures are judged (default: every figure gate of the profile)")
	fs.StringVar(&f.out, "out", "", "run directory to create (must not exist; default results/<profile>_ab_<UTC timestamp>)")
	fs.StringVar(&f.results, "results", "results", "parent of the default run directories")
	fs.DurationVar(&f.grace, "grace", launcher.DefaultGrace, graceUsage)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scalegate ab --profile NAME [--a-server CMD] [--b-server CMD] [--a-set PATH=VALUE]... [--b-set PATH=VALUE]... [--rounds R [--until-decided [--max-rounds M]]] [--confidence C] [--tolerance-pct P] [--gates G,...]")
		fmt.Fprintln(fs.Output(), "Writes ab.md and ab.json in the run directory, answering SAME, DIFFERENT or UNKNOWN; exit 1 on a regression beyond the tolerance (or a figure that could not be judged).")
		fs.PrintDefaults()
	}
	if err := parseFlags(env, fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, exitcode.Errorf(exitcode.Usage, "ab: unexpected argument %q", fs.Arg(0))
	}
	if f.profile == "" {
		return nil, exitcode.Errorf(exitcode.Usage, "ab: --profile NAME is required (see `scalegate profiles`)")
	}
	return f, nil
}

func runAB(ctx context.Context, env *Env, args []string) error {
	f, err := parseABFlags(env, args)
	if err != nil {
		return err
	}
	pa, err := loadProfile(env, f.profilesDir, f.profile, f.aSets)
	if err != nil {
		return err
	}
	pb, err := loadProfile(env, f.profilesDir, f.profile, f.bSets)
	if err != nil {
		return err
	}
	var gates []string
	for _, g := range strings.Split(f.gates, ",") {
		if g = strings.TrimSpace(g); g != "" {
			gates = append(gates, g)
		}
	}
	ab := &runner.AB{
		A:      runner.ABSide{Profile: pa, Server: strings.Fields(f.aServer), Label: f.aLabel},
		B:      runner.ABSide{Profile: pb, Server: strings.Fields(f.bServer), Label: f.bLabel},
		Rounds: f.rounds, UntilDecided: f.untilDecided, MaxRounds: f.maxRounds, Confidence: f.confidence, TolerancePct: f.tolerance, Gates: gates,
		Out: f.out, Results: f.results, Grace: f.grace, Kill: env.Kill, Version: Version,
		CommandLine: launcher.CommandLine("scalegate", append([]string{"ab"}, args...)), Stdout: env.Stdout, Stderr: env.Stderr}
	return ab.Run(ctx)
}
