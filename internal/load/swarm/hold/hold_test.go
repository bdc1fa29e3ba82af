package hold

import (
	"testing"
	"time"
)

func TestRampFits(t *testing.T) {
	for _, tc := range []struct {
		clients  int
		ramp     time.Duration
		duration time.Duration
		want     bool
	}{
		{0, time.Second, time.Second, true},
		{1, time.Hour, time.Second, true},
		{11, 100 * time.Millisecond, time.Second, false},
		{10, 100 * time.Millisecond, time.Second, true},
	} {
		if got := RampFits(tc.clients, tc.ramp, tc.duration); got != tc.want {
			t.Errorf("RampFits(%d, %s, %s) = %v, want %v", tc.clients, tc.ramp, tc.duration, got, tc.want)
		}
	}
}

func TestWarmupFits(t *testing.T) {
	for _, tc := range []struct {
		clients                int
		ramp, warmup, duration time.Duration
		want                   bool
	}{
		{10, 0, 0, time.Second, true},                                     // no warm-up
		{1, 0, 9 * time.Second, 10 * time.Second, true},                   // 1 s left: the minimum
		{1, 0, 9*time.Second + time.Millisecond, 10 * time.Second, false}, // under 1 s left
		{11, time.Second, 4 * time.Second, 15 * time.Second, true},        // hold 5 s, 1 s left
		{11, time.Second, 4*time.Second + 1, 15 * time.Second, false},     // the ramp eats the hold
		{0, time.Hour, time.Second, 10 * time.Second, true},               // no clients: no ramp
	} {
		if got := WarmupFits(tc.clients, tc.ramp, tc.warmup, tc.duration); got != tc.want {
			t.Errorf("WarmupFits(%d, %s, %s, %s) = %v, want %v", tc.clients, tc.ramp, tc.warmup, tc.duration, got, tc.want)
		}
	}
}
