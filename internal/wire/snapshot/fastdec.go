package snapshot

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// The version-3 decoder's fast path. A client decodes every snapshot, so
// the swarm decodes one per client per tick: readStates (one call per
// entity and field, an error plumbed out of each) followed by mergeView (a
// second pass copying the base view into the new one) cost 5 µs for 48
// entities against a view of 128 (BenchmarkRingDecode), about half the C
// client loop's whole client-tick. decodeView does the same work in one
// pass: each entity is read from the body and written straight into the
// view being built, the base states between carried ones copied in runs,
// the hash folded as it goes.
//
// It only gives a verdict: ok false for anything it does not accept,
// whereupon walkV3 runs the reference path (readStates, eventsV3,
// mergeView), which names the error — or, for the rare body the fast path
// declines but that is valid (a code longer than its 57-bit window, a view
// beyond MaxViewStates), decodes it. So the fast path can only make
// decoding cheaper, never change a verdict, a view or an error, provided
// it accepts nothing the reference rejects and builds the same view;
// FuzzFastDecodeMatchesReference holds it to that.

// fastPad is the zero padding after the copy of an entity section: one
// entity's worst case the fast path reads (11 codes of ≤ 57 bits and 45
// fixed bits, 86 bytes) plus an 8-byte load, from a start inside the
// section.
const fastPad = 128

var zeroPad [fastPad]byte

// The fast path reads a zero-padded copy of the section at a bit
// position kept in a local variable (a register: a position stored
// through a pointer put a store and a load on every code's critical path).
// Every read is one unaligned 8-byte load and a shift; reads past the
// section's end return zero bits, and the caller compares the position
// with the section's length once per entity.

// peekAt returns at least 57 bits of b from bit pos.
func peekAt(b []byte, pos uint) uint64 {
	i := pos >> 3
	return binary.LittleEndian.Uint64(b[i:i+8:i+8]) >> (pos & 7)
}

// egAt reads the order-k Exp-Golomb code at pos (bitReader.readEG's) and
// returns it with the position after it. A code longer than 57 bits (one
// load's window; it covers every code readEG rejects, a prefix over
// 32 − k zeros) is the caller's to refuse: next − pos > 57.
//
// Every shift count is masked to 6 bits: the compiler then emits a bare
// shift, not Go's ≥ 64 handling (three instructions a shift). Counts only
// reach 64 for a code of 127 bits or more, whose value is never used.
func egAt(b []byte, pos, k uint) (v uint64, next uint) {
	w := peekAt(b, pos)
	z := uint(bits.TrailingZeros64(w | 1<<63)) // ≤ 63: w = 0 is a code of 127+ bits, refused
	m := (z + k) & 63
	return (1<<m | w>>((z+1)&63)&(1<<m-1)) - 1<<(k&63), pos + 2*z + 1 + k
}

// decodeView decodes the n states of the entity section sec against base
// (nil: a full body) into d.view, the view the snapshot of tick leaves
// (despawned: d.despawns), and into d.states when keep. It returns their
// hash, and ok false when it does not accept the section (see above).
func (d *Decoder) decodeView(sec []byte, n int, base []State, tick uint32, keep bool) (h uint64, ok bool) {
	d.pad = append(append(d.pad[:0], sec...), zeroPad[:]...)
	b := d.pad
	pos, end := uint(0), uint(len(sec))*8
	if need := len(base) + n; cap(d.view) < need {
		d.view = make([]State, 0, need+need/4) // as mergeView
	}
	dst := d.view[:0]
	d.states = d.states[:0]
	h = hashSeed(tick, n)
	prev, bi := uint64(0), 0
	for i := 0; i < n; i++ {
		gap, p1 := egAt(b, pos, kGap)
		age, p2 := egAt(b, p1, kAge)
		id := prev + gap + 1
		if p1-pos > 57 || p2-p1 > 57 || id > math.MaxUint32 || age > math.MaxUint8 {
			return 0, false
		}
		pos = p2
		k := bi
		for k < len(base) && uint64(base[k].ID) < id {
			k++
		}
		dst = keepRun(dst, base[bi:k], d.despawns, tick)
		bi = k
		var s State
		if bi < len(base) && uint64(base[bi].ID) == id {
			pos, ok = fastDelta(b, pos, &base[bi], &s, tick-base[bi].Tick)
			bi++
		} else {
			pos, ok = fastFull(b, pos, &s), true
		}
		// checkState's rules, on every state as the reference path.
		if !ok || pos > end || s.Type == 0 || !quatCodesValid(s.Quat>>20&1023, s.Quat>>10&1023, s.Quat&1023) {
			return 0, false
		}
		s.ID, s.Age = uint32(id), uint8(age)
		// stateHash, written out so that it inlines.
		h = mix(h, uint64(s.ID)|uint64(s.Pos[0])<<32)
		h = mix(h, uint64(s.Pos[1])|uint64(s.Pos[2])<<32)
		h = mix(h, uint64(s.Quat)|uint64(s.Vel[0])<<32|uint64(s.Vel[1])<<48)
		h = mix(h, uint64(s.Vel[2])|uint64(s.Type)<<16|uint64(s.Flags)<<24|uint64(s.Age)<<32)
		if keep {
			d.states = append(d.states, s)
		}
		if len(d.despawns) == 0 || !containsID(d.despawns, s.ID) {
			s.Tick, s.Age = tick, 0
			dst = append(dst, s)
		}
		prev = id
	}
	dst = keepRun(dst, base[bi:], d.despawns, tick)
	d.view = dst
	// The section ends with under a byte of zero bits (bitReader.rest).
	return h, end-pos < 8 && peekAt(b, pos) == 0 && len(dst) <= MaxViewStates
}

// mix is one word of stateHash's.
func mix(h, x uint64) uint64 {
	h = (h ^ x) * 0x100000001b3
	return h ^ h>>29
}

func containsID(ids []uint32, id uint32) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// fastFull is readFull at pos; it returns the position after the state.
func fastFull(b []byte, pos uint, s *State) uint {
	w := peekAt(b, pos)
	s.Pos[0], s.Pos[1] = uint32(w&(1<<bitsPosXZ3-1)), uint32(w>>bitsPosXZ3&(1<<bitsPosY3-1))
	pos += bitsPosXZ3 + bitsPosY3
	s.Pos[2] = uint32(peekAt(b, pos) & (1<<bitsPosXZ3 - 1))
	pos += bitsPosXZ3
	s.Quat = uint32(peekAt(b, pos))
	pos += 32
	w = peekAt(b, pos) // 53 bits of velocity, type and flags
	s.Vel = [3]uint16{uint16(w & (1<<bitsVel - 1)), uint16(w >> bitsVel & (1<<bitsVel - 1)), uint16(w >> (2 * bitsVel) & (1<<bitsVel - 1))}
	s.Type, s.Flags = uint8(w>>(3*bitsVel)), uint8(w>>(3*bitsVel+bitsType)&(1<<bitsFlags3-1))
	return pos + 3*bitsVel + bitsType + bitsFlags3
}

// fastDelta is readDelta at pos: a field the mask leaves unchanged keeps
// b's value; a field sent must differ from it and stay in range. It
// returns the position after the state, and ok false to refuse it.
func fastDelta(b []byte, pos uint, base, s *State, dt uint32) (uint, bool) {
	s.Quat, s.Vel, s.Type, s.Flags = base.Quat, base.Vel, base.Type, base.Flags
	mask := peekAt(b, pos) & (1<<bitsMask - 1)
	pos += bitsMask
	var res [3]int64
	if mask&maskPos != 0 {
		for k := range res {
			u, next := egAt(b, pos, kPos)
			if next-pos > 57 {
				return pos, false
			}
			res[k], pos = unzigzag(u), next
		}
		if res == [3]int64{} {
			return pos, false
		}
	}
	for k, n := range posBits {
		p := predict(base, k, dt) + res[k]
		if uint64(p) >= 1<<n { // also p < 0
			return pos, false
		}
		s.Pos[k] = uint32(p)
	}
	if mask&maskVel != 0 {
		for k := range s.Vel {
			u, next := egAt(b, pos, kVel)
			v := int64(base.Vel[k]) + unzigzag(u)
			if next-pos > 57 || uint64(v) >= 1<<bitsVel {
				return pos, false
			}
			s.Vel[k], pos = uint16(v), next
		}
		if s.Vel == base.Vel {
			return pos, false
		}
	}
	if mask&maskQuat != 0 {
		var ok bool
		if pos, ok = fastQuat(b, pos, base, s); !ok {
			return pos, false
		}
	}
	if mask&maskMeta != 0 {
		w := peekAt(b, pos)
		s.Type, s.Flags = uint8(w), uint8(w>>bitsType&(1<<bitsFlags3-1))
		pos += bitsType + bitsFlags3
		if s.Type == base.Type && s.Flags == base.Flags {
			return pos, false
		}
	}
	return pos, true
}

// fastQuat is readQuat at pos.
func fastQuat(b []byte, pos uint, base, s *State) (uint, bool) {
	w := peekAt(b, pos)
	if w&1 == 0 {
		s.Quat = uint32(w >> 1)
		return pos + 33, s.Quat>>30 != base.Quat>>30
	}
	pos++
	q := base.Quat &^ (1<<30 - 1)
	for sh := 20; sh >= 0; sh -= 10 {
		u, next := egAt(b, pos, kQuat)
		c := int64(base.Quat>>sh&1023) + unzigzag(u)
		if next-pos > 57 || uint64(c) > 1023 {
			return pos, false
		}
		q |= uint32(c) << sh
		pos = next
	}
	s.Quat = q
	return pos, q != base.Quat
}
