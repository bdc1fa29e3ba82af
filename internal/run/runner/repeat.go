package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/scalegate/scalegate/internal/judge/gate"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// MaxRuns bounds how many times one command runs a profile (calibrate
// --runs, ab --rounds, --update-baseline --runs). A thousand runs of even a
// 10 s profile hold the machine for hours; a mistyped count beyond that
// would hold it for days, with the run directory growing all the while.
const MaxRuns = 1000

// runsError is why a run count over MaxRuns is refused: the flag, and how
// long that many runs of the profile would take at its declared duration.
func runsError(flag string, n, legsPerRun int, durationS float64) error {
	days := float64(n) * float64(legsPerRun) * durationS / 86400
	return fmt.Errorf("%s %d: at most %d (that many would run %d legs of %s s, %.0f days at the least)",
		flag, n, MaxRuns, n*legsPerRun, strconv.FormatFloat(durationS, 'f', -1, 64), days)
}

// RunDirName is run i's directory inside the run directory of a repeated
// run (--update-baseline --runs N, calibrate): "run-1", "run-2", …; each
// holds that run's leg directories.
func RunDirName(i int) string { return fmt.Sprintf("run-%d", i) }

// Repeated is a profile run several times.
type Repeated struct {
	// All holds every run's legs in the order they ran, each leg's ID
	// prefixed with its run ("run-2/weave", the leg's directory relative
	// to the run directory), and the verdict over all of them.
	All *rundir.RunResult
	// Runs are the runs that ran, each with its own legs and verdict.
	Runs []*rundir.RunResult
	// Stopped says why fewer runs than asked ran ("" when all did, or the
	// run was interrupted: All.Interrupted says so).
	Stopped string
}

// Repeat runs the profile's legs runs times, run i in o.Dir/run-i, one
// after the other. After each run, stop (nil: never) may end the sequence
// early by returning why, e.g. --update-baseline stops at the first run
// that did not pass, since the baseline will not be written. A cancelled
// ctx stops the run in progress (Run marks its legs) and the rest.
func Repeat(ctx context.Context, o Options, runs int, stop func(i int, run *rundir.RunResult) string) *Repeated {
	rep := &Repeated{All: newResult(o)}
	for i := 1; i <= runs && ctx.Err() == nil; i++ {
		sub := o
		sub.Dir = filepath.Join(o.Dir, RunDirName(i))
		fmt.Fprintf(o.Progress, "scalegate: run %d of %d\n", i, runs)
		var run *rundir.RunResult
		if err := os.Mkdir(sub.Dir, 0o755); err != nil {
			run = newResult(sub)
			for _, leg := range o.Profile.Legs() {
				run.Legs = append(run.Legs, rundir.LegResult{Leg: leg, Dir: filepath.Join(sub.Dir, leg.ID),
					Verdict: rundir.VerdictNotRun, Error: fmt.Sprintf("not run: run directory: %v", err)})
			}
			run = finishResult(run)
		} else {
			run = Run(ctx, sub)
		}
		rep.Runs = append(rep.Runs, run)
		for _, l := range run.Legs {
			l.Leg.ID = RunDirName(i) + "/" + l.Leg.ID
			rep.All.Legs = append(rep.All.Legs, l)
		}
		if stop == nil || ctx.Err() != nil || i == runs {
			continue
		}
		if why := stop(i, run); why != "" {
			rep.Stopped = fmt.Sprintf("stopped after run %d of %d: %s", i, runs, why)
			fmt.Fprintf(o.Progress, "scalegate: %s\n", rep.Stopped)
			break
		}
	}
	rep.All.Interrupted = ctx.Err() != nil
	// No capacity curve over the runs together: each run's own result has
	// its curve, and the same client count measured N times is not a
	// sweep.
	rep.All.Verdict = gate.RunVerdict(rep.All)
	rep.All.FinishedAt = time.Now().UTC().Format(time.RFC3339)
	return rep
}
