package snapshot

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// encodeBoth encodes the same states, against the same acknowledged view,
// with the fast writer and the reference one, and fails unless the flags,
// bodies and what each did are equal. ring and refRing hold the same views
// before the call and after it.
func encodeBoth(t *testing.T, fast, ref *Encoder, ring, refRing *Ring, states []State, tick, ack uint32, hasAck bool) []byte {
	t.Helper()
	fast.Reset()
	ref.Reset()
	for i := range states {
		fast.AppendState(&states[i])
		ref.AppendState(&states[i])
	}
	f1, b1, d1 := fast.FinishDelta(tick, ring, ack, hasAck, nil, false, false)
	f2, b2, d2 := ref.FinishDelta(tick, refRing, ack, hasAck, nil, false, false)
	if f1 != f2 || d1 != d2 || !bytes.Equal(b1, b2) {
		t.Fatalf("tick %d against %d: fast writer flags %d %+v body %x; reference flags %d %+v body %x", tick, ack, f1, d1, b1, f2, d2, b2)
	}
	return bytes.Clone(b1)
}

func newEncoders(t testing.TB) (fast, ref *Encoder) {
	var err error
	if fast, err = NewEncoder(); err != nil {
		t.Fatal(err)
	}
	if ref, err = NewEncoder(); err != nil {
		t.Fatal(err)
	}
	ref.refWrite = true
	return fast, ref
}

// TestFastEncodeMatchesReference: a flight of 60 entities over 200 ticks,
// acknowledged two ticks late, every third skipped on odd ticks; full
// bodies, deltas, entities coming back after a skip.
func TestFastEncodeMatchesReference(t *testing.T) {
	fast, ref := newEncoders(t)
	var ring, refRing Ring
	f := newFlight(60, 3)
	deltas := 0
	for tick := uint32(1); tick <= 200; tick++ {
		f.step()
		var states []State
		for i := range f.recs {
			if tick%2 == 1 && i%3 == 0 {
				continue
			}
			states = append(states, Quantize(&f.recs[i]))
		}
		if body := encodeBoth(t, fast, ref, &ring, &refRing, states, tick, tick-2, tick > 2); body[0] == VersionDelta && binary.LittleEndian.Uint16(body[1:]) > 0 {
			deltas++
		}
	}
	if deltas < 190 {
		t.Fatalf("%d of 200 bodies were deltas: the delta writer was not exercised", deltas)
	}
}

// fuzzStates reads states from b, 26 bytes each: any codes, so residuals
// of every size (the writers' long codes included) and every field
// changing or not. Ids are made unique and ascending.
func fuzzStates(b []byte) []State {
	var out []State
	id := uint32(0)
	for len(b) >= 26 {
		id += 1 + uint32(b[0]%4)
		s := State{ID: id, Type: b[1], Flags: b[2] & FlagsKnown, Age: b[3],
			Quat: binary.LittleEndian.Uint32(b[4:])}
		for k := range s.Pos {
			s.Pos[k] = binary.LittleEndian.Uint32(b[8+4*k:]) >> 8
		}
		for k := range s.Vel {
			s.Vel[k] = binary.LittleEndian.Uint16(b[20+2*k:]) >> 2
		}
		out = append(out, s)
		b = b[26:]
	}
	return out
}

// FuzzFastEncodeMatchesReference: whatever the states of the base and of
// the next snapshot, both writers produce the same bytes, full and delta.
func FuzzFastEncodeMatchesReference(f *testing.F) {
	seed := make([]byte, 26*6)
	for i := range seed {
		seed[i] = byte(i * 37)
	}
	f.Add(seed, seed)
	f.Add(seed[:26*3], bytes.Repeat([]byte{0xff}, 26*4))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		fast, ref := newEncoders(t)
		var ring, refRing Ring
		encodeBoth(t, fast, ref, &ring, &refRing, fuzzStates(first), 10, 0, false)
		encodeBoth(t, fast, ref, &ring, &refRing, fuzzStates(second), 12, 10, true)
	})
}
