package stats

import (
	"testing"
	"time"
)

// TestSlidingCountAcrossEdges: the count is over the last window ending at
// each event, wherever the events fall relative to any fixed boundary.
func TestSlidingCountAcrossEdges(t *testing.T) {
	const w = 10 * time.Second
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	cases := []struct {
		name  string
		limit int
		times []int // ms after t0, ascending; n events each unless counts given
		want  []int // Add's result after each
	}{
		{"one event", 32, []int{0}, []int{1}},
		{"expires at exactly the window", 32, []int{0, 10_000}, []int{1, 1}},
		{"kept just inside the window", 32, []int{0, 9_999}, []int{1, 2}},
		{"saturates at the limit", 3, []int{0, 1, 2, 3, 4}, []int{1, 2, 3, 3, 3}},
		{"oldest leaves while saturated", 3, []int{0, 1, 2, 10_000, 10_001, 10_002}, []int{1, 2, 3, 3, 3, 3}},
		{"all leave", 3, []int{0, 1, 2, 10_003}, []int{1, 2, 3, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewSlidingCount(tc.limit, w)
			for i, ms := range tc.times {
				if got := c.Add(at(ms), 1); got != tc.want[i] {
					t.Fatalf("event %d at %d ms: count %d, want %d", i, ms, got, tc.want[i])
				}
			}
		})
	}
}

// TestSlidingCountBurstAcrossAFixedEdge is the case a counter reset every
// window misses: one event at t0 opens a fixed window, then 30 events just
// before t0+10 s and 30 just after (61 in 1.5 s). The fixed window sees 31,
// resets, then sees 30, and never reaches 32; the sliding count does,
// on the second event after the edge.
func TestSlidingCountBurstAcrossAFixedEdge(t *testing.T) {
	const w, limit = 10 * time.Second, 32
	t0 := time.Unix(1000, 0)
	c := NewSlidingCount(limit, w)
	c.Add(t0, 1)
	var times []time.Duration
	for i := range 30 {
		times = append(times, 8500*time.Millisecond+time.Duration(i)*50*time.Millisecond) // 8.50 .. 9.95 s
	}
	for i := range 30 {
		times = append(times, 10*time.Second+time.Duration(i)*10*time.Millisecond) // 10.00 .. 10.29 s
	}
	reached := -1
	for i, d := range times {
		if c.Add(t0.Add(d), 1) >= limit && reached < 0 {
			reached = i
		}
	}
	if reached != 31 { // the t0 event has left; 30 before the edge + 2 after
		t.Fatalf("limit reached at burst event %d, want 31", reached)
	}
}

// TestSlidingCountBatch: n events at once count n, capped at the limit.
func TestSlidingCountBatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := NewSlidingCount(32, time.Second)
	if got := c.Add(t0, 20); got != 20 {
		t.Fatalf("batch of 20: %d", got)
	}
	if got := c.Add(t0.Add(500*time.Millisecond), 20); got != 32 {
		t.Fatalf("second batch: %d, want the limit 32", got)
	}
	if got := c.Count(t0.Add(1200 * time.Millisecond)); got != 20 {
		t.Fatalf("after the first batch expired: %d, want 20", got)
	}
	if got := c.Add(t0.Add(3*time.Second), 0); got != 0 {
		t.Fatalf("all expired: %d", got)
	}
}

// TestSlidingCountLargeLimitGrowsLazily: a limit of 10^7 allocates only for
// the events seen.
func TestSlidingCountLargeLimitGrowsLazily(t *testing.T) {
	c := NewSlidingCount(10_000_000, time.Second)
	t0 := time.Unix(1000, 0)
	for i := range 100 {
		c.Add(t0.Add(time.Duration(i)*time.Millisecond), 1)
	}
	if len(c.at) > 128 {
		t.Fatalf("ring holds %d slots for 100 events", len(c.at))
	}
	if got := c.Count(t0.Add(99 * time.Millisecond)); got != 100 {
		t.Fatalf("count %d", got)
	}
}

func BenchmarkSlidingCountAdd(b *testing.B) {
	c := NewSlidingCount(32, 10*time.Second)
	t0 := time.Unix(1000, 0)
	for i := 0; b.Loop(); i++ {
		c.Add(t0.Add(time.Duration(i)*time.Millisecond), 1)
	}
}
