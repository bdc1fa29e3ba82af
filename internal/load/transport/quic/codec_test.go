package quic

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func TestPreamble(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want uint32
		err  bool
	}{
		{"proto v1", []byte{0x01, 0x00, 0x47, 0x53}, 0x53470001, false},
		{"zero", []byte{0, 0, 0, 0}, 0, false},
		{"trailing bytes ignored", []byte{1, 2, 3, 4, 9}, 0x04030201, false},
		{"short", []byte{1, 2, 3}, 0, true},
		{"empty", nil, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parsePreamble(tc.in)
			if (err != nil) != tc.err || got != tc.want {
				t.Fatalf("parsePreamble(% x) = %#x, %v; want %#x, err %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
	if b := appendPreamble(nil, 0x53470001); !bytes.Equal(b, []byte{0x01, 0x00, 0x47, 0x53}) {
		t.Fatalf("appendPreamble little-endian: % x", b)
	}
}

func TestFrameDecoder(t *testing.T) {
	msgs := [][]byte{{}, {0x02}, bytes.Repeat([]byte{7}, 300), bytes.Repeat([]byte{9}, MaxReliableSize)}
	var stream []byte
	for _, m := range msgs {
		var err error
		if stream, err = appendFrame(stream, m); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(stream[:2], []byte{0, 0}) || !bytes.Equal(stream[2:5], []byte{1, 0, 0x02}) {
		t.Fatalf("frames not u16 little-endian length-prefixed: % x", stream[:5])
	}
	for _, piece := range []int{1, 2, 3, 1000, len(stream)} {
		var d frameDecoder
		var got [][]byte
		for off := 0; off < len(stream); off += piece {
			d.write(stream[off:min(len(stream), off+piece)])
			for m, ok := d.next(); ok; m, ok = d.next() {
				got = append(got, bytes.Clone(m))
			}
		}
		if len(got) != len(msgs) || d.buffered() != 0 {
			t.Fatalf("piece %d: %d messages, %d bytes left; want %d, 0", piece, len(got), d.buffered(), len(msgs))
		}
		for i := range msgs {
			if !bytes.Equal(got[i], msgs[i]) {
				t.Fatalf("piece %d: message %d differs", piece, i)
			}
		}
	}
	if _, err := appendFrame(nil, make([]byte, MaxReliableSize+1)); err == nil {
		t.Fatal("appendFrame accepted 65536 bytes")
	}
}

func TestParseDatagram(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     []byte
		isFrag bool
		err    bool
	}{
		{"empty message", nil, false, false},
		{"snapshot", []byte{0x20, 1, 0, 0, 0, 0}, false, false},
		{"one-fragment", []byte{0xFF, 1, 0, 0, 1, 0xFF}, true, false},
		{"header short", []byte{0xFF, 1, 0, 0}, true, true},
		{"count zero", []byte{0xFF, 1, 0, 0, 0, 1}, true, true},
		{"count too large", []byte{0xFF, 1, 0, 0, MaxFragments + 1, 1}, true, true},
		{"index not below count", []byte{0xFF, 1, 0, 3, 3, 1}, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			whole, _, isFrag, err := parseDatagram(tc.in)
			if isFrag != tc.isFrag || (err != nil) != tc.err {
				t.Fatalf("isFrag %v err %v; want %v, err %v", isFrag, err, tc.isFrag, tc.err)
			}
			if !isFrag && !bytes.Equal(whole, tc.in) {
				t.Fatalf("whole message altered")
			}
		})
	}
}

// fragments splits msg the way the sender does.
func fragments(id uint16, msg []byte, chunk int) [][]byte {
	n := splitCount(len(msg), chunk)
	out := make([][]byte, n)
	for i := 0; i < n; i++ {
		out[i] = appendFragment(nil, id, uint8(i), uint8(n), msg[i*chunk:min(len(msg), (i+1)*chunk)])
	}
	return out
}

func TestReassembler(t *testing.T) {
	msg := pattern(5, 10000)
	frags := fragments(7, msg, 1200)
	add := func(r *reassembler, d []byte) ([]byte, bool) {
		t.Helper()
		_, f, isFrag, err := parseDatagram(d)
		if err != nil || !isFrag {
			t.Fatalf("parse fragment: %v", err)
		}
		return r.add(f)
	}
	t.Run("reordered and duplicated", func(t *testing.T) {
		var r reassembler
		order := []int{8, 0, 3, 3, 1, 7, 2, 6, 5}
		for _, i := range order {
			if _, ok := add(&r, frags[i]); ok {
				t.Fatalf("complete before fragment 4")
			}
		}
		got, ok := add(&r, frags[4])
		if !ok || !bytes.Equal(got, msg) {
			t.Fatalf("reassembled %d bytes, ok %v", len(got), ok)
		}
	})
	t.Run("lost fragment drops the whole message", func(t *testing.T) {
		var r reassembler
		for i := range frags[1:] {
			if _, ok := add(&r, frags[i+1]); ok {
				t.Fatal("completed without fragment 0")
			}
		}
		// Newer messages take the slots; the incomplete one is evicted.
		for id := uint16(100); id < 100+reassemblySlots; id++ {
			add(&r, fragments(id, msg, 1200)[0])
		}
		if r.evicted != 1 {
			t.Fatalf("evicted = %d, want 1", r.evicted)
		}
		if _, ok := add(&r, frags[0]); ok {
			t.Fatal("a message whose fragments were evicted completed")
		}
	})
	t.Run("count mismatch is invalid", func(t *testing.T) {
		var r reassembler
		add(&r, frags[0])
		bad := appendFragment(nil, 7, 1, 3, []byte{1})
		if _, ok := add(&r, bad); ok || r.invalid != 1 {
			t.Fatalf("inconsistent count accepted (invalid=%d)", r.invalid)
		}
	})
}

// FuzzFrameDecoder feeds arbitrary stream bytes in arbitrary pieces: the
// decoder must never panic, must return only messages whose length prefix
// it consumed, and re-encoding what it returned must reproduce the consumed
// prefix of the stream exactly.
func FuzzFrameDecoder(f *testing.F) {
	f.Add([]byte{0, 0}, uint8(1))
	f.Add([]byte{1, 0, 2, 3, 0, 1, 2, 3}, uint8(3))
	f.Add([]byte{0xFF, 0xFF, 1}, uint8(2))
	f.Add(append([]byte{5, 0}, []byte("hello")...), uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, piece uint8) {
		step := int(piece)%17 + 1
		var d frameDecoder
		var re []byte
		for off := 0; off < len(stream); off += step {
			d.write(stream[off:min(len(stream), off+step)])
			for m, ok := d.next(); ok; m, ok = d.next() {
				var err error
				if re, err = appendFrame(re, m); err != nil {
					t.Fatalf("decoder returned an unencodable %d-byte message", len(m))
				}
			}
		}
		if len(re)+d.buffered() != len(stream) || !bytes.Equal(re, stream[:len(re)]) {
			t.Fatalf("consumed %d + buffered %d != %d, or re-encoding differs", len(re), d.buffered(), len(stream))
		}
		if d.buffered() >= frameHeaderLen {
			n := int(binary.LittleEndian.Uint16(stream[len(re):]))
			if d.buffered() >= frameHeaderLen+n {
				t.Fatalf("complete frame left undecoded")
			}
		}
	})
}

// FuzzDatagramDecoder feeds arbitrary datagrams to the parser and the
// reassembler: no panic, bounded memory, and any message it completes is
// no larger than MaxUnreliableSize.
func FuzzDatagramDecoder(f *testing.F) {
	f.Add([]byte{0x20, 1, 2}, []byte{0xFF, 1, 0, 0, 2, 9}, []byte{0xFF, 1, 0, 1, 2, 8})
	f.Add([]byte{0xFF, 1, 0, 0, 1}, []byte{0xFF}, []byte{})
	f.Add([]byte{0xFF, 0, 0, 0, 64}, []byte{0xFF, 0, 0, 63, 64, 1}, []byte{0xFF, 0, 0, 1, 2, 1})
	f.Fuzz(func(t *testing.T, a, b, c []byte) {
		var r reassembler
		for round := 0; round < 3; round++ {
			for _, d := range [][]byte{a, b, c} {
				whole, fr, isFrag, err := parseDatagram(d)
				if err != nil {
					continue
				}
				if !isFrag {
					if !bytes.Equal(whole, d) {
						t.Fatal("whole message altered")
					}
					continue
				}
				if msg, ok := r.add(fr); ok && len(msg) > MaxUnreliableSize {
					t.Fatalf("reassembled %d bytes", len(msg))
				}
			}
		}
		used := 0
		for i := range r.slots {
			if r.slots[i].used {
				used++
				if r.slots[i].bytes > MaxUnreliableSize {
					t.Fatalf("slot holds %d bytes", r.slots[i].bytes)
				}
			}
		}
		if used > reassemblySlots {
			t.Fatal("more slots than reassemblySlots")
		}
	})
}
