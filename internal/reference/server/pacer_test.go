package server

import (
	"context"
	"testing"
	"time"
)

func TestPacerDropAccounting(t *testing.T) {
	period := time.Second / TickHz
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name        string
		late        time.Duration // how late the loop looks at the clock
		wantDropped int64
		wantRun     int // ticks run back to back before the pacer asks to wait
	}{
		{"on time", 0, 0, 1},
		{"half a tick late", period / 2, 0, 1},
		{"exactly the cap", MaxCatchUp * period, 0, MaxCatchUp + 1},
		{"one beyond the cap", (MaxCatchUp + 1) * period, 1, MaxCatchUp + 1},
		{"a 1 s stall", time.Second, TickHz - MaxCatchUp, MaxCatchUp + 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := NewPacer(t0, period)
			now := t0.Add(c.late)
			ran := 0
			for p.Next(now) == 0 {
				p.Ran()
				ran++
				if ran > 1000 {
					t.Fatal("pacer never asks to wait")
				}
			}
			if p.Dropped() != c.wantDropped || ran != c.wantRun {
				t.Fatalf("dropped %d ran %d, want dropped %d ran %d", p.Dropped(), ran, c.wantDropped, c.wantRun)
			}
			// Every tick that fell due is either run or dropped.
			due := int64(c.late/period) + 1
			if int64(ran)+p.Dropped() != due {
				t.Fatalf("ran %d + dropped %d != %d ticks due", ran, p.Dropped(), due)
			}
		})
	}
}

func TestPacerWaitsForNextTick(t *testing.T) {
	period := time.Second / TickHz
	t0 := time.Unix(1000, 0)
	p := NewPacer(t0, period)
	if w := p.Next(t0.Add(-time.Millisecond)); w != time.Millisecond {
		t.Fatalf("early: wait %v", w)
	}
	if p.Next(t0) != 0 {
		t.Fatal("due tick not granted")
	}
	p.Ran()
	if w := p.Next(t0.Add(time.Millisecond)); w != period-time.Millisecond {
		t.Fatalf("wait %v, want %v", w, period-time.Millisecond)
	}
}

// A steadily overrunning loop (every tick takes 3 periods) drops the ticks
// it cannot run, and the count matches the time that passed.
func TestPacerSustainedOverrun(t *testing.T) {
	period := time.Second / TickHz
	now := time.Unix(1000, 0)
	p := NewPacer(now, period)
	ran := 0
	for i := 0; i < 600; i++ {
		if w := p.Next(now); w > 0 {
			now = now.Add(w)
			continue
		}
		p.Ran()
		ran++
		now = now.Add(3 * period)
	}
	due := int64(now.Sub(time.Unix(1000, 0))/period) + 1
	// Ticks not yet run or dropped: at most the cap's worth plus the three
	// periods the last tick took.
	if slack := due - int64(ran) - p.Dropped(); slack < 0 || slack > MaxCatchUp+3 {
		t.Fatalf("ran %d dropped %d of %d due (slack %d)", ran, p.Dropped(), due, slack)
	}
	if p.Dropped() == 0 {
		t.Fatal("a 3× overrun dropped nothing")
	}
}

// The real loop, overrun by the extra_tick_ms fault (≈ 4.2 periods of
// work per tick), drops ticks and accounts for every period that passed:
// ticks run + ticks dropped = elapsed periods, within the catch-up cap.
func TestRunCountsDroppedTicks(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Faults.ExtraTickMs = 70 })
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	if err := ts.Run(ctx); err != nil {
		t.Fatal(err)
	}
	periods := int64(time.Since(start) / (time.Second / TickHz))
	ran, dropped := ts.met.ticksTotal, ts.pacer.Dropped()
	if dropped == 0 {
		t.Fatalf("%d ticks of ≥70 ms dropped nothing", ran)
	}
	// Not yet run or dropped when Run returned: at most the cap, plus the
	// periods the longest tick took (a loaded machine stretches it), plus
	// shutdown.
	longest := int64(ts.met.tick.Summary().Max / (1000.0 / TickHz))
	if gap := periods - ran - dropped; gap < -1 || gap > MaxCatchUp+longest+3 {
		t.Fatalf("ran %d + dropped %d vs %d periods elapsed (gap %d, longest tick %d periods)", ran, dropped, periods, gap, longest)
	}
	if ts.met.slowTicks != ran {
		t.Fatalf("slow ticks %d of %d ticks with 70 ms of work each", ts.met.slowTicks, ran)
	}
}
