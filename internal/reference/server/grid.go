package server

import (
	"iter"
	"math"
	"math/bits"
	"slices"
)

// Grid is a uniform-grid spatial index over the x/z plane (altitude spans
// a few km while the world spans hundreds, so a 2D grid with a 3D distance
// test is the right shape). It is rebuilt from scratch each tick: a sort of
// (cell, slot) pairs and a table from cell to its run, all in reused
// storage, so a steady-state rebuild does not allocate. Queries are
// read-only and safe to run concurrently after Rebuild.
type Grid struct {
	cell  float64
	inv   float64
	pairs []cellSlot
	spare []cellSlot // sortPairs' other buffer
	at    []placed   // each pair's entity as Rebuild saw it, in pairs' order
	runs  cellRuns
}

// placed is an indexed entity's position and id as of Rebuild: what
// QueryNear reads in the pairs' order instead of each entity's record.
type placed struct {
	pos [3]float64
	id  uint32
}

// near is an entity QueryNear found: its slot, id, and squared distance.
type near struct {
	d2   float64
	id   uint32
	slot int32
}

type cellSlot struct {
	key  uint64
	slot int32
}

type span struct{ start, end int32 }

// cellRuns maps an occupied cell's key to its run of pairs: an
// open-addressing table with linear probing, at most half full, rebuilt
// with the grid. Collide looks up five cells per entity, nearly all of
// them empty, on the loop goroutine alone; through a Go map those lookups
// and the rebuild's inserts were about 0.06 ms of a live tick. An empty
// slot is a span whose end is 0: a run holds at least one pair, so its
// end is at least 1, and every uint64 stays free to be a key.
type cellRuns struct {
	keys  []uint64
	spans []span
	shift uint // 64 - log2(len(keys))
}

// reset empties the table and sizes it for n runs at most. It keeps the
// largest storage it has had, so a population that moves across a power
// of two from tick to tick does not allocate every tick.
func (t *cellRuns) reset(n int) {
	size := 16
	for size < 2*n {
		size *= 2
	}
	if cap(t.keys) < size {
		t.keys, t.spans = make([]uint64, size), make([]span, size)
	}
	t.keys, t.spans = t.keys[:size], t.spans[:size]
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	clear(t.spans)
}

// home is the key's first slot: Fibonacci hashing, whose multiply mixes
// the row (high half) and column (low half) of neighbouring cells into
// different slots.
func (t *cellRuns) home(key uint64) uint64 { return (key * 0x9e3779b97f4a7c15) >> t.shift }

// put adds a run; each key is put once per reset.
func (t *cellRuns) put(key uint64, sp span) {
	mask := uint64(len(t.keys) - 1)
	i := t.home(key)
	for t.spans[i].end != 0 {
		i = (i + 1) & mask
	}
	t.keys[i], t.spans[i] = key, sp
}

// get returns the run of the cell with this key, if the cell is occupied.
func (t *cellRuns) get(key uint64) (span, bool) {
	mask := uint64(len(t.keys) - 1)
	for i := t.home(key); t.spans[i].end != 0; i = (i + 1) & mask {
		if t.keys[i] == key {
			return t.spans[i], true
		}
	}
	return span{}, false
}

// NewGrid returns a grid of square cells of the given size in metres.
func NewGrid(cellM float64) *Grid {
	g := &Grid{cell: cellM, inv: 1 / cellM}
	g.runs.reset(0) // an empty table, for a query before the first Rebuild (the first tick's AI)
	return g
}

func (g *Grid) coord(v float64) int32 { return int32(math.Floor(v * g.inv)) }

func cellKey(cx, cz int32) uint64 { return uint64(uint32(cx))<<32 | uint64(uint32(cz)) }

// Rebuild indexes the given live slots of w, which must be in ascending
// slot order (World.Live's, or a run of it): the order of slots inside a
// cell, which Query and Collide follow, is theirs.
func (g *Grid) Rebuild(w *World, live []int32) {
	g.pairs = g.pairs[:0]
	for _, s := range live {
		p := &w.At(s).Pos
		g.pairs = append(g.pairs, cellSlot{cellKey(g.coord(p[0]), g.coord(p[2])), s})
	}
	g.sortPairs()
	g.at = g.at[:0]
	for _, cs := range g.pairs {
		e := w.At(cs.slot)
		g.at = append(g.at, placed{e.Pos, e.ID})
	}
	g.runs.reset(len(g.pairs))
	for i := 0; i < len(g.pairs); {
		j := i + 1
		for j < len(g.pairs) && g.pairs[j].key == g.pairs[i].key {
			j++
		}
		g.runs.put(g.pairs[i].key, span{int32(i), int32(j)})
		i = j
	}
}

// sortPairs puts the pairs, appended in ascending slot order, in (cell,
// slot) order: a stable sort by cell alone, byte-wise radix, skipping the
// bytes every key shares (most of a cell key's 8: a world spans a few
// hundred cells a side). Both grids are rebuilt every tick on the loop
// goroutine alone, and the comparison sort of (cell, slot) they ran was
// 0.13 ms of the tick (BenchmarkTickDelta's profile).
func (g *Grid) sortPairs() {
	if len(g.pairs) < 2 {
		return
	}
	g.spare = slices.Grow(g.spare[:0], len(g.pairs))[:len(g.pairs)]
	src, dst := g.pairs, g.spare
	for shift := uint(0); shift < 64; shift += 8 {
		var count [256]int32
		for i := range src {
			count[byte(src[i].key>>shift)]++
		}
		if count[byte(src[0].key>>shift)] == int32(len(src)) {
			continue // every key has this byte: the order stands
		}
		var at int32
		for b := range count {
			at, count[b] = at+count[b], at
		}
		for i := range src {
			b := byte(src[i].key >> shift)
			dst[count[b]] = src[i]
			count[b]++
		}
		src, dst = dst, src
	}
	g.pairs, g.spare = src, dst
}

// cells yields the runs of the indexed cells a sphere of radius r around p
// touches, row by row: the walk Query and QueryNear share.
func (g *Grid) cells(p [3]float64, r float64) iter.Seq[span] {
	return func(yield func(span) bool) {
		x0, x1 := g.coord(p[0]-r), g.coord(p[0]+r)
		z0, z1 := g.coord(p[2]-r), g.coord(p[2]+r)
		for cx := x0; cx <= x1; cx++ {
			for cz := z0; cz <= z1; cz++ {
				if sp, ok := g.runs.get(cellKey(cx, cz)); ok && !yield(sp) {
					return
				}
			}
		}
	}
}

// Query appends to out every indexed slot whose position lies within r
// (3D) of p, and returns it. The order is deterministic: cells row by row,
// slots ascending inside a cell.
func (g *Grid) Query(w *World, p [3]float64, r float64, out []int32) []int32 {
	r2 := r * r
	for sp := range g.cells(p, r) {
		for _, cs := range g.pairs[sp.start:sp.end] {
			q := &w.At(cs.slot).Pos
			dx, dy, dz := q[0]-p[0], q[1]-p[1], q[2]-p[2]
			if dx*dx+dy*dy+dz*dz <= r2 {
				out = append(out, cs.slot)
			}
		}
	}
	return out
}

// QueryNear is Query for the entities as Rebuild saw them, with each one's
// id and squared distance from p: the same slots in the same order while
// no entity has moved since Rebuild, read from the grid's own arrays in
// order instead of from entity records scattered over the world (a
// peer's interest query, 128 a tick, ran at the pace of those loads).
func (g *Grid) QueryNear(p [3]float64, r float64, out []near) []near {
	r2 := r * r
	for sp := range g.cells(p, r) {
		at := g.at[sp.start:sp.end]
		for i, cs := range g.pairs[sp.start:sp.end] {
			q := &at[i].pos
			dx, dy, dz := q[0]-p[0], q[1]-p[1], q[2]-p[2]
			if d2 := dx*dx + dy*dy + dz*dz; d2 <= r2 {
				out = append(out, near{d2, at[i].id, cs.slot})
			}
		}
	}
	return out
}

// Collide runs the narrow phase over the grid's broadphase: every pair of
// spheres of radius entityRadiusM that overlap is resolved by World.contact
// (aircraft are pushed apart along the line between centres and take
// relative-speed damage; a projectile strikes; destroyed aircraft respawn,
// so the population does not change while it is measured). It returns the
// number of contacts. The grid's cell must be at least 2·entityRadiusM.
func (g *Grid) Collide(w *World) int {
	const d = 2 * entityRadiusM
	contacts := 0
	for i := range g.pairs {
		sa := g.pairs[i].slot
		cx, cz := int32(g.pairs[i].key>>32), int32(uint32(g.pairs[i].key))
		// Look at this cell (slots after i) and the four "forward"
		// neighbours, so each pair is tested exactly once.
		for _, nb := range [5][2]int32{{0, 0}, {1, -1}, {1, 0}, {1, 1}, {0, 1}} {
			sp, ok := g.runs.get(cellKey(cx+nb[0], cz+nb[1]))
			if !ok {
				continue
			}
			from := sp.start
			if nb == [2]int32{0, 0} {
				from = int32(i) + 1
			}
			for _, cs := range g.pairs[from:sp.end] {
				if w.contact(sa, cs.slot, d) {
					contacts++
				}
			}
		}
	}
	return contacts
}

// separate tests two spheres of diameter d and, on overlap, marks both and
// moves each half the overlap apart.
func separate(a, b *Entity, d float64) bool {
	dx, dy, dz := b.Pos[0]-a.Pos[0], b.Pos[1]-a.Pos[1], b.Pos[2]-a.Pos[2]
	dist2 := dx*dx + dy*dy + dz*dz
	if dist2 >= d*d {
		return false
	}
	a.Collided, b.Collided = true, true
	dist := math.Sqrt(dist2)
	if dist < 1e-6 { // coincident: split along x deterministically
		dx, dy, dz, dist = 1, 0, 0, 1
	}
	push := (d - dist) / 2 / dist
	a.Pos[0] -= dx * push
	a.Pos[1] -= dy * push
	a.Pos[2] -= dz * push
	b.Pos[0] += dx * push
	b.Pos[1] += dy * push
	b.Pos[2] += dz * push
	return true
}
