package swarm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// recordEarlyEnd writes into r why the run ended before its duration, if
// it did and was not interrupted: an early-abort rule fired (abort), or
// every client had ended (refused, lost or never connected) before the
// duration was up, so nothing was left to measure. Either is recorded as
// aborted_at_s, abort_reason and the check it names (abort_gate); an
// interrupted run is marked aborted ("interrupted") instead.
func recordEarlyEnd(r *report.Report, cfg *Config, abort *gatetable.Abort, interrupted bool, start, end time.Time) {
	switch {
	case interrupted:
		return
	case abort != nil:
		at := abort.AtS
		r.AbortedAtS, r.AbortReason, r.AbortGate = &at, abort.Reason, abort.Gate
	case end.Before(start.Add(cfg.Duration)):
		at := round3(end.Sub(start).Seconds())
		r.AbortedAtS, r.AbortGate = &at, report.AbortLoad
		r.AbortReason = fmt.Sprintf("every client ended by %.1fs of the %gs run (%s): nothing was left to measure",
			at, cfg.Duration.Seconds(), outcomes(r))
	}
}

// outcomes says how the clients ended, by outcome and reason.
func outcomes(r *report.Report) string {
	var parts []string
	add := func(n int, what string, by map[string]int) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s%s", n, what, byReason(by)))
		}
	}
	add(r.ClientsRefused, "refused", r.RefusedByReason)
	add(r.ClientsDisconnected, "lost", r.DisconnectedByReason)
	add(r.ClientsNeverConnected, "never connected", r.NeverConnectedByReason)
	if len(parts) == 0 {
		return "no client outcome recorded"
	}
	return strings.Join(parts, ", ")
}

// byReason renders counts by reason in name order: " (server_full 8)".
func byReason(by map[string]int) string {
	if len(by) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(by)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, by[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
