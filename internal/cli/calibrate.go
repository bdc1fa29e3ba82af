package cli

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/calibrate"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/run/runner"
)

func init() {
	register("calibrate", "run a profile N times unchanged: per gate, this runner's false-alarm rate and the tightest threshold (docs/baselines.md)", runCalibrate)
}

func runCalibrate(ctx context.Context, env *Env, args []string) error {
	var (
		name, profilesDir, baselinePath, out, results string
		runs                                          int
		target, confidence                            float64
		strict                                        bool
		grace                                         time.Duration
		sets                                          setFlags
	)
	fs := flag.NewFlagSet("scalegate calibrate", flag.ContinueOnError)
	fs.StringVar(&name, "profile", "", "profile to calibrate (scalegate profiles lists them)")
	fs.StringVar(&profilesDir, "profiles", "", "directory of the team's own profiles (default: the built-in ones)")
	fs.IntVar(&runs, "runs", 10, "run the profile `N` times (a threshold is suggested from 3; 10 or more to read it)")
	fs.Float64Var(&target, "target", calibrate.DefaultTarget, "false-alarm rate the suggested thresholds aim at (0.01: 1 run in 100)")
	fs.Float64Var(&confidence, "confidence", calibrate.DefaultConfidence, "confidence of the suggestions' claim and of the false-alarm intervals")
	fs.BoolVar(&strict, "strict", false, "calibrate the strict tier (levels as --strict gives them)")
	fs.StringVar(&baselinePath, "baseline", baseline.DefaultPath, "baseline file the baseline gates are measured against")
	fs.StringVar(&out, "out", "", "run directory to create (must not exist; default results/<profile>_<UTC timestamp>)")
	fs.StringVar(&results, "results", "results", "parent of the default run directories")
	fs.DurationVar(&grace, "grace", launcher.DefaultGrace, graceUsage)
	fs.Var(&sets, "set", setUsage+"; every run uses the same overrides")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: scalegate calibrate --profile NAME [--runs N] [--target 0.01] [--confidence 0.95] [--set PATH=VALUE]... [--out DIR]")
		fmt.Fprintln(fs.Output(), "Runs the profile N times and writes calibration.md and calibration.json in the run directory; exit 0 unless a run could not complete.")
		fs.PrintDefaults()
	}
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitcode.Errorf(exitcode.Usage, "calibrate: unexpected argument %q", fs.Arg(0))
	}
	if name == "" {
		return exitcode.Errorf(exitcode.Usage, "calibrate: --profile NAME is required (see `scalegate profiles`)")
	}
	p, err := loadProfile(env, profilesDir, name, sets)
	if err != nil {
		return err
	}
	c := &runner.Calibration{Profile: p, Strict: strict, Runs: runs, Target: target, Confidence: confidence,
		BaselinePath: baselinePath, Out: out, Results: results, Grace: grace, Kill: env.Kill,
		Version: Version, CommandLine: launcher.CommandLine("scalegate", append([]string{"calibrate"}, args...)),
		Stdout: env.Stdout, Stderr: env.Stderr}
	return c.Run(ctx)
}
