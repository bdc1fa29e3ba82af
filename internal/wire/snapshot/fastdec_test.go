package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// decodeBoth decodes body with the fast path (d) and the reference path
// (ref) against copies of ring, and fails t when they differ in anything a
// caller sees: count, delta, error, the ring left behind, the states,
// records and events. It returns the fast path's ring and error.
func decodeBoth(t *testing.T, d, ref *Decoder, flags uint8, body []byte, tick uint32, ring *Ring) (*Ring, error) {
	t.Helper()
	fr, rr := cloneRing(ring), cloneRing(ring)
	n, delta, err := d.DecodeRing(flags, body, tick, fr)
	rn, rdelta, rerr := ref.DecodeRing(flags, body, tick, rr)
	if fmt.Sprint(err) != fmt.Sprint(rerr) || n != rn || delta != rdelta {
		t.Fatalf("tick %d: fast path %d, %v, %v; reference %d, %v, %v", tick, n, delta, err, rn, rdelta, rerr)
	}
	if !ringsEqual(fr, rr) {
		t.Fatalf("tick %d: the fast path left another ring than the reference", tick)
	}
	if err == nil && (!equalStates(d.states, ref.states) || !slices.Equal(d.Records(), ref.Records()) || !slices.Equal(d.Events(), ref.Events())) {
		t.Fatalf("tick %d: the fast path decoded other states, records or events than the reference", tick)
	}
	return fr, err
}

func newDecoders(t testing.TB) (fast, ref *Decoder) {
	fast, ref = newLink(t).dec, newLink(t).dec
	ref.refOnly = true
	return fast, ref
}

// TestFastPathDecodesEveryValidBody: in a stream of full bodies, deltas
// (two ticks late, with despawns, new entities, a type change and
// orientations sent whole) and corrupted deltas, the fast path decodes
// every valid body itself — none is left to the reference path — to what
// the reference decodes, and a corrupted one gets the reference's error.
func TestFastPathDecodesEveryValidBody(t *testing.T) {
	l := newLink(t)
	d, ref := newDecoders(t)
	f := newFlight(60, 31)
	var ring Ring
	good, bad := 0, 0
	var decoded []uint32
	for tick := uint32(1); tick < 4*RingSize; tick++ {
		f.step()
		l.enc.Reset()
		for i := range f.recs {
			if (int(tick)+i)%5 == 0 || i > 50 && tick%9 < 3 { // out of this snapshot; ids over 50 come and go
				continue
			}
			s := Quantize(&f.recs[i])
			if tick%13 == 0 && i%4 == 0 {
				s.Type++ // the metadata field
			}
			if tick%11 == 0 && i%3 == 0 {
				s.Quat ^= 1 << 30 // another q_index: sent whole
			}
			s.Age = uint8(i % 3)
			l.enc.AppendState(&s)
		}
		if tick%7 == 0 {
			l.enc.AppendEvent(&Event{Kind: EventDespawn, ID: f.recs[tick%40].ID})
		}
		corrupt := tick%10 == 0
		// The acknowledgement two ticks old: the newest decoded by then.
		ack, has := uint32(0), false
		for _, g := range decoded {
			if tick-g >= 2 {
				ack, has = g, true
			}
		}
		flags, body, dl := l.enc.FinishDelta(tick, &l.sent, ack, has, nil, true, corrupt)
		slow := d.slow
		r, err := decodeBoth(t, d, ref, flags, body, tick, &ring)
		switch {
		case dl.Corrupted:
			bad++
			if err == nil {
				t.Fatalf("tick %d: a corrupted delta decoded", tick)
			}
			continue
		case err != nil:
			t.Fatalf("tick %d: %v", tick, err)
		case d.slow != slow:
			t.Fatalf("tick %d: a valid body (delta %v) was left to the reference path", tick, dl.IsDelta)
		}
		good++
		ring = *r
		decoded = append(decoded, tick)
	}
	if good < 3*RingSize || bad < 5 {
		t.Errorf("%d bodies decoded, %d corrupted", good, bad)
	}
}

// TestFastPathTakesTheNamedBase: a delta is decoded against the view its
// base_back names, not the newest: with views 1..10 held, deltas against
// 10 and against 5 (an older acknowledged view, newer ones held) both
// decode on the fast path to the server's states; once the view of 1 has
// left the client's ring (RingSize snapshots later), a delta against it is
// ErrBaseline — the swarm counts a decode failure — and the ring is left
// as it was.
func TestFastPathTakesTheNamedBase(t *testing.T) {
	cases := []struct {
		name    string
		ack     uint32
		evicted bool
	}{
		{"newest view", 10, false},
		{"older acknowledged view, newer ones held", 5, false},
		{"view gone from the ring", 1, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newLink(t)
			d, ref := newDecoders(t)
			f := newFlight(40, 32)
			var client Ring
			tick := uint32(1)
			for ; tick <= 10; tick++ {
				f.step()
				flags, body, _ := l.send(f.recs, tick, 0, false, false)
				if _, _, err := d.CheckRing(flags, body, tick, &client); err != nil {
					t.Fatal(err)
				}
			}
			f.step()
			flags, body, dl := l.send(f.recs, tick, c.ack, true, false)
			if !dl.IsDelta || dl.Base != c.ack {
				t.Fatalf("the server encoded %+v, want a delta against %d", dl, c.ack)
			}
			body, want := bytes.Clone(body), slices.Clone(l.enc.states)
			if c.evicted {
				for later := tick + 1; later <= tick+RingSize; later++ {
					fl, b, _ := l.send(f.recs, later, 0, false, false)
					if _, _, err := d.CheckRing(fl, b, later, &client); err != nil {
						t.Fatal(err)
					}
				}
			}
			slow := d.slow
			got, err := decodeBoth(t, d, ref, flags, body, tick, &client)
			if c.evicted {
				if !errors.Is(err, ErrBaseline) || !ringsEqual(got, &client) {
					t.Fatalf("err %v (want ErrBaseline), ring unchanged %v", err, ringsEqual(got, &client))
				}
				return
			}
			if err != nil || d.slow != slow {
				t.Fatalf("err %v, left to the reference path %v", err, d.slow != slow)
			}
			if !equalStates(d.states, want) {
				t.Error("decoded states differ from the server's")
			}
		})
	}
}

// FuzzFastDecodeMatchesReference: whatever the body, the fast path's
// verdict, error, ring, states, records and events are the reference
// path's.
func FuzzFastDecodeMatchesReference(f *testing.F) {
	base, delta := deltaSeed(f)
	f.Add(delta)
	f.Add(base)
	for i := range 8 {
		f.Add(withByte(delta, HeaderSizeV3+i, delta[HeaderSizeV3+i]^byte(1<<i)))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		d, ref := newDecoders(t)
		var ring Ring
		if _, _, err := d.CheckRing(0, base, 100, &ring); err != nil {
			t.Fatal(err)
		}
		decodeBoth(t, d, ref, 0, bytes.Clone(body), 102, &ring)
	})
}
