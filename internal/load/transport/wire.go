package transport

import "time"

// WireCounters are a backend's cumulative socket counters as it exposes
// them. They are 32-bit because ENet's are; a backend with wider counters
// truncates, which the sampler's modular deltas handle identically.
type WireCounters struct {
	BytesOut, BytesIn         uint32
	DatagramsOut, DatagramsIn uint32
}

// WireSampler turns cumulative counters into rates. It is wrap-safe: the
// delta of two uint32 readings is taken modulo 2^32, which is exact as long
// as fewer than 2^32 units pass between samples (at 150 KB/s × 1024 peers
// that is about 28 s; servers sample every half second).
type WireSampler struct {
	last   WireCounters
	lastAt time.Time
	primed bool
}

// NewWireSampler starts a sampler from an initial reading.
func NewWireSampler(now time.Time, c WireCounters) *WireSampler {
	return &WireSampler{last: c, lastAt: now, primed: true}
}

// Sample returns the rates since the previous reading and remembers c.
// The first call on a zero sampler only primes it and returns zero rates.
func (s *WireSampler) Sample(now time.Time, c WireCounters) WireRates {
	if !s.primed {
		s.last, s.lastAt, s.primed = c, now, true
		return WireRates{}
	}
	dt := now.Sub(s.lastAt)
	r := WireRates{Interval: dt}
	if dt > 0 {
		sec := dt.Seconds()
		r.BytesOutPerSec = float64(c.BytesOut-s.last.BytesOut) / sec
		r.BytesInPerSec = float64(c.BytesIn-s.last.BytesIn) / sec
		r.DatagramsOutPerSec = float64(c.DatagramsOut-s.last.DatagramsOut) / sec
		r.DatagramsInPerSec = float64(c.DatagramsIn-s.last.DatagramsIn) / sec
	}
	s.last, s.lastAt = c, now
	return r
}
