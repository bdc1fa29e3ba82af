// Package snapshot is the snapshot body format "sg-entities/1": the
// reference server's bit-packed, quantized entity records, shared by the
// server (Encoder) and the swarm (Decoder) so the two cannot drift.
//
// A body is a 5-byte header — u8 version (1), u16 entity_count, u16 pad_len,
// little-endian — followed by entity_count records of exactly RecordSize
// bytes and then pad_len opaque padding bytes. Nothing else may follow.
// A record is 192 bits packed LSB-first (docs/snapshot-format.md has the
// table). When the Snapshot message's flags carry proto.SnapshotFlagZstd,
// the whole body is one zstd frame of those bytes.
package snapshot

import (
	"encoding/binary"
	"math"
)

// BodyFormat is the name carried in Welcome.body_format.
const BodyFormat = "sg-entities/1"

// Version is the first byte of every uncompressed body.
const Version = 1

// Sizes of the format.
const (
	HeaderSize = 5  // version, entity_count, pad_len
	RecordSize = 24 // one entity, 192 bits
	// MaxBodyBytes bounds a decompressed body; a frame that would exceed
	// it is a decode error (a decompression bomb must not cost memory).
	MaxBodyBytes = HeaderSize + math.MaxUint16*RecordSize + math.MaxUint16
)

// Quantization of a record. Positions are metres (x east, y up, z north),
// velocities metres per second; values outside a range are clamped.
const (
	PosStep   = 1.0 / 16 // metres per position unit
	PosXZMin  = -131072  // metres; x and z cover [PosXZMin, -PosXZMin)
	PosYMin   = -2048    // metres; y covers [PosYMin, PosYMin+PosYSpan)
	PosYSpan  = 16384
	VelStep   = 1.0 / 8 // m/s per velocity unit
	VelMax    = 1024    // velocity components cover [-VelMax, VelMax)
	QuatRange = math.Sqrt2 / 2
	// QuatStep is the spacing of one smallest-three component: 511 steps
	// each side of an exact zero (code 511), so the identity is exact.
	QuatStep = QuatRange / 511
)

// Bit widths of the record fields, in wire order.
const (
	bitsID    = 32
	bitsPosXZ = 22
	bitsPosY  = 18
	bitsQIdx  = 2
	bitsQComp = 10
	bitsVel   = 14
	bitsType  = 8
	bitsFlags = 8
	bitsAge   = 8
)

// Record flags.
const (
	FlagOwn      uint8 = 1 << 0 // the receiving peer's own entity
	FlagAI       uint8 = 1 << 1 // a server-controlled entity
	FlagCollided uint8 = 1 << 2 // in contact with another entity this tick
	// FlagsKnown is every defined flag; other bits must be zero.
	FlagsKnown = FlagOwn | FlagAI | FlagCollided
)

// Record is one entity as the body carries it.
type Record struct {
	ID    uint32     // non-zero entity id
	Pos   [3]float32 // metres
	Rot   [4]float32 // unit quaternion x, y, z, w
	Vel   [3]float32 // m/s
	Type  uint8      // non-zero entity type code
	Flags uint8      // Flag* bits
	Age   uint8      // ticks since this entity was last sent to this peer, saturated at 255 (0: first time)
}

// BodySize is the uncompressed body size of n records with pad padding bytes.
func BodySize(n, pad int) int { return HeaderSize + n*RecordSize + pad }

// RecordsFitting is how many records fit an uncompressed body of at most
// budget bytes (never negative).
func RecordsFitting(budget int) int {
	if budget < HeaderSize {
		return 0
	}
	return (budget - HeaderSize) / RecordSize
}

func putHeader(b []byte, n, pad int) {
	b[0] = Version
	binary.LittleEndian.PutUint16(b[1:], uint16(n))
	binary.LittleEndian.PutUint16(b[3:], uint16(pad))
}

// quantize maps v to an unsigned integer of the given width over
// [lo, lo + step·2^bits), clamping at both ends.
func quantize(v, lo, step float64, bits uint) uint32 {
	q := math.Round((v - lo) / step)
	top := float64(uint32(1)<<bits - 1)
	switch {
	case !(q >= 0): // also catches NaN
		return 0
	case q > top:
		return uint32(top)
	}
	return uint32(q)
}

func dequantize(q uint32, lo, step float64) float32 {
	return float32(lo + float64(q)*step)
}

// packQuat returns the smallest-three encoding of q: the index of the
// largest-magnitude component and the other three, quantized, with the sign
// chosen so that the omitted component is positive.
func packQuat(q [4]float32) (idx uint32, c [3]uint32) {
	x, y, z, w := float64(q[0]), float64(q[1]), float64(q[2]), float64(q[3])
	n := math.Sqrt(x*x + y*y + z*z + w*w)
	if !(n > 1e-9) || math.IsInf(n, 0) {
		x, y, z, w, n = 0, 0, 0, 1, 1
	}
	v := [4]float64{x / n, y / n, z / n, w / n}
	big := 3
	for i := 0; i < 3; i++ {
		if math.Abs(v[i]) > math.Abs(v[big]) {
			big = i
		}
	}
	sign := 1.0
	if v[big] < 0 {
		sign = -1
	}
	k := 0
	for i := 0; i < 4; i++ {
		if i == big {
			continue
		}
		c[k] = quantize(sign*v[i], -QuatRange, QuatStep, bitsQComp)
		k++
	}
	return uint32(big), c
}

// unpackQuat reverses packQuat; ok is false when the three components
// cannot belong to a unit quaternion whose omitted component is the largest.
func unpackQuat(idx uint32, c [3]uint32) (q [4]float32, ok bool) {
	var s [3]float64
	sum := 0.0
	for i := range c {
		s[i] = (float64(c[i]) - 511) * QuatStep // code 511 is exactly zero
		sum += s[i] * s[i]
	}
	// Quantization moves each component by at most QuatStep/2; allow it.
	const eps = 4 * QuatStep
	if sum > 1+eps {
		return q, false
	}
	w := math.Sqrt(math.Max(0, 1-sum))
	for _, v := range s {
		if math.Abs(v) > w+eps {
			return q, false
		}
	}
	k := 0
	for i := 0; i < 4; i++ {
		if uint32(i) == idx {
			q[i] = float32(w)
			continue
		}
		q[i] = float32(s[k])
		k++
	}
	return q, true
}
