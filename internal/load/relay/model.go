package relay

import (
	"math/rand/v2"
	"time"

	"github.com/scalegate/scalegate/internal/load/relay/impairment"
)

// outcome is what happens to one datagram.
type outcome uint8

const (
	deliver   outcome = iota
	dropLoss          // the configured loss (independent or bursty)
	dropQueue         // tail-dropped by the rate limiter's bounded queue
)

// verdict is one datagram's fate: dropped, or delivered at due (and a
// second copy at dupDue when duplicated).
type verdict struct {
	out    outcome
	due    time.Time
	dup    bool
	dupDue time.Time
}

// model is one direction of one link. It is owned by the link's reader
// goroutine and takes the time as an argument, so tests drive it with a
// synthetic clock and get the same answers every run.
type model struct {
	rng *rand.Rand
	// bad is the Gilbert-Elliott state: in the bad state every datagram is
	// lost, in the good state none is.
	bad bool
	// busyUntil is when the rate limiter finishes sending what it holds.
	busyUntil time.Time
	// lastDue is the latest delivery time handed out, so a link that must
	// not reorder never delivers a datagram before an earlier one.
	lastDue time.Time
}

func newModel(seed uint64, link int, dir uint64) *model {
	return &model{rng: rand.New(rand.NewPCG(seed, uint64(link)<<1|dir))}
}

// decide is the fate of a datagram of size bytes arriving at now under s
// (nil: the link is clean). Clean datagrams keep their order behind any
// still held by the phase that just ended.
func (m *model) decide(s *impairment.Settings, now time.Time, size int) verdict {
	if s == nil {
		m.bad = false
		return verdict{due: m.ordered(now, now, false)}
	}
	if m.lost(s) {
		return verdict{out: dropLoss}
	}
	due, ok := m.limit(s, now, size)
	if !ok {
		return verdict{out: dropQueue}
	}
	v := verdict{due: m.ordered(now, m.delayed(s, due), s.Reorder)}
	if s.Duplicate > 0 && m.rng.Float64() < s.Duplicate {
		v.dup = true
		v.dupDue = m.ordered(now, m.delayed(s, due), s.Reorder)
	}
	return v
}

// lost draws the loss decision. With a mean burst length L > 1 it is a
// two-state Gilbert-Elliott chain: bad → good with r = 1/L (so bad runs
// last L datagrams on average) and good → bad with q = loss·r/(1−loss),
// whose stationary bad fraction is the loss rate.
func (m *model) lost(s *impairment.Settings) bool {
	if s.Loss <= 0 {
		m.bad = false
		return false
	}
	if s.BurstLen <= 1 || s.Loss >= 1 {
		return m.rng.Float64() < s.Loss
	}
	r := 1 / s.BurstLen
	if m.bad {
		if m.rng.Float64() < r {
			m.bad = false
		}
	} else if m.rng.Float64() < s.Loss*r/(1-s.Loss) {
		m.bad = true
	}
	return m.bad
}

// limit passes the datagram through the rate limiter: it leaves when the
// limiter has sent everything before it plus its own serialisation time.
// A datagram that would wait longer than the queue bound is tail-dropped.
func (m *model) limit(s *impairment.Settings, now time.Time, size int) (time.Time, bool) {
	if s.RateKbps <= 0 {
		return now, true
	}
	start := now
	if m.busyUntil.After(now) {
		start = m.busyUntil
	}
	q := s.QueueMs
	if q <= 0 {
		q = impairment.DefaultQueueMs
	}
	if start.Sub(now) > time.Duration(q*float64(time.Millisecond)) {
		return time.Time{}, false
	}
	tx := time.Duration(float64(size*8) / (s.RateKbps * 1000) * float64(time.Second))
	m.busyUntil = start.Add(tx)
	return m.busyUntil, true
}

// delayed adds the one-way delay and a uniform jitter of ±JitterMs, never
// delivering before t.
func (m *model) delayed(s *impairment.Settings, t time.Time) time.Time {
	d := s.DelayMs
	if s.JitterMs > 0 {
		d += (m.rng.Float64()*2 - 1) * s.JitterMs
	}
	if d <= 0 {
		return t
	}
	return t.Add(time.Duration(d * float64(time.Millisecond)))
}

// ordered keeps delivery in arrival order unless reordering is allowed.
func (m *model) ordered(now, due time.Time, reorder bool) time.Time {
	if !reorder && due.Before(m.lastDue) {
		due = m.lastDue
	}
	if due.After(m.lastDue) {
		m.lastDue = due
	}
	if due.Before(now) {
		return now
	}
	return due
}
