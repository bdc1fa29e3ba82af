package server

import (
	"cmp"
	"math"
	"math/bits"
	"slices"

	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// neverSentStaleness is the staleness (ticks) given to an entity a peer has
// never been sent: high enough to go out promptly, finite so that a burst of
// newcomers cannot starve entities already waiting.
const neverSentStaleness = 120

// priorityRefM is the distance at which an entity's weight halves.
const priorityRefM = 1000.0

// sentMark remembers when an entity (by slot) was last sent to a peer; a
// different id in the slot means the slot was reused and the entity is new.
type sentMark struct {
	id   uint32
	tick uint32
}

// Interest is one peer's snapshot scheduling state. Every field is owned by
// the peer: building snapshots for different peers in parallel touches no
// shared mutable state, which is why the bytes do not depend on the worker
// count.
type Interest struct {
	sent   []sentMark
	cands  []near      // entities within the interest radius (sensing output)
	order  []candidate // scratch for the priority sort
	ranks  []uint64    // order's ranks, reordered by the selection
	ties   []candidate // scratch for markBest: the candidates ranked at its threshold
	picked []uint64    // a delta peer's winners, a bit per id rank (appendByID)
	Msg    []byte      // the Snapshot message built this tick
	Sent   int         // records in Msg
	InView int         // candidates this tick (own entity excluded)
	Events int         // events in Msg
	built  bool        // lastBuild is set
	// lastBuild is the tick of the previous build: events since then are
	// this build's (the governor may skip the ticks between).
	lastBuild uint32
	evs       []snapshot.Event
	// AckInputs: the peer asked for input acknowledgements (v1.1
	// Features); HaveAck, AckSeq and AckTick are the acknowledgement the
	// next build carries, set by the server before it (nothing applied
	// yet: HaveAck false, and the snapshot goes without one).
	AckInputs       bool
	HaveAck         bool
	AckSeq, AckTick uint32
	// Deltas: the peer asked for delta bodies (sg-entities/3, Features
	// snapshot_deltas); HaveSnapAck and SnapAck are the newest snapshot
	// tick it acknowledged in an Input. ring holds the views of what it
	// was sent, the baselines a delta is taken against; nDeltas counts the
	// deltas built (the corrupt_delta_every_nth fault's clock).
	Deltas      bool
	HaveSnapAck bool
	SnapAck     uint32
	// Delta: the last build was a delta (for tests and metrics).
	Delta   bool
	ring    snapshot.Ring
	nDeltas int
}

// TakeSnapshotAck records a snapshot acknowledgement from the peer's
// Input: the newest wins (wrap-safe), an older one arriving late is
// ignored.
func (in *Interest) TakeSnapshotAck(tick uint32) {
	if !in.HaveSnapAck || int32(tick-in.SnapAck) > 0 {
		in.HaveSnapAck, in.SnapAck = true, tick
	}
}

// ackBytes is what the input acknowledgement adds to this peer's header.
func (in *Interest) ackBytes() int {
	if in.AckInputs && in.HaveAck {
		return proto.SnapshotAckSize
	}
	return 0
}

type candidate struct {
	rank uint64 // rankOf(priority)
	id   uint32
	slot int32
}

// SnapshotParams are the per-server inputs to a build.
type SnapshotParams struct {
	Tick        uint32
	BudgetBytes int // whole Snapshot message; 0 unlimited
	Compress    bool
	Pad         []byte // inflate_snapshot_bytes / fatten_records_bytes fault; nil normally
	// PadInBudget makes the pad count against BudgetBytes (fatten_records_bytes):
	// fewer records fit, the message size holds — how a fatter record
	// encoding looks under a binding budget.
	PadInBudget bool
	// Records holds every live entity's record, encoded once this tick
	// (EncodeRecords), indexed by slot; a peer's build copies them and
	// patches its own flag and age. States are the same entities'
	// version-3 codes, for the peers that take deltas.
	Records [][snapshot.RecordSize]byte
	States  []snapshot.State
	// ByID lists the live slots in entity id order and IDRank gives each
	// live slot's index in it (-1 for any other slot), set with States: a
	// delta peer appends its states in id order through them, so the
	// encoder need not sort them (appendByID).
	ByID, IDRank []int32
	// CorruptDeltaEvery (the corrupt_delta_every_nth fault): every Nth
	// delta built for a peer has one bit of its entity section flipped.
	CorruptDeltaEvery int
	// Events are the recent events in the order they happened (the Sim's
	// ring); a peer takes those since its previous build. Effects are sent
	// within EventRadius of the peer's entity.
	Events      []tickEvent
	EventRadius float64
	// Ready, when set, is called on the goroutine that called Build
	// (worker 0) once for each viewer, by index, after the viewer's
	// message is built and before Build returns: with more than one
	// worker, while other viewers are still being built.
	Ready func(i int)
}

// EncodeRecords encodes the record of every slot in live into recs
// (grown to the world's slot count) using workers, and returns recs.
func EncodeRecords(w *World, live []int32, recs [][snapshot.RecordSize]byte, run func(n, chunk int, fn func(worker, i int))) [][snapshot.RecordSize]byte {
	recs, _ = encodeAll(w, live, recs, nil, run)
	return recs
}

// encodeAll is EncodeRecords that also quantises every live entity's
// version-3 state into states (grown alike) when states is non-nil.
func encodeAll(w *World, live []int32, recs [][snapshot.RecordSize]byte, states []snapshot.State, run func(n, chunk int, fn func(worker, i int))) ([][snapshot.RecordSize]byte, []snapshot.State) {
	if len(recs) < w.Slots() {
		recs = append(recs, make([][snapshot.RecordSize]byte, w.Slots()-len(recs))...)
	}
	if states != nil && len(states) < w.Slots() {
		states = append(states, make([]snapshot.State, w.Slots()-len(states))...)
	}
	run(len(live), 64, func(_, i int) {
		var r snapshot.Record
		w.At(live[i]).record(&r)
		snapshot.EncodeRecord(&recs[live[i]], &r)
		if states != nil {
			states[live[i]] = snapshot.Quantize(&r)
		}
	})
	return recs, states
}

// MaxRecords is how many records fit the budget after the message header
// and nev events (0 budget: the format's limit).
func (p *SnapshotParams) MaxRecords(nev int) int { return p.maxRecords(nev, 0) }

// maxRecords is MaxRecords for a header extra bytes longer (the input
// acknowledgement of v1.1), so the acknowledged message keeps its budget.
func (p *SnapshotParams) maxRecords(nev, extra int) int {
	if p.BudgetBytes == 0 {
		return math.MaxUint16
	}
	budget := p.BudgetBytes - proto.SnapshotHeaderSize - extra
	if p.PadInBudget {
		budget -= len(p.Pad)
	}
	return snapshot.RecordsFitting(budget, nev)
}

// MaxEvents is how many events a snapshot may carry: a quarter of the
// budget, so events never crowd out the records (0 budget: the format's
// limit).
func (p *SnapshotParams) MaxEvents() int {
	if p.BudgetBytes == 0 {
		return math.MaxUint16
	}
	return p.BudgetBytes / 4 / snapshot.EventSize
}

// pickEvents selects the peer's events since its previous build, in the
// order they happened: the despawn of an entity it was sent from that slot
// (whose mark is then cleared, so a reused slot is new to it), and effects
// within the event radius of its entity or involving it, up to MaxEvents.
func (in *Interest) pickEvents(me *Entity, p *SnapshotParams) {
	in.evs = in.evs[:0]
	from := len(p.Events)
	for from > 0 && (!in.built && p.Events[from-1].tick == p.Tick || in.built && p.Events[from-1].tick > in.lastBuild) {
		from--
	}
	in.built, in.lastBuild = true, p.Tick
	limit := p.MaxEvents()
	r2 := p.EventRadius * p.EventRadius
	for i := from; i < len(p.Events) && len(in.evs) < limit; i++ {
		te := &p.Events[i]
		if te.ev.Kind == snapshot.EventDespawn {
			if int(te.slot) < len(in.sent) && in.sent[te.slot].id == te.ev.ID {
				in.sent[te.slot] = sentMark{}
				in.evs = append(in.evs, te.ev)
			}
			continue
		}
		if te.ev.ID == me.ID || te.ev.Other == me.ID || dist2(&te.pos, &me.Pos) <= r2 {
			in.evs = append(in.evs, te.ev)
		}
	}
}

// Sense gathers the entities within radius of the peer's entity into
// in.cands. It runs after the grid's Rebuild, with no entity moved since.
func (in *Interest) Sense(w *World, g *Grid, own int32, radius float64) {
	in.cands = g.QueryNear(w.At(own).Pos, radius, in.cands[:0])
}

// Build writes this tick's Snapshot message for the peer owning slot own
// into in.Msg. The peer's own entity always goes first; the rest of the
// budget goes to the candidates of highest priority, where priority is
// staleness (ticks since last sent) times a distance weight
// 1/(1 + d/priorityRefM). Sending an entity resets its staleness, so an
// entity left out keeps gaining priority until it wins: low-priority
// entities update less often but are never starved. Ties break on entity
// id, so the order — and the bytes — are a pure function of world state.
func (in *Interest) Build(w *World, own int32, enc *snapshot.Encoder, p *SnapshotParams) {
	me := w.At(own)
	in.growSent(w.Slots())
	in.pickEvents(me, p)
	in.order, in.ranks = in.order[:0], in.ranks[:0]
	for _, c := range in.cands {
		if c.slot == own {
			continue
		}
		d := math.Sqrt(c.d2)
		r := rankOf(in.staleness(c.slot, c.id, p.Tick) / (1 + d/priorityRefM))
		in.order = append(in.order, candidate{rank: r, id: c.id, slot: c.slot})
		in.ranks = append(in.ranks, r)
	}
	in.InView = len(in.order)
	room := p.maxRecords(len(in.evs), in.ackBytes()+in.headerExtra()) - 1 // the own entity
	enc.Reset()
	if !in.Deltas || !in.appendByID(enc, p, own, room) {
		if room < len(in.order) {
			// A delta body is written in id order whatever the order
			// here, so a delta peer needs only which candidates win.
			in.order = topK(in.order, max(room, 0), !in.Deltas, in.ranks)
		}
		if room >= 0 {
			in.appendRecord(enc, p, own, me.ID, true)
		}
		for _, c := range in.order {
			in.appendRecord(enc, p, c.slot, c.id, false)
		}
	}
	for i := range in.evs {
		enc.AppendEvent(&in.evs[i])
	}
	in.Events = len(in.evs)
	flags, body := in.finish(enc, p)
	h := proto.SnapshotHeader{Tick: p.Tick, Flags: flags}
	if in.AckInputs && in.HaveAck {
		h.Flags |= proto.SnapshotFlagInputAck
		h.InputSeq, h.InputTick = in.AckSeq, in.AckTick
	}
	in.Msg = proto.AppendSnapshotHeader(in.Msg[:0], h)
	in.Msg = append(in.Msg, body...)
}

// headerExtra is what a version-3 body header adds to version 2's: a
// delta peer's budget is reckoned as a version-2 peer's otherwise, so it is
// sent the same entities at the same rate and the bytes a delta saves are
// saved, not spent on more records (docs/snapshot-format.md, "Version 3").
func (in *Interest) headerExtra() int {
	if in.Deltas {
		return snapshot.HeaderSizeV3 - snapshot.HeaderSize
	}
	return 0
}

// finish completes the body: version 2, or for a delta peer version 3
// against its acknowledged snapshot (full when there is none or it has left
// the ring). in.Sent is the records (or states) it carries.
func (in *Interest) finish(enc *snapshot.Encoder, p *SnapshotParams) (uint8, []byte) {
	if !in.Deltas {
		in.Sent = enc.Len()
		return enc.Finish(p.Pad, p.Compress)
	}
	in.Sent = enc.States()
	corrupt := false
	if p.CorruptDeltaEvery > 0 && in.HaveSnapAck && in.ring.Has(in.SnapAck) {
		in.nDeltas++
		corrupt = in.nDeltas%p.CorruptDeltaEvery == 0
	}
	if in.HaveSnapAck {
		enc.Release(&in.ring, in.SnapAck) // views older than the ack are no baseline any more
	}
	flags, body, d := enc.FinishDelta(p.Tick, &in.ring, in.SnapAck, in.HaveSnapAck, p.Pad, p.Compress, corrupt)
	in.Delta = d.IsDelta
	return flags, body
}

// appendRecord appends the tick's encoded record of slot (flagged as the
// peer's own when own, aged from this peer's last send) and marks it sent:
// a version-2 record, or a delta peer's version-3 state.
func (in *Interest) appendRecord(enc *snapshot.Encoder, p *SnapshotParams, slot int32, id uint32, own bool) {
	m := &in.sent[slot]
	age := uint8(0)
	if m.id == id {
		age = uint8(min(p.Tick-m.tick, 255))
	}
	var flags uint8
	if own {
		flags = snapshot.FlagOwn
	}
	*m = sentMark{id: id, tick: p.Tick}
	if in.Deltas {
		st := p.States[slot]
		st.Flags |= flags
		st.Age = age
		enc.AppendState(&st)
		return
	}
	enc.AppendEncoded(&p.Records[slot], flags, age)
}

// appendByID appends a delta peer's states in id order, its own entity's
// when room ≥ 0 and the room candidates of in.order that go out first,
// and reports whether it did: only when the tick's ranking is set
// (p.IDRank), which covers every live slot, and so the peer's own and
// every candidate of this tick's grid. A version-3 body is written in id
// order, and the encoder sorted what came in any other: marking each
// winner's rank in a bitmap and reading the bitmap back in order costs a
// peer 10 words for a 640-entity world instead of that sort
// (docs/server.md, "The team picture and the per-peer sort"). The winners
// are marked straight from the candidates (markBest), not first moved to
// the front of in.order, which is left as it was built.
func (in *Interest) appendByID(enc *snapshot.Encoder, p *SnapshotParams, own int32, room int) bool {
	if p.IDRank == nil {
		return false
	}
	words := (len(p.ByID) + 63) / 64
	if cap(in.picked) < words {
		in.picked = make([]uint64, words)
	}
	in.picked = in.picked[:words]
	clear(in.picked)
	if room >= 0 {
		in.mark(p.IDRank[own])
	}
	in.markBest(max(room, 0), p.IDRank)
	for wi, word := range in.picked {
		for word != 0 {
			slot := p.ByID[wi<<6|bits.TrailingZeros64(word)]
			word &= word - 1
			in.appendRecord(enc, p, slot, p.States[slot].ID, slot == own)
		}
	}
	return true
}

// markBest marks the id rank (idRank, by slot) of the k candidates of
// in.order that go out first: topK's set, found with the same k-th lowest
// rank (in.ranks holds in.order's ranks, and is reordered), and then
// every candidate ranked below it and, of those equal to it, the lowest
// ids. One pass over the candidates, without moving them: topK's takeBest
// swapped each winner forward, a branch mispredicted for about one
// candidate in eight, before appendByID read the winners back.
func (in *Interest) markBest(k int, idRank []int32) {
	c := in.order
	if k >= len(c) {
		for i := range c {
			in.mark(idRank[c[i].slot])
		}
		return
	}
	if k == 0 {
		return
	}
	t := kthSmallest(in.ranks, k)
	below, ties := 0, in.ties[:0]
	for i := range c {
		if c[i].rank < t {
			in.mark(idRank[c[i].slot])
			below++
		} else if c[i].rank == t {
			ties = append(ties, c[i])
		}
	}
	if need := k - below; need < len(ties) { // more ties than places: the lowest ids win
		slices.SortFunc(ties, func(a, b candidate) int { return cmp.Compare(a.id, b.id) })
		ties = ties[:need]
	}
	for i := range ties {
		in.mark(idRank[ties[i].slot])
	}
	in.ties = ties
}

// mark sets id rank r in the bitmap of a peer's winners.
func (in *Interest) mark(r int32) { in.picked[r>>6] |= 1 << (r & 63) }

func (in *Interest) staleness(slot int32, id uint32, tick uint32) float64 {
	m := in.sent[slot]
	if m.id != id {
		return neverSentStaleness
	}
	return float64(tick - m.tick)
}

func (in *Interest) growSent(n int) {
	if len(in.sent) < n {
		in.sent = append(in.sent, make([]sentMark, n-len(in.sent))...)
	}
}

// before reports whether a goes out before b: higher priority first, then
// lower id. It is a strict total order, so the selection is deterministic.
func before(a, b *candidate) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.id < b.id)
}

// rankOf is a priority as an integer that orders the other way: a lower
// rank goes out first. Priorities are finite and not negative (a staleness
// over a weight of at least 1), and the bits of a non-negative float64
// order as its value, so comparing ranks is comparing priorities exactly.
func rankOf(prio float64) uint64 { return ^math.Float64bits(prio) }

// topK moves the k candidates that go out first to the front of c, in
// order (in no set order when ordered is false), and returns them; ranks
// holds c's ranks, index for index, and is reordered. It finds the k-th
// lowest rank by a quickselect over the ranks alone (8-byte integers,
// partitioned without a branch on the comparison), then gathers the
// candidates below it and, of those equal to it, the lowest ids. A
// quickselect over the candidates themselves, comparing a float then an
// id with a branch mispredicted about half the time, was the largest part
// of a peer's selection; a heap before it paid log k swaps for most
// candidates. The winners are the same set either way: before is a strict
// total order.
func topK(c []candidate, k int, ordered bool, ranks []uint64) []candidate {
	if k <= 0 {
		return c[:0]
	}
	if k < len(c) {
		takeBest(c, k, kthSmallest(ranks, k))
	}
	h := c[:k]
	if ordered {
		slices.SortFunc(h, func(a, b candidate) int {
			switch {
			case before(&a, &b):
				return -1
			case before(&b, &a):
				return 1
			}
			return 0
		})
	}
	return h
}

// takeBest moves to the front of c the k candidates that go out first,
// given t, the k-th lowest rank among them: every rank below t, then of
// the ranks equal to t the lowest ids.
func takeBest(c []candidate, k int, t uint64) {
	w := 0
	for i := range c {
		if c[i].rank < t {
			c[w], c[i] = c[i], c[w]
			w++
		}
	}
	e := w
	for i := w; i < len(c); i++ {
		if c[i].rank == t {
			c[e], c[i] = c[i], c[e]
			e++
		}
	}
	if e > k { // more ties than places: the lowest ids win
		slices.SortFunc(c[w:e], func(a, b candidate) int { return cmp.Compare(a.id, b.id) })
	}
}

// kthSmallest returns the k-th smallest of a (1 ≤ k ≤ len(a)), reordering
// a: a quickselect around a median-of-three pivot that recurses only into
// the side holding it, O(n) on average.
func kthSmallest(a []uint64, k int) uint64 {
	lo, hi := 0, len(a)-1
	for hi-lo > 16 {
		p := partitionRanks(a, lo, hi)
		switch {
		case p == k-1:
			return a[p]
		case p < k-1:
			lo = p + 1
		default:
			hi = p - 1
		}
	}
	slices.Sort(a[lo : hi+1]) // a short range: sorted, the k-th is in place
	return a[k-1]
}

// partitionRanks orders a[lo..hi] around a median-of-three pivot: the
// values below it, then it (at the returned index), then the rest. The
// loop has no branch on the comparison (Lomuto's scheme with the swap done
// every time and the boundary moved by the comparison's 0 or 1), so the
// half of them a branch predictor would miss cost nothing.
func partitionRanks(a []uint64, lo, hi int) int {
	mid := lo + (hi-lo)/2
	if a[mid] < a[lo] {
		a[mid], a[lo] = a[lo], a[mid]
	}
	if a[hi] < a[lo] {
		a[hi], a[lo] = a[lo], a[hi]
	}
	if a[hi] < a[mid] {
		a[hi], a[mid] = a[mid], a[hi]
	}
	a[mid], a[hi] = a[hi], a[mid] // the median as pivot, at hi
	pivot, s := a[hi], a[lo:hi]
	i := 0
	for j := range s {
		x := s[j]
		s[j] = s[i]
		s[i] = x
		i += b2i(x < pivot)
	}
	a[lo+i], a[hi] = a[hi], a[lo+i]
	return lo + i
}

// b2i is 1 for true, 0 for false (compiled to a flag set, not a branch).
func b2i(b bool) int {
	var i int
	if b {
		i = 1
	}
	return i
}

func dist2(a, b *[3]float64) float64 {
	dx, dy, dz := a[0]-b[0], a[1]-b[1], a[2]-b[2]
	return dx*dx + dy*dy + dz*dz
}
