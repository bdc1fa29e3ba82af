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
// entity's worst case the fast path reads (11 codes of ≤ 57 bits and 16
// fixed bits, 81 bytes) plus an 8-byte load, from a start inside the
// section (decodeView stops at an entity that ends past it).
const fastPad = 128

var zeroPad [fastPad]byte

// The fast path reads a zero-padded copy of the section through windows
// (win) held in local variables, in registers: a reader stored through a
// pointer put a store and a load on every code's critical path. A load is
// one unaligned 8-byte read and a shift; reads past the section's end
// return zero bits, and decodeView compares the position with the
// section's length once per entity.

// peekAt returns at least 57 bits of b from bit pos.
func peekAt(b []byte, pos uint) uint64 {
	i := pos >> 3
	return binary.LittleEndian.Uint64(b[i:i+8:i+8]) >> (pos & 7)
}

// decodeView decodes the n states of the entity section sec against base
// (nil: a full body) into d.view, the view the snapshot of tick leaves
// (despawned: d.despawns), and into d.states when keep. It returns their
// hash, and ok false when it does not accept the section (see above).
// Each state is decoded in place, in the view's next slot.
func (d *Decoder) decodeView(sec []byte, n int, base []State, tick uint32, keep bool) (h uint64, ok bool) {
	d.pad = append(append(d.pad[:0], sec...), zeroPad[:]...)
	b := d.pad
	pos, end := uint(0), uint(len(sec))*8
	if need := len(base) + n; cap(d.view) < need {
		d.view = make([]State, 0, need+need/4) // as mergeView
	}
	dst := d.view[:0] // never beyond len(base) + n: no append below reallocates
	d.states = d.states[:0]
	h = hashSeed(tick, n)
	prev, bi := uint64(0), 0
	var pend *State // decoded, its hash not yet folded
	for i := 0; i < n; i++ {
		id, age, r, ok := readHead(b, pos, prev)
		if !ok {
			return 0, false
		}
		dst, bi = keepBelow(dst, base, bi, id, d.despawns, tick)
		dst = dst[:len(dst)+1]
		s := &dst[len(dst)-1]
		if bi < len(base) && uint64(base[bi].ID) == id {
			r, ok = fastDelta(b, r, &base[bi], s, tick-base[bi].Tick)
			pos = r.pos
			bi++
		} else {
			pos, ok = fastFull(b, r.pos, s), true
		}
		// checkState's rules, on every state as the reference path.
		if !ok || pos > end || s.Type == 0 || !quatCodesValid(s.Quat>>20&1023, s.Quat>>10&1023, s.Quat&1023) {
			return 0, false
		}
		s.ID, s.Age, s.Tick = uint32(id), uint8(age), 0 // the slot's old tick: as readStates's
		if keep {
			d.states = append(d.states, *s)
		}
		// The hash is folded one state late (pend): its 64-bit loads each
		// span two fields stored a moment before, and a load the store
		// buffer cannot forward waits for those stores to retire.
		if pend != nil {
			h = settle(h, pend, tick)
		}
		pend = s
		if len(d.despawns) > 0 && containsID(d.despawns, s.ID) {
			h, pend = settle(h, s, tick), nil // its slot is the next state's
			dst = dst[:len(dst)-1]
		}
		prev = id
	}
	if pend != nil {
		h = settle(h, pend, tick)
	}
	dst, _ = keepBelow(dst, base, bi, math.MaxUint32+1, d.despawns, tick)
	d.view = dst
	// The section ends with under a byte of zero bits (bitReader.rest).
	return h, end-pos < 8 && peekAt(b, pos) == 0 && len(dst) <= MaxViewStates
}

// settle folds the decoded state s into h, then gives it the form a view
// holds: stamped with tick, age 0.
func settle(h uint64, s *State, tick uint32) uint64 {
	h = hashState(h, s)
	s.Tick, s.Age = tick, 0
	return h
}

// readHead reads an entity's id gap and age at pos; ok is false for a
// code the fast path refuses or an id or age out of range.
func readHead(b []byte, pos uint, prev uint64) (id, age uint64, r win, ok bool) {
	r = at(b, pos)
	gap, r, ok1 := r.eg(kGap) // a fresh window holds both codes when each fits 28 bits
	age, r, ok2 := r.eg(kAge)
	id = prev + gap + 1
	return id, age, r, ok1 && ok2 && id <= math.MaxUint32 && age <= math.MaxUint8
}

// keepBelow appends to dst the states of base from bi on with ids below
// id that the view keeps (keepRun's rule, despawned the snapshot's
// despawns), and returns the index of the first base state at or after
// id. A run with nothing expired and no despawn, nearly all of them, is
// checked in the same pass that finds its end and copied whole. The
// decoder's and the encoder's one-pass views (decodeView,
// writeStatesFast) both build through it.
func keepBelow(dst, base []State, bi int, id uint64, despawned []uint32, tick uint32) ([]State, int) {
	k, stale := bi, false
	for k < len(base) && uint64(base[k].ID) < id {
		stale = stale || tick-base[k].Tick >= ViewKeepTicks
		k++
	}
	if stale || len(despawned) > 0 {
		return keepRun(dst, base[bi:k], despawned, tick), k
	}
	return append(dst, base[bi:k]...), k
}

// hashState is stateHash with its four words written out instead of built
// into an array and looped over. It does not inline (cost 137, budget 80):
// decodeView calls it once per state.
func hashState(h uint64, s *State) uint64 {
	h = mix(h, uint64(s.ID)|uint64(s.Pos[0])<<32)
	h = mix(h, uint64(s.Pos[1])|uint64(s.Pos[2])<<32)
	h = mix(h, uint64(s.Quat)|uint64(s.Vel[0])<<32|uint64(s.Vel[1])<<48)
	return mix(h, uint64(s.Vel[2])|uint64(s.Type)<<16|uint64(s.Flags)<<24|uint64(s.Age)<<32)
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

// win is a window on the stream: w holds the bits from pos on, n of them
// read from b (the rest zero). Codes are read out of w by shifts, and b
// is loaded again only when a code does not fit what is left: once or
// twice per entity instead of once per field, which shortens the chain of
// dependent operations from one code to the next to a bit count and a
// shift.
type win struct {
	w   uint64
	n   uint
	pos uint
}

// at is a fresh window at pos: 57 bits, what one load guarantees.
func at(b []byte, pos uint) win { return win{peekAt(b, pos), 57, pos} }

// take consumes n ≤ 57 bits of r (which holds them).
func (r win) take(n uint) win { return win{r.w >> (n & 63), r.n - n, r.pos + n} }

// fresh is r, or a new window at its position when r holds under 32 bits.
func (r win) fresh(b []byte) win {
	if r.n < 32 {
		return at(b, r.pos)
	}
	return r
}

// eg reads an order-k code (bitReader.readEG's) from r's bits; ok is
// false when r holds too few: after fresh, a code of over 32 bits may be
// refused (the reference path reads it), and every code readEG rejects (a
// prefix over 32 − k zeros) is. Split from fresh so that both inline.
//
// Every shift count is masked to 6 bits: the compiler then emits a bare
// shift, not Go's ≥ 64 handling (three instructions a shift). Counts only
// reach 64 for a code refused anyway, whose value is never used.
func (r win) eg(k uint) (uint64, win, bool) {
	z := uint(bits.TrailingZeros64(r.w|1<<63)) + 1
	all := 2*z - 1 + k
	m := (z - 1 + k) & 63
	return (1<<m | r.w>>(z&63)&(1<<m-1)) - 1<<(k&63), win{r.w >> (all & 63), r.n - all, r.pos + all}, all <= r.n
}

// fixedW reads n ≤ 32 bits from r, reloading when it holds fewer.
func fixedW(b []byte, r win, n uint) (uint64, win) {
	if n > r.n {
		r = at(b, r.pos)
	}
	return r.w & (1<<(n&63) - 1), r.take(n)
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

// fastDelta is readDelta from r: a field the mask leaves unchanged keeps
// b's value; a field sent must differ from it and stay in range. It
// returns the window after the state, and ok false to refuse it.
func fastDelta(b []byte, r win, base, s *State, dt uint32) (win, bool) {
	s.Quat, s.Vel, s.Type, s.Flags = base.Quat, base.Vel, base.Type, base.Flags
	mask, r := fixedW(b, r, bitsMask)
	// The three residuals and predictions are written out per axis (so
	// are fastVel's and fastQuat's codes): a loop kept an index, a
	// residual array and each axis's width (posBits) loaded from memory
	// in the chain from one code to the next (BenchmarkRingDecodeOwnBodies,
	// alternating: 4,679-4,920 -> 4,264-4,452 ns per snapshot with the
	// velocity and orientation also written out).
	var rx, ry, rz int64
	if mask&maskPos != 0 {
		ux, r1, ok := r.fresh(b).eg(kPos)
		if !ok {
			return r, false
		}
		uy, r2, ok := r1.fresh(b).eg(kPos)
		if !ok {
			return r, false
		}
		uz, r3, ok := r2.fresh(b).eg(kPos)
		if !ok || ux|uy|uz == 0 { // the codes ORed: 0 when every residual is
			return r, false
		}
		rx, ry, rz, r = unzigzag(ux), unzigzag(uy), unzigzag(uz), r3
	}
	x, y, z := predict(base, 0, dt)+rx, predict(base, 1, dt)+ry, predict(base, 2, dt)+rz
	if uint64(x) >= 1<<bitsPosXZ3 || uint64(y) >= 1<<bitsPosY3 || uint64(z) >= 1<<bitsPosXZ3 { // also < 0
		return r, false
	}
	s.Pos = [3]uint32{uint32(x), uint32(y), uint32(z)}
	if mask&maskVel != 0 {
		var ok bool
		if r, ok = fastVel(b, r, base, s); !ok {
			return r, false
		}
	}
	if mask&maskQuat != 0 {
		var ok bool
		if r, ok = fastQuat(b, r, base, s); !ok {
			return r, false
		}
	}
	if mask&maskMeta != 0 {
		var w uint64
		w, r = fixedW(b, r, bitsType+bitsFlags3)
		s.Type, s.Flags = uint8(w), uint8(w>>bitsType&(1<<bitsFlags3-1))
		if s.Type == base.Type && s.Flags == base.Flags {
			return r, false
		}
	}
	return r, true
}

// fastVel is readVel from r.
// A velocity differs from the base's exactly when a residual is not 0, so
// the codes ORed say it: comparing s.Vel with base.Vel read back the three
// 16-bit stores just made as one load, which the CPU cannot forward from
// them (a tenth of fastVel's time was that compare).
func fastVel(b []byte, r win, base, s *State) (win, bool) {
	// Written out per axis, as fastDelta's position.
	u0, r, ok := r.fresh(b).eg(kVel)
	v0 := int64(base.Vel[0]) + unzigzag(u0)
	if !ok || uint64(v0) >= 1<<bitsVel {
		return r, false
	}
	u1, r, ok := r.fresh(b).eg(kVel)
	v1 := int64(base.Vel[1]) + unzigzag(u1)
	if !ok || uint64(v1) >= 1<<bitsVel {
		return r, false
	}
	u2, r, ok := r.fresh(b).eg(kVel)
	v2 := int64(base.Vel[2]) + unzigzag(u2)
	if !ok || uint64(v2) >= 1<<bitsVel {
		return r, false
	}
	s.Vel = [3]uint16{uint16(v0), uint16(v1), uint16(v2)}
	return r, u0|u1|u2 != 0
}

// fastQuat is readQuat from r.
func fastQuat(b []byte, r win, base, s *State) (win, bool) {
	whole, r := fixedW(b, r, 1)
	if whole == 0 {
		q, r := fixedW(b, r, 32)
		s.Quat = uint32(q)
		return r, s.Quat>>30 != base.Quat>>30
	}
	bq := base.Quat
	ua, r, ok := r.fresh(b).eg(kQuat)
	ca := int64(bq>>20&1023) + unzigzag(ua)
	if !ok || uint64(ca) > 1023 {
		return r, false
	}
	ub, r, ok := r.fresh(b).eg(kQuat)
	cb := int64(bq>>10&1023) + unzigzag(ub)
	if !ok || uint64(cb) > 1023 {
		return r, false
	}
	uc, r, ok := r.fresh(b).eg(kQuat)
	cc := int64(bq&1023) + unzigzag(uc)
	if !ok || uint64(cc) > 1023 {
		return r, false
	}
	s.Quat = bq&^(1<<30-1) | uint32(ca)<<20 | uint32(cb)<<10 | uint32(cc)
	return r, ua|ub|uc != 0
}
