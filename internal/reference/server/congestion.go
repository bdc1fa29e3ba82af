package server

import (
	"math"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// The per-peer congestion controller: AIMD on each peer's snapshot send
// rate, between the tick rate and a floor. A peer whose link is congested
// (its RTT above its own baseline by a margin, or the transport's loss
// estimate above a limit, for two evaluations in a row) has its rate
// halved; a clean evaluation adds a fixed step back. Loopback never
// congests, so on a clean link every peer stays at the tick rate.
const (
	// CongestionFloorHz is the lowest send rate the controller goes to.
	CongestionFloorHz = 10
	// CongestionRTTMargin is how far over its baseline (the lowest RTT the
	// peer has shown) a peer's RTT must be to count as congested.
	CongestionRTTMargin = 40 * time.Millisecond
	// CongestionLossLimit is the transport loss estimate that counts as
	// congested, where the transport reports one.
	CongestionLossLimit = 0.05
	// congestionEvalTicks: the controller looks at each link every 250 ms.
	congestionEvalTicks = TickHz / 4
	// congestionConfirm evaluations in a row must be congested before the
	// rate is cut, so one RTT spike on a busy box does not back off.
	congestionConfirm  = 2
	congestionDecrease = 0.5
	// congestionIncreaseHz is the additive step per clean evaluation:
	// floor to tick rate in 2.5 s.
	congestionIncreaseHz = 5
)

// peerCongestion is one peer's controller state.
type peerCongestion struct {
	rate      float64 // current send rate, Hz
	credit    float64 // snapshots owed: +rate/TickHz per tick, −1 per send
	baseRTT   time.Duration
	congested int // evaluations in a row that were congested
	loss      float64
	lossKnown bool
}

// congestion is every joined peer's controller plus the run-long
// watermarks the metrics file reports. It is owned by the loop goroutine.
type congestion struct {
	on bool
	// stuck is the congestion_stuck_at_floor fault: no additive increase.
	stuck bool
	peers map[*peer]*peerCongestion
	// Watermarks: minHz is the lowest rate any peer was at; recoveredHz
	// the highest "lowest rate across peers" since the last evaluation
	// that touched minHz (the climb back after the deepest back-off);
	// maxLoss the highest loss seen. They stop moving once the peer count
	// falls below its peak (the load clients are leaving), so the
	// end-of-run metrics still describe the run.
	minHz, recoveredHz, maxLoss float64
	peak                        int
	frozen                      bool
	owed                        []bool // per joined peer: a snapshot is owed this tick
}

func newCongestion(on bool) *congestion {
	return &congestion{on: on, peers: map[*peer]*peerCongestion{}, minHz: TickHz, recoveredHz: TickHz}
}

// schedule decides which joined peers are owed a snapshot this tick and,
// every evaluation period, re-evaluates each link. owed[i] is vpeers[i]'s.
func (c *congestion) schedule(h transport.Host, vpeers []*peer, tick uint32) (owed []bool) {
	c.owed = c.owed[:0]
	eval := tick%congestionEvalTicks == 0
	ls, _ := h.(transport.LinkStater)
	for _, p := range vpeers {
		st := c.peers[p]
		if st == nil {
			st = &peerCongestion{rate: TickHz}
			c.peers[p] = st
		}
		if eval && c.on && ls != nil {
			st.evaluate(ls.LinkStats(p.id), c.stuck)
		}
		st.credit += st.rate / TickHz
		due := st.credit >= 1-1e-9
		if due {
			st.credit--
		}
		c.owed = append(c.owed, due)
	}
	if eval {
		c.prune(vpeers)
		c.watermark(len(vpeers))
	}
	return c.owed
}

// evaluate is one AIMD step from the link's current figures.
func (st *peerCongestion) evaluate(l transport.LinkStats, stuck bool) {
	if l.RTT > 0 && (st.baseRTT == 0 || l.RTT < st.baseRTT) {
		st.baseRTT = l.RTT
	}
	st.loss, st.lossKnown = l.Loss, l.LossKnown
	congested := (l.RTT > 0 && l.RTT > st.baseRTT+CongestionRTTMargin) ||
		(l.LossKnown && l.Loss > CongestionLossLimit)
	if !congested {
		st.congested = 0
		if !stuck {
			st.rate = math.Min(TickHz, st.rate+congestionIncreaseHz)
		}
		return
	}
	st.congested++
	if st.congested >= congestionConfirm {
		st.rate = math.Max(CongestionFloorHz, st.rate*congestionDecrease)
	}
}

// prune forgets peers that left.
func (c *congestion) prune(vpeers []*peer) {
	if len(c.peers) == len(vpeers) {
		return
	}
	live := make(map[*peer]bool, len(vpeers))
	for _, p := range vpeers {
		live[p] = true
	}
	for p := range c.peers {
		if !live[p] {
			delete(c.peers, p)
		}
	}
}

// watermark updates the run-long figures until the load starts leaving.
func (c *congestion) watermark(n int) {
	if c.frozen || n == 0 {
		return
	}
	if n < c.peak {
		c.frozen = true
		return
	}
	c.peak = n
	cur := math.Inf(1)
	for _, st := range c.peers {
		cur = math.Min(cur, st.rate)
		if st.lossKnown {
			c.maxLoss = math.Max(c.maxLoss, st.loss)
		}
	}
	if cur <= c.minHz {
		c.minHz, c.recoveredHz = cur, cur
		return
	}
	c.recoveredHz = math.Max(c.recoveredHz, cur)
}
