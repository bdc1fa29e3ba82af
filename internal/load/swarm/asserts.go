package swarm

import (
	"fmt"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// Asserts are the enabled --assert-* checks: gate name (gatetable.All()) →
// threshold. A switch gate (admission) is on when present; its threshold is
// the swarm's own client count. The flags, their names and what each reads
// all come from the gate table, so the swarm and the gate apply one rule.
type Asserts map[string]float64

// NoAsserts is an Asserts with every check off.
func NoAsserts() Asserts { return Asserts{} }

// Set enables the gate's assert at thr, honouring the flag's off value:
// below 0 is off, and for the congestion pair 0 is off too (the seed's
// flags: a send rate of 0 Hz is not a meaningful bound).
func (a Asserts) Set(g gatetable.Gate, thr float64) {
	off := thr < 0 || (g.ZeroIsOff && thr == 0)
	if off {
		delete(a, g.Name)
		return
	}
	a[g.Name] = thr
}

// Evaluate checks every enabled assert against res in the table's order,
// stores the outcomes in the report (asserts, passed) and returns the
// failures. A missing metric fails: an unevaluable gate is not a passed
// gate. passed also requires an unaborted run in which the load happened
// and state was delivered (gatetable.LoadHappened and Delivered with the
// run's policy: the gate's own rules).
func Evaluate(a Asserts, res *Result) []report.AssertResult {
	r := res.Report
	r.Asserts = []report.AssertResult{}
	m := gatetable.FromReport(r)
	var failed []report.AssertResult
	for _, g := range gatetable.All() {
		thr, on := a[g.Name]
		if !on || g.Flag == "" {
			continue
		}
		if g.Source == gatetable.Clients {
			thr = float64(r.Clients)
		}
		ar := assertResult(g, g.Evaluate(m, thr), thr)
		if r.AbortGate == g.Name && r.AbortedAtS != nil {
			// The run ended early on this gate: it failed, whatever its
			// figure over the shortened run says.
			ar.Passed = false
			ar.Detail = strings.TrimPrefix(ar.Detail+"; ended the run early: "+r.AbortReason, "; ")
		}
		r.Asserts = append(r.Asserts, ar)
		if !ar.Passed {
			failed = append(failed, ar)
		}
	}
	r.Passed = len(failed) == 0 && r.Aborted == "" && r.AbortedAtS == nil && len(gatetable.LoadHappened(r)) == 0 &&
		gatetable.Delivered(r, res.Delivery).OK()
	return failed
}

func assertResult(g gatetable.Gate, o gatetable.Outcome, thr float64) report.AssertResult {
	ar := report.AssertResult{Name: g.Flag, Threshold: thr, Measured: o.Measured, Passed: o.Err == nil && o.Pass}
	switch {
	case o.Err != nil && strings.HasPrefix(o.Err.Error(), g.Metric):
		ar.Detail = o.Err.Error() // it already names the figure
	case o.Err != nil:
		ar.Detail = fmt.Sprintf("%s missing: %v", g.Metric, o.Err)
	case o.Detail != "":
		ar.Detail = g.Metric + ": " + o.Detail
	default:
		ar.Detail = g.Metric
	}
	return ar
}

// FailureLine is the one line printed for a failed assert: its name, the
// threshold and the measured value (or why it is missing).
func FailureLine(ar report.AssertResult) string {
	if ar.Measured == nil {
		return fmt.Sprintf("FAIL %s: threshold %g, measured missing (%s)", ar.Name, ar.Threshold, ar.Detail)
	}
	return fmt.Sprintf("FAIL %s: threshold %g, measured %.4g (%s)", ar.Name, ar.Threshold, *ar.Measured, ar.Detail)
}
