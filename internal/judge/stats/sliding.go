package stats

import "time"

// SlidingCount counts events over the most recent Window exactly: it keeps
// the time of each of the newest Limit events, so "Limit events within any
// Window" holds across every boundary, where a counter reset every Window
// lets up to 2·Limit−2 events through when they straddle a reset. An event
// at t is inside the window at now while now−t < Window.
//
// Memory is at most Limit timestamps, allocated as events arrive. The zero
// value is unusable; make one with NewSlidingCount. It is not safe for
// concurrent use.
type SlidingCount struct {
	window time.Duration
	limit  int
	at     []time.Time // ring of the newest events, oldest at head
	head   int
	n      int
}

// NewSlidingCount returns a counter of events within window that saturates
// at limit (≥ 1): a caller only ever needs to know whether limit was
// reached.
func NewSlidingCount(limit int, window time.Duration) *SlidingCount {
	return &SlidingCount{window: window, limit: max(limit, 1)}
}

// Add records n events at now (n ≤ 0 records none) and returns the events
// within the window ending at now, at most the limit. Times must not go
// backwards; an earlier now is treated as the newest time seen.
func (c *SlidingCount) Add(now time.Time, n int) int {
	c.expire(now)
	// More than limit events at one instant keep only limit timestamps.
	for n = min(n, c.limit); n > 0; n-- {
		c.push(now)
	}
	return c.n
}

// Count returns the events within the window ending at now, at most the
// limit, and forgets the older ones.
func (c *SlidingCount) Count(now time.Time) int {
	c.expire(now)
	return c.n
}

// expire drops events that left the window.
func (c *SlidingCount) expire(now time.Time) {
	for c.n > 0 && now.Sub(c.at[c.head]) >= c.window {
		c.head = (c.head + 1) % len(c.at)
		c.n--
	}
}

// push appends one event, overwriting the oldest when limit are kept: the
// oldest is then irrelevant, since limit newer ones are in the window.
func (c *SlidingCount) push(t time.Time) {
	if c.n == len(c.at) && len(c.at) < c.limit {
		c.grow()
	}
	if c.n == len(c.at) {
		c.at[c.head] = t
		c.head = (c.head + 1) % len(c.at)
		return
	}
	c.at[(c.head+c.n)%len(c.at)] = t
	c.n++
}

// grow doubles the ring (up to limit), unrolling it so head is 0.
func (c *SlidingCount) grow() {
	size := min(max(2*len(c.at), 4), c.limit)
	at := make([]time.Time, size)
	for i := 0; i < c.n; i++ {
		at[i] = c.at[(c.head+i)%len(c.at)]
	}
	c.at, c.head = at, 0
}
