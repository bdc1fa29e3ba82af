package server

import "math"

// The overrun governor keeps the tick on time when the work outgrows the
// period, by shedding the work it can shed before the loop's catch-up cap
// starts dropping ticks. An EWMA of the tick's work time is compared with a
// high and a low watermark (hysteresis): above the high one load_factor
// falls multiplicatively, below the low one it recovers additively, and in
// between it holds. load_factor drives three levers, engaged in order as it
// falls and released in reverse as it recovers:
//
//  1. the effective snapshot rate: each peer is sent a snapshot on a
//     load_factor share of the ticks (staggered across peers), and its
//     interest query and snapshot build run only on those ticks;
//  2. below governorAIStrideBelow, the AI-sample stride: each AI entity's
//     controller runs every k-th tick;
//  3. below governorInterestBelow, interest_scale: the interest radius
//     shrinks, down to governorInterestFloor.
//
// Flight integration, collision and the network drain are never shed: when
// they alone outgrow the period, time dilates and dropped_ticks says so.
const (
	governorAlpha         = 0.1  // EWMA weight of the newest tick
	governorHighFrac      = 0.85 // high watermark, fraction of the period
	governorLowFrac       = 0.6  // low watermark, fraction of the period
	governorFloor         = 0.25 // load_factor never goes below this
	governorDecrease      = 0.85 // multiplicative step when over the high watermark
	governorIncrease      = 0.05 // additive step when under the low watermark
	governorShedHold      = 6    // ticks between two decreases (let the EWMA see the effect)
	governorRecoverHold   = 30   // ticks between two increases (recover slowly: no oscillation)
	governorAIStrideBelow = 0.75 // the AI stride engages below this load_factor (k ≤ 3 at the floor)
	governorInterestBelow = 0.5  // interest_scale falls below this load_factor
	governorInterestFloor = 0.5
)

// governor is the overrun governor's state. It belongs to the tick loop.
type governor struct {
	enabled  bool
	periodMs float64
	ewmaMs   float64
	lf       float64
	hold     int
	minLF    float64 // lowest load_factor since the last reset (run-long)
	engaged  int64   // ticks run with load_factor < 1
	primed   bool
}

func newGovernor(enabled bool, periodMs float64) *governor {
	return &governor{enabled: enabled, periodMs: periodMs, lf: 1, minLF: 1}
}

// setEnabled switches the governor live (admin reload); switching it off
// releases every lever at once.
func (g *governor) setEnabled(on bool) {
	g.enabled = on
	if !on {
		g.lf, g.hold = 1, 0
	}
}

// observe folds one tick's work time into the EWMA and moves load_factor.
func (g *governor) observe(workMs float64) {
	if !g.primed {
		g.ewmaMs, g.primed = workMs, true
	} else {
		g.ewmaMs += governorAlpha * (workMs - g.ewmaMs)
	}
	if g.lf < 1 {
		g.engaged++
	}
	if !g.enabled {
		return
	}
	if g.hold > 0 {
		g.hold--
		return
	}
	switch {
	case g.ewmaMs > governorHighFrac*g.periodMs && g.lf > governorFloor:
		g.lf = math.Max(governorFloor, g.lf*governorDecrease)
		g.hold = governorShedHold
	case g.ewmaMs < governorLowFrac*g.periodMs && g.lf < 1:
		g.lf = math.Min(1, g.lf+governorIncrease)
		g.hold = governorRecoverHold
	}
	g.minLF = math.Min(g.minLF, g.lf)
}

// loadFactor is 1 at full rate, down to governorFloor.
func (g *governor) loadFactor() float64 { return g.lf }

// degraded reports whether any lever is engaged.
func (g *governor) degraded() bool { return g.lf < 1 }

// aiStride is k: each AI controller runs every k-th tick.
func (g *governor) aiStride() int {
	if g.lf >= governorAIStrideBelow {
		return 1
	}
	return int(math.Ceil(governorAIStrideBelow / g.lf))
}

// interestScale is the factor on the interest radius.
func (g *governor) interestScale() float64 {
	if g.lf >= governorInterestBelow {
		return 1
	}
	return math.Max(governorInterestFloor, g.lf/governorInterestBelow)
}

// snapshotHz is the effective snapshot rate per peer.
func (g *governor) snapshotHz(tickHz float64) float64 { return tickHz * g.lf }

// snapshotDue reports whether a peer whose stagger phase is phase ∈ [0,1)
// gets a snapshot on tick: on a load_factor share of the ticks, spread so
// that peers of different phases fall on different ticks.
func (g *governor) snapshotDue(tick uint32, phase float64) bool {
	if g.lf >= 1 {
		return true
	}
	t := float64(tick)
	return math.Floor(t*g.lf+phase) != math.Floor((t-1)*g.lf+phase)
}
