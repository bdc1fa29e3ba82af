package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/abtest"
	"github.com/scalegate/scalegate/internal/judge/gate"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// ABSide is one build of an ab run.
type ABSide struct {
	// Profile is the profile as this build runs it (with its own --a-set
	// or --b-set overrides applied).
	Profile *profile.Profile
	// Server is the server command template replacing the profile's (nil:
	// the profile's server); see Options.ServerCommand.
	Server []string
	Label  string
}

// AB is one `scalegate ab`: the legs of two builds of a server, run one
// after the other on this runner in rounds (A B, then B A, …:
// abtest.Schedule), then per leg and figure gate B's change against A
// with its interval and a verdict (internal/judge/abtest), written as ab.md and
// ab.json in the run directory beside summary.md of every leg. Leg l of
// round r of build X lives in RUN/round-r/X/l.
type AB struct {
	A, B ABSide
	// Rounds is how many rounds run (legs per build).
	Rounds int
	// UntilDecided adds rounds, two at a time (A B, B A), while the answer
	// is unknown, up to MaxRounds (0: 3 × Rounds). Every look at the data
	// it may take is planned up front and the confidence divided among
	// them (abtest.AnalyzeLooks), so adding rounds does not raise the
	// error rate.
	UntilDecided bool
	MaxRounds    int
	// Confidence is simultaneous over the figures judged.
	Confidence float64
	// TolerancePct is the change, in percent of A's median, that is not a
	// regression.
	TolerancePct float64
	// Gates names the gates whose figures are judged (empty: every figure
	// gate the profile declares).
	Gates []string
	// Out, Results, Grace, Kill, Version, CommandLine, Stdout and Stderr
	// are as in Session.
	Out, Results         string
	Grace                time.Duration
	Kill                 <-chan struct{}
	Version, CommandLine string
	Stdout, Stderr       io.Writer
}

// abRun is an ab run in progress.
type abRun struct {
	*AB
	dir     string
	figs    []figureGate
	metrics []abtest.Metric
	legs    []rundir.LegResult
	// bound and busy count harness-bound and busy-host legs per side; ran
	// legs per side.
	bound, busy, ran [2]int
	// rounds is how many rounds completed; failed is the verdict of the
	// leg that could not complete ("" when none).
	rounds int
	failed rundir.Verdict
	// target is the rounds planned so far (Rounds, then 2 more per
	// undecided look); decided says why --until-decided stopped.
	target  int
	decided string
}

// maxRounds is the most rounds the run may take.
func (a *AB) maxRounds() int {
	if !a.UntilDecided {
		return a.Rounds
	}
	if a.MaxRounds > 0 {
		return a.MaxRounds
	}
	return min(3*a.Rounds, MaxRuns)
}

// looks is how many times the rounds will be analysed at most: after
// Rounds, then after every two added.
func (a *AB) looks() int {
	return 1 + (a.maxRounds()-a.Rounds+1)/2
}

// Run runs the comparison. The error carries the exit code: 1 when a
// figure regressed beyond the tolerance or could not be judged; a leg that
// could not complete (launch failure, a server that died, an interrupt)
// stops the run with the code a gate run would have, after writing what
// the completed rounds showed.
func (a *AB) Run(ctx context.Context) error {
	figs, err := a.check()
	if err != nil {
		return exitcode.With(exitcode.Usage, err)
	}
	self, err := launcher.Self()
	if err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	dir, meta, err := a.openRunDir(len(figs))
	if err != nil {
		return err
	}
	run := &abRun{AB: a, dir: dir, figs: figs}
	stopNotes := noteInterrupts(ctx, a.Stderr, a.Grace, a.Kill)
	run.runRounds(ctx, self)
	stopNotes()
	p := a.A.Profile
	all := &rundir.RunResult{Profile: p, Tier: p.EffectiveTier(false), Dir: dir, Legs: run.legs,
		Interrupted: ctx.Err() != nil, StartedAt: meta.StartedAt, FinishedAt: time.Now().UTC().Format(time.RFC3339)}
	all.Verdict = gate.RunVerdict(all)
	rep, err := run.writeResults(all, meta)
	if err != nil {
		return err
	}
	return run.outcome(all, rep)
}

// openRunDir creates the comparison's run directory, writes its first
// metadata.json and announces the run (nfigs figures) on Stderr. The
// error carries its exit code.
func (a *AB) openRunDir(nfigs int) (string, *rundir.Metadata, error) {
	p := a.A.Profile
	dir, err := createRunDir(a.Out, a.Results, p.Name+"_ab")
	if err != nil {
		return "", nil, err
	}
	meta, err := rundir.NewMetadata(p, false, false, a.Version, a.CommandLine)
	if err != nil {
		return "", nil, exitcode.With(exitcode.Internal, err)
	}
	if err := report.WriteJSONAtomic(filepath.Join(dir, "metadata.json"), meta); err != nil {
		return "", nil, exitcode.With(exitcode.Internal, err)
	}
	fmt.Fprintf(a.Stderr, "scalegate: ab %s: %d round(s) of %d leg(s) per build (%d legs), %d figure(s); artifacts in %s\n",
		p.Name, a.Rounds, len(p.Legs()), 2*a.Rounds*len(p.Legs()), nfigs, dir)
	return dir, meta, nil
}

// writeResults writes what the rounds showed, whatever their outcome:
// summary.md, summary.json, the finished metadata.json and (when it
// could be analysed) the comparison; every write is tried, the errors
// joined under the internal exit code. rep is nil when no round completed.
func (r *abRun) writeResults(all *rundir.RunResult, meta *rundir.Metadata) (*abtest.Report, error) {
	meta.Finish(all)
	rep, repErr := r.analyze(meta.Host.Hostname)
	errs := []error{repErr,
		report.WriteFileAtomic(filepath.Join(r.dir, "summary.md"), []byte(rundir.Markdown(all))),
		report.WriteJSONAtomic(filepath.Join(r.dir, "summary.json"), all),
		report.WriteJSONAtomic(filepath.Join(r.dir, "metadata.json"), meta)}
	if rep != nil {
		errs = append(errs, writeAB(r.dir, rep, r.Stdout))
	}
	if err := errors.Join(errs...); err != nil {
		return rep, exitcode.With(exitcode.Internal, err)
	}
	return rep, nil
}

// outcome is the comparison's exit once its results are written:
// interrupted, a leg that could not complete, no round, a regression, or
// nil (reported on Stderr).
func (r *abRun) outcome(all *rundir.RunResult, rep *abtest.Report) error {
	p := r.A.Profile
	switch {
	case all.Interrupted:
		return exitcode.Errorf(exitcode.Interrupted, "ab %s: interrupted after %d complete round(s) (exit %d)", p.Name, r.rounds, int(exitcode.Interrupted))
	case r.failed != "":
		code := ExitCode(r.failed)
		return exitcode.Errorf(code, "ab %s: a leg could not complete (%s) in round %d; ab.md covers the rounds before it (exit %d: %s)",
			p.Name, r.failed, r.rounds+1, int(code), code)
	case rep == nil:
		return exitcode.Errorf(exitcode.Internal, "ab %s: no round completed", p.Name)
	case rep.Failed():
		return exitcode.Errorf(exitcode.GateFailed, "ab %s: %d regression(s), %d figure(s) unevaluable; see %s (exit %d: %s)",
			p.Name, rep.Regressions, rep.Unevaluable, filepath.Join(r.dir, "ab.md"), int(exitcode.GateFailed), exitcode.GateFailed)
	}
	fmt.Fprintf(r.Stderr, "scalegate: ab %s: %s; no regression beyond the tolerance; %s\n", p.Name, strings.ToUpper(string(rep.Answer)), filepath.Join(r.dir, "ab.md"))
	return nil
}

// check refuses options ab cannot run with and returns the figures to
// judge.
func (a *AB) check() ([]figureGate, error) {
	if err := a.checkOptions(); err != nil {
		return nil, err
	}
	figs, err := a.selectGates()
	if err != nil {
		return nil, err
	}
	return figs, a.checkReachable(len(figs))
}

// checkReachable refuses a round count for which no interval at the asked
// confidence can exist for nfigs figures: the run would end with every
// figure unevaluable, after all its legs.
func (a *AB) checkReachable(nfigs int) error {
	need := abtest.MinRounds(a.Confidence, nfigs, a.looks())
	if a.Rounds >= need {
		return nil
	}
	looks := ""
	if a.looks() > 1 {
		looks = fmt.Sprintf(" and %d planned looks (--until-decided up to %d rounds)", a.looks(), a.maxRounds())
	}
	per := 1 - (1-a.Confidence)/float64(nfigs*a.looks())
	return fmt.Errorf("--rounds %d can never reach %g %% confidence over %d figure(s)%s: each interval is then at %.4g %%, which needs at least %d complete rounds (every figure would be unevaluable after %d legs); use --rounds %d or more, fewer --gates, or a lower --confidence",
		a.Rounds, 100*a.Confidence, nfigs, looks, 100*per, need, 2*a.Rounds*len(a.A.Profile.Legs()), need)
}

// checkOptions refuses the options and build pairs ab cannot run with:
// a missing profile, a round count, confidence or tolerance out of range,
// an unusable transport or server command, builds with different legs.
func (a *AB) checkOptions() error {
	if a.A.Profile == nil || a.B.Profile == nil {
		return errors.New("ab: both builds need a profile")
	}
	switch {
	case a.Rounds < 1:
		return fmt.Errorf("--rounds %d: at least 1 (%d by default; docs/baselines.md says what a round count detects)", a.Rounds, abtest.DefaultRounds)
	case a.Rounds > MaxRuns:
		return runsError("--rounds", a.Rounds, 2*len(a.A.Profile.Legs()), a.A.Profile.DurationS)
	case !(a.Confidence > 0 && a.Confidence < 1):
		return fmt.Errorf("--confidence %v: must be between 0 and 1 (exclusive)", a.Confidence)
	case !(a.TolerancePct >= 0) || math.IsInf(a.TolerancePct, 0):
		return fmt.Errorf("--tolerance-pct %v: must be a number ≥ 0", a.TolerancePct)
	case a.MaxRounds != 0 && !a.UntilDecided:
		return fmt.Errorf("--max-rounds %d goes with --until-decided", a.MaxRounds)
	case a.UntilDecided && a.MaxRounds != 0 && (a.MaxRounds < a.Rounds || a.MaxRounds > MaxRuns):
		return fmt.Errorf("--max-rounds %d: between --rounds (%d) and %d", a.MaxRounds, a.Rounds, MaxRuns)
	}
	for _, s := range []ABSide{a.A, a.B} {
		if err := transportError(s.Profile); err != nil {
			return err
		}
		if len(s.Server) > 0 && strings.TrimSpace(s.Server[0]) == "" {
			return fmt.Errorf("build %s: the server command's program is empty", s.Label)
		}
	}
	if ids, idsB := legIDs(a.A.Profile), legIDs(a.B.Profile); !slices.Equal(ids, idsB) {
		return fmt.Errorf("the builds run different legs (A: %s; B: %s): --a-set and --b-set may change the server, not the legs",
			strings.Join(ids, ", "), strings.Join(idsB, ", "))
	}
	return nil
}

// selectGates is the figure gates to judge: every one of build A's
// profile, or those --gates names (each must name at least one).
func (a *AB) selectGates() ([]figureGate, error) {
	all, _ := figureGates(a.A.Profile, false)
	if len(a.Gates) == 0 {
		if len(all) == 0 {
			return nil, fmt.Errorf("profile %s declares no gate with a figure to compare", a.A.Profile.Name)
		}
		return all, nil
	}
	var out []figureGate
	for _, name := range a.Gates {
		n := len(out)
		for _, f := range all {
			if f.gate.Name == name {
				out = append(out, f)
			}
		}
		if len(out) == n {
			return nil, fmt.Errorf("--gates %s: profile %s declares no such gate with a figure (its figure gates: %s)",
				name, a.A.Profile.Name, strings.Join(gateNames(all), ", "))
		}
	}
	return out, nil
}

// gateNames is the distinct gate names of figs, first seen first, for
// the error that lists what --gates could have named.
func gateNames(figs []figureGate) []string {
	var names []string
	for _, f := range figs {
		if !slices.Contains(names, f.gate.Name) {
			names = append(names, f.gate.Name)
		}
	}
	return names
}

func legIDs(p *profile.Profile) []string {
	var ids []string
	for _, l := range p.Legs() {
		ids = append(ids, l.ID)
	}
	return ids
}

// runRounds runs the legs in schedule order: round r runs every leg of
// the profile with both builds, in the round's order, leg by leg, so the
// two legs compared sit next to each other in time. It stops at a leg
// that could not complete.
func (r *abRun) runRounds(ctx context.Context, self string) {
	most := r.maxRounds()
	sched := abtest.Schedule(most)
	for _, f := range r.figs {
		r.metrics = append(r.metrics, abtest.Metric{Gate: f.name(), Title: f.title(len(r.A.Profile.Legs())), Unit: f.gate.Unit,
			Dir: f.gate.Dir, TolerancePct: r.TolerancePct, A: nans(most), B: nans(most)})
	}
	ports := &launcher.PortAllocator{}
	r.target = r.Rounds
	for round := 0; round < r.target; round++ {
		for li := range r.A.Profile.Legs() {
			for _, side := range sched[2*round : 2*round+2] {
				if ctx.Err() != nil || !r.runLeg(ctx, self, ports, round, li, side) {
					return
				}
			}
		}
		r.rounds = round + 1
		if r.rounds == r.target && r.UntilDecided {
			r.lookAgain()
		}
	}
}

// lookAgain analyses the rounds so far and plans two more while the
// answer is unknown and the cap allows.
func (r *abRun) lookAgain() {
	rep, err := r.analyze("")
	switch {
	case err != nil || rep == nil:
		return
	case rep.Answer != abtest.Unknown:
		r.decided = fmt.Sprintf("--until-decided: %s after %d round(s)", strings.ToUpper(string(rep.Answer)), r.rounds)
	case r.rounds+2 > r.maxRounds():
		r.decided = fmt.Sprintf("--until-decided: still UNKNOWN at the cap of %d round(s)", r.maxRounds())
	default:
		r.target = r.rounds + 2
		fmt.Fprintf(r.Stderr, "scalegate: ab: UNKNOWN after %d round(s); adding rounds %d and %d (cap %d)\n", r.rounds, r.rounds+1, r.rounds+2, r.maxRounds())
		return
	}
	fmt.Fprintf(r.Stderr, "scalegate: ab: %s\n", r.decided)
}

// runLeg runs leg li of build side in round and records its figures;
// false when it could not complete.
func (r *abRun) runLeg(ctx context.Context, self string, ports *launcher.PortAllocator, round, li int, side abtest.Side) bool {
	s := r.A
	if side == abtest.B {
		s = r.B
	}
	// ab compares the two builds with each other, not with the committed
	// baseline: the legs are not judged against it.
	p := *s.Profile
	p.Baselined = false
	o := Options{Profile: &p, Dir: filepath.Join(r.dir, fmt.Sprintf("round-%d", round+1), side.String()), Self: self,
		Progress: r.Stderr, Grace: r.Grace, Kill: r.Kill, ServerCommand: s.Server}
	leg := p.Legs()[li]
	var lr rundir.LegResult
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		lr = rundir.LegResult{Leg: leg, Dir: filepath.Join(o.Dir, leg.ID), Verdict: rundir.VerdictNotRun, Error: fmt.Sprintf("not run: %v", err)}
	} else {
		lr = runLeg(ctx, o, leg, ports)
	}
	fmt.Fprintf(r.Stderr, "scalegate: round %d/%d %s (%s) leg %s: %s\n", round+1, r.target, side, s.Label, leg.ID, lr.Verdict)
	lr.Leg.ID = fmt.Sprintf("round-%d/%s/%s", round+1, side, leg.ID)
	r.legs = append(r.legs, lr)
	r.ran[side]++
	if harnessBound(lr) {
		r.bound[side]++
	}
	if gate.HostBusy(lr.Checks) {
		r.busy[side]++
	}
	switch lr.Verdict {
	case rundir.VerdictLaunchFailed, rundir.VerdictNotRun, rundir.VerdictInterrupted:
		r.failed = lr.Verdict
		return false
	}
	for i, f := range r.figs {
		if f.leg.ID != leg.ID {
			continue
		}
		v := f.measure(lr.Report)
		if side == abtest.A {
			r.metrics[i].A[round] = v
		} else {
			r.metrics[i].B[round] = v
		}
	}
	return true
}

func nans(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// analyze judges the completed rounds; nil without one.
func (r *abRun) analyze(host string) (*abtest.Report, error) {
	if r.rounds == 0 {
		return nil, nil
	}
	ms := slices.Clone(r.metrics)
	for i := range ms {
		ms[i].A, ms[i].B = ms[i].A[:r.rounds], ms[i].B[:r.rounds]
	}
	rep, err := abtest.AnalyzeLooks(ms, r.rounds, r.Confidence, r.looks())
	if err != nil {
		return nil, fmt.Errorf("ab: %w", err)
	}
	rep.A, rep.B = build(r.A), build(r.B)
	rep.Host, rep.Profile = host, r.A.Profile.Name
	rep.Notes = r.notes()
	return rep, nil
}

// build describes a side for the report: its label, and what it runs.
func build(s ABSide) abtest.Build {
	cmd := "the profile's server"
	if len(s.Server) > 0 {
		cmd = strings.Join(s.Server, " ")
	}
	if len(s.Profile.Overrides) > 0 {
		cmd += " with --set " + strings.Join(s.Profile.Overrides, " --set ")
	}
	return abtest.Build{Label: s.Label, Command: cmd}
}

// notes say how many legs of each build were harness-bound and why the
// run ended early.
func (r *abRun) notes() []string {
	var notes []string
	if r.bound[abtest.A]+r.bound[abtest.B] > 0 {
		notes = append(notes, fmt.Sprintf("harness-bound legs (the swarm could not keep its own cadence): A %d of %d, B %d of %d; "+
			"their figures are kept: each round compares the two builds on the same runner at the same time, so a starved "+
			"harness moves both, and a build that starves it more shows as a change", r.bound[abtest.A], r.ran[abtest.A], r.bound[abtest.B], r.ran[abtest.B]))
	}
	if r.busy[abtest.A]+r.busy[abtest.B] > 0 {
		notes = append(notes, fmt.Sprintf("busy-host legs (other processes used more of the machine than the profile's host policy allows): A %d of %d, B %d of %d; "+
			"their figures are kept, for the same reason", r.busy[abtest.A], r.ran[abtest.A], r.busy[abtest.B], r.ran[abtest.B]))
	}
	if r.decided != "" {
		notes = append(notes, r.decided+fmt.Sprintf(" (planned for at most %d looks at the data; each interval's confidence is divided among them)", r.looks()))
	}
	if planned := max(r.target, r.Rounds); r.rounds < planned {
		why := "interrupted"
		if r.failed != "" {
			why = fmt.Sprintf("a leg could not complete (%s) in round %d", r.failed, r.rounds+1)
		}
		notes = append(notes, fmt.Sprintf("%d of %d round(s) completed and are judged here: %s", r.rounds, planned, why))
	}
	return notes
}

// writeAB writes ab.json and ab.md into dir and ab.md's header and table
// (up to the first figure's section) to stdout.
func writeAB(dir string, rep *abtest.Report, stdout io.Writer) error {
	return writeJSONAndMarkdown(dir, "ab", rep, func(w io.Writer) error { return abtest.WriteMarkdown(w, rep) }, stdout)
}

// writeJSONAndMarkdown writes a statistical command's result as NAME.json
// and NAME.md into dir, each atomically, and the Markdown up to its first
// "## " section (the header and the summary table) to stdout.
func writeJSONAndMarkdown(dir, name string, v any, markdown func(io.Writer) error, stdout io.Writer) error {
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("%s.json: %w", name, err)
	}
	var md bytes.Buffer
	if err := markdown(&md); err != nil {
		return fmt.Errorf("%s.md: %w", name, err)
	}
	if err := report.WriteFileAtomic(filepath.Join(dir, name+".json"), append(raw, '\n')); err != nil {
		return err
	}
	if err := report.WriteFileAtomic(filepath.Join(dir, name+".md"), md.Bytes()); err != nil {
		return err
	}
	head, _, _ := strings.Cut(md.String(), "\n## ")
	_, err = io.WriteString(stdout, strings.TrimRight(head, "\n")+"\n")
	return err
}
