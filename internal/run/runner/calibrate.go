package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/calibrate"
	"github.com/scalegate/scalegate/internal/judge/gate"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// Calibration is one `scalegate calibrate`: the profile, unchanged, run
// Runs times on this runner (run i in RUN/run-i/LEG), then per leg and
// gate the figure's distribution, how many runs the current threshold
// would have failed, and the tightest threshold at the target
// false-alarm rate (internal/judge/calibrate), written as calibration.md and
// calibration.json in the run directory beside summary.md of every leg.
type Calibration struct {
	Profile *profile.Profile
	Strict  bool
	// Runs is how many times the profile runs (≥ 1; a threshold is
	// suggested from calibrate.MinRuns evaluable runs).
	Runs int
	// Target and Confidence: see calibrate.Options; both in (0, 1).
	Target, Confidence float64
	// BaselinePath is the committed baseline a baselined profile's
	// baseline gates are measured against.
	BaselinePath string
	// Out, Results, Grace, Kill, Version, CommandLine, Stdout and Stderr
	// are as in Session.
	Out, Results         string
	Grace                time.Duration
	Kill                 <-chan struct{}
	Version, CommandLine string
	Stdout, Stderr       io.Writer
}

// Run runs the calibration. The error carries the exit code: nil (0) when
// every run completed, whatever the gates said (failed gates are the
// data); a run that could not complete (a launch failure, a server that
// died, an interrupt) ends the calibration with the code a gate run would
// have, after writing what the completed runs showed.
func (c *Calibration) Run(ctx context.Context) error {
	base, self, err := c.inputs()
	if err != nil {
		return err
	}
	dir, meta, err := c.openRunDir()
	if err != nil {
		return err
	}
	rep := c.repeat(ctx, base, dir, self)
	if err := c.writeResults(dir, rep, base, meta); err != nil {
		return err
	}
	return c.outcome(rep, dir)
}

// inputs checks the options and reads what every run needs before a run
// directory exists: the committed baseline (baselined profiles only) and
// the scalegate binary the legs run under. The error carries its exit code.
func (c *Calibration) inputs() (*baseline.Committed, string, error) {
	if err := c.check(); err != nil {
		return nil, "", exitcode.With(exitcode.Usage, err)
	}
	var base *baseline.Committed
	if c.Profile.Baselined {
		var err error
		if base, err = baseline.Read(c.BaselinePath); err != nil {
			return nil, "", exitcode.With(exitcode.InvalidProfile, err)
		}
	}
	self, err := launcher.Self()
	if err != nil {
		return nil, "", exitcode.With(exitcode.Internal, err)
	}
	return base, self, nil
}

// openRunDir creates the calibration's run directory, writes its first
// metadata.json and announces the calibration on Stderr. The error
// carries its exit code.
func (c *Calibration) openRunDir() (string, *rundir.Metadata, error) {
	p := c.Profile
	dir, err := createRunDir(c.Out, c.Results, p.Name)
	if err != nil {
		return "", nil, err
	}
	meta, err := rundir.NewMetadata(p, c.Strict, false, c.Version, c.CommandLine)
	if err != nil {
		return "", nil, exitcode.With(exitcode.Internal, err)
	}
	if err := report.WriteJSONAtomic(filepath.Join(dir, "metadata.json"), meta); err != nil {
		return "", nil, exitcode.With(exitcode.Internal, err)
	}
	fmt.Fprintf(c.Stderr, "scalegate: calibrate %s: %d run(s) of %d leg(s), %d clients × %s s, transport %s; artifacts in %s\n",
		p.Name, c.Runs, len(p.Legs()), p.Clients, strings.TrimSuffix(fmt.Sprint(p.DurationS), ".0"), strings.Join(p.TransportNames(), " and "), dir)
	return dir, meta, nil
}

// repeat runs the profile Runs times under the interrupt notes, stopping
// at the first run that could not complete.
func (c *Calibration) repeat(ctx context.Context, base *baseline.Committed, dir, self string) *Repeated {
	stopNotes := noteInterrupts(ctx, c.Stderr, c.Grace, c.Kill)
	rep := Repeat(ctx, Options{Profile: c.Profile, Strict: c.Strict, Baseline: base, Dir: dir, Self: self,
		Progress: c.Stderr, Grace: c.Grace, Kill: c.Kill}, c.Runs, func(_ int, run *rundir.RunResult) string {
		if v, bad := incomplete(run); bad {
			return fmt.Sprintf("it could not complete (%s)", v)
		}
		return ""
	})
	stopNotes()
	return rep
}

// writeResults writes what the runs showed, whatever their outcome: the
// calibration (when it could be analysed), summary.md, summary.json and
// the finished metadata.json; every write is tried, the errors joined.
func (c *Calibration) writeResults(dir string, rep *Repeated, base *baseline.Committed, meta *rundir.Metadata) error {
	meta.Finish(rep.All)
	cal, calErr := c.analyze(rep, base, meta.Host.Hostname)
	errs := []error{calErr}
	if cal != nil {
		errs = append(errs, writeCalibration(dir, cal, c.Stdout))
	}
	errs = append(errs,
		report.WriteFileAtomic(filepath.Join(dir, "summary.md"), []byte(rundir.Markdown(rep.All))),
		report.WriteJSONAtomic(filepath.Join(dir, "summary.json"), rep.All),
		report.WriteJSONAtomic(filepath.Join(dir, "metadata.json"), meta))
	if err := errors.Join(errs...); err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	return nil
}

// outcome is the calibration's exit once its results are written: the
// code of a run that could not complete, interrupted, or nil (reported
// on Stderr).
func (c *Calibration) outcome(rep *Repeated, dir string) error {
	p := c.Profile
	for _, run := range rep.Runs {
		if v, bad := incomplete(run); bad {
			code := ExitCode(v)
			return exitcode.Errorf(code, "calibrate %s: a run could not complete (%s); calibration.md covers the runs before it (exit %d: %s)", p.Name, v, int(code), code)
		}
	}
	if rep.All.Interrupted {
		return exitcode.Errorf(exitcode.Interrupted, "calibrate %s: interrupted (exit %d)", p.Name, int(exitcode.Interrupted))
	}
	fmt.Fprintf(c.Stderr, "scalegate: calibrate %s: %d run(s) completed; %s\n", p.Name, len(rep.Runs), filepath.Join(dir, "calibration.md"))
	return nil
}

// check refuses options the calibration cannot run with.
func (c *Calibration) check() error {
	if c.Runs < 1 {
		return fmt.Errorf("--runs %d: at least 1 (10 or more to suggest a threshold worth reading, docs/baselines.md)", c.Runs)
	}
	if c.Runs > MaxRuns {
		return runsError("--runs", c.Runs, len(c.Profile.Legs()), c.Profile.DurationS)
	}
	for _, f := range []struct {
		flag string
		v    float64
	}{{"--target", c.Target}, {"--confidence", c.Confidence}} {
		if !(f.v > 0 && f.v < 1) {
			return fmt.Errorf("%s %v: must be between 0 and 1 (exclusive)", f.flag, f.v)
		}
	}
	return transportError(c.Profile)
}

// incomplete reports whether a run could not complete, and the verdict
// saying why: it was interrupted, or a leg could not run as declared.
func incomplete(run *rundir.RunResult) (rundir.Verdict, bool) {
	if run.Interrupted {
		return rundir.VerdictInterrupted, true
	}
	for _, l := range run.Legs {
		switch l.Verdict {
		case rundir.VerdictLaunchFailed, rundir.VerdictNotRun, rundir.VerdictInterrupted:
			return l.Verdict, true
		}
	}
	return "", false
}

// analyze calibrates the completed runs; nil without one.
func (c *Calibration) analyze(rep *Repeated, base *baseline.Committed, host string) (*calibrate.Report, error) {
	var runs []*rundir.RunResult
	for _, r := range rep.Runs {
		if _, bad := incomplete(r); !bad {
			runs = append(runs, r)
		}
	}
	if len(runs) == 0 {
		return nil, nil
	}
	gates, notes := c.gates(runs, base)
	cal, err := calibrate.Analyze(c.Profile.Name, host, len(runs), gates, calibrate.Options{Target: c.Target, Confidence: c.Confidence})
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	cal.Notes = append(cal.Notes, notes...)
	cal.Notes = append(cal.Notes, runNotes(c.Profile, rep, runs)...)
	return cal, nil
}

// gates collects one calibrate.Gate per leg and figure gate (and per leg
// and baselined figure), with one value per completed run.
func (c *Calibration) gates(runs []*rundir.RunResult, base *baseline.Committed) ([]calibrate.Gate, []string) {
	p := c.Profile
	legs := len(p.Legs())
	out, notes := c.profileGates(runs, legs)
	if !p.Baselined {
		return out, notes
	}
	for _, leg := range p.Legs() {
		for _, f := range append(baseline.Figures(), baseline.OwnFigures(p)...) {
			g, note, keep := baselineGate(p, runs, base, leg, f, legs)
			if !keep {
				continue
			}
			if note != "" {
				notes = append(notes, note)
			}
			out = append(out, g)
		}
	}
	return out, notes
}

// profileGates is the profile's own threshold gates, each with its
// figure in every run, and the note on which gates are judged at all.
func (c *Calibration) profileGates(runs []*rundir.RunResult, legs int) ([]calibrate.Gate, []string) {
	fgs, judged := figureGates(c.Profile, c.Strict)
	var out []calibrate.Gate
	var notes []string
	if n := judgedNote(judged); n != "" {
		notes = append(notes, n)
	}
	for _, fg := range fgs {
		thr := fg.threshold
		g := calibrate.Gate{Gate: fg.name(), Title: fg.title(legs), Unit: fg.gate.Unit, Dir: fg.gate.Dir,
			Timing: fg.gate.Timing, Level: fg.level, Threshold: &thr}
		for _, run := range runs {
			g.Values = append(g.Values, fg.measure(legReport(run, fg.leg.ID)))
		}
		out = append(out, g)
	}
	return out, notes
}

// baselineGate is one leg's baseline figure f as a gate, with its value
// in every run and the committed bound as its threshold; note says why it
// has no threshold (empty: it has one), and keep is false for an optional
// figure neither the baseline nor any run has (a gate run skips it too).
func baselineGate(p *profile.Profile, runs []*rundir.RunResult, base *baseline.Committed, leg profile.Leg, f baseline.Figure, legs int) (g calibrate.Gate, note string, keep bool) {
	g = calibrate.Gate{Gate: leg.ID + "/" + f.Gate, Title: f.Title, Unit: f.Figure.Unit, Dir: f.Dir, Level: gatetable.LevelHard}
	if legs > 1 {
		g.Title = leg.ID + ": " + g.Title
	}
	measured := false
	for _, run := range runs {
		v := math.NaN()
		if r := legReport(run, leg.ID); r != nil {
			if x, err := f.Figure.Read(gatetable.FromReport(r)); err == nil {
				v, measured = x, true
			}
		}
		g.Values = append(g.Values, v)
	}
	lim, ok, err := base.LimitDir(p, leg.BaselineKey, f.Name, f.Dir)
	switch {
	case f.Optional && !ok && !measured:
		return g, "", false // neither side has it: the gate run does not judge it
	case err != nil:
		note = fmt.Sprintf("%s: %v: listed without a threshold", g.Gate, err)
	case !ok:
		note = fmt.Sprintf("%s: %s has no %s for key %s: listed without a threshold (%s)",
			g.Gate, base.Path, f.Name, leg.BaselineKey, unrecordedRule(base, leg, f))
	default:
		g.Threshold = &lim.Bound
	}
	return g, note, true
}

// unrecordedRule says what a gate run makes of a baseline figure the
// committed file does not record: unevaluable, and a failure, except an
// own figure the key's entry predates, which is advisory until recorded
// (gate.baselineCheck).
func unrecordedRule(base *baseline.Committed, leg profile.Leg, f baseline.Figure) string {
	if _, have := base.Lookup(leg.BaselineKey); have && baseline.IsOwn(f.Name) {
		return "a gate run shows it unevaluable, advisory until the entry records it"
	}
	return "a gate run fails it as unevaluable"
}

// legReport is the report of the leg with ID id in run (nil: none).
func legReport(run *rundir.RunResult, id string) *report.Report {
	for _, l := range run.Legs {
		if l.Leg.ID == id {
			return l.Report
		}
	}
	return nil
}

// runNotes name the runs whose legs were harness-bound, the overrides,
// and why fewer runs than asked were calibrated.
func runNotes(p *profile.Profile, rep *Repeated, runs []*rundir.RunResult) []string {
	var notes []string
	var bound, busy []string
	for i, run := range rep.Runs {
		for _, l := range run.Legs {
			at := fmt.Sprintf("run %d (%s)", i+1, l.Leg.ID)
			if harnessBound(l) {
				bound = append(bound, at)
			}
			if gate.HostBusy(l.Checks) {
				busy = append(busy, at)
			}
		}
	}
	if len(bound) > 0 {
		notes = append(notes, fmt.Sprintf("harness-bound legs (the swarm could not keep its own cadence) in %s: a timing gate's failure there "+
			"is inconclusive in a gate run (exit 3), not a pass, and is counted as failed here", strings.Join(bound, ", ")))
	}
	if len(busy) > 0 {
		notes = append(notes, fmt.Sprintf("busy-host legs (other processes used more of the machine than the profile's host policy allows) in %s: "+
			"a timing gate's failure there is inconclusive in a gate run (exit 3), not a pass, and is counted as failed here", strings.Join(busy, ", ")))
	}
	if len(p.Overrides) > 0 {
		notes = append(notes, fmt.Sprintf("overrides: %s: this is not the committed profile", strings.Join(p.Overrides, " ")))
	}
	if rep.Stopped != "" || len(runs) < len(rep.Runs) {
		notes = append(notes, fmt.Sprintf("%d of %d run(s) completed and are calibrated here; %s", len(runs), len(rep.Runs), rep.Stopped))
	}
	return notes
}

// harnessBound reports whether the leg's harness check found the swarm
// was the bottleneck.
func harnessBound(l rundir.LegResult) bool {
	for _, c := range l.Checks {
		if c.Gate == gatetable.CheckHarness && c.Status == rundir.StatusInconclusive {
			return true
		}
	}
	return false
}

// writeCalibration writes calibration.json and calibration.md into dir
// and the summary table (calibration.md up to the first gate's section)
// to stdout.
func writeCalibration(dir string, cal *calibrate.Report, stdout io.Writer) error {
	return writeJSONAndMarkdown(dir, "calibration", cal, func(w io.Writer) error { return calibrate.WriteMarkdown(w, cal) }, stdout)
}
