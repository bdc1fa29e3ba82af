package snapshot

import "slices"

// BodyFormatV3 names version 3, the delta format. A server never announces
// it in Welcome: it sends version-3 bodies only to a peer that asked
// (proto.FeatureSnapshotDeltas), and every body says its version in its
// first byte, so a /2 decoder registration reads all three versions.
const BodyFormatV3 = "sg-entities/3"

// VersionDelta is the first byte of a version-3 body.
const VersionDelta = 3

// Version 3 layout and limits (docs/snapshot-format.md, "Version 3").
const (
	// HeaderSizeV3: version, base_back u16, state_hash u32, entity_count
	// u16, event_count u16, pad_len u16.
	HeaderSizeV3 = 13
	// RingSize is how many sent (server) or decoded (client) snapshots a
	// peer keeps as possible baselines.
	RingSize = 32
	// ViewKeepTicks: an entity not carried for this many ticks leaves the
	// view a delta is taken against (both sides drop it the same way).
	ViewKeepTicks = 240
	// MaxViewStates bounds a view: a merge that would exceed it keeps only
	// the snapshot's own entities, so a peer's ring never holds more than
	// RingSize·MaxViewStates states.
	MaxViewStates = 2048
)

// Version-3 quantisation. Ranges are those of version 2 (they cover the
// reference world: |x|, |z| ≤ 120 km, y from the terrain to 14 km, speeds
// ≤ 480 m/s); the position step is coarser.
const (
	PosStepV3  = 1.0 / 8 // metres: max error 1/16 m per axis
	bitsPosXZ3 = 21
	bitsPosY3  = 17
	bitsFlags3 = 3                  // FlagsKnown
	velZero    = 1 << (bitsVel - 1) // the code of 0 m/s
)

// State is one entity as version 3 carries it: its quantised codes. Tick is
// the tick of the snapshot that last carried it (in a view); Age is the
// per-message age, as in a Record.
type State struct {
	ID    uint32
	Pos   [3]uint32 // codes of x, y, z at PosStepV3
	Quat  uint32    // q_index<<30 | a<<20 | b<<10 | c (smallest three, as version 2)
	Vel   [3]uint16 // codes at VelStep
	Type  uint8
	Flags uint8
	Age   uint8
	Tick  uint32
}

// Quantize returns r's version-3 codes (values outside a range clamp, as in
// version 2); Tick is left 0.
func Quantize(r *Record) State {
	idx, c := packQuat(r.Rot)
	var s State
	s.ID, s.Type, s.Flags, s.Age = r.ID, r.Type, r.Flags&FlagsKnown, r.Age
	s.Pos = [3]uint32{quantize(float64(r.Pos[0]), PosXZMin, PosStepV3, bitsPosXZ3),
		quantize(float64(r.Pos[1]), PosYMin, PosStepV3, bitsPosY3),
		quantize(float64(r.Pos[2]), PosXZMin, PosStepV3, bitsPosXZ3)}
	s.Quat = idx<<30 | c[0]<<20 | c[1]<<10 | c[2]
	for k, v := range r.Vel {
		s.Vel[k] = uint16(quantize(float64(v), -VelMax, VelStep, bitsVel))
	}
	return s
}

// Record dequantizes s (its quaternion must be valid: decoded states are).
func (s *State) Record() Record {
	q, _ := unpackQuat(s.Quat>>30, quatCodes(s.Quat))
	return Record{ID: s.ID, Type: s.Type, Flags: s.Flags, Age: s.Age, Rot: q,
		Pos: [3]float32{dequantize(s.Pos[0], PosXZMin, PosStepV3), dequantize(s.Pos[1], PosYMin, PosStepV3),
			dequantize(s.Pos[2], PosXZMin, PosStepV3)},
		Vel: [3]float32{dequantize(uint32(s.Vel[0]), -VelMax, VelStep), dequantize(uint32(s.Vel[1]), -VelMax, VelStep),
			dequantize(uint32(s.Vel[2]), -VelMax, VelStep)}}
}

func quatCodes(q uint32) [3]uint32 {
	return [3]uint32{q >> 20 & 1023, q >> 10 & 1023, q & 1023}
}

// predict is where a view's state puts coordinate k dt ticks later: its
// position plus its velocity times dt/60 s, in position codes (the
// velocity step and the position step are both 1/8, so a velocity code step
// moves dt/60 position codes), rounded half up, in integers so both sides
// agree bit for bit.
func predict(base *State, k int, dt uint32) int64 {
	v := int64(base.Vel[k]) - velZero
	return int64(base.Pos[k]) + floorDiv120(2*v*int64(dt)+60)
}

// predictOffset is a multiple of 120 above |2·v·dt + 60| for every velocity
// code and dt (|v| ≤ 2^13, dt < 2^32: under 2^46), so a + predictOffset is
// never negative and its floor quotient is a's plus 2^40.
const predictOffset = 120 << 40

// floorDiv120 is floorDiv(a, 120) for |a| < predictOffset: an unsigned
// division by a constant, which compiles to a multiply and a shift, where
// floorDiv's signed one needs a remainder and a sign test too (predict was
// a tenth of the swarm's decode, BenchmarkRingDecodeOwnBodies).
func floorDiv120(a int64) int64 {
	return int64(uint64(a+predictOffset)/120) - 1<<40
}

// stateHash folds one carried state into h: four 64-bit words of its codes
// and age, each mixed by xor, a multiply by the FNV-64 prime and a
// xor-shift. It detects a delta decoded against the wrong baseline or
// altered in flight (docs/snapshot-format.md gives the words).
func stateHash(h uint64, s *State) uint64 {
	w := [4]uint64{uint64(s.ID) | uint64(s.Pos[0])<<32, uint64(s.Pos[1]) | uint64(s.Pos[2])<<32,
		uint64(s.Quat) | uint64(s.Vel[0])<<32 | uint64(s.Vel[1])<<48,
		uint64(s.Vel[2]) | uint64(s.Type)<<16 | uint64(s.Flags)<<24 | uint64(s.Age)<<32}
	for _, x := range w {
		h = (h ^ x) * 0x100000001b3
		h ^= h >> 29
	}
	return h
}

// hashSeed starts a snapshot's hash from its tick and entity count.
func hashSeed(tick uint32, n int) uint64 {
	return 0xcbf29ce484222325 ^ uint64(tick) ^ uint64(n)<<32
}

func hashFinal(h uint64) uint32 { return uint32(h) ^ uint32(h>>32) }

// view is the entity state a peer holds after one snapshot: what a delta
// in a later snapshot is taken against. States are sorted by ID.
type view struct {
	tick   uint32
	valid  bool
	states []State
}

// Ring is one peer's recent views, the newest RingSize. The server keeps
// one per peer of what it sent; the client one of what it decoded. Its
// storage is reused, so a ring in steady state allocates nothing.
type Ring struct {
	views [RingSize]view
	next  int
}

// Reset forgets every view (a fresh peer), keeping the storage.
func (r *Ring) Reset() {
	for i := range r.views {
		r.views[i].valid = false
	}
	r.next = 0
}

// Has reports whether the ring holds the view of tick.
func (r *Ring) Has(tick uint32) bool { return r.find(tick) != nil }

func (r *Ring) find(tick uint32) *view {
	for i := range r.views {
		if v := &r.views[i]; v.valid && v.tick == tick {
			return v
		}
	}
	return nil
}

// push stores states (sorted) as the view of tick, returning the slice the
// overwritten slot held so the caller can reuse it as scratch. A view of
// the same tick already held is replaced in place.
func (r *Ring) push(tick uint32, states []State) []State {
	slot := r.find(tick)
	if slot == nil {
		slot = &r.views[r.next]
		r.next = (r.next + 1) % RingSize
	}
	old := slot.states
	slot.tick, slot.valid, slot.states = tick, true, states
	return old[:0]
}

// release invalidates the views older than tick (wrap-safe) and appends
// their storage to free: a server whose client has acknowledged tick will
// never take an older baseline (acknowledgements only move forward), so
// only the views from tick on need holding. It returns free.
func (r *Ring) release(tick uint32, free [][]State) [][]State {
	for i := range r.views {
		v := &r.views[i]
		if v.valid && int32(v.tick-tick) < 0 {
			v.valid = false
		}
		if !v.valid && v.states != nil {
			free = append(free, v.states[:0])
			v.states = nil
		}
	}
	return free
}

// mergeView writes into dst (reset) the view after a snapshot of tick that
// carried msg (sorted by ID) against base (nil: a full snapshot): base's
// states that are neither carried, nor despawned, nor older than
// ViewKeepTicks, and every carried state stamped with tick. A merge beyond
// MaxViewStates keeps msg alone. Server and client run this same code.
func mergeView(dst []State, base []State, msg []State, despawned []uint32, tick uint32) []State {
	if n := len(base) + len(msg); cap(dst) < n {
		dst = make([]State, 0, n+n/4) // once per slice, not a doubling per view it grows through
	}
	dst = dst[:0]
	i := 0
	for j := range msg {
		k := i
		for k < len(base) && base[k].ID < msg[j].ID {
			k++
		}
		dst = keepRun(dst, base[i:k], despawned, tick)
		if i = k; i < len(base) && base[i].ID == msg[j].ID {
			i++
		}
		if len(despawned) == 0 || !slices.Contains(despawned, msg[j].ID) {
			s := msg[j]
			s.Tick, s.Age = tick, 0
			dst = append(dst, s)
		}
	}
	dst = keepRun(dst, base[i:], despawned, tick)
	if len(dst) > MaxViewStates {
		dst = msgView(dst, msg, despawned, tick)
	}
	return dst
}

// msgView writes into dst (reset) the view a merge beyond MaxViewStates
// keeps: msg's states that were not despawned, stamped with tick.
func msgView(dst []State, msg []State, despawned []uint32, tick uint32) []State {
	dst = dst[:0]
	for j := range msg {
		if !slices.Contains(despawned, msg[j].ID) {
			s := msg[j]
			s.Tick, s.Age = tick, 0
			dst = append(dst, s)
		}
	}
	return dst
}

// keepRun appends the states of run (base states no message state
// replaces) that neither expired nor were despawned. Most runs lose
// nothing: they are copied whole, which is what keeps a view's merge, once
// per snapshot per peer on both sides, near a memmove of the view.
func keepRun(dst []State, run []State, despawned []uint32, tick uint32) []State {
	whole := len(despawned) == 0
	for k := 0; whole && k < len(run); k++ {
		whole = tick-run[k].Tick < ViewKeepTicks
	}
	if whole {
		return append(dst, run...)
	}
	for k := range run {
		if tick-run[k].Tick < ViewKeepTicks && !slices.Contains(despawned, run[k].ID) {
			dst = append(dst, run[k])
		}
	}
	return dst
}

// lookup finds id in the sorted states from index *i on, advancing *i past
// smaller ids (the message is sorted too, so one pass serves all).
func lookup(states []State, i *int, id uint32) *State {
	for *i < len(states) && states[*i].ID < id {
		*i++
	}
	if *i < len(states) && states[*i].ID == id {
		return &states[*i]
	}
	return nil
}

// zigzag maps a signed residual to an unsigned code (0, −1, 1, −2, …).
func zigzag(v int64) uint64 { return uint64(v<<1) ^ uint64(v>>63) }

func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
