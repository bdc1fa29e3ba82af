package gate

import (
	"fmt"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// Early abort (docs/gate.md, "Early abort"): a run that ended before its
// duration because a hard gate could no longer pass says so in its report
// (aborted_at_s, abort_reason, abort_gate). The check it names fails,
// whatever its figure over the shortened run says: an early end is never
// used to pass anything. Softening still applies to that check as to any
// failure of its gate (a tick-Hz abort on a busy host is inconclusive).

// endedOn fails c when the run ended early on c's gate, with the reason.
// An unevaluable check stays unevaluable (it fails already).
func (e *evaluator) endedOn(c *rundir.Check) {
	r := e.r
	if r.AbortedAtS == nil || r.AbortGate != c.Gate {
		return
	}
	why := fmt.Sprintf("the run ended early on this check at %.1f s: %s", *r.AbortedAtS, r.AbortReason)
	if c.Status == rundir.StatusPass || c.Status == rundir.StatusRecorded {
		c.Status = rundir.StatusFail
	}
	if c.Level != gatetable.LevelHard && c.Status == rundir.StatusFail {
		// A check the run ended on is hard: an advisory gate cannot end a
		// run (vet refuses it), so a report that says one did is not one
		// this leg's gates may pass.
		c.Level = gatetable.LevelHard
	}
	c.Detail = rundir.JoinDetail(why, c.Detail)
}

// earlyEnd is the backstop: a run that ended early on a check the leg does
// not have (a report made with other flags, or the server's death) fails
// on a check of its own, so no early end can leave a leg without a
// failure.
func (e *evaluator) earlyEnd() {
	r := e.r
	if r.AbortedAtS == nil {
		return
	}
	for _, c := range e.out {
		if c.Gate == r.AbortGate {
			return
		}
	}
	why := fmt.Sprintf("the run ended early on %s, which this leg does not check: %s", orMissing(r.AbortGate), r.AbortReason)
	if r.AbortGate == report.AbortServer {
		why = r.AbortReason
	}
	e.add(rundir.Check{Gate: gatetable.CheckAbort, Title: "run took its duration", Level: gatetable.LevelHard, Threshold: "not ended early",
		MeasuredText: fmt.Sprintf("ended at %.1f s", *r.AbortedAtS), Status: rundir.StatusFail, Detail: why})
}

// harnessErrors: clients the swarm could not start itself (its sockets,
// descriptors, local connects: gatetable.HarnessShort) mean the leg ran on
// part of its load. When that accounts for the shortfall (the server
// refused and lost no client that reached it) the check is inconclusive,
// naming the limit hit, and the harness-errors softener turns every
// failure on the partial load inconclusive too. When the server also
// refused or lost clients, those failures stand and the check only records
// the harness's share.
func (e *evaluator) harnessErrors() {
	why, excused := gatetable.HarnessShort(e.r)
	if why == "" {
		return
	}
	h := e.r.HarnessErrors
	n := float64(h.Clients())
	c := rundir.Check{Gate: gatetable.CheckHarnessErrors, Title: "clients the swarm started itself", Level: gatetable.LevelHard, Threshold: "every client",
		Measured: &n, MeasuredText: fmt.Sprintf("%d of %d not started", h.Clients(), e.r.Clients), Detail: why}
	if excused {
		c.Status = rundir.StatusInconclusive
		c.Detail += ": the load was not driven as declared (a harness limit, not the server)"
	} else {
		c.Status, c.Level = rundir.StatusRecorded, gatetable.LevelAdvisory
		c.Detail += fmt.Sprintf("; the server also refused %d and lost %d of the clients that reached it, which stands", e.r.ClientsRefused, e.r.ClientsDisconnected)
	}
	e.add(c)
}
