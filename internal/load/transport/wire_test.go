package transport

import (
	"math"
	"testing"
	"time"
)

func TestWireSamplerWrap(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const max32 = math.MaxUint32
	type reading struct {
		after time.Duration // since the previous reading
		c     WireCounters
		want  WireRates // Interval is filled in from after
	}
	tests := []struct {
		name  string
		first WireCounters
		steps []reading
	}{
		{
			name:  "no wrap",
			first: WireCounters{100, 200, 10, 20},
			steps: []reading{{time.Second, WireCounters{1100, 2200, 20, 40},
				WireRates{BytesOutPerSec: 1000, BytesInPerSec: 2000, DatagramsOutPerSec: 10, DatagramsInPerSec: 20}}},
		},
		{
			name:  "every counter wraps",
			first: WireCounters{max32 - 99, max32 - 199, max32, max32 - 4},
			steps: []reading{{500 * time.Millisecond, WireCounters{900, 800, 9, 5},
				WireRates{BytesOutPerSec: 2000, BytesInPerSec: 2000, DatagramsOutPerSec: 20, DatagramsInPerSec: 20}}},
		},
		{
			name:  "lands exactly on zero",
			first: WireCounters{max32, max32, max32, max32},
			steps: []reading{{time.Second, WireCounters{}, WireRates{BytesOutPerSec: 1, BytesInPerSec: 1, DatagramsOutPerSec: 1, DatagramsInPerSec: 1}}},
		},
		{
			name:  "one counter wraps, others do not",
			first: WireCounters{max32 - 9, 5, 5, 5},
			steps: []reading{{2 * time.Second, WireCounters{10, 5, 7, 5}, WireRates{BytesOutPerSec: 10, DatagramsOutPerSec: 1}}},
		},
		{
			name:  "rates before, across and after a wrap",
			first: WireCounters{BytesOut: max32 - 2999},
			steps: []reading{
				{time.Second, WireCounters{BytesOut: max32 - 999}, WireRates{BytesOutPerSec: 2000}},
				{time.Second, WireCounters{BytesOut: 1000}, WireRates{BytesOutPerSec: 2000}},
				{time.Second, WireCounters{BytesOut: 3000}, WireRates{BytesOutPerSec: 2000}},
			},
		},
		{
			name:  "largest delta below 2^32",
			first: WireCounters{BytesOut: 7},
			steps: []reading{{time.Second, WireCounters{BytesOut: 6}, WireRates{BytesOutPerSec: max32}}},
		},
		{
			name:  "zero interval gives zero rates, not Inf",
			first: WireCounters{BytesOut: 1},
			steps: []reading{{0, WireCounters{BytesOut: 100}, WireRates{}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := t0
			s := NewWireSampler(now, tc.first)
			for i, st := range tc.steps {
				now = now.Add(st.after)
				got := s.Sample(now, st.c)
				want := st.want
				want.Interval = st.after
				if got != want {
					t.Errorf("step %d: Sample = %+v, want %+v", i, got, want)
				}
			}
		})
	}
}

func TestWireSamplerZeroPrimes(t *testing.T) {
	var s WireSampler
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := s.Sample(t0, WireCounters{BytesOut: math.MaxUint32 - 9}); got != (WireRates{}) {
		t.Fatalf("first Sample on a zero sampler = %+v, want zero rates", got)
	}
	got := s.Sample(t0.Add(time.Second), WireCounters{BytesOut: 10})
	if got.BytesOutPerSec != 20 || got.Interval != time.Second {
		t.Fatalf("after priming near the wrap: %+v, want 20 B/s over 1s", got)
	}
}
