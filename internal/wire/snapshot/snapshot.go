// Package snapshot encodes and decodes the snapshot body format
// "sg-entities/2".
//
// The body is the reference server's bit-packed, quantized entity records
// followed by an event section (despawns, shots, impacts, destructions).
// The server (Encoder) and the swarm (Decoder) share this package, so the
// two cannot drift.
//
// A body is a 7-byte header — u8 version (2), u16 entity_count,
// u16 event_count, u16 pad_len, little-endian — followed by entity_count
// records of exactly RecordSize bytes, event_count events of exactly
// EventSize bytes and then pad_len opaque padding bytes. Nothing else may
// follow. A record is 192 bits packed LSB-first (docs/snapshot-format.md has
// the tables). When the Snapshot message's flags carry
// proto.SnapshotFlagZstd, the whole body is one zstd frame of those bytes.
// The Decoder also reads version 1 ("sg-entities/1": a 5-byte header without
// event_count, no events), which older servers send.
//
// Version 3 ("sg-entities/3", delta.go and state.go) carries quantised
// entity states, each coded against the view the peer's acknowledged
// snapshot left it with; server and client keep a Ring of recent views
// each, and a state hash turns a delta decoded against the wrong one into
// a decode error.
package snapshot

import (
	"encoding/binary"
	"math"
)

// BodyFormat is the name carried in Welcome.body_format.
const BodyFormat = "sg-entities/2"

// BodyFormatV1 is the previous format, without events; the Decoder still
// reads it.
const BodyFormatV1 = "sg-entities/1"

// Version is the first byte of every uncompressed body the Encoder writes.
const Version = 2

// Sizes of the format.
const (
	HeaderSize   = 7  // version, entity_count, event_count, pad_len
	HeaderSizeV1 = 5  // version 1: version, entity_count, pad_len
	RecordSize   = 24 // one entity, 192 bits
	EventSize    = 11 // kind, id, other, value
	// MaxBodyBytes bounds a decompressed body; a frame that would exceed
	// it is a decode error (a decompression bomb must not cost memory).
	MaxBodyBytes = HeaderSize + math.MaxUint16*(RecordSize+EventSize) + math.MaxUint16
)

// Event kinds of the event section.
const (
	// EventDespawn: entity ID left the world (an expired or spent
	// projectile); a receiver drops it. Other and Value are 0.
	EventDespawn uint8 = 1
	// EventShot: entity ID fired its gun; Other is the entity the hitscan
	// hit (0: a miss).
	EventShot uint8 = 2
	// EventImpact: entity ID took Value damage points from entity Other
	// (a hit, or a collision: Other is then the entity it struck).
	EventImpact uint8 = 3
	// EventDestroyed: entity ID was destroyed by Other and has respawned
	// in place under the same id.
	EventDestroyed uint8 = 4
)

// Event is one entry of the event section.
type Event struct {
	Kind  uint8
	ID    uint32 // non-zero: the entity the event is about
	Other uint32 // the other entity involved, 0 for none
	Value uint16 // damage points (EventImpact), else 0
}

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

// BodySize is the uncompressed body size of n records and ev events with
// pad padding bytes.
func BodySize(n, ev, pad int) int { return HeaderSize + n*RecordSize + ev*EventSize + pad }

// RecordsFitting is how many records fit an uncompressed body of at most
// budget bytes that also carries ev events (never negative).
func RecordsFitting(budget, ev int) int {
	budget -= HeaderSize + ev*EventSize
	if budget < 0 {
		return 0
	}
	return budget / RecordSize
}

func putHeader(b []byte, n, ev, pad int) {
	b[0] = Version
	binary.LittleEndian.PutUint16(b[1:], uint16(n))
	binary.LittleEndian.PutUint16(b[3:], uint16(ev))
	binary.LittleEndian.PutUint16(b[5:], uint16(pad))
}

func appendEvent(b []byte, ev *Event) []byte {
	b = append(b, ev.Kind)
	b = binary.LittleEndian.AppendUint32(b, ev.ID)
	b = binary.LittleEndian.AppendUint32(b, ev.Other)
	return binary.LittleEndian.AppendUint16(b, ev.Value)
}

func readEvent(b []byte) Event {
	return Event{Kind: b[0], ID: binary.LittleEndian.Uint32(b[1:]),
		Other: binary.LittleEndian.Uint32(b[5:]), Value: binary.LittleEndian.Uint16(b[9:])}
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
	w, ok := quatFromCodes(c, &s)
	if !ok {
		return q, false
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

// quatFromCodes sets s to the three sent components of codes c and returns
// the reconstructed omitted one, w; ok is false when they cannot belong to
// a unit quaternion whose omitted component is the largest. It is the one
// float64 statement of that rule: quatCodesValid defers to it where
// rounding decides. The explicit float64 conversion forbids fusing the
// multiply and the add, so the verdict is the same on every architecture.
func quatFromCodes(c [3]uint32, s *[3]float64) (w float64, ok bool) {
	sum := 0.0
	for i := range c {
		s[i] = (float64(c[i]) - 511) * QuatStep // code 511 is exactly zero
		sum += float64(s[i] * s[i])
	}
	// Quantization moves each component by at most QuatStep/2; allow it.
	const eps = 4 * QuatStep
	if sum > 1+eps {
		return 0, false
	}
	// 1 − sum is never NaN or −0, so this is math.Max(0, 1−sum) without
	// its call.
	if w = 1 - sum; w < 0 {
		w = 0
	}
	w = math.Sqrt(w)
	for i := range s {
		if math.Abs(s[i]) > w+eps {
			return w, false
		}
	}
	return w, true
}
