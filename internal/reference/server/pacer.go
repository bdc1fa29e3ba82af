package server

import "time"

// MaxCatchUp is how many ticks late the loop may run before it gives up on
// the missed ticks: beyond it, the oldest are dropped (counted in
// dropped_ticks) rather than run back to back, so an overrun degrades into
// a slower world instead of a spiral of ever-later catch-up ticks.
const MaxCatchUp = 4

// Pacer schedules a fixed-rate loop. It is a pure function of the times it
// is given, so its accounting is tested with a fake clock.
type Pacer struct {
	period  time.Duration
	next    time.Time
	dropped int64
}

// NewPacer returns a pacer whose first tick is due at start.
func NewPacer(start time.Time, period time.Duration) *Pacer {
	return &Pacer{period: period, next: start}
}

// Next says, at now, whether a tick is due (wait 0) or how long to wait.
// When the loop has fallen more than MaxCatchUp ticks behind, the ticks
// beyond the cap are dropped and counted before a tick is granted.
func (p *Pacer) Next(now time.Time) (wait time.Duration) {
	if now.Before(p.next) {
		return p.next.Sub(now)
	}
	behind := int64(now.Sub(p.next) / p.period) // ticks due besides this one
	if behind > MaxCatchUp {
		skip := behind - MaxCatchUp
		p.dropped += skip
		p.next = p.next.Add(time.Duration(skip) * p.period)
	}
	return 0
}

// Due is when the next tick is (or was) due.
func (p *Pacer) Due() time.Time { return p.next }

// Following is when the tick after the one due is due.
func (p *Pacer) Following() time.Time { return p.next.Add(p.period) }

// Ran records that the due tick ran.
func (p *Pacer) Ran() { p.next = p.next.Add(p.period) }

// Dropped is the all-time count of dropped ticks.
func (p *Pacer) Dropped() int64 { return p.dropped }
