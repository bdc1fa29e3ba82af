package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/judge/history"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/htmlreport"
	"github.com/scalegate/scalegate/internal/reports/junit"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// Session is one gate invocation, from a resolved profile to the exit
// code: it reads (and with UpdateBaseline rewrites) the baseline, creates
// the run directory, runs the legs (or evaluates Report), writes every
// output and maps the verdict to the documented exit code.
type Session struct {
	Profile *profile.Profile
	// Strict forces the strict tier; UpdateBaseline records the run in
	// BaselinePath if every leg passed.
	Strict, UpdateBaseline bool
	BaselinePath           string
	// HistoryDir is the run history to judge against and append to
	// (overrides the profile's history.dir; "" takes the profile's);
	// HistoryReadOnly judges without appending (a pull request's run).
	HistoryDir      string
	HistoryReadOnly bool
	// Runs is how many times every leg runs for UpdateBaseline (0 or 1:
	// once; baseline.MinRuns or more: the baseline records each figure's
	// median and spread over the runs; 2 is refused). Run i's legs live in
	// RUN/run-i/LEG, and the summary lists them as run-i/LEG.
	Runs int
	// Out is the run directory to create (must not exist); "" makes
	// Results/<profile>_<UTC timestamp>.
	Out, Results string
	// Summary and JUnit are extra output paths ("" for none); StepSummary
	// is $GITHUB_STEP_SUMMARY, appended to.
	Summary, JUnit, StepSummary string
	// Report and Leg: evaluate this swarm report as leg Leg, launching
	// nothing (Report "" runs the legs).
	Report, Leg string
	// Grace and Kill stop the processes of a leg (see Options).
	Grace time.Duration
	Kill  <-chan struct{}
	// Version, Commit and CommandLine are recorded in metadata.json.
	Version, Commit, CommandLine string
	// Wide prints the result as the full table of every check
	// (rundir.WriteTable) instead of the 100-column lines
	// (rundir.WriteTerminal).
	Wide bool
	// Stdout gets the result; Stderr progress and notes.
	Stdout, Stderr io.Writer
}

// Run runs the session. The error carries the exit code (exitcode.Of): nil
// is exit 0.
func (s *Session) Run(ctx context.Context) error {
	if s.Report != "" {
		return s.gateReport()
	}
	base, self, err := s.preflight()
	if err != nil {
		return err
	}
	dir, err := s.createRunDir()
	if err != nil {
		return err
	}
	meta, err := s.start(dir)
	if err != nil {
		return err
	}
	stopNotes := s.noteInterrupts(ctx)
	res, stopped := s.runLegs(ctx, Options{Profile: s.Profile, Strict: s.Strict, UpdateBaseline: s.UpdateBaseline,
		Baseline: base, Dir: dir, Self: self, Progress: s.Stderr, Grace: s.Grace, Kill: s.Kill})
	stopNotes()
	var baselineErr error
	if s.UpdateBaseline {
		if err := s.updateBaseline(res, base, meta.Git.Head, meta.Host.Hostname); err != nil {
			baselineErr = fmt.Errorf("the baseline was not written: %w", err)
		}
		if stopped != "" {
			res.BaselineNote = rundir.JoinDetail(res.BaselineNote, stopped)
		}
	}
	historyErr := s.history(ctx, res, meta, base)
	res.ExitCode = ExitCode(res.Verdict)
	if historyErr != nil {
		// The gates were judged, but the record the user asked to keep
		// was not: an I/O failure of scalegate.
		res.ExitCode = exitcode.Internal
		baselineErr = errors.Join(baselineErr, fmt.Errorf("the history was not appended: %w", historyErr))
	}
	if baselineErr != nil {
		// Every gate held but the file the user asked for was not written:
		// an I/O failure of scalegate, not a finding about the server.
		res.ExitCode = exitcode.Internal
	}
	meta.Finish(res)
	return s.writeOutputs(res, meta, baselineErr)
}

// preflight checks what can be checked before anything is launched and
// returns the baseline and the binary that will run the server and swarm.
func (s *Session) preflight() (*baseline.Committed, string, error) {
	if err := transportError(s.Profile); err != nil {
		return nil, "", exitcode.With(exitcode.Usage, err)
	}
	if err := s.checkRuns(); err != nil {
		return nil, "", exitcode.With(exitcode.Usage, err)
	}
	base, err := s.readBaseline(true)
	if err != nil {
		return nil, "", err
	}
	// An output the user asked for must be writable before a long run,
	// not found unwritable after a passing one.
	for _, out := range []string{s.Summary, s.JUnit} {
		if err := checkWritable(out); err != nil {
			return nil, "", exitcode.With(exitcode.Usage, err)
		}
	}
	if dir := s.historyDir(); dir != "" && !s.HistoryReadOnly {
		if err := history.CheckWritable(dir); err != nil {
			return nil, "", exitcode.With(exitcode.Usage, err)
		}
	}
	self, err := launcher.Self()
	if err != nil {
		return nil, "", exitcode.With(exitcode.Internal, err)
	}
	return base, self, nil
}

// start writes the run's metadata.json into dir and says on stderr what
// is about to run.
func (s *Session) start(dir string) (*rundir.Metadata, error) {
	p := s.Profile
	meta, err := rundir.NewMetadata(p, s.Strict, s.UpdateBaseline, s.Version, s.CommandLine)
	if err != nil {
		return nil, exitcode.With(exitcode.Internal, err)
	}
	meta.Commit = s.Commit
	if err := report.WriteJSONAtomic(filepath.Join(dir, "metadata.json"), meta); err != nil {
		return nil, exitcode.With(exitcode.Internal, err)
	}
	// Each note is wrapped to the terminal result's width, like the result.
	fmt.Fprint(s.Stderr, rundir.WrapNote(fmt.Sprintf("scalegate: profile %s: %d leg(s), %d clients × %s s, transport %s; artifacts in %s",
		p.Name, len(p.Legs()), p.Clients, strings.TrimSuffix(fmt.Sprint(p.DurationS), ".0"), strings.Join(p.TransportNames(), " and "), dir)))
	if s.Runs > 1 {
		fmt.Fprint(s.Stderr, rundir.WrapNote(fmt.Sprintf("scalegate: --runs %d: every leg runs %d times (run i in %s); the baseline is written only if every run passes",
			s.Runs, s.Runs, filepath.Join(dir, "run-i"))))
	}
	if len(p.Overrides) > 0 {
		fmt.Fprint(s.Stderr, rundir.WrapNote(fmt.Sprintf("scalegate: overrides: %s (this run is not the committed profile; the baseline is never updated from it)", strings.Join(p.Overrides, " "))))
	}
	return meta, nil
}

// runLegs runs every leg once, or s.Runs times; stopped says why repeated
// runs ended before the last.
func (s *Session) runLegs(ctx context.Context, o Options) (res *rundir.RunResult, stopped string) {
	if s.Runs <= 1 {
		return Run(ctx, o), ""
	}
	// A baseline needs every run to pass: once one has not, the rest
	// would cost runner time for a file that will not be written.
	rep := Repeat(ctx, o, s.Runs, func(_ int, run *rundir.RunResult) string {
		if run.Verdict == rundir.VerdictPassed {
			return ""
		}
		return fmt.Sprintf("it %s, and a baseline needs every run to pass", run.Verdict)
	})
	return rep.All, rep.Stopped
}

// gateReport evaluates the profile's gates on s.Report: nothing is
// launched; the run directory, summaries and exit code are a gate run's.
func (s *Session) gateReport() error {
	p := s.Profile
	if s.HistoryDir != "" || s.HistoryReadOnly {
		// A report gated here has no commit or runner of its own to
		// record, and judging it against a history would compare it
		// with runs it may not have been measured beside.
		return exitcode.Errorf(exitcode.Usage, "--history goes with a run of the legs, not with --report")
	}
	leg, err := p.LegByID(s.Leg)
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	if _, err := report.ReadReport(s.Report); err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	base, err := s.readBaseline(false)
	if err != nil {
		return err
	}
	dir, err := s.createRunDir()
	if err != nil {
		return err
	}
	meta, err := rundir.NewMetadata(p, s.Strict, false, s.Version, s.CommandLine)
	if err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	fmt.Fprint(s.Stderr, rundir.WrapNote(fmt.Sprintf("scalegate: profile %s: gating %s as leg %s (nothing launched); artifacts in %s", p.Name, s.Report, leg.ID, dir)))
	res := EvaluateReport(Options{Profile: p, Strict: s.Strict, Baseline: base, Dir: dir}, leg, s.Report)
	res.ExitCode = ExitCode(res.Verdict)
	meta.Finish(res)
	return s.writeOutputs(res, meta, nil)
}

// transportError says the profile's transport cannot be spoken by this
// build; the gate never runs another in its place.
func transportError(p *profile.Profile) error {
	return p.TransportError(func(name string) error { _, err := transport.Lookup(name); return err })
}

// readBaseline reads the committed baseline of a baselined profile (nil
// otherwise), first removing what a killed --update-baseline left beside
// it when live, and proving the file writable before a long run when the
// session will update it.
func (s *Session) readBaseline(live bool) (*baseline.Committed, error) {
	if !s.Profile.Baselined {
		return nil, nil
	}
	if live {
		s.cleanBaselineTemps()
	}
	base, err := baseline.Read(s.BaselinePath)
	if err != nil {
		return nil, exitcode.With(exitcode.InvalidProfile, err)
	}
	if s.UpdateBaseline {
		if err := baseline.CheckWritable(s.BaselinePath); err != nil {
			return nil, exitcode.With(exitcode.Internal, err)
		}
	}
	return base, nil
}

// createRunDir makes the run directory: an existing --out is a usage error
// (runs never overwrite each other's evidence).
func (s *Session) createRunDir() (string, error) {
	return createRunDir(s.Out, s.Results, s.Profile.Name)
}

// createRunDir makes --out, or results/<name>_<UTC timestamp>; an
// existing --out is a usage error.
func createRunDir(out, results, name string) (string, error) {
	dir, err := rundir.CreateRunDir(out, results, name, time.Now())
	switch {
	case errors.Is(err, rundir.ErrRunDirExists):
		return "", exitcode.With(exitcode.Usage, err)
	case err != nil:
		return "", exitcode.With(exitcode.Internal, err)
	}
	return dir, nil
}

// cleanBaselineTemps removes what a killed --update-baseline left beside
// the baseline, saying so. Failing to is worth a warning, not the run.
func (s *Session) cleanBaselineTemps() {
	removed, err := baseline.CleanTemps(s.BaselinePath)
	for _, r := range removed {
		fmt.Fprintf(s.Stderr, "scalegate: removed %s (a temp file left by an --update-baseline that was killed)\n", r)
	}
	if err != nil {
		fmt.Fprintf(s.Stderr, "scalegate: warning: %v\n", err)
	}
}

// noteInterrupts tells the user what the first and second interrupt do,
// as they happen, until the returned func is called.
func (s *Session) noteInterrupts(ctx context.Context) (stop func()) {
	return noteInterrupts(ctx, s.Stderr, s.Grace, s.Kill)
}

// noteInterrupts writes to w what the first and second interrupt do, as
// they happen, until the returned func is called.
func noteInterrupts(ctx context.Context, w io.Writer, grace time.Duration, kill <-chan struct{}) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		select {
		case <-ctx.Done():
			fmt.Fprintf(w, "scalegate: interrupted: stopping the leg in progress (SIGINT, then SIGKILL after %s); interrupt again to kill it now\n", grace)
		case <-done:
			return
		}
		select {
		case <-kill:
			fmt.Fprintln(w, "scalegate: interrupted again: killing every process of the leg now")
		case <-done:
		}
	}()
	return func() { close(done); <-finished }
}

// updateBaseline records the run in the baseline file and notes the
// outcome in res. A run that did not pass is refused by design (its exit
// code already says why); it returns an error only when a passing run's
// baseline could not be written, which must not end in exit 0.
func (s *Session) updateBaseline(res *rundir.RunResult, base *baseline.Committed, head, host string) error {
	p, path := s.Profile, s.BaselinePath
	if !p.Baselined {
		res.BaselineNote = fmt.Sprintf("profile %s is baselined: false; %s not touched", p.Name, path)
		return nil
	}
	ok, err := baseline.Update(base, res, time.Now(), head, host)
	switch {
	case err != nil:
		res.BaselineNote = fmt.Sprintf("%v; %s left unchanged", err, path)
		if res.Verdict == rundir.VerdictPassed {
			return err
		}
	case ok:
		res.BaselineUpdated = true
		keys := map[string]bool{}
		for _, l := range res.Legs {
			keys[l.Leg.BaselineKey] = true
		}
		from := ""
		if s.Runs > 1 {
			from = fmt.Sprintf(", median and spread of %d runs each", s.Runs)
		}
		res.BaselineNote = fmt.Sprintf("updated %s for %d key(s) of profile %s%s (other keys kept)", path, len(keys), p.Name, from)
	}
	return nil
}

// checkRuns refuses a run count a baseline cannot be recorded from.
func (s *Session) checkRuns() error {
	switch {
	case s.Runs < 0:
		return fmt.Errorf("--runs %d: must be 1, or at least %d", s.Runs, baseline.MinRuns)
	case s.Runs > 1 && !s.UpdateBaseline:
		return fmt.Errorf("--runs %d goes with --update-baseline (scalegate calibrate runs a profile N times without recording it)", s.Runs)
	case s.Runs > 1 && s.Runs < baseline.MinRuns:
		return fmt.Errorf("--runs %d: a spread needs at least %d runs (from two, the median absolute deviation is half their distance whatever the runner does); use 1, or %d or more (10 for a false-alarm rate near 1 in 100, docs/baselines.md)",
			s.Runs, baseline.MinRuns, baseline.MinRuns)
	}
	return nil
}

// ExitCode maps a run verdict to the documented exit code
// (docs/exit-codes.md).
func ExitCode(v rundir.Verdict) exitcode.Code {
	switch v {
	case rundir.VerdictPassed:
		return exitcode.OK
	case rundir.VerdictFailed:
		return exitcode.GateFailed
	case rundir.VerdictInconclusive:
		return exitcode.Inconclusive
	case rundir.VerdictLaunchFailed, rundir.VerdictNotRun:
		return exitcode.LaunchFailure
	case rundir.VerdictInterrupted:
		return exitcode.Interrupted
	}
	return exitcode.Internal
}

// writeOutputs writes summary.md, summary.json, metadata.json, report.html
// (rendered from those files, as `scalegate report` would), the step
// summary, --summary and --junit, then prints the result (the full table
// with Wide). They are written even for an interrupted run: partial
// evidence is kept, and marked.
func (s *Session) writeOutputs(res *rundir.RunResult, meta *rundir.Metadata, baselineErr error) error {
	md := rundir.Markdown(res)
	var errs []error
	errs = append(errs, report.WriteFileAtomic(filepath.Join(res.Dir, "summary.md"), []byte(md)))
	errs = append(errs, report.WriteJSONAtomic(filepath.Join(res.Dir, "summary.json"), res))
	errs = append(errs, report.WriteJSONAtomic(filepath.Join(res.Dir, "metadata.json"), meta))
	if res.Matrix != nil {
		errs = append(errs, rundir.WriteMatrixCSV(filepath.Join(res.Dir, rundir.MatrixFile), res.Matrix))
	}
	errs = append(errs, htmlreport.Write(res.Dir))
	if s.StepSummary != "" {
		errs = append(errs, rundir.AppendFile(s.StepSummary, md))
	}
	if s.Summary != "" {
		errs = append(errs, report.WriteFileAtomic(s.Summary, []byte(md)))
	}
	if s.JUnit != "" {
		errs = append(errs, junit.WriteFile(s.JUnit, res))
	}
	if s.Wide {
		errs = append(errs, rundir.WriteTable(s.Stdout, res))
	} else {
		errs = append(errs, rundir.WriteTerminal(s.Stdout, res))
	}
	if err := errors.Join(errs...); err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	code := res.ExitCode
	if code == exitcode.OK {
		return nil
	}
	if baselineErr != nil {
		return exitcode.Errorf(code, "profile %s: %s, but %w (exit %d: %s)", res.Profile.Name, res.Verdict, baselineErr, int(code), code)
	}
	return exitcode.Errorf(code, "profile %s: %s (exit %d: %s)", res.Profile.Name, res.Verdict, int(code), code)
}

// checkWritable creates path's directory and proves a file can be created
// in it ("" is nothing to check).
func checkWritable(path string) error {
	if path == "" {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%s cannot be written: %w", path, err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".probe*")
	if err != nil {
		return fmt.Errorf("%s cannot be written: %w", path, err)
	}
	f.Close()
	return os.Remove(f.Name())
}
