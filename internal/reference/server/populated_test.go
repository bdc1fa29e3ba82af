package server

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

func newTestSim(t *testing.T, cfg Config, workers int) *Sim {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sim, err := NewSim(&cfg, workers)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return sim
}

// tickSim is one tick of the loop's sim work, numbered.
func tickSim(s *Sim, tick uint32, vs []*Viewer) {
	var ph [numPhases]time.Duration
	tm := timer{at: time.Now(), sum: &ph}
	s.Tick = tick
	s.Simulate(&tm)
	s.Sense(&tm)
	s.Build(vs, &SnapshotParams{Tick: tick, BudgetBytes: 1200, Compress: true})
}

// The AI mix's counts match its weights exactly, by spawn index, and the
// metrics file's ai_by_controller reports them.
func TestAIMixCountsMatchWeights(t *testing.T) {
	for _, c := range []struct {
		n    int
		want [numControllers]int
	}{
		{2000, [numControllers]int{1200, 500, 300}},
		{100, [numControllers]int{60, 25, 15}},
		{5000, [numControllers]int{3000, 1250, 750}},
	} {
		cfg := DefaultConfig()
		cfg.World.TestSpawnAICount = c.n
		cfg.World.TestSpawnAIMix = "loiter:60,pursuit:25,patrol:15"
		sim := newTestSim(t, cfg, 1)
		if got := sim.AIByController(); got != c.want {
			t.Errorf("%d AI: by controller %v, want %v", c.n, got, c.want)
		}
		st := newMetrics().build(snapshotInputs{world: worldFigures{ai: sim.AIByController()}})
		if a := st.AIByController; a == nil || a.Loiter != c.want[0] || a.Pursuit != c.want[1] || a.Patrol != c.want[2] {
			t.Errorf("%d AI: metrics ai_by_controller %+v", c.n, a)
		}
	}
}

func TestAIMixRejected(t *testing.T) {
	cfg := DefaultConfig()
	cfg.World.TestSpawnAIMix = "loiter:60,strafe:40"
	err := cfg.Validate()
	if err == nil || !contains(err.Error(), "world.test_spawn_ai_mix") || !contains(err.Error(), `unknown controller "strafe"`) {
		t.Fatalf("Validate = %v", err)
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// A pursuer closes on its moving target and stays with it; a patroller
// with an entity inside patrolRangeM switches to intercept (its radius
// query ran) and returns to its circle when none is.
func TestPursuitAndPatrol(t *testing.T) {
	cfg := DefaultConfig()
	cfg.World.TestSpawnAICount = 2
	cfg.World.TestSpawnSpreadKm = 30
	cfg.World.TestSpawnAIMix = "pursuit:1,loiter:1"
	sim := newTestSim(t, cfg, 1)
	p, target := sim.World.At(0), sim.World.At(1)
	if p.Ctrl != CtlPursuit || p.mind.target != target.ID {
		t.Fatalf("entity 0: controller %v target %d", p.Ctrl, p.mind.target)
	}
	start := math.Sqrt(dist2(&p.Pos, &target.Pos))
	for tick := uint32(0); tick < 120*TickHz; tick++ {
		tickSim(sim, tick, nil)
	}
	if end := math.Sqrt(dist2(&p.Pos, &target.Pos)); end > 3000 || end > start {
		t.Fatalf("pursuer at %.0f m from its target after 120 s (started %.0f m)", end, start)
	}

	cfg.World.TestSpawnAIMix = "patrol:1"
	cfg.World.TestSpawnAICount = 1
	sim = newTestSim(t, cfg, 1)
	intruder := sim.World.SpawnPlayer(1, TypeAircraft, 0)
	pat, in := sim.World.At(0), sim.World.At(intruder) // no spawns below: the pointers stay valid
	in.Pos = [3]float64{pat.Pos[0] + 2000, pat.Pos[1], pat.Pos[2]}
	tickSim(sim, 0, nil) // builds the interest grid the patroller queries
	tickSim(sim, 1, nil)
	if pat.mind.state != patrolIntercept || pat.mind.seen != intruder {
		t.Fatalf("patroller with an entity 2 km away: state %d seen %d", pat.mind.state, pat.mind.seen)
	}
	in.Pos = [3]float64{pat.Pos[0] + 40000, pat.Pos[1], pat.Pos[2]}
	tickSim(sim, 2, nil)
	if pat.mind.state != patrolReturn {
		t.Fatalf("patroller with nobody in range: state %d, want return", pat.mind.state)
	}
	for tick := uint32(3); tick < 60*TickHz && pat.mind.state != patrolCircle; tick++ {
		tickSim(sim, tick, nil)
	}
	if pat.mind.state != patrolCircle {
		t.Fatalf("patroller never got back to its circle: state %d", pat.mind.state)
	}
}

// The overrun governor's AI stride applies to every controller: with
// stride 3 an entity's controls change only on its ticks.
func TestAIStrideAppliesToEveryController(t *testing.T) {
	cfg := DefaultConfig()
	cfg.World.TestSpawnAICount = 30
	cfg.World.TestSpawnSpreadKm = 5
	cfg.World.TestSpawnAIMix = "loiter:1,pursuit:1,patrol:1"
	sim := newTestSim(t, cfg, 2)
	for tick := uint32(0); tick < 30; tick++ {
		tickSim(sim, tick, nil)
	}
	sim.AIStride = 3
	for tick := uint32(30); tick < 60; tick++ {
		before := make([]Controls, len(sim.aiSlots))
		for i, sl := range sim.aiSlots {
			before[i] = sim.World.At(sl).Ctl
		}
		tickSim(sim, tick, nil)
		for i, sl := range sim.aiSlots {
			if (tick+uint32(i))%3 != 0 && sim.World.At(sl).Ctl != before[i] {
				t.Fatalf("tick %d: %v entity %d (index %d) ran off its stride", tick, sim.World.At(sl).Ctrl, sim.World.At(sl).ID, i)
			}
		}
	}
}

// Projectile churn holds rate × ttl projectiles in steady state (±10 %),
// recycles slots through the pool, and counts every despawn.
func TestProjectileChurnSteadyState(t *testing.T) {
	for _, c := range []struct{ rate, ttl float64 }{{120, 3}, {30, 2}, {7, 0.5}} {
		cfg := DefaultConfig()
		cfg.World.TestProjectileRate = c.rate
		cfg.World.TestProjectileTTLS = c.ttl
		cfg.World.TestSpawnSpreadKm = 100
		sim := newTestSim(t, cfg, 2)
		want := c.rate * c.ttl
		warm := uint32(c.ttl*TickHz) + TickHz
		var sum, n float64
		for tick := uint32(0); tick < warm+10*TickHz; tick++ {
			tickSim(sim, tick, nil)
			if tick >= warm {
				sum += float64(sim.ProjectilesLive())
				n++
			}
		}
		mean := sum / n
		if math.Abs(mean-want) > 0.1*want {
			t.Errorf("rate %v ttl %v: steady projectiles %.1f, want %.0f ±10%%", c.rate, c.ttl, mean, want)
		}
		if sim.World.Len() != sim.ProjectilesLive() {
			t.Errorf("world holds %d entities, %d projectiles", sim.World.Len(), sim.ProjectilesLive())
		}
		spawned := float64(sim.churnSeq)
		if d := float64(sim.Weapons.Despawns); math.Abs(spawned-d-float64(sim.ProjectilesLive())) > 0 || d == 0 {
			t.Errorf("spawned %.0f, despawned %.0f, live %d", spawned, d, sim.ProjectilesLive())
		}
		if slots := sim.World.Slots(); float64(slots) > 1.2*want+2 {
			t.Errorf("slot store grew to %d for %.0f live projectiles: the pool is not reusing slots", slots, want)
		}
	}
}

// sensorWorld is two teams of sensor fighters flying among loiterers.
func sensorWorld(t *testing.T, hollow bool, workers int) (*Sim, []*Viewer) {
	cfg := DefaultConfig()
	cfg.World.TestSpawnAICount = 300
	cfg.World.TestSpawnSpreadKm = 12
	cfg.Faults.HollowSensors = hollow
	sim := newTestSim(t, cfg, workers)
	var vs []*Viewer
	for i := 0; i < 12; i++ {
		vs = append(vs, &Viewer{Slot: sim.World.SpawnPlayer(1, TypeSensorFighter, uint32(i))})
	}
	return sim, vs
}

// Sensors fill contact tables, checks are staggered at sensor_check_hz,
// and datalink fusion gives each owner its team's tracks; hollow_sensors
// leaves every table empty.
func TestSensorsContactTablesAndDatalink(t *testing.T) {
	sim, vs := sensorWorld(t, false, 2)
	checks := 0
	for tick := uint32(0); tick < 3*TickHz; tick++ {
		tickSim(sim, tick, vs)
		checks += sim.SensorChecks
		if sim.SensorChecks > 3 { // 12 owners over 6 ticks: 2 a tick
			t.Fatalf("tick %d: %d checks, not staggered", tick, sim.SensorChecks)
		}
	}
	if want := 12 * 3 * 10; checks != want {
		t.Errorf("%d sensor checks in 3 s, want %d (12 owners at 10 Hz)", checks, want)
	}
	if sim.ContactEntries == 0 {
		t.Fatal("no contacts")
	}
	datalink := 0
	for _, v := range vs {
		tab := sim.ContactTable(v.Slot)
		for i, c := range tab {
			if i > 0 && tab[i-1].ID >= c.ID {
				t.Fatalf("table not sorted by id: %+v", tab)
			}
			if c.First > c.Last || c.Quality <= 0 || c.Quality > 1 {
				t.Fatalf("bad contact %+v", c)
			}
			if c.Datalink {
				datalink++
			}
		}
	}
	if datalink == 0 {
		t.Error("datalink fusion shared no track")
	}
	if sim.FusedEntries != datalink {
		t.Errorf("FusedEntries %d, but the tables hold %d datalink-only tracks", sim.FusedEntries, datalink)
	}
	hollow, hvs := sensorWorld(t, true, 2)
	hchecks := 0
	for tick := uint32(0); tick < 3*TickHz; tick++ {
		tickSim(hollow, tick, hvs)
		hchecks += hollow.SensorChecks
	}
	if hollow.ContactEntries != 0 || hchecks != checks {
		t.Errorf("hollow sensors: %d contacts after %d checks (want 0 after %d)", hollow.ContactEntries, hchecks, checks)
	}
}

// disable_datalink: the sensors see as much as ever, but no track is
// shared, so every table is its owner's own and fused_contacts is 0 while
// contacts is not.
func TestDisableDatalink(t *testing.T) {
	run := func(off bool) *Sim {
		cfg := DefaultConfig()
		cfg.World.TestSpawnAICount = 300
		cfg.World.TestSpawnSpreadKm = 12
		cfg.Faults.DisableDatalink = off
		sim := newTestSim(t, cfg, 1)
		var vs []*Viewer
		for i := 0; i < 12; i++ {
			vs = append(vs, &Viewer{Slot: sim.World.SpawnPlayer(1, TypeSensorFighter, uint32(i))})
		}
		for tick := uint32(0); tick < 2*TickHz; tick++ {
			tickSim(sim, tick, vs)
		}
		for _, v := range vs {
			for _, c := range sim.ContactTable(v.Slot) {
				if off && c.Datalink {
					t.Fatalf("disable_datalink: a shared track %+v", c)
				}
			}
		}
		return sim
	}
	on, off := run(false), run(true)
	if on.FusedEntries == 0 || off.FusedEntries != 0 || off.ContactEntries == 0 || off.ContactEntries >= on.ContactEntries {
		t.Fatalf("fused/contacts: datalink on %d/%d, off %d/%d", on.FusedEntries, on.ContactEntries, off.FusedEntries, off.ContactEntries)
	}
	t.Logf("fused/contacts: datalink on %d/%d, off %d/%d", on.FusedEntries, on.ContactEntries, off.FusedEntries, off.ContactEntries)
}

// A track nobody sees any more decays and is forgotten.
func TestTrackDecays(t *testing.T) {
	local := []Contact{{ID: 5, First: 1, Last: 1, Quality: 0.4}}
	out := mergeDetections(nil, local, nil, 0.5, 10)
	if len(out) != 1 || out[0].Quality != 0.2 {
		t.Fatalf("decayed: %+v", out)
	}
	out = mergeDetections(nil, []Contact{{ID: 5, Quality: 0.06}}, nil, 0.5, 10)
	if len(out) != 0 {
		t.Fatalf("a track below %.2f was kept: %+v", trackDropQuality, out)
	}
	out = mergeDetections(nil, []Contact{{ID: 5, First: 1, Quality: 0.9}}, []uint32{3, 5}, 1, 10)
	if len(out) != 2 || out[0].ID != 3 || out[0].First != 10 || out[1].Quality != 1 || out[1].Last != 10 || out[1].First != 1 {
		t.Fatalf("merge: %+v", out)
	}
}

// Folding the tables into a picture one by one gives the picture that
// appending them all to it, sorting by id and reducing each id gives, in
// whatever order the tables come: random tables and pictures, sorted with
// one entry per id as every local table and picture is, ids drawn from a
// small range so most collide and some are new to the picture.
func TestPictureFoldMatchesSortAndReduce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 41))
	table := func(ids uint32) []Contact {
		var c []Contact
		for id := range ids {
			if rng.IntN(3) == 0 {
				c = append(c, Contact{ID: id, First: rng.Uint32N(100), Last: 100 + rng.Uint32N(100),
					Quality: rng.Float32(), Datalink: rng.IntN(4) != 0})
			}
		}
		return c
	}
	var pic teamPicture
	for round := range 500 {
		start := table(50)
		tables := make([][]Contact, rng.IntN(12))
		for i := range tables {
			tables[i] = table(60)
		}
		// The reference: everything appended, sorted by id (stable, so equal
		// ids keep their order), then one entry per id.
		all := slices.Clone(start)
		for _, tb := range tables {
			all = append(all, tb...)
		}
		slices.SortStableFunc(all, func(a, b Contact) int { return cmp.Compare(a.ID, b.ID) })
		var want []Contact
		for _, c := range all {
			if n := len(want); n > 0 && want[n-1].ID == c.ID {
				f := &want[n-1]
				f.First, f.Last, f.Quality = min(f.First, c.First), max(f.Last, c.Last), max(f.Quality, c.Quality)
				f.Datalink = f.Datalink && c.Datalink
				continue
			}
			want = append(want, c)
		}
		rng.Shuffle(len(tables), func(i, j int) { tables[i], tables[j] = tables[j], tables[i] })
		pic.tracks, pic.fresh = append(pic.tracks[:0], start...), pic.fresh[:0]
		for _, tb := range tables {
			pic.fold(tb)
		}
		pic.addFresh()
		if !slices.Equal(pic.tracks, want) {
			t.Fatalf("round %d, %d tables:\n got %+v\nwant %+v", round, len(tables), pic.tracks, want)
		}
	}
}

// The gun hits what is in its cone and range, stores fly and expire,
// damage destroys and the victim respawns in place; ignore_fire_buttons
// turns the buttons off.
func TestFirePath(t *testing.T) {
	for _, ignore := range []bool{false, true} {
		cfg := DefaultConfig()
		cfg.Faults.IgnoreFireButtons = ignore
		sim := newTestSim(t, cfg, 1)
		shooter := sim.World.SpawnPlayer(1, TypeSensorFighter, 0)
		victim := sim.World.SpawnPlayer(2, TypeSensorFighter, 1)
		vs := []*Viewer{{Slot: shooter}, {Slot: victim}}
		vid := sim.World.At(victim).ID
		var sh, vi *Entity
		place := func() { // projectiles spawn into the store: re-read the pointers every tick
			sh, vi = sim.World.At(shooter), sim.World.At(victim)
			fwd := forward(sh)
			for k := range vi.Pos {
				vi.Pos[k] = sh.Pos[k] + fwd[k]*800
			}
			vi.Yaw, vi.Vel = sh.Yaw, sh.Vel
		}
		sawShot, sawImpact, sawDestroyed, sawDespawn := false, false, false, false
		dec, _ := snapshot.NewDecoder()
		defer dec.Close()
		for tick := uint32(0); tick < 12*TickHz; tick++ {
			place()
			sh.Ctl.Buttons = proto.ButtonGun
			vi.Ctl = sh.Ctl
			vi.Ctl.Buttons = 0
			if tick%(4*TickHz) < 10 { // a press every 4 s
				sh.Ctl.Buttons |= proto.ButtonStoreRelease
			}
			tickSim(sim, tick, vs)
			msg := vs[1].In.Msg
			if _, err := dec.Decode(msg[proto.SnapshotHeaderSize-1], msg[proto.SnapshotHeaderSize:]); err != nil {
				t.Fatal(err)
			}
			for _, ev := range dec.Events() {
				switch ev.Kind {
				case snapshot.EventShot:
					sawShot = true
				case snapshot.EventImpact:
					sawImpact = true
				case snapshot.EventDestroyed:
					sawDestroyed = sawDestroyed || ev.ID == vid
				case snapshot.EventDespawn:
					sawDespawn = true
				}
			}
		}
		w := sim.Weapons
		if ignore {
			if w.ShotsFired != 0 || w.StoresReleased != 0 || sawShot {
				t.Errorf("ignore_fire_buttons: %+v", w)
			}
			continue
		}
		// 12 s at 10 rounds/s; 3 presses.
		if w.ShotsFired != 120 || w.Hits == 0 || w.StoresReleased != 3 || w.Despawns == 0 ||
			w.StoresReleased-w.Despawns != int64(sim.ProjectilesLive()) {
			t.Errorf("fire path: %+v", w)
		}
		if !sawShot || !sawImpact || !sawDestroyed || !sawDespawn {
			t.Errorf("victim's snapshots: shot %v impact %v destroyed %v despawn %v", sawShot, sawImpact, sawDestroyed, sawDespawn)
		}
		if sim.World.At(victim).ID != vid || sim.World.Len() != 2+sim.ProjectilesLive() {
			t.Errorf("the victim did not respawn in place: id %d (was %d), %d entities", sim.World.At(victim).ID, vid, sim.World.Len())
		}
	}
}

// Two aircraft meeting head-on take relative-speed damage; slow contact
// takes none.
func TestCollisionDamageByRelativeSpeed(t *testing.T) {
	w := NewWorld()
	a := w.Add(Entity{Health: maxHealth, Vel: [3]float64{0, 0, 100}})
	b := w.Add(Entity{Health: maxHealth, Pos: [3]float64{0, 0, 10}, Vel: [3]float64{0, 0, -100}})
	if !w.contact(a, b, 2*entityRadiusM) {
		t.Fatal("no contact")
	}
	want := maxHealth - (200-collideFreeMS)*collideDamagePerM
	if w.At(a).Health != want || w.At(b).Health != want {
		t.Fatalf("health %v / %v, want %v", w.At(a).Health, w.At(b).Health, want)
	}
	c := w.Add(Entity{Health: maxHealth, Pos: [3]float64{500, 0, 0}, Vel: [3]float64{0, 0, 100}})
	d := w.Add(Entity{Health: maxHealth, Pos: [3]float64{500, 0, 10}, Vel: [3]float64{0, 0, 105}})
	w.contact(c, d, 2*entityRadiusM)
	if w.At(c).Health != maxHealth {
		t.Fatalf("a 5 m/s contact did damage: %v", w.At(c).Health)
	}
}
