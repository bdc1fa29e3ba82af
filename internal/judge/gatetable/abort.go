package gatetable

import (
	"fmt"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// Early abort: a leg a profile opts in (abort_on_breach) ends as soon as
// one of its gates can no longer pass, read second by second from what the
// swarm sees: its timeline row (tick-Hz, payload KB/s) and the server's
// metrics as they stood that second (wire KB/s per client). Only a gate
// whose figure has a per-second reading (Gate.PerSecond) can end a leg.
// An abort is a failure of the gate it names, never a pass: the rule only
// ever shortens a leg that fails.

// tickHzSecond is tick_hz_min's second: the lowest tick rate a joined
// client observed in it.
func tickHzSecond(p report.TimelinePoint) (float64, bool) {
	if p.TickHzMin == nil {
		return 0, false
	}
	return *p.TickHzMin, true
}

// kbsSecond is kbs_max's second: the clients' mean payload KB/s in it.
// The mean is at most the largest client's, so a mean beyond the bound
// has at least one client beyond it too.
func kbsSecond(p report.TimelinePoint) (float64, bool) {
	if p.KBsClients < 1 {
		return 0, false
	}
	return p.KBs, true
}

// wireSecond is wire_kbs_max's second: the server's own figure as its
// metrics stood (read by WireKBs's rule: no wire_peers, no figure).
func wireSecond(p report.TimelinePoint) (float64, bool) {
	if p.WireKBsPerClient == nil {
		return 0, false
	}
	return *p.WireKBsPerClient, true
}

// CanAbort reports whether the gate can end a leg early.
func (g Gate) CanAbort() bool { return g.PerSecond != nil }

// Abortable lists the gates that can end a leg early, in table order.
func Abortable() []string {
	var out []string
	for _, g := range table {
		if g.CanAbort() {
			out = append(out, g.Name)
		}
	}
	return out
}

// Abort defaults: a profile's abort_on_breach fills what it leaves out
// with these (schema/profile.cue says the same).
const (
	DefaultAbortAfterS    = 3
	DefaultAbortMarginPct = 20
)

// AbortRule is one gate's early-abort rule: AfterS consecutive seconds
// beyond its threshold by more than MarginPct of it end the run.
type AbortRule struct {
	Gate      Gate
	Threshold float64
	AfterS    int
	MarginPct float64
}

// Validate says what is wrong with the rule, nil when nothing is.
func (a AbortRule) Validate() error {
	switch {
	case !a.Gate.CanAbort():
		return fmt.Errorf("%s cannot end a run early (no per-second figure); those that can: %v", a.Gate.Name, Abortable())
	case a.AfterS < 1:
		return fmt.Errorf("%s: after %d s: want at least 1 second", a.Gate.Name, a.AfterS)
	case !(a.MarginPct >= 0 && a.MarginPct <= 100):
		return fmt.Errorf("%s: margin %g %%: want 0..100", a.Gate.Name, a.MarginPct)
	}
	return nil
}

// Bound is the per-second bound: the threshold moved outward by the
// margin (a ceiling up, a floor down). A second beyond it breaches.
func (a AbortRule) Bound() float64 {
	if a.Gate.Dir == AtLeast {
		return a.Threshold * (1 - a.MarginPct/100)
	}
	return a.Threshold * (1 + a.MarginPct/100)
}

// Breaches reports whether v is beyond the bound (on the bound holds).
func (a AbortRule) Breaches(v float64) bool { return !a.Gate.Dir.Holds(v, a.Bound()) }

// Abort is a run ended early: the gate it names, the run time (seconds
// from the start) of the second that ended it, and why in words.
type Abort struct {
	Gate   string
	AtS    float64
	Reason string
}

// AbortWatch applies rules to a run's seconds in order. A second whose
// figure is missing breaks a streak (it is no evidence of a breach).
type AbortWatch struct {
	rules  []AbortRule
	streak []int
	from   []float64 // t_s of each streak's first second
	worst  []float64 // the streak's value furthest beyond the bound
}

// NewAbortWatch watches rules (none: a watch that never aborts).
func NewAbortWatch(rules []AbortRule) *AbortWatch {
	return &AbortWatch{rules: rules, streak: make([]int, len(rules)), from: make([]float64, len(rules)), worst: make([]float64, len(rules))}
}

// Observe takes the run's next second and returns the abort it calls
// for, nil while every rule holds. The first rule to reach its count
// wins; once it has returned an abort the caller ends the run.
func (w *AbortWatch) Observe(p report.TimelinePoint) *Abort {
	if w == nil {
		return nil
	}
	for i, r := range w.rules {
		v, ok := r.Gate.PerSecond(p)
		if !ok || !r.Breaches(v) {
			w.streak[i] = 0
			continue
		}
		if w.streak[i] == 0 {
			w.from[i], w.worst[i] = p.TS, v
		}
		w.streak[i]++
		if r.Gate.Dir == AtLeast && v < w.worst[i] || r.Gate.Dir == AtMost && v > w.worst[i] {
			w.worst[i] = v
		}
		if w.streak[i] >= r.AfterS {
			return &Abort{Gate: r.Gate.Name, AtS: p.TS, Reason: r.reason(v, w.worst[i], w.streak[i], w.from[i], p.TS)}
		}
	}
	return nil
}

// reason says which gate, by how much and for how long, in the gate's own
// words and units.
func (a AbortRule) reason(last, worst float64, seconds int, from, to float64) string {
	side := map[Direction]string{AtMost: "over", AtLeast: "under"}[a.Gate.Dir]
	sign := map[Direction]string{AtMost: "+", AtLeast: "−"}[a.Gate.Dir]
	unit := ""
	if a.Gate.Unit != "" {
		unit = " " + a.Gate.Unit
	}
	return fmt.Sprintf("%s: %s %s%s %s %s%s (threshold %s%s %s%s %%) for %d consecutive seconds (t=%.1f–%.1f s; worst %s%s): the gate can no longer pass",
		a.Gate.Name, a.Gate.Title, FormatNumber(last), unit, side, FormatNumber(a.Bound()), unit,
		FormatNumber(a.Threshold), unit, sign, FormatNumber(a.MarginPct), seconds, from, to, FormatNumber(worst), unit)
}
