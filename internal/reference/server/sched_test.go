package server

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// denseWorld puts n AI entities and `players` player entities inside a
// box of side sideM centred on the origin, 3 km up.
func denseWorld(n, players int, sideM float64, seed uint64) (*World, []int32) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	w := NewWorld()
	for i := 0; i < n; i++ {
		x, z := (rng.Float64()-0.5)*sideM, (rng.Float64()-0.5)*sideM
		w.Add(Entity{Type: TypeLoiterAI, AI: true, Pos: [3]float64{x, 3000 + rng.Float64()*500, z}, Speed: 150, Yaw: rng.Float64() * 6})
	}
	var own []int32
	for i := 0; i < players; i++ {
		own = append(own, w.SpawnPlayer(1, TypeSensorFighter, uint32(i)))
	}
	return w, own
}

func TestGridQueryMatchesBruteForce(t *testing.T) {
	w, _ := denseWorld(3000, 0, 40000, 1)
	live := w.Live()
	for _, cell := range []float64{500, 4000, 50000} {
		g := NewGrid(cell)
		g.Rebuild(w, live)
		rng := rand.New(rand.NewPCG(2, 3))
		for q := 0; q < 50; q++ {
			p := [3]float64{(rng.Float64() - 0.5) * 50000, 3000, (rng.Float64() - 0.5) * 50000}
			r := 500 + rng.Float64()*8000
			got := g.Query(w, p, r, nil)
			var want []int32
			for _, s := range live {
				if dist2(&p, &w.At(s).Pos) <= r*r {
					want = append(want, s)
				}
			}
			// QueryNear: the same slots in the same order, each with
			// its entity's id and squared distance.
			nears := g.QueryNear(p, r, nil)
			if len(nears) != len(got) {
				t.Fatalf("cell %v query %d: QueryNear found %d, Query %d", cell, q, len(nears), len(got))
			}
			for i, n := range nears {
				e := w.At(n.slot)
				if n.slot != got[i] || n.id != e.ID || n.d2 != dist2(&e.Pos, &p) {
					t.Fatalf("cell %v query %d: QueryNear's %d is %+v; Query's slot %d, id %d, d2 %v", cell, q, i, n, got[i], e.ID, dist2(&e.Pos, &p))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("cell %v query %d: %d results, brute force %d", cell, q, len(got), len(want))
			}
		}
	}
}

func TestCollideFindsEveryPairOnce(t *testing.T) {
	// Tight packing so many spheres overlap, across cell borders.
	w, _ := denseWorld(800, 0, 1500, 4)
	for _, s := range w.Live() {
		w.At(s).Pos[1] = 3000 + float64(s%3)*10
	}
	want := 0
	live := w.Live()
	for i, a := range live {
		for _, b := range live[i+1:] {
			if dist2(&w.At(a).Pos, &w.At(b).Pos) < (2*entityRadiusM)*(2*entityRadiusM) {
				want++
			}
		}
	}
	if want == 0 {
		t.Fatal("test world has no overlapping pair")
	}
	// The narrow phase moves entities apart as it goes; count on a copy
	// with separation measured before any move by checking the count only.
	g := NewGrid(collisionCellM)
	g.Rebuild(w, live)
	got := g.Collide(w)
	// Pushing apart can resolve a later pair before it is tested or create
	// one; the count must be close to the brute force, and every marked
	// entity must have been in some overlapping pair.
	if math.Abs(float64(got-want)) > 0.1*float64(want)+2 {
		t.Fatalf("contacts %d, brute force %d", got, want)
	}
	marked := 0
	for _, s := range live {
		if w.At(s).Collided {
			marked++
		}
	}
	if marked == 0 {
		t.Fatal("no entity marked collided")
	}
}

func TestCollideSeparatesTwoSpheres(t *testing.T) {
	w := NewWorld()
	a := w.Add(Entity{Type: 1, Pos: [3]float64{100, 3000, 100}})
	b := w.Add(Entity{Type: 1, Pos: [3]float64{110, 3000, 100}}) // 10 m apart, diameter 24
	g := NewGrid(collisionCellM)
	g.Rebuild(w, w.Live())
	if n := g.Collide(w); n != 1 {
		t.Fatalf("contacts %d", n)
	}
	if d := math.Sqrt(dist2(&w.At(a).Pos, &w.At(b).Pos)); math.Abs(d-2*entityRadiusM) > 1e-9 {
		t.Fatalf("after separation distance %.3f, want %.1f", d, 2*entityRadiusM)
	}
	if !w.At(a).Collided || !w.At(b).Collided {
		t.Fatal("not marked")
	}
}

// buildAll senses and builds one tick for every viewer serially.
func buildAll(w *World, g *Grid, vs []*Viewer, enc *snapshot.Encoder, p *SnapshotParams, radius float64) {
	g.Rebuild(w, w.Live())
	p.Records = EncodeRecords(w, w.Live(), p.Records, serialRun)
	for _, v := range vs {
		v.In.Sense(w, g, v.Slot, radius)
		v.In.Build(w, v.Slot, enc, p)
	}
}

func TestSchedulerNeverExceedsBudget(t *testing.T) {
	enc, _ := snapshot.NewEncoder()
	dec, _ := snapshot.NewDecoder()
	defer dec.Close()
	for _, budget := range []int{64, 100, 600, 1200, 4000} {
		for _, compress := range []bool{false, true} {
			w, own := denseWorld(2000, 4, 10000, uint64(budget))
			g := NewGrid(8000)
			var vs []*Viewer
			for _, s := range own {
				vs = append(vs, &Viewer{Slot: s})
			}
			p := &SnapshotParams{BudgetBytes: budget, Compress: compress}
			for tick := uint32(1); tick <= 20; tick++ {
				p.Tick = tick
				buildAll(w, g, vs, enc, p, 8000)
				for i, v := range vs {
					if len(v.In.Msg) > budget {
						t.Fatalf("budget %d compress %v: peer %d message %d bytes", budget, compress, i, len(v.In.Msg))
					}
					h, body, err := proto.DecodeSnapshot(v.In.Msg)
					if err != nil || h.Tick != tick {
						t.Fatalf("snapshot header: %+v %v", h, err)
					}
					n, err := dec.Decode(h.Flags, body)
					if err != nil {
						t.Fatalf("decode: %v", err)
					}
					if want := min(p.MaxRecords(0), v.In.InView+1); n != want {
						t.Fatalf("budget %d: %d records, want %d (in view %d)", budget, n, want, v.In.InView)
					}
					if r := dec.Records()[0]; r.Flags&snapshot.FlagOwn == 0 || r.ID != w.At(v.Slot).ID {
						t.Fatalf("first record is not the peer's own entity: %+v", r)
					}
				}
			}
		}
	}
}

func TestSchedulerUnlimitedSendsEverythingInView(t *testing.T) {
	enc, _ := snapshot.NewEncoder()
	w, own := denseWorld(500, 1, 6000, 7)
	g := NewGrid(8000)
	v := &Viewer{Slot: own[0]}
	p := &SnapshotParams{Tick: 1, BudgetBytes: 0}
	buildAll(w, g, []*Viewer{v}, enc, p, 8000)
	if v.In.Sent != v.In.InView+1 || v.In.InView != 500 {
		t.Fatalf("sent %d, in view %d", v.In.Sent, v.In.InView)
	}
}

// With 2000 entities in view and room for 49 a snapshot, every entity is
// sent within a bounded number of ticks, near ones more often than far ones.
func TestSchedulerStarvesNobody(t *testing.T) {
	enc, _ := snapshot.NewEncoder()
	w, own := denseWorld(2000, 1, 14000, 11)
	g := NewGrid(8000)
	v := &Viewer{Slot: own[0]}
	p := &SnapshotParams{BudgetBytes: 1200}
	room := p.MaxRecords(0) - 1
	me := w.At(own[0])
	lastSent := map[uint32]uint32{}
	maxGap := map[uint32]uint32{}
	const ticks = 1500
	for tick := uint32(1); tick <= ticks; tick++ {
		p.Tick = tick
		buildAll(w, g, []*Viewer{v}, enc, p, 8000)
		if tick == 1 && v.In.InView < 10*room {
			t.Fatalf("only %d in view; the test needs many more than %d", v.In.InView, room)
		}
		for _, c := range v.In.order {
			id := c.id
			if prev, ok := lastSent[id]; ok {
				maxGap[id] = max(maxGap[id], tick-prev)
			} else {
				maxGap[id] = tick // first send counts from tick 0
			}
			lastSent[id] = tick
		}
	}
	inView := map[uint32]float64{}
	for _, c := range v.In.cands {
		if c.slot != own[0] {
			inView[w.At(c.slot).ID] = math.Sqrt(dist2(&me.Pos, &w.At(c.slot).Pos))
		}
	}
	// Bound: staleness × weight must beat the best possible competitor;
	// weights span 1 .. 1/(1+r/ref), and n/room entities share the slots.
	r := 8000.0
	bound := uint32(float64(len(inView))/float64(room)*(1+r/priorityRefM)) + neverSentStaleness
	var nearGap, farGap []float64
	for id, d := range inView {
		gap, ok := maxGap[id]
		if !ok {
			t.Fatalf("entity %d at %.0f m never sent in %d ticks", id, d, ticks)
		}
		if gap > bound {
			t.Fatalf("entity %d at %.0f m waited %d ticks (bound %d)", id, d, gap, bound)
		}
		if d < 2000 {
			nearGap = append(nearGap, float64(gap))
		} else if d > 6000 {
			farGap = append(farGap, float64(gap))
		}
	}
	if len(nearGap) == 0 || len(farGap) == 0 {
		t.Fatal("test world lacks near or far entities")
	}
	if mean(nearGap) >= mean(farGap) {
		t.Fatalf("near entities wait %.1f ticks on average, far ones %.1f: priority ignores distance", mean(nearGap), mean(farGap))
	}
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// Per-peer bytes are identical at 1 and 4 workers over many ticks of a
// moving, colliding, populated world: sensors and datalink, the AI mix,
// projectile churn, guns and stores all on (and seen in the snapshots).
func TestSnapshotBytesIdenticalAcrossWorkerCounts(t *testing.T) {
	var events, contacts int
	run := func(workers int) [][]byte {
		cfg := DefaultConfig()
		cfg.World.TestSpawnAICount = 1500
		cfg.World.TestSpawnSpreadKm = 12
		cfg.World.TestSpawnAIMix = "loiter:60,pursuit:25,patrol:15"
		cfg.World.TestProjectileRate = 120
		cfg.World.TestProjectileTTLS = 0.5
		sim, err := NewSim(&cfg, workers)
		if err != nil {
			t.Fatal(err)
		}
		defer sim.Close()
		var vs []*Viewer
		for i := 0; i < 24; i++ {
			vs = append(vs, &Viewer{Slot: sim.World.SpawnPlayer(1, TypeSensorFighter, uint32(i))})
		}
		var out [][]byte
		for tick := uint32(0); tick < 90; tick++ {
			for i, v := range vs { // scripted input, the same every run
				buttons := uint32(0)
				if (tick/10+uint32(i))%2 == 0 {
					buttons = proto.ButtonGun
				}
				if (tick+uint32(i))%30 < 3 {
					buttons |= proto.ButtonStoreRelease
				}
				sim.World.At(v.Slot).Ctl = Controls{Throttle: 0.6, Aileron: math.Sin(float64(tick+uint32(i)) / 20), Elevator: 0.1, Buttons: buttons}
			}
			var ph [numPhases]time.Duration
			tm := timer{at: time.Now(), sum: &ph}
			sim.Tick = tick
			sim.Simulate(&tm)
			sim.Sense(&tm)
			sim.Build(vs, &SnapshotParams{Tick: tick, BudgetBytes: 1200, Compress: true})
			for _, v := range vs {
				out = append(out, bytes.Clone(v.In.Msg))
				events += v.In.Events
			}
			contacts += sim.ContactEntries
		}
		if sim.Weapons.ShotsFired == 0 || sim.Weapons.StoresReleased == 0 || sim.Weapons.Despawns == 0 {
			t.Fatalf("%d workers: the fire path did not run: %+v", workers, sim.Weapons)
		}
		return out
	}
	one, four := run(1), run(4)
	if len(one) != len(four) {
		t.Fatal("different message counts")
	}
	for i := range one {
		if !bytes.Equal(one[i], four[i]) {
			t.Fatalf("message %d (tick %d, peer %d) differs between 1 and 4 workers", i, i/24, i%24)
		}
	}
	if fmt.Sprint(len(one)) != "2160" {
		t.Fatalf("%d messages", len(one))
	}
	if events == 0 || contacts == 0 {
		t.Fatalf("%d events sent, %d contact entries: the populated world was not exercised", events, contacts)
	}
}

func TestTopKMatchesFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for trial := 0; trial < 200; trial++ {
		n := rng.IntN(300)
		c := make([]candidate, n)
		for i := range c {
			// Few distinct priorities, so ties (broken by id) are common.
			c[i] = candidate{rank: rankOf(float64(rng.IntN(8))), id: uint32(rng.IntN(1 << 20))}
		}
		want := slices.Clone(c)
		slices.SortFunc(want, func(a, b candidate) int {
			if before(&a, &b) {
				return -1
			}
			if before(&b, &a) {
				return 1
			}
			return 0
		})
		k := rng.IntN(n + 1)
		got := topK(slices.Clone(c), k, true, ranksOf(c))
		for i := range got {
			if got[i].rank != want[i].rank || got[i].id != want[i].id {
				t.Fatalf("trial %d n %d k %d: position %d got %+v want %+v", trial, n, k, i, got[i], want[i])
			}
		}
		if len(got) != k {
			t.Fatalf("len %d want %d", len(got), k)
		}
		// Unordered (a delta peer's): the same set, any order.
		set := topK(slices.Clone(c), k, false, ranksOf(c))
		byID := func(a, b candidate) int { return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.rank, b.rank)) }
		slices.SortFunc(set, byID)
		sortedWant := slices.Clone(want[:k])
		slices.SortFunc(sortedWant, byID)
		if !slices.Equal(set, sortedWant) {
			t.Fatalf("trial %d n %d k %d: unordered set %v, want %v", trial, n, k, set, sortedWant)
		}
	}
}

// ranksOf is c's ranks, index for index: the selection's second input.
func ranksOf(c []candidate) []uint64 {
	r := make([]uint64, len(c))
	for i := range c {
		r[i] = c[i].rank
	}
	return r
}

// A delta peer's winners, marked in one pass (markBest), are topK's set:
// few distinct priorities, so ties at the threshold broken by id are
// common, and every k from none to all.
func TestMarkBestMatchesTopK(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for trial := 0; trial < 300; trial++ {
		n := rng.IntN(400)
		c := make([]candidate, n)
		idRank := make([]int32, n)
		for i := range c {
			c[i] = candidate{rank: rankOf(float64(rng.IntN(6))), id: uint32(rng.IntN(1 << 20)), slot: int32(i)}
			idRank[i] = int32(n - 1 - i) // not the slot: the mark goes through idRank
		}
		k := rng.IntN(n + 1)
		want := map[int32]bool{}
		for _, w := range topK(slices.Clone(c), k, false, ranksOf(c)) {
			want[idRank[w.slot]] = true
		}
		in := &Interest{order: c, ranks: ranksOf(c), picked: make([]uint64, (n+63)/64)}
		in.markBest(k, idRank)
		got := 0
		for r := int32(0); r < int32(n); r++ {
			marked := in.picked[r>>6]&(1<<(r&63)) != 0
			if marked != want[r] {
				t.Fatalf("trial %d n %d k %d: id rank %d marked %v, topK says %v", trial, n, k, r, marked, want[r])
			}
			if marked {
				got++
			}
		}
		if got != k {
			t.Fatalf("trial %d n %d k %d: %d marked", trial, n, k, got)
		}
	}
}

func TestKthSmallestMatchesSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for trial := 0; trial < 500; trial++ {
		n := 1 + rng.IntN(600)
		a := make([]uint64, n)
		spread := uint64(1) << rng.IntN(40) // from all equal to all distinct
		for i := range a {
			a[i] = rng.Uint64N(spread)
		}
		want := slices.Sorted(slices.Values(a))
		k := 1 + rng.IntN(n)
		if got := kthSmallest(slices.Clone(a), k); got != want[k-1] {
			t.Fatalf("trial %d n %d k %d: got %d want %d", trial, n, k, got, want[k-1])
		}
	}
}

func TestRankOrdersAsPriority(t *testing.T) {
	prios := []float64{0, math.SmallestNonzeroFloat64, 0.5, 1, 1.0000000000000002, 119.99, 120, 1e300}
	for i := range prios {
		for j := range prios {
			if (rankOf(prios[i]) < rankOf(prios[j])) != (prios[i] > prios[j]) {
				t.Errorf("rank(%g) < rank(%g) is %v", prios[i], prios[j], rankOf(prios[i]) < rankOf(prios[j]))
			}
		}
	}
}

// serialRun is pool.run without a pool.
func serialRun(n, _ int, fn func(worker, i int)) {
	for i := 0; i < n; i++ {
		fn(0, i)
	}
}
