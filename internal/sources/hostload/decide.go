package hostload

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// DefaultMaxOtherCores is the share of the machine, in cores, that other processes may use on
// average over the hold before the host counts as busy.
//
// Why 0.25: it must sit well above what a quiet machine shows, so a quiet machine is never
// called busy, and well below one core, because a single neighbour compiling keeps one core
// busy and on the 2-core machines CI gives a gate that is half the machine. The quiet floor on
// such a machine is its daemons: measured per process over 10 s, the long-lived processes that
// are no one's build or test (kernel threads, the VM's agent) used 0.03 cores together; the
// sampler's own reading (0.004 cores) is in the run's tree, not in others'. A neighbour
// burning one core is counted in full (the live test checks others ≥ 0.85 × the hog's own CPU
// time). 0.25 is eight times that floor and a quarter of one busy neighbour: a neighbour that
// compiles for a quarter of the hold or more is caught. docs/host-contention.md has the
// figures. It is a policy, not a law: a profile sets its own.
const DefaultMaxOtherCores = 0.25

// Policy says when the host was too busy for a timing verdict to describe the server.
type Policy struct {
	// MaxOtherCores: busy when other processes used more than this many cores on average over
	// the hold (> 0; DefaultPolicy has DefaultMaxOtherCores).
	MaxOtherCores float64
	// MaxCPUPressureAvg10, when set: busy also when CPU pressure (some, avg10) averaged more
	// than this percentage over the hold. Off by default: pressure counts the run's own tasks
	// waiting for each other, so a leg that saturates the machine by itself reads high
	// pressure with nobody else on it.
	MaxCPUPressureAvg10 *float64
	// MaxStealPct, when set: busy also when steal averaged more than this percentage of the
	// machine's CPU time over the hold (a hypervisor that gives the VM's CPUs to other guests
	// is a neighbour too). Off by default.
	MaxStealPct *float64
}

// DefaultPolicy is the policy of a profile that declares none.
func DefaultPolicy() Policy { return Policy{MaxOtherCores: DefaultMaxOtherCores} }

// Validate checks the policy's limits, naming the field.
func (p Policy) Validate() error {
	var errs []error
	if !(p.MaxOtherCores > 0) || math.IsInf(p.MaxOtherCores, 0) {
		errs = append(errs, fmt.Errorf("host.max_other_cores %v: want a number > 0", p.MaxOtherCores))
	}
	if v := p.MaxCPUPressureAvg10; v != nil && !(*v >= 0 && *v < 100) {
		errs = append(errs, fmt.Errorf("host.max_cpu_pressure_avg10 %v: want 0 ≤ x < 100 (percent)", *v))
	}
	if v := p.MaxStealPct; v != nil && !(*v >= 0 && *v < 100) {
		errs = append(errs, fmt.Errorf("host.max_steal_pct %v: want 0 ≤ x < 100 (percent)", *v))
	}
	return errors.Join(errs...)
}

// State is the host's condition over a hold.
type State string

// States of Decision.
const (
	// StateQuiet: measured, and under every limit.
	StateQuiet State = "quiet"
	// StateBusy: a limit was exceeded; failed timing verdicts describe the machine.
	StateBusy State = "busy"
	// StateUnmeasured: others' CPU was not measured over the hold, so nothing can be said
	// about the host and nothing may be softened.
	StateUnmeasured State = "unmeasured"
)

// Decision is what Decide concluded.
type Decision struct {
	State State
	// Reason is one line for the summary: why busy ("host busy: other processes used 0.9
	// cores on average over the hold (limit 0.25)"), why unmeasured, or the quiet figures.
	Reason string
	// Notes are limits that could not be checked (a pressure ceiling on a kernel without
	// PSI): they do not change State, but the summary should show them.
	Notes []string
}

// Busy reports whether the host was busy.
func (d Decision) Busy() bool { return d.State == StateBusy }

// Decide judges the hold summary h against p. Others' CPU is the deciding figure; when it is
// missing the host is unmeasured, never quiet and never busy: a failure stays a failure. An
// optional ceiling on a figure the machine does not report is a note, not a verdict.
func Decide(h *report.Host, p Policy) Decision {
	if err := p.Validate(); err != nil {
		return Decision{State: StateUnmeasured, Reason: "host load not judged: " + err.Error()}
	}
	if h == nil {
		return Decision{State: StateUnmeasured, Reason: "host load not measured"}
	}
	if h.OtherCores == nil {
		why := h.Missing[report.HostOtherCores]
		if why == "" {
			why = "other_cores missing"
		}
		return Decision{State: StateUnmeasured, Reason: "host load not measured: " + why}
	}
	var busy, quiet, notes []string
	other := h.OtherCores.Mean
	line := fmt.Sprintf("other processes used %s cores on average over the hold (limit %s)", fmtFig(other), fmtFig(p.MaxOtherCores))
	if other > p.MaxOtherCores {
		busy = append(busy, line)
	} else {
		quiet = append(quiet, line)
	}
	check := func(limit *float64, got *report.MeanMax, key, what string) {
		if limit == nil {
			return
		}
		if got == nil {
			why := h.Missing[key]
			if why == "" {
				why = key + " missing"
			}
			notes = append(notes, fmt.Sprintf("%s limit %s %% not checked: %s", what, fmtFig(*limit), why))
			return
		}
		line := fmt.Sprintf("%s averaged %s %% over the hold (limit %s %%)", what, fmtFig(got.Mean), fmtFig(*limit))
		if got.Mean > *limit {
			busy = append(busy, line)
		} else {
			quiet = append(quiet, line)
		}
	}
	check(p.MaxCPUPressureAvg10, h.CPUPressureAvg10, report.HostCPUPressureAvg10, "CPU pressure (some, avg10)")
	check(p.MaxStealPct, h.StealPct, report.HostStealPct, "CPU steal")
	if len(busy) > 0 {
		return Decision{State: StateBusy, Reason: "host busy: " + strings.Join(busy, "; "), Notes: notes}
	}
	return Decision{State: StateQuiet, Reason: "host quiet: " + strings.Join(quiet, "; "), Notes: notes}
}

// fmtFig prints a figure with up to two decimals and no trailing zeros: 0.9, 0.25, 42.
func fmtFig(v float64) string {
	return strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
}
