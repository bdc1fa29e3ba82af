package quic

import (
	"encoding/binary"
	"fmt"
)

// Unreliable messages travel as RFC 9221 datagrams. A message that fits one
// datagram is sent as it is, with no added byte. A message that does not fit
// is split into fragments, each one datagram:
//
//	fragment = 0xFF  u16 message id (LE)  u8 index  u8 count  chunk
//
// The receiver reassembles a message only when all count fragments arrived;
// if any is lost the whole message is dropped (counted), exactly as a lost
// single-datagram snapshot would be. It is never resent, and never moved to
// the reliable stream: an unreliable snapshot must not turn into a
// retransmitted one just because it grew.
//
// 0xFF is not a message type of protocol v1 (types are 0x01-0x21), but the
// transport carries opaque bytes: a message whose first byte happens to be
// 0xFF is sent as a one-fragment message, so any byte string round-trips.

// fragMarker is the first byte of every fragment datagram.
const fragMarker = 0xFF

// fragHeaderLen is the fragment header size.
const fragHeaderLen = 5

// MaxFragments bounds the fragments of one message (and so the receiver's
// reassembly memory per message).
const MaxFragments = 64

// MaxUnreliableSize is the largest message Send accepts with
// transport.Unreliable. With the smallest datagram payload quic-go allows
// (1200-byte packets: about 1160 B, 1155 B of chunk) it needs at most 57
// fragments.
const MaxUnreliableSize = 64 << 10

// reassemblySlots is how many partially received messages a peer keeps. A
// newer message evicts the oldest incomplete one (which is then lost).
const reassemblySlots = 4

// minChunk is the smallest chunk a sender uses; below it a message would need
// more than MaxFragments fragments.
const minChunk = (MaxUnreliableSize + MaxFragments - 1) / MaxFragments

// fragment is one parsed fragment datagram.
type fragment struct {
	id           uint16
	index, count uint8
	chunk        []byte
}

// errFragment describes a malformed fragment datagram.
type errFragment struct{ why string }

func (e *errFragment) Error() string { return "quic: bad fragment datagram: " + e.why }

// appendFragment appends one fragment datagram.
func appendFragment(dst []byte, id uint16, index, count uint8, chunk []byte) []byte {
	dst = append(dst, fragMarker)
	dst = binary.LittleEndian.AppendUint16(dst, id)
	dst = append(dst, index, count)
	return append(dst, chunk...)
}

// parseDatagram classifies one received datagram: a whole message (isFrag
// false, whole aliases b) or a fragment.
func parseDatagram(b []byte) (whole []byte, f fragment, isFrag bool, err error) {
	if len(b) == 0 || b[0] != fragMarker {
		return b, fragment{}, false, nil
	}
	if len(b) < fragHeaderLen {
		return nil, fragment{}, true, &errFragment{why: fmt.Sprintf("%d bytes, header needs %d", len(b), fragHeaderLen)}
	}
	f = fragment{
		id:    binary.LittleEndian.Uint16(b[1:]),
		index: b[3],
		count: b[4],
		chunk: b[fragHeaderLen:],
	}
	switch {
	case f.count == 0 || int(f.count) > MaxFragments:
		return nil, f, true, &errFragment{why: fmt.Sprintf("count %d outside 1..%d", f.count, MaxFragments)}
	case f.index >= f.count:
		return nil, f, true, &errFragment{why: fmt.Sprintf("index %d not below count %d", f.index, f.count)}
	case len(f.chunk) > MaxUnreliableSize:
		return nil, f, true, &errFragment{why: "chunk larger than the largest message"}
	}
	return nil, f, true, nil
}

// splitCount is the number of fragments msg needs with chunks of chunk bytes.
func splitCount(n, chunk int) int {
	if n == 0 {
		return 1
	}
	return (n + chunk - 1) / chunk
}

// slot holds one message being reassembled.
type slot struct {
	used   bool
	id     uint16
	count  uint8
	have   int
	bytes  int
	age    uint64
	chunks [MaxFragments][]byte
}

// reassembler rebuilds fragmented messages for one peer. It is owned by that
// peer's datagram reader goroutine. Memory is bounded: reassemblySlots
// messages of at most MaxUnreliableSize bytes each.
type reassembler struct {
	slots   [reassemblySlots]slot
	clock   uint64
	evicted uint64 // incomplete messages dropped to make room (lost fragments)
	invalid uint64 // fragments inconsistent with their message, dropped
}

// add files a fragment. It returns the complete message (a fresh slice the
// caller owns) when f was its last missing piece.
func (r *reassembler) add(f fragment) ([]byte, bool) {
	r.clock++
	s := r.find(f.id)
	if s == nil {
		s = r.claim(f)
	}
	if s.count != f.count || s.bytes+len(f.chunk) > MaxUnreliableSize {
		// Same id, different shape: a stale or forged fragment. Drop the
		// message rather than guess.
		r.invalid++
		s.reset()
		return nil, false
	}
	if s.chunks[f.index] != nil {
		return nil, false // duplicate
	}
	s.chunks[f.index] = append(make([]byte, 0, len(f.chunk)), f.chunk...)
	s.have++
	s.bytes += len(f.chunk)
	s.age = r.clock
	if s.have < int(s.count) {
		return nil, false
	}
	msg := make([]byte, 0, s.bytes)
	for i := 0; i < int(s.count); i++ {
		msg = append(msg, s.chunks[i]...)
	}
	s.reset()
	return msg, true
}

// find returns the slot reassembling id, or nil.
func (r *reassembler) find(id uint16) *slot {
	for i := range r.slots {
		if r.slots[i].used && r.slots[i].id == id {
			return &r.slots[i]
		}
	}
	return nil
}

// claim takes a free slot, or evicts the least recently touched one.
func (r *reassembler) claim(f fragment) *slot {
	victim := &r.slots[0]
	for i := range r.slots {
		s := &r.slots[i]
		if !s.used {
			victim = s
			break
		}
		if s.age < victim.age {
			victim = s
		}
	}
	if victim.used {
		r.evicted++
	}
	victim.reset()
	victim.used, victim.id, victim.count, victim.age = true, f.id, f.count, r.clock
	return victim
}

// reset empties the slot.
func (s *slot) reset() {
	for i := 0; i < int(s.count) && i < MaxFragments; i++ {
		s.chunks[i] = nil
	}
	s.used, s.have, s.bytes, s.count = false, 0, 0, 0
}
