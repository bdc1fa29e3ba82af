package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// Exp-Golomb orders of the version-3 variable-length fields, chosen from
// what the reference world sends (docs/snapshot-format.md).
const (
	kGap  = 3 // id − previous id − 1
	kAge  = 2
	kPos  = 1 // zigzag(code − prediction)
	kVel  = 1 // zigzag(code − base code)
	kQuat = 1 // zigzag(code − base code), same q_index
)

// Changed-field mask bits of a delta entity.
const (
	maskPos  = 1 << 0
	maskVel  = 1 << 1
	maskQuat = 1 << 2
	maskMeta = 1 << 3
	bitsMask = 4
)

// Version-3 decode errors, besides the shared ones (ErrHeader, ErrLength,
// ErrEvent, ErrZstd, ErrFlags).
var (
	// ErrBaseline: the body is a delta against a snapshot this peer does
	// not hold (never decoded, or gone from its ring).
	ErrBaseline = errors.New("delta baseline not held")
	// ErrDelta: an entity of a version-3 body is invalid, or the decoded
	// states do not hash to the body's state_hash (a delta decoded
	// against the wrong baseline or altered in flight).
	ErrDelta = errors.New("invalid delta body")
)

var zeroHeaderV3 [HeaderSizeV3]byte

// writeLong appends the low n bits of v (n ≤ 64).
func (w *bitWriter) writeLong(v uint64, n uint) {
	if n > 32 {
		w.write(uint32(v), 32)
		v, n = v>>32, n-32
	}
	w.write(uint32(v), n)
}

// writeEG appends u as an order-k Exp-Golomb code, LSB first: with
// v = u + 2^k of n bits, n−k−1 zero bits, a one, then v's low n−1 bits.
func (w *bitWriter) writeEG(u uint64, k uint) {
	v := u + 1<<k
	n := uint(bits.Len64(v))
	z := n - k - 1
	if 2*n-k-1 <= 32 { // the common case: the whole code in one write
		w.write(uint32(1<<z|(v&^(1<<(n-1)))<<(z+1)), 2*n-k-1)
		return
	}
	w.writeLong(1<<z, z+1)
	w.writeLong(v&^(1<<(n-1)), n-1)
}

// bitReader reads what bitWriter wrote. A read past the end sets bad and
// returns 0, so a decoder checks once per entity instead of per field.
type bitReader struct {
	b   []byte
	i   int
	acc uint64
	n   uint
	bad bool
}

func (r *bitReader) refill() {
	if r.i+8 <= len(r.b) {
		// Eight bytes at once; only the whole bytes that fit are counted.
		// The bits loaded past them are the stream's own, and the next
		// refill ORs the same bytes into the same places.
		r.acc |= binary.LittleEndian.Uint64(r.b[r.i:]) << r.n
		adv := (63 - r.n) >> 3
		r.i += int(adv)
		r.n += adv * 8
		return
	}
	for r.n <= 56 && r.i < len(r.b) {
		r.acc |= uint64(r.b[r.i]) << r.n
		r.i++
		r.n += 8
	}
}

// read returns the next n bits (n ≤ 32). Small enough to inline: the
// refill and the end of the stream are readSlow's.
func (r *bitReader) read(n uint) uint64 {
	if r.n < n {
		return r.readSlow(n)
	}
	v := r.acc & (1<<n - 1)
	r.acc >>= n
	r.n -= n
	return v
}

func (r *bitReader) readSlow(n uint) uint64 {
	r.refill()
	if r.n < n {
		r.bad, r.acc, r.n = true, 0, 0
		return 0
	}
	v := r.acc & (1<<n - 1)
	r.acc >>= n
	r.n -= n
	return v
}

// readEG reads an order-k Exp-Golomb code; a prefix longer than 32 − k
// zeros (a value beyond 33 bits: no field is that wide) is bad. The whole
// code is usually in the accumulator already and comes out in one shift.
func (r *bitReader) readEG(k uint) uint64 {
	if r.n < 33 {
		r.refill()
	}
	z := uint(bits.TrailingZeros64(r.acc))
	if z > 32-k || z >= r.n {
		r.bad, r.acc, r.n = true, 0, 0
		return 0
	}
	m := z + k
	if all := z + 1 + m; all <= r.n && all < 64 {
		v := r.acc >> (z + 1) & (1<<m - 1)
		r.acc >>= all
		r.n -= all
		return (1<<m | v) - 1<<k
	}
	r.acc >>= z + 1
	r.n -= z + 1
	return (1<<m | r.read(m)) - 1<<k
}

// rest reports whether what is left is under a byte of zero bits.
func (r *bitReader) rest() bool {
	r.refill()
	return !r.bad && r.i == len(r.b) && r.n < 8 && r.acc == 0
}

// AppendState adds one entity to a version-3 body (FinishDelta); s carries
// the per-peer flags and age. States may be appended in any order: the body
// carries them sorted by id, which must be unique.
func (e *Encoder) AppendState(s *State) {
	e.states = append(e.states, *s)
}

// States is the number of states appended since Reset.
func (e *Encoder) States() int { return len(e.states) }

// Delta says what FinishDelta did: the baseline it took (0 for a full body)
// and, under the corrupt_delta_every_nth fault, whether it corrupted it.
type Delta struct {
	Base      uint32
	IsDelta   bool
	Corrupted bool
}

// Release drops the views of ring older than ack, the snapshot the peer
// acknowledged last, keeping their storage for this Encoder's next views.
// A server calls it once an acknowledgement arrives: acknowledgements
// only move forward, so no older view can become a baseline again, and a
// peer's ring then holds the views of one round trip (on loopback 2–4)
// instead of RingSize.
func (e *Encoder) Release(ring *Ring, ack uint32) {
	e.free = ring.release(ack, e.free)
}

// FinishDelta completes a version-3 body of tick from the appended states
// and events: a delta against the view of tick ack in ring when hasAck and
// ring holds it (and it is under 65536 ticks old), else a full body. The
// view this body leaves the peer with is pushed into ring. corrupt flips
// one bit of a delta's entity section (the fault), after the view was
// taken from the true states. Pad is as Finish's; compress applies to a
// full body only (a delta is always raw).
func (e *Encoder) FinishDelta(tick uint32, ring *Ring, ack uint32, hasAck bool, pad []byte, compress, corrupt bool) (flags uint8, body []byte, d Delta) {
	if len(e.states) > math.MaxUint16 || e.nev > math.MaxUint16 || len(pad) > math.MaxUint16 {
		panic(fmt.Sprintf("snapshot: body too large (%d states, %d events, %d pad bytes)", len(e.states), e.nev, len(pad)))
	}
	e.sortStates()
	var base []State
	if hasAck && ack != tick && tick-ack <= math.MaxUint16 {
		if v := ring.find(ack); v != nil {
			base, d.Base, d.IsDelta = v.states, ack, true
		}
	}
	e.bw.reset(append(e.raw[:0], zeroHeaderV3[:]...))
	if e.view == nil && len(e.free) > 0 { // storage a released view left
		e.view, e.free = e.free[len(e.free)-1], e.free[:len(e.free)-1]
	}
	var h uint64
	if e.refWrite {
		h = e.writeStates(tick, base)
		e.view = mergeView(e.view, base, e.states, e.despawns, tick)
	} else {
		h = e.writeStatesFast(tick, base) // and e.view
	}
	e.raw = e.bw.flush()
	if corrupt && d.IsDelta && len(e.raw) > HeaderSizeV3 {
		e.raw[HeaderSizeV3+(len(e.raw)-HeaderSizeV3)/2] ^= 0x10
		d.Corrupted = true
	}
	back := uint16(0)
	if d.IsDelta {
		back = uint16(tick - d.Base)
	}
	putHeaderV3(e.raw, back, hashFinal(h), len(e.states), e.nev, len(pad))
	e.raw = append(e.raw, e.evs...)
	e.raw = append(e.raw, pad...)
	e.bw.buf = e.raw
	e.view = ring.push(tick, e.view)
	// A delta is sent raw: zstd won on none of 601 delta bodies of a
	// pr-like client (mean 272 bytes, bit-packed residuals), so trying it
	// would only cost the server a frame per peer per tick. A full body is
	// tried as version 2 is.
	flags, body = e.compress(compress && !d.IsDelta)
	return flags, body, d
}

// sortStates puts the appended states in id order. It sorts 8-byte keys
// (id, index) and permutes the states once, instead of sorting the states
// themselves through a comparison function: a third of what FinishDelta
// cost the server (BenchmarkTickDelta) was that sort. Ids are unique, so
// the order is the same either way. States appended in id order already
// (the reference server appends them so) are left as they are.
func (e *Encoder) sortStates() {
	if statesInIDOrder(e.states) {
		return
	}
	e.order = e.order[:0]
	for i := range e.states {
		e.order = append(e.order, uint64(e.states[i].ID)<<32|uint64(i))
	}
	slices.Sort(e.order)
	e.sorted = e.sorted[:0]
	for _, k := range e.order {
		e.sorted = append(e.sorted, e.states[uint32(k)])
	}
	e.states, e.sorted = e.sorted, e.states
}

// statesInIDOrder reports whether every state's id is above the one
// before it.
func statesInIDOrder(st []State) bool {
	for i := 1; i < len(st); i++ {
		if st[i].ID <= st[i-1].ID {
			return false
		}
	}
	return true
}

func putHeaderV3(b []byte, back uint16, hash uint32, n, ev, pad int) {
	b[0] = VersionDelta
	binary.LittleEndian.PutUint16(b[1:], back)
	binary.LittleEndian.PutUint32(b[3:], hash)
	binary.LittleEndian.PutUint16(b[7:], uint16(n))
	binary.LittleEndian.PutUint16(b[9:], uint16(ev))
	binary.LittleEndian.PutUint16(b[11:], uint16(pad))
}

// writeStates writes the sorted states, each against its base state when
// base (sorted) holds its id, and returns their hash. It is the reference
// writeStatesFast is held to; FinishDelta uses it only under refWrite.
func (e *Encoder) writeStates(tick uint32, base []State) uint64 {
	h := hashSeed(tick, len(e.states))
	prev, bi := uint32(0), 0
	for i := range e.states {
		s := &e.states[i]
		e.bw.writeEG(uint64(s.ID-prev-1), kGap)
		e.bw.writeEG(uint64(s.Age), kAge)
		if b := lookup(base, &bi, s.ID); b != nil {
			writeDelta(&e.bw, b, s, tick)
		} else {
			writeFull(&e.bw, s)
		}
		h = stateHash(h, s)
		prev = s.ID
	}
	return h
}

var posBits = [3]uint{bitsPosXZ3, bitsPosY3, bitsPosXZ3}

func writeFull(w *bitWriter, s *State) {
	for k, n := range posBits {
		w.write(s.Pos[k], n)
	}
	w.write(s.Quat, 32)
	for _, v := range s.Vel {
		w.write(uint32(v), bitsVel)
	}
	w.write(uint32(s.Type), bitsType)
	w.write(uint32(s.Flags), bitsFlags3)
}

// writeDelta writes s against b: the changed-field mask, then each changed
// field. Position is a residual against b's position moved by b's velocity
// for the ticks between them (predict).
func writeDelta(w *bitWriter, b, s *State, tick uint32) {
	var mask uint32
	var res [3]int64
	for k := range res {
		if res[k] = int64(s.Pos[k]) - predict(b, k, tick-b.Tick); res[k] != 0 {
			mask |= maskPos
		}
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
	w.write(mask, bitsMask)
	if mask&maskPos != 0 {
		for _, r := range res {
			w.writeEG(zigzag(r), kPos)
		}
	}
	if mask&maskVel != 0 {
		for k := range s.Vel {
			w.writeEG(zigzag(int64(s.Vel[k])-int64(b.Vel[k])), kVel)
		}
	}
	if mask&maskQuat != 0 {
		writeQuatDelta(w, b.Quat, s.Quat)
	}
	if mask&maskMeta != 0 {
		w.write(uint32(s.Type), bitsType)
		w.write(uint32(s.Flags), bitsFlags3)
	}
}

// writeQuatDelta writes q against base: one bit, set when the omitted
// component is the same, followed by the three code differences; clear,
// followed by q's 32 bits.
func writeQuatDelta(w *bitWriter, base, q uint32) {
	if q>>30 != base>>30 {
		w.write(0, 1)
		w.write(q, 32)
		return
	}
	w.write(1, 1)
	qc, bc := quatCodes(q), quatCodes(base)
	for i := range qc {
		w.writeEG(zigzag(int64(qc[i])-int64(bc[i])), kQuat)
	}
}

// DecodeRing is Decode for a peer that keeps a baseline ring: it reads
// versions 1 and 2 as Decode does, and a version-3 body of the snapshot at
// tick against ring's views. A version-3 body that decodes leaves its view
// in ring; delta says it was a delta. Records and Events read it back.
func (d *Decoder) DecodeRing(flags uint8, body []byte, tick uint32, ring *Ring) (entities int, delta bool, err error) {
	return d.walkRing(flags, body, tick, ring, true)
}

// CheckRing is DecodeRing without materialising records (the swarm's
// path); the verdict, count, error and ring update are the same.
func (d *Decoder) CheckRing(flags uint8, body []byte, tick uint32, ring *Ring) (entities int, delta bool, err error) {
	return d.walkRing(flags, body, tick, ring, false)
}

func (d *Decoder) walkRing(flags uint8, body []byte, tick uint32, ring *Ring, keep bool) (int, bool, error) {
	d.recs, d.evs = d.recs[:0], d.evs[:0]
	raw, err := d.plain(flags, body)
	if err != nil {
		return 0, false, err
	}
	if len(raw) == 0 || raw[0] != VersionDelta {
		n, err := d.walkRaw(raw, keep)
		return n, false, err
	}
	return d.walkV3(raw, tick, ring, keep)
}

// walkV3 decodes a version-3 body: header, entity section, events; on
// success the view it leaves is pushed into ring.
func (d *Decoder) walkV3(raw []byte, tick uint32, ring *Ring, keep bool) (int, bool, error) {
	if len(raw) < HeaderSizeV3 {
		return 0, false, fmt.Errorf("snapshot: %d bytes: %w", len(raw), ErrHeader)
	}
	back, want := binary.LittleEndian.Uint16(raw[1:]), binary.LittleEndian.Uint32(raw[3:])
	n, nev, pad := int(binary.LittleEndian.Uint16(raw[7:])), int(binary.LittleEndian.Uint16(raw[9:])), int(binary.LittleEndian.Uint16(raw[11:]))
	ents := len(raw) - HeaderSizeV3 - nev*EventSize - pad
	if ents < 0 {
		return 0, false, fmt.Errorf("snapshot: %d bytes, header says %d events + %d pad after a %d-byte header: %w",
			len(raw), nev, pad, HeaderSizeV3, ErrLength)
	}
	var base []State
	if back > 0 {
		v := ring.find(tick - uint32(back))
		if v == nil {
			return 0, false, fmt.Errorf("snapshot: tick %d: delta against tick %d: %w", tick, tick-uint32(back), ErrBaseline)
		}
		base = v.states
	}
	sec, evs := raw[HeaderSizeV3:HeaderSizeV3+ents], raw[HeaderSizeV3+ents:]
	if !d.refOnly && d.eventsV3(evs, nev, keep) == nil {
		if h, ok := d.decodeView(sec, n, base, tick, keep); ok && hashFinal(h) == want {
			return d.pushView(tick, ring, keep, n), back > 0, nil
		}
	}
	// Not accepted by the fast path: the reference path gives the verdict
	// and names the error.
	d.recs, d.evs = d.recs[:0], d.evs[:0]
	d.slow++
	return d.walkV3Ref(sec, evs, n, nev, base, tick, want, ring, keep, back > 0)
}

// pushView pushes the view decodeView built into ring and, when keep,
// materialises the records; it returns n.
func (d *Decoder) pushView(tick uint32, ring *Ring, keep bool, n int) int {
	d.view = ring.push(tick, d.view)
	if keep {
		for i := range d.states {
			d.recs = append(d.recs, d.states[i].Record())
		}
	}
	return n
}

// walkV3Ref is walkV3's reference path: readStates, the hash, the events,
// then mergeView, each error named as it is found.
func (d *Decoder) walkV3Ref(sec, evs []byte, n, nev int, base []State, tick, want uint32, ring *Ring, keep, delta bool) (int, bool, error) {
	h, err := d.readStates(sec, n, base, tick)
	if err != nil {
		return 0, false, err
	}
	if got := hashFinal(h); got != want {
		return 0, false, fmt.Errorf("snapshot: tick %d: states hash to %08x, body says %08x: %w", tick, got, want, ErrDelta)
	}
	if err := d.eventsV3(evs, nev, keep); err != nil {
		return 0, false, err
	}
	d.view = mergeView(d.view, base, d.states, d.despawns, tick)
	return d.pushView(tick, ring, keep, n), delta, nil
}

// eventsV3 checks the events as version 2 does and gathers the despawns,
// which leave the view.
func (d *Decoder) eventsV3(evs []byte, nev int, keep bool) error {
	if err := d.events(evs, nev, keep); err != nil {
		return err
	}
	d.despawns = d.despawns[:0]
	for i := 0; i < nev; i++ {
		if evs[i*EventSize] == EventDespawn {
			d.despawns = append(d.despawns, binary.LittleEndian.Uint32(evs[i*EventSize+1:]))
		}
	}
	return nil
}

// readStates decodes n states from the entity section b against base into
// d.states and returns their hash; b must be used up to its last byte,
// whose unused bits are zero.
func (d *Decoder) readStates(b []byte, n int, base []State, tick uint32) (uint64, error) {
	r := bitReader{b: b}
	h := hashSeed(tick, n)
	prev, bi := uint64(0), 0
	d.states = d.states[:0]
	for i := 0; i < n; i++ {
		id := prev + r.readEG(kGap) + 1
		age := r.readEG(kAge)
		if id > math.MaxUint32 || age > math.MaxUint8 {
			return 0, fmt.Errorf("snapshot: entity %d: id %d / age %d out of range: %w", i, id, age, ErrDelta)
		}
		s := State{ID: uint32(id), Age: uint8(age)}
		var err error
		if b := lookup(base, &bi, s.ID); b != nil {
			err = readDelta(&r, b, &s, tick)
		} else {
			readFull(&r, &s)
		}
		if err == nil {
			err = checkState(&r, &s)
		}
		if err != nil {
			return 0, fmt.Errorf("snapshot: entity %d (id %d): %w", i, s.ID, err)
		}
		h = stateHash(h, &s)
		d.states = append(d.states, s)
		prev = id
	}
	if !r.rest() {
		return 0, fmt.Errorf("snapshot: entity section of %d bytes does not end after %d entities: %w", len(b), n, ErrDelta)
	}
	return h, nil
}

// checkState is the rule every decoded state meets: the stream did not end
// inside it, its type is not 0 and its quaternion is a unit one.
func checkState(r *bitReader, s *State) error {
	c := quatCodes(s.Quat)
	switch {
	case r.bad:
		return fmt.Errorf("the entity section ends inside it: %w", ErrDelta)
	case s.Type == 0:
		return fmt.Errorf("zero type: %w", ErrDelta)
	case !quatCodesValid(c[0], c[1], c[2]):
		return fmt.Errorf("orientation is not a unit quaternion: %w", ErrDelta)
	}
	return nil
}

func readFull(r *bitReader, s *State) {
	for k, n := range posBits {
		s.Pos[k] = uint32(r.read(n))
	}
	s.Quat = uint32(r.read(32))
	for k := range s.Vel {
		s.Vel[k] = uint16(r.read(bitsVel))
	}
	s.Type = uint8(r.read(bitsType))
	s.Flags = uint8(r.read(bitsFlags3))
}

// readDelta reads s against b. A mask bit set on a field that did not
// change is an error: an encoding has one form, so a fuzzed body cannot
// decode to what another body does.
func readDelta(r *bitReader, b, s *State, tick uint32) error {
	*s = State{ID: s.ID, Age: s.Age, Pos: b.Pos, Quat: b.Quat, Vel: b.Vel, Type: b.Type, Flags: b.Flags}
	mask := r.read(bitsMask)
	if err := readPos(r, b, s, tick, mask&maskPos != 0); err != nil {
		return err
	}
	if mask&maskVel != 0 {
		if err := readVel(r, b, s); err != nil {
			return err
		}
	}
	if mask&maskQuat != 0 {
		if err := readQuat(r, b, s); err != nil {
			return err
		}
	}
	if mask&maskMeta != 0 {
		s.Type, s.Flags = uint8(r.read(bitsType)), uint8(r.read(bitsFlags3))
		if !r.bad && s.Type == b.Type && s.Flags == b.Flags {
			return fmt.Errorf("type and flags flagged changed but equal: %w", ErrDelta)
		}
	}
	return nil
}

// readPos sets s's position: b's predicted position plus the residuals
// when sent, which must not all be zero and must land in range.
func readPos(r *bitReader, b, s *State, tick uint32, sent bool) error {
	zero := true
	for k, n := range posBits {
		p := predict(b, k, tick-b.Tick)
		if sent {
			res := unzigzag(r.readEG(kPos))
			zero = zero && res == 0
			p += res
		}
		if p < 0 || p >= 1<<n {
			return fmt.Errorf("position code %d of axis %d out of range: %w", p, k, ErrDelta)
		}
		s.Pos[k] = uint32(p)
	}
	if sent && zero && !r.bad {
		return fmt.Errorf("position flagged changed with zero residuals: %w", ErrDelta)
	}
	return nil
}

func readVel(r *bitReader, b, s *State) error {
	for k := range s.Vel {
		v := int64(b.Vel[k]) + unzigzag(r.readEG(kVel))
		if v < 0 || v >= 1<<bitsVel {
			return fmt.Errorf("velocity code %d out of range: %w", v, ErrDelta)
		}
		s.Vel[k] = uint16(v)
	}
	if !r.bad && s.Vel == b.Vel {
		return fmt.Errorf("velocity flagged changed but equal: %w", ErrDelta)
	}
	return nil
}

func readQuat(r *bitReader, b, s *State) error {
	if r.read(1) == 0 {
		s.Quat = uint32(r.read(32))
		if !r.bad && s.Quat>>30 == b.Quat>>30 {
			return fmt.Errorf("orientation sent whole with an unchanged q_index: %w", ErrDelta)
		}
		return nil
	}
	bc := quatCodes(b.Quat)
	q := b.Quat &^ (1<<30 - 1)
	for i, sh := range [3]uint{20, 10, 0} {
		c := int64(bc[i]) + unzigzag(r.readEG(kQuat))
		if c < 0 || c > 1023 {
			return fmt.Errorf("orientation code %d out of range: %w", c, ErrDelta)
		}
		q |= uint32(c) << sh
	}
	if !r.bad && q == b.Quat {
		return fmt.Errorf("orientation flagged changed but equal: %w", ErrDelta)
	}
	s.Quat = q
	return nil
}
