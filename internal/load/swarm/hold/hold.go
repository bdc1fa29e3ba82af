// Package hold is the swarm's timing rules: whether a run leaves a hold.
//
// Clients connect a ramp apart; the hold is what remains of the duration
// after the last connect slot, and the warm-up is cut from its start. The
// swarm refuses a ramp or a warm-up that leaves nothing to measure, and
// vet refuses the profile that asks for one, by these same two functions.
package hold

import (
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// RampFits reports whether the last of clients connects before duration
// ends when they connect ramp apart: a ramp that does not fit leaves its
// late clients nothing to measure.
func RampFits(clients int, ramp, duration time.Duration) bool {
	return clients < 1 || time.Duration(clients-1)*ramp < duration
}

// WarmupFits reports whether a warm-up leaves something to measure: the
// hold (the duration after the last of clients' connect slots, ramp
// apart) must outlast the warm-up by report.MinDeliveryWindowS, the
// shortest time a client's delivery rate is measured over.
func WarmupFits(clients int, ramp, warmup, duration time.Duration) bool {
	if warmup <= 0 {
		return true
	}
	hold := duration - time.Duration(max(clients-1, 0))*ramp
	return warmup+time.Duration(report.MinDeliveryWindowS*float64(time.Second)) <= hold
}
