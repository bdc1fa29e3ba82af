package snapshot

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
)

// encodeBoth encodes the same states, against the same acknowledged view,
// with the fast writer and the reference one (writeStates, then
// mergeView), and fails unless the flags, bodies and what each did are
// equal, and the views each left in its ring. despawned ids go out as
// despawn events. ring and refRing hold the same views before the call and
// after it.
func encodeBoth(t *testing.T, fast, ref *Encoder, ring, refRing *Ring, states []State, despawned []uint32, tick, ack uint32, hasAck bool) []byte {
	t.Helper()
	fast.Reset()
	ref.Reset()
	for i := range states {
		fast.AppendState(&states[i])
		ref.AppendState(&states[i])
	}
	for _, id := range despawned {
		ev := Event{Kind: EventDespawn, ID: id}
		fast.AppendEvent(&ev)
		ref.AppendEvent(&ev)
	}
	f1, b1, d1 := fast.FinishDelta(tick, ring, ack, hasAck, nil, false, false)
	f2, b2, d2 := ref.FinishDelta(tick, refRing, ack, hasAck, nil, false, false)
	if f1 != f2 || d1 != d2 || !bytes.Equal(b1, b2) {
		t.Fatalf("tick %d against %d: fast writer flags %d %+v body %x; reference flags %d %+v body %x", tick, ack, f1, d1, b1, f2, d2, b2)
	}
	if v1, v2 := ring.find(tick).states, refRing.find(tick).states; !slices.Equal(v1, v2) {
		t.Fatalf("tick %d against %d: the fast writer left a view of %d states, the reference one of %d:\nfast %v\nref  %v", tick, ack, len(v1), len(v2), v1, v2)
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
		if body := encodeBoth(t, fast, ref, &ring, &refRing, states, nil, tick, tick-2, tick > 2); body[0] == VersionDelta && binary.LittleEndian.Uint16(body[1:]) > 0 {
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
		a, b := fuzzStates(first), fuzzStates(second)
		encodeBoth(t, fast, ref, &ring, &refRing, a, nil, 10, 0, false)
		// The second body despawns every third id of the first, carried in
		// it or not, and the third comes after the first's states expired.
		var gone []uint32
		for i := 0; i < len(a); i += 3 {
			gone = append(gone, a[i].ID)
		}
		encodeBoth(t, fast, ref, &ring, &refRing, b, gone, 12, 10, true)
		encodeBoth(t, fast, ref, &ring, &refRing, a[len(a)/2:], nil, 10+ViewKeepTicks, 12, true)
	})
}

// TestFastEncodeViewMatchesMerge: the view the fast writer builds in its
// pass is mergeView's where the merge does more than copy: a despawn of a
// state carried in the body and of one only in the base, a base state
// expiring, and a merge beyond MaxViewStates, which keeps the body's
// states alone.
func TestFastEncodeViewMatchesMerge(t *testing.T) {
	span := func(from, n, step uint32) []State {
		var out []State
		for i := uint32(0); i < n; i++ {
			out = append(out, State{ID: from + i*step, Type: 1, Pos: [3]uint32{i, 2 * i, 3 * i}})
		}
		return out
	}
	cases := []struct {
		name       string
		base, next []State
		despawned  []uint32
		gap        uint32 // ticks from the base to the next body
		wantView   int
	}{
		{"interleaved", span(1, 100, 2), span(2, 50, 2), nil, 1, 150},
		{"despawn carried and base-only", span(1, 100, 2), span(2, 50, 2), []uint32{1, 2, 199, 99}, 1, 146},
		{"base expired", span(1, 100, 2), span(2, 50, 2), nil, ViewKeepTicks, 50},
		{"beyond MaxViewStates", span(1, MaxViewStates-10, 2), span(2, 20, 2), []uint32{4}, 1, 19},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fast, ref := newEncoders(t)
			var ring, refRing Ring
			encodeBoth(t, fast, ref, &ring, &refRing, c.base, nil, 100, 0, false)
			encodeBoth(t, fast, ref, &ring, &refRing, c.next, c.despawned, 100+c.gap, 100, true)
			if n := len(ring.find(100 + c.gap).states); n != c.wantView {
				t.Fatalf("the view holds %d states, want %d", n, c.wantView)
			}
		})
	}
}
