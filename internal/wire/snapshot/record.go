package snapshot

import (
	"encoding/binary"
	"fmt"
)

// Bit offsets of the record fields, in wire order, derived from the widths
// so the layout is written down once.
const (
	offID    = 0
	offPosX  = offID + bitsID
	offPosY  = offPosX + bitsPosXZ
	offPosZ  = offPosY + bitsPosY
	offQIdx  = offPosZ + bitsPosXZ
	offQComp = offQIdx + bitsQIdx
	offVel   = offQComp + 3*bitsQComp
	offType  = offVel + 3*bitsVel
	offFlags = offType + bitsType
	offAge   = offFlags + bitsFlags
)

// wireRecord is one record's 192 bits as three little-endian words. Every
// field sits at a constant offset, so once field is inlined each accessor
// is a shift and a mask (two of each for a field that straddles a word):
// the decoder's reads of a record cost a few nanoseconds instead of a
// byte-at-a-time bit loop per field.
type wireRecord [3]uint64

// loadRecord reads the record at the start of b, which must hold at least
// RecordSize bytes.
func loadRecord(b []byte) wireRecord {
	_ = b[RecordSize-1]
	return wireRecord{binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]),
		binary.LittleEndian.Uint64(b[16:])}
}

// field returns the n-bit field (n ≤ 32) at bit offset off. Callers pass
// constants, so the word index and the straddle test fold away.
func (w *wireRecord) field(off, n uint) uint32 {
	i, s := off/64, off%64
	v := w[i] >> s
	if s+n > 64 {
		v |= w[i+1] << (64 - s)
	}
	return uint32(v & (1<<n - 1))
}

func (w *wireRecord) id() uint32   { return w.field(offID, bitsID) }
func (w *wireRecord) typ() uint8   { return uint8(w.field(offType, bitsType)) }
func (w *wireRecord) flags() uint8 { return uint8(w.field(offFlags, bitsFlags)) }
func (w *wireRecord) age() uint8   { return uint8(w.field(offAge, bitsAge)) }
func (w *wireRecord) qIdx() uint32 { return w.field(offQIdx, bitsQIdx) }

// pos returns the position codes x, y, z.
func (w *wireRecord) pos() [3]uint32 {
	return [3]uint32{w.field(offPosX, bitsPosXZ), w.field(offPosY, bitsPosY), w.field(offPosZ, bitsPosXZ)}
}

// quat returns the three smallest-three component codes.
func (w *wireRecord) quat() [3]uint32 {
	return [3]uint32{w.field(offQComp, bitsQComp), w.field(offQComp+bitsQComp, bitsQComp),
		w.field(offQComp+2*bitsQComp, bitsQComp)}
}

// vel returns the velocity codes x, y, z.
func (w *wireRecord) vel() [3]uint32 {
	return [3]uint32{w.field(offVel, bitsVel), w.field(offVel+bitsVel, bitsVel), w.field(offVel+2*bitsVel, bitsVel)}
}

// decodeInto dequantizes w into r, or returns the error Decode reports
// (r is then partly written). Writing in place spares copying a Record.
func (w *wireRecord) decodeInto(r *Record) error {
	var ok bool
	r.Rot, ok = unpackQuat(w.qIdx(), w.quat())
	if err := w.validate(ok); err != nil {
		return err
	}
	p, v := w.pos(), w.vel()
	r.ID = w.id()
	r.Pos = [3]float32{dequantize(p[0], PosXZMin, PosStep), dequantize(p[1], PosYMin, PosStep),
		dequantize(p[2], PosXZMin, PosStep)}
	r.Vel = [3]float32{dequantize(v[0], -VelMax, VelStep), dequantize(v[1], -VelMax, VelStep),
		dequantize(v[2], -VelMax, VelStep)}
	r.Type, r.Flags, r.Age = w.typ(), w.flags(), w.age()
	return nil
}

// check returns the error decodeInto would, without dequantizing anything.
func (w *wireRecord) check() error {
	q := w.quat()
	return w.validate(quatCodesValid(q[0], q[1], q[2]))
}

// firstInvalid returns the index of the first record in recs (whole
// records only) that check would reject, or len(recs)/RecordSize when all
// pass. It is check's verdict without its error, in one loop with every
// field read inlined, so validating every record of every snapshot makes
// no call per record; only a rejected record goes through check, which
// names what is wrong. The rule is spelled out here rather than called:
// the compiler inlines neither quat nor a helper holding these reads, and
// calling them doubled BenchmarkCheck48/raw (≈ 500 → 850–970 ns).
// TestFirstInvalidAgreesWithCheck holds the two equal.
func firstInvalid(recs []byte) int {
	n := len(recs) / RecordSize
	for i := 0; i < n; i++ {
		w := loadRecord(recs[i*RecordSize:])
		ok := w.id() != 0 && w.typ() != 0 && w.flags()&^FlagsKnown == 0 &&
			quatCodesValid(w.field(offQComp, bitsQComp), w.field(offQComp+bitsQComp, bitsQComp),
				w.field(offQComp+2*bitsQComp, bitsQComp))
		if !ok {
			return i
		}
	}
	return n
}

// validate is the record rule of both paths, given the quaternion verdict:
// the orientation first, then the id, the type and the flags.
func (w *wireRecord) validate(quatOK bool) error {
	id, typ, flags := w.id(), w.typ(), w.flags()
	switch {
	case !quatOK:
		return fmt.Errorf("entity %d: orientation is not a unit quaternion: %w", id, ErrRecord)
	case id == 0:
		return fmt.Errorf("zero entity id: %w", ErrRecord)
	case typ == 0:
		return fmt.Errorf("entity %d: zero type: %w", id, ErrRecord)
	case flags&^FlagsKnown != 0:
		return fmt.Errorf("entity %d: unknown flags 0x%02x: %w", id, flags, ErrRecord)
	}
	return nil
}

// quatInvStepSq is 1/QuatStep² exactly: QuatStep² = QuatRange²/511² and
// QuatRange² = 1/2. With k = code − 511 a component is k·QuatStep, so a sum
// of squares of components is an integer count of QuatStep².
const quatInvStepSq = 2 * 511 * 511

// quatSlackSteps is unpackQuat's slack (eps = 4·QuatStep) in steps.
const quatSlackSteps = 4

// quatCodesValid gives unpackQuat's verdict on the component codes c0..c2 using
// integer arithmetic, falling back to unpackQuat's float64 computation on
// the one boundary where rounding decides.
//
// In exact arithmetic, with k_i = c_i − 511, K = Σk_i² and m = max|k_i|,
// unpackQuat rejects iff m·QuatStep > sqrt(max(0, 1 − K·QuatStep²)) + eps,
// that is iff m − 4 > sqrt(max(0, quatInvStepSq − K)) (its other test,
// K·QuatStep² > 1 + eps, needs K > quatInvStepSq, where some |k_i| ≥ 418
// already fails this one). When m > 4 both sides square to integers: when
// they differ they differ by at least one, so the float64 computation
// (relative error ~1e-15) lands on the same side; when they are equal the
// exact answer is a tie and float64 rounding decides, so ask it.
// TestQuatCodesValidExhaustive compares the two on every code triple.
func quatCodesValid(c0, c1, c2 uint32) bool {
	k0, k1, k2 := stepsFromMid(c0), stepsFromMid(c1), stepsFromMid(c2)
	m := max(k0, k1, k2)
	if m <= quatSlackSteps {
		return true // |component| ≤ eps ≤ w + eps, and K ≤ 48
	}
	rest := quatInvStepSq - (k0*k0 + k1*k1 + k2*k2) // (1 − Σs²)/QuatStep², exactly
	d := m - quatSlackSteps
	if rest < 0 || d*d > rest {
		return false // w = 0 and m steps exceed the slack, or m beyond w + slack
	}
	return d*d < rest || quatTie(c0, c1, c2)
}

// stepsFromMid is |code − 511|, the component's size in QuatSteps.
func stepsFromMid(c uint32) int {
	k := int(c) - 511
	return max(k, -k)
}

// quatTie decides an exact tie the way unpackQuat's float64 code does.
func quatTie(c0, c1, c2 uint32) bool {
	var s [3]float64
	_, ok := quatFromCodes([3]uint32{c0, c1, c2}, &s)
	return ok
}
