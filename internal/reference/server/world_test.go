package server

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/wire/proto"
)

// The loiter population holds its count and its height above the local
// ground for a simulated minute (the seed's loiterers decayed 8 → 5 in 70 s).
func TestLoiterersHoldAltitudeAndPopulation(t *testing.T) {
	for _, agl := range []float64{300, 4000} {
		cfg := DefaultConfig()
		cfg.World.TestSpawnAICount = 40
		cfg.World.TestSpawnSpreadKm = 60
		cfg.World.TestSpawnAGLM = agl
		sim, err := NewSim(&cfg, 1)
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for tick := 0; tick < 60*TickHz; tick++ {
			stepSim(sim)
			if tick < 20*TickHz { // let the controllers settle
				continue
			}
			for _, s := range sim.World.Live() {
				e := sim.World.At(s)
				dev := math.Abs(e.Pos[1] - Terrain(e.Pos[0], e.Pos[2]) - agl)
				worst = math.Max(worst, dev)
				r := math.Hypot(e.Pos[0]-e.ai.cx, e.Pos[2]-e.ai.cz)
				if math.Abs(r-e.ai.radius) > 0.25*e.ai.radius {
					t.Fatalf("agl %v: entity %d drifted off its circle: r %.0f want %.0f", agl, e.ID, r, e.ai.radius)
				}
			}
		}
		sim.Close()
		if n := sim.World.Len(); n != 40 {
			t.Fatalf("agl %v: population %d, want 40", agl, n)
		}
		if worst > 60 {
			t.Fatalf("agl %v: altitude above local ground strayed %.1f m from the target", agl, worst)
		}
	}
}

func stepSim(s *Sim) {
	var ph [numPhases]time.Duration
	t := timer{at: time.Now(), sum: &ph}
	s.Simulate(&t)
}

// The flight model stays finite and inside the world under arbitrary input.
func TestFlightModelStableUnderAnyInput(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	w := NewWorld()
	for i := 0; i < 50; i++ {
		w.SpawnPlayer(1, TypeAircraft, uint32(i))
	}
	for tick := 0; tick < 3000; tick++ {
		for _, s := range w.Live() {
			e := w.At(s)
			if tick%30 == 0 {
				in := proto.Input{Throttle: float32(rng.Float64()*4 - 2), Elevator: float32(rng.Float64()*4 - 2),
					Aileron: float32(rng.Float64()*4 - 2), Rudder: float32(rng.Float64()*4 - 2), Buttons: rng.Uint32()}
				e.Ctl = clampControls(&in)
			}
			integrate(e)
			for k := 0; k < 3; k++ {
				if math.IsNaN(e.Pos[k]) || math.IsInf(e.Pos[k], 0) || math.IsNaN(e.Vel[k]) {
					t.Fatalf("entity %d went non-finite at tick %d", e.ID, tick)
				}
			}
			if e.Pos[1] < Terrain(e.Pos[0], e.Pos[2])+groundClearM-1e-6 || e.Pos[1] > ceilingM ||
				math.Abs(e.Pos[0]) > worldHalfM || math.Abs(e.Pos[2]) > worldHalfM {
				t.Fatalf("entity %d left the world: %v", e.ID, e.Pos)
			}
			if e.Speed < minSpeed-1 || e.Speed > maxSpeed+burnerBonus+1 {
				t.Fatalf("entity %d speed %.1f", e.ID, e.Speed)
			}
		}
	}
}

func TestWorldSlotsReusedAndLiveOrdered(t *testing.T) {
	w := NewWorld()
	a := w.SpawnPlayer(1, TypeAircraft, 0)
	b := w.SpawnPlayer(2, TypeAircraft, 1)
	c := w.SpawnPlayer(3, TypeAircraft, 2)
	idB := w.At(b).ID
	w.Remove(b)
	if got := w.Live(); !slices.Equal(got, []int32{a, c}) {
		t.Fatalf("live %v", got)
	}
	d := w.SpawnPlayer(4, TypeAircraft, 3)
	if d != b || w.At(d).ID == idB {
		t.Fatalf("slot %d reused as %d with id %d (old id %d): ids must never repeat", b, d, w.At(d).ID, idB)
	}
	if got := w.Live(); !slices.Equal(got, []int32{a, b, c}) {
		t.Fatalf("live %v", got)
	}
}

func TestTerrainDeterministicAndBounded(t *testing.T) {
	for _, p := range [][2]float64{{0, 0}, {12345, -6789}, {-120000, 120000}} {
		h := Terrain(p[0], p[1])
		if h != Terrain(p[0], p[1]) || h < 425 || h > 575 {
			t.Fatalf("terrain at %v = %v", p, h)
		}
	}
}

func TestQuaternionIsUnitAndMatchesHeading(t *testing.T) {
	e := Entity{Yaw: 0.7, Pitch: 0.2, Roll: -0.4}
	q := e.quat()
	n := 0.0
	for _, v := range q {
		n += float64(v) * float64(v)
	}
	if math.Abs(n-1) > 1e-5 {
		t.Fatalf("|q|² = %v", n)
	}
}

// The radix sort of a grid's pairs (slots appended ascending) gives the
// (cell, slot) order the comparison sort gives: random cells with negative
// and positive coordinates, near and far apart, several slots per cell.
// TestCellRunsMatchesMap holds the grid's cell table to a Go map: every
// key put is found with its run, and no other key is, over tables filled,
// emptied, grown and shrunk. Keys are cells of a square of side 1 to 2048
// around the origin, so they cluster as neighbouring cells do and take in
// the extremes (the all-ones key of cell (-1, -1), and 0); on the smaller
// squares every cell is looked up, so a probe that walks past the right
// slot or stops at a wrong one is met.
func TestCellRunsMatchesMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 21))
	if _, ok := NewGrid(96).runs.get(cellKey(0, 0)); ok {
		t.Fatal("a grid not yet rebuilt found a cell")
	}
	var tab cellRuns
	for round := range 400 {
		side := int32(1) << rng.IntN(12)
		lo := -side / 2
		n := min(rng.IntN(900), int(side*side)) // distinct keys exist
		if round%7 == 0 {
			n = 0
		}
		tab.reset(n)
		want := map[uint64]span{}
		for len(want) < n {
			k := cellKey(lo+rng.Int32N(side), lo+rng.Int32N(side))
			if _, dup := want[k]; dup {
				continue
			}
			sp := span{int32(len(want)), int32(len(want)) + 1 + rng.Int32N(4)}
			want[k] = sp
			tab.put(k, sp)
		}
		check := func(k uint64) {
			got, ok := tab.get(k)
			if sp, put := want[k]; ok != put || got != sp {
				t.Fatalf("round %d (%d runs, side %d): key %#x: got %v %v, want %v %v", round, n, side, k, got, ok, sp, put)
			}
		}
		if side <= 64 {
			for cx := lo - 1; cx <= lo+side; cx++ {
				for cz := lo - 1; cz <= lo+side; cz++ {
					check(cellKey(cx, cz))
				}
			}
			continue
		}
		for k := range want {
			check(k)
			check(k ^ 1)
		}
		for range 2000 {
			check(cellKey(lo-1+rng.Int32N(side+2), lo-1+rng.Int32N(side+2)))
		}
	}
	// A population moving across a power of two from tick to tick reuses
	// the storage instead of allocating a table each tick.
	if a := testing.AllocsPerRun(50, func() { tab.reset(600); tab.reset(300) }); a != 0 {
		t.Errorf("reset across sizes allocates %v times a round, want 0", a)
	}
}

func TestGridSortPairsMatchesComparisonSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 96))
	for round := range 300 {
		span := int32(1) << rng.IntN(31)
		n := rng.IntN(700)
		g := NewGrid(96)
		slot := int32(rng.IntN(5))
		for range n {
			cx := rng.Int32N(span) - span/2
			cz := rng.Int32N(min(span, 8)) - 4
			g.pairs = append(g.pairs, cellSlot{cellKey(cx, cz), slot})
			slot += 1 + rng.Int32N(3)
		}
		want := slices.Clone(g.pairs)
		slices.SortFunc(want, func(a, b cellSlot) int {
			if a.key != b.key {
				return cmp.Compare(a.key, b.key)
			}
			return cmp.Compare(a.slot, b.slot)
		})
		g.sortPairs()
		if !slices.Equal(g.pairs, want) {
			t.Fatalf("round %d (%d pairs, span %d): radix order differs", round, n, span)
		}
	}
}
