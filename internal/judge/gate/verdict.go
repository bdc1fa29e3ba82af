package gate

import (
	"strings"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// How a leg's verdict is decided, in one place and in this order:
//
//  1. Checks are evaluated (Evaluate): each pass, fail, unevaluable,
//     inconclusive or recorded on its own figure.
//  2. Softening (soften): a condition that makes part of the evidence
//     unattributable to the server turns the failures it covers into
//     inconclusive, with the reason in the detail. The rules and what each
//     may touch are in softeners. The built-in checks (alwaysHard) are
//     never softened: a run on the wrong transport, without load, without
//     the declared impairment or with a broken report measured something
//     else, whatever the harness or the shards did. One exception, named in
//     its rule (builtins): when the swarm could not start its clients
//     itself (harness_errors inconclusive: its sockets or descriptors ran
//     out, and the server refused and lost none of the clients that
//     reached it), the load not happening is the harness's doing, so the
//     load check is softened with the rest. Unevaluable is never softened
//     either: unread is not clean. An early end (abort.go) fails the
//     check it names before softening, as a failure of that gate: it is
//     softened exactly when that gate's own failure would be.
//  3. The leg's verdict (LegVerdict): interrupted, then launch failure (the
//     leg did not run as declared: it could not start, the server died,
//     the swarm overran or wrote no report; the checks stay as evidence),
//     then failed (a hard check failed or was unevaluable, or an artifact
//     could not be written), then inconclusive (a hard check was), then
//     passed. An advisory check never moves the verdict: softening leaves
//     it a failed advisory with the note, and its own status, whatever it
//     is, is shown and never counted.
//  4. The run's verdict (RunVerdict) folds the legs the same way, and the
//     run's own checks across legs (RunChecks) as if they were one more
//     leg's: a hard one failed or unevaluable fails the run.

// alwaysHard are the built-in checks no softening rule touches.
var alwaysHard = map[string]bool{
	gatetable.CheckReport: true, gatetable.CheckReportSchema: true, gatetable.CheckTransport: true, gatetable.CheckLoad: true, gatetable.CheckDelivery: true,
	gatetable.CheckImpairment: true, gatetable.CheckShards: true, gatetable.CheckHarness: true, gatetable.CheckSwarmRun: true, gatetable.CheckTraceReplay: true,
	gatetable.CheckHost: true, gatetable.CheckHarnessErrors: true, gatetable.CheckAbort: true, gatetable.CheckSnapshotDecode: true,
}

// softener is one rule of step 2: when trigger holds on a leg's checks,
// every failed check that covers says is inconclusive, with note. builtins
// are the always-hard checks this rule may soften all the same (none
// unless its comment says why).
type softener struct {
	trigger  func([]rundir.Check) bool
	covers   func(rundir.Check) bool
	note     string
	builtins map[string]bool
	// timing: the rule covers the timing checks (soften's timing), in
	// place of covers.
	timing bool
}

// hostBusy triggers on the host check of a leg whose machine other
// processes kept busy (see hostCheck).
func hostBusy(cs []rundir.Check) bool {
	for _, c := range cs {
		if c.Gate == gatetable.CheckHost && strings.HasPrefix(c.Detail, hostBusyPrefix) {
			return true
		}
	}
	return false
}

// softeners are the rules of step 2.
var softeners = []softener{
	// A harness-bound leg: the swarm could not keep its own cadence, so a
	// timing figure (it shares the CPU with the swarm) cannot say whether
	// the server or the harness was slow. Byte counts, admission and the
	// rest are facts whatever the harness did.
	{trigger: inconclusive(gatetable.CheckHarness), timing: true,
		note: "harness-bound leg: a timing failure here cannot be attributed to the server"},
	// A report of part of the load (shards missing or given twice): a
	// failure measured under less load than the leg names says neither
	// pass nor fail.
	{trigger: inconclusive(gatetable.CheckShards), covers: func(rundir.Check) bool { return true },
		note: "measured on part of the load (shards incomplete)"},
	// A busy host: other processes used more of the machine than the
	// profile allows, so a timing figure describes the machine, not the
	// server. A passing timing gate stays passed: noise cannot make a slow
	// server look fast enough to matter.
	{trigger: hostBusy, timing: true,
		note: "the host was busy with other work: a timing failure here cannot be attributed to the server"},
	// The swarm could not start part of its clients itself (no socket, no
	// descriptor: gatetable.HarnessShort) and the server refused and lost
	// none of those that reached it: every failure was measured on less
	// load than the leg names, and the load check failing is the harness's
	// own doing, so it is softened too, with the delivery check that fails
	// beside it when no client was admitted (the built-ins any rule may
	// touch, and only here). Exit 3, naming the limit hit.
	{trigger: inconclusive(gatetable.CheckHarnessErrors), covers: func(rundir.Check) bool { return true },
		note: "the swarm could not start all its clients itself (harness errors): a failure on part of the load cannot be attributed to the server", builtins: map[string]bool{gatetable.CheckLoad: true, gatetable.CheckDelivery: true}},
}

// inconclusive triggers on the named check being inconclusive.
func inconclusive(gate string) func([]rundir.Check) bool {
	return func(cs []rundir.Check) bool {
		for _, c := range cs {
			if c.Gate == gate && c.Status == rundir.StatusInconclusive {
				return true
			}
		}
		return false
	}
}

// soften applies every softener to the checks (step 2) and returns them;
// timing says which checks read a timing figure (isTiming, and the
// profile's own figures declared timing).
func soften(checks []rundir.Check, timing func(rundir.Check) bool) []rundir.Check {
	for _, s := range softeners {
		if !s.trigger(checks) {
			continue
		}
		covers := s.covers
		if s.timing {
			covers = timing
		}
		for i, c := range checks {
			if c.Status != rundir.StatusFail || alwaysHard[c.Gate] && !s.builtins[c.Gate] || !covers(c) {
				continue
			}
			if c.Level != rundir.LevelHard {
				// An advisory check never decides the leg, so it has nothing
				// to soften: it stays a failed advisory, with the reason its
				// figure may be the machine's beside it.
				checks[i].Detail = rundir.JoinDetail(c.Detail, s.note)
				continue
			}
			checks[i].Status = rundir.StatusInconclusive
			checks[i].Detail = rundir.JoinDetail(c.Detail, s.note)
		}
	}
	return checks
}

// isTiming: the gate's figure shares the CPU with the swarm (the server's
// tick time, the client-observed tick rate), per the gate table. A carried
// swarm assert is judged by the gate its flag belongs to.
func isTiming(c rundir.Check) bool {
	if g, ok := gatetable.Lookup(c.Gate); ok {
		return g.Timing
	}
	if c.Gate == gatetable.CheckSwarmAssert {
		if g, ok := gatetable.ByFlag(strings.TrimPrefix(c.Title, "swarm ")); ok {
			return g.Timing
		}
	}
	return false
}

// Facts are what happened to a leg's processes, beside its checks.
type Facts struct {
	// Interrupted: the run was stopped (SIGINT/SIGTERM) during the leg.
	Interrupted bool
	// NotRun says why the leg did not run as declared ("" when it did):
	// it could not start, the server died mid-run, the swarm overran its
	// time limit or left no report.
	NotRun string
	// ArtifactErr: a file of the leg could not be written or merged; the
	// leg's evidence is incomplete.
	ArtifactErr bool
}

// LegVerdict decides a leg (step 3).
func LegVerdict(checks []rundir.Check, f Facts) rundir.Verdict {
	switch {
	case f.Interrupted:
		return rundir.VerdictInterrupted
	case f.NotRun != "":
		return rundir.VerdictLaunchFailed
	}
	inconclusive := false
	for _, c := range checks {
		if c.Failed() {
			return rundir.VerdictFailed
		}
		// Only a hard check can leave the leg undecided: an advisory one
		// never changes the verdict, whatever its status.
		if c.Status == rundir.StatusInconclusive && c.Level == rundir.LevelHard {
			inconclusive = true
		}
	}
	switch {
	case f.ArtifactErr:
		return rundir.VerdictFailed
	case inconclusive:
		return rundir.VerdictInconclusive
	}
	return rundir.VerdictPassed
}

// RunVerdict folds the legs (step 4): interrupted, then failed, then launch
// failure (a leg not run counts as one), then inconclusive, then passed. A
// run without legs failed: it showed nothing.
func RunVerdict(r *rundir.RunResult) rundir.Verdict {
	if r.Interrupted {
		return rundir.VerdictInterrupted
	}
	has := map[rundir.Verdict]bool{}
	for _, l := range r.Legs {
		has[l.Verdict] = true
	}
	if len(r.Checks) > 0 {
		has[LegVerdict(r.Checks, Facts{})] = true
	}
	for _, v := range []rundir.Verdict{rundir.VerdictInterrupted, rundir.VerdictFailed, rundir.VerdictLaunchFailed, rundir.VerdictNotRun, rundir.VerdictInconclusive} {
		if has[v] {
			if v == rundir.VerdictNotRun {
				return rundir.VerdictLaunchFailed
			}
			return v
		}
	}
	if len(r.Legs) == 0 {
		return rundir.VerdictFailed
	}
	return rundir.VerdictPassed
}

// HostBusy reports whether a leg's checks say other processes kept its
// machine busier than the profile allows (the host check; a timing failure
// there is inconclusive). calibrate and ab name such legs in their notes.
func HostBusy(checks []rundir.Check) bool { return hostBusy(checks) }
