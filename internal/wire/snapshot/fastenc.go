package snapshot

import (
	"encoding/binary"
	"math"
	"math/bits"
)

// The version-3 entity section, written with the bit accumulator in
// locals (registers) instead of the Encoder's bitWriter fields: writing
// the states was the largest part of FinishDelta, once per peer per tick
// on the server, and most of that was each field's call into writeEG and
// its loads and stores of the writer's fields. The bits are the same, in
// the same order: FuzzFastEncodeMatchesReference and
// TestFastEncodeMatchesReference hold the two writers to the same bytes.

// sink is a bitWriter's pending bits, small enough to live in registers:
// fewer than 32 of them after each put, as bitWriter's.
type sink struct {
	acc uint64
	n   uint
}

// put appends the nb bits of code (nb ≤ 32, no bit above them set).
func (w sink) put(buf []byte, code uint64, nb uint) ([]byte, sink) {
	w.acc |= code << (w.n & 63)
	w.n += nb
	if w.n >= 32 {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(w.acc))
		w.acc >>= 32
		w.n -= 32
	}
	return buf, w
}

// eg appends u as writeEG does: an order-k Exp-Golomb code, LSB first.
func (w sink) eg(buf []byte, u uint64, k uint) ([]byte, sink) {
	v := u + 1<<k
	l := uint(bits.Len64(v))
	z := l - k - 1
	if nb := 2*l - k - 1; nb <= 32 {
		return w.put(buf, 1<<(z&63)|(v&^(1<<((l-1)&63)))<<((z+1)&63), nb)
	}
	return w.egLong(buf, u, k)
}

// egLong is eg for a code over 32 bits, through bitWriter (rare: a
// residual over 2^15).
func (w sink) egLong(buf []byte, u uint64, k uint) ([]byte, sink) {
	bw := bitWriter{buf: buf, acc: w.acc, nacc: w.n}
	bw.writeEG(u, k)
	return bw.buf, sink{bw.acc, bw.nacc}
}

// writeStatesFast is writeStates in locals: the sorted states,
// each against its base state when base (sorted) holds its id; it returns
// their hash. In the same pass it builds e.view, the view the snapshot
// leaves (mergeView's): the walk that finds each state's base state also
// passes the base states it does not carry, which are copied in runs as
// it goes. A second pass merging the same two lists was a third of
// FinishDelta on the server (BenchmarkTickDelta), most of it walking
// again what the first had walked. TestFastEncodeMatchesReference and
// FuzzFastEncodeMatchesReference hold the view to mergeView's.
func (e *Encoder) writeStatesFast(tick uint32, base []State) uint64 {
	h := hashSeed(tick, len(e.states))
	if need := len(base) + len(e.states); cap(e.view) < need {
		e.view = make([]State, 0, need+need/4) // as mergeView
	}
	dst := e.view[:0]
	buf, w := e.bw.buf, sink{e.bw.acc, e.bw.nacc}
	prev, bi := uint32(0), 0
	for i := range e.states {
		s := &e.states[i]
		buf, w = w.eg(buf, uint64(s.ID-prev-1), kGap)
		buf, w = w.eg(buf, uint64(s.Age), kAge)
		dst, bi = keepBelow(dst, base, bi, uint64(s.ID), e.despawns, tick)
		if bi < len(base) && base[bi].ID == s.ID {
			buf, w = w.delta(buf, &base[bi], s, tick)
			bi++
		} else {
			buf, w = w.full(buf, s)
		}
		h = hashState(h, s)
		if len(e.despawns) == 0 || !containsID(e.despawns, s.ID) {
			dst = append(dst, *s)
			v := &dst[len(dst)-1]
			v.Tick, v.Age = tick, 0
		}
		prev = s.ID
	}
	dst, _ = keepBelow(dst, base, bi, math.MaxUint32+1, e.despawns, tick)
	if len(dst) > MaxViewStates {
		dst = msgView(dst, e.states, e.despawns, tick)
	}
	e.view = dst
	e.bw.buf, e.bw.acc, e.bw.nacc = buf, w.acc, w.n
	return h
}

// full is writeFull.
func (w sink) full(buf []byte, s *State) ([]byte, sink) {
	buf, w = w.put(buf, uint64(s.Pos[0]&(1<<bitsPosXZ3-1)), bitsPosXZ3)
	buf, w = w.put(buf, uint64(s.Pos[1]&(1<<bitsPosY3-1)), bitsPosY3)
	buf, w = w.put(buf, uint64(s.Pos[2]&(1<<bitsPosXZ3-1)), bitsPosXZ3)
	buf, w = w.put(buf, uint64(s.Quat), 32)
	buf, w = w.put(buf, uint64(s.Vel[0]&(1<<bitsVel-1)), bitsVel)
	buf, w = w.put(buf, uint64(s.Vel[1]&(1<<bitsVel-1)), bitsVel)
	buf, w = w.put(buf, uint64(s.Vel[2]&(1<<bitsVel-1)), bitsVel)
	return w.put(buf, meta(s), bitsType+bitsFlags3)
}

// delta is writeDelta: the changed-field mask, then each changed field.
func (w sink) delta(buf []byte, b, s *State, tick uint32) ([]byte, sink) {
	dt := tick - b.Tick
	r0 := int64(s.Pos[0]) - predict(b, 0, dt)
	r1 := int64(s.Pos[1]) - predict(b, 1, dt)
	r2 := int64(s.Pos[2]) - predict(b, 2, dt)
	var mask uint64
	if r0|r1|r2 != 0 {
		mask |= maskPos
	}
	if s.Vel != b.Vel {
		mask |= maskVel
	}
	if s.Quat != b.Quat {
		mask |= maskQuat
	}
	if s.Type != b.Type || s.Flags != b.Flags {
		mask |= maskMeta
	}
	buf, w = w.put(buf, mask, bitsMask)
	if mask&maskPos != 0 {
		buf, w = w.eg(buf, zigzag(r0), kPos)
		buf, w = w.eg(buf, zigzag(r1), kPos)
		buf, w = w.eg(buf, zigzag(r2), kPos)
	}
	if mask&maskVel != 0 {
		buf, w = w.eg(buf, zigzag(int64(s.Vel[0])-int64(b.Vel[0])), kVel)
		buf, w = w.eg(buf, zigzag(int64(s.Vel[1])-int64(b.Vel[1])), kVel)
		buf, w = w.eg(buf, zigzag(int64(s.Vel[2])-int64(b.Vel[2])), kVel)
	}
	if mask&maskQuat != 0 {
		buf, w = w.quat(buf, b.Quat, s.Quat)
	}
	if mask&maskMeta != 0 {
		buf, w = w.put(buf, meta(s), bitsType+bitsFlags3)
	}
	return buf, w
}

// quat is writeQuatDelta.
func (w sink) quat(buf []byte, base, q uint32) ([]byte, sink) {
	if q>>30 != base>>30 {
		buf, w = w.put(buf, 0, 1)
		return w.put(buf, uint64(q), 32)
	}
	buf, w = w.put(buf, 1, 1)
	buf, w = w.eg(buf, zigzag(int64(q>>20&1023)-int64(base>>20&1023)), kQuat)
	buf, w = w.eg(buf, zigzag(int64(q>>10&1023)-int64(base>>10&1023)), kQuat)
	return w.eg(buf, zigzag(int64(q&1023)-int64(base&1023)), kQuat)
}

// meta is a state's type then flags, as writeFull writes them.
func meta(s *State) uint64 {
	return uint64(s.Type)&(1<<bitsType-1) | uint64(s.Flags&(1<<bitsFlags3-1))<<bitsType
}
