package server

import (
	"math"

	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// Fire path, damage and projectiles. Everything here runs on the loop
// goroutine in slot order, so what happens — and the snapshot bytes — is a
// pure function of the world, whatever the worker count.
const (
	maxHealth         = 100.0
	gunIntervalTicks  = 6      // 10 rounds a second while the gun button is held
	gunRangeM         = 3000.0 // hitscan range
	gunHalfConeRad    = 8 * math.Pi / 180
	gunDamage         = 10.0
	storeSpeed        = 150.0 // m/s added along the nose on release
	storeTTLTicks     = 8 * TickHz
	churnSpeed        = 300.0 // m/s, horizontal
	collideFreeMS     = 20.0  // relative speed below which a contact does no damage
	collideDamagePerM = 0.5   // damage per m/s of relative speed above collideFreeMS (aircraft)
	impactDamagePerM  = 0.25  // damage per m/s of relative speed (projectile on aircraft)
	projArmTicks      = 30    // a projectile cannot strike the entity that released it for this long
	eventKeepTicks    = 2 * TickHz
)

// weaponState is a player's trigger state.
type weaponState struct {
	prevButtons uint32
	gunCool     uint8
	lastHitBy   uint32 // the entity that last damaged this one
	ttl         uint32 // projectile: ticks left
	owner       uint32 // projectile: the entity that released it
	age         uint32 // projectile: ticks since release
	spent       bool   // projectile: struck something or the ground
}

// effects are what this tick's damage produced, in the order it happened.
type effects struct {
	events []tickEvent
	doomed []int32 // slots whose health reached 0
}

// tickEvent is one snapshot event with where and when it happened, and the
// slot it concerns (despawns: a peer is sent it only for the entity it was
// sent from that slot).
type tickEvent struct {
	tick uint32
	slot int32
	pos  [3]float64
	ev   snapshot.Event
}

// WeaponCounts are the fire path's run-long totals (the metrics file).
type WeaponCounts struct {
	ShotsFired, Hits, StoresReleased, Despawns int64
}

func (w *World) emit(slot int32, kind uint8, id, other uint32, value float64, pos [3]float64) {
	w.fx.events = append(w.fx.events, tickEvent{slot: slot, pos: pos,
		ev: snapshot.Event{Kind: kind, ID: id, Other: other, Value: uint16(clamp(math.Round(value), 0, math.MaxUint16))}})
}

// damage takes dmg from the aircraft in slot s, caused by entity `by`.
func (w *World) damage(s int32, by uint32, dmg float64) {
	e := w.At(s)
	if dmg < 1 || e.Health <= 0 {
		return
	}
	e.Health -= dmg
	e.weapons.lastHitBy = by
	w.emit(s, snapshot.EventImpact, e.ID, by, dmg, e.Pos)
	if e.Health <= 0 {
		w.fx.doomed = append(w.fx.doomed, s)
	}
}

func relSpeed(a, b *Entity) float64 {
	dx, dy, dz := a.Vel[0]-b.Vel[0], a.Vel[1]-b.Vel[1], a.Vel[2]-b.Vel[2]
	return math.Sqrt(dx*dx + dy*dy + dz*dz)
}

// contact resolves an overlap the collision grid found between slots sa and
// sb: two projectiles pass through each other; a projectile strikes an
// aircraft (relative-speed damage, the projectile is spent); two aircraft
// are pushed apart and both take relative-speed damage. It reports whether
// the pair counts as a contact.
func (w *World) contact(sa, sb int32, d float64) bool {
	a, b := w.At(sa), w.At(sb)
	switch {
	case a.Proj && b.Proj:
		return false
	case a.Proj || b.Proj:
		p, t, st := a, b, sb
		if b.Proj {
			p, t, st = b, a, sa
		}
		if p.weapons.spent || (p.weapons.owner == t.ID && p.weapons.age < projArmTicks) || dist2(&p.Pos, &t.Pos) >= d*d {
			return false
		}
		p.weapons.spent = true
		t.Collided = true
		w.damage(st, p.weapons.owner, relSpeed(p, t)*impactDamagePerM)
		return true
	}
	if !separate(a, b, d) {
		return false
	}
	dmg := (relSpeed(a, b) - collideFreeMS) * collideDamagePerM
	w.damage(sa, b.ID, dmg)
	w.damage(sb, a.ID, dmg)
	return true
}

// integrateProjectile is a projectile's flight: ballistic, spent on
// reaching the ground or leaving the world.
func integrateProjectile(e *Entity) {
	e.Vel[1] -= gravity * dt
	for k := range e.Pos {
		e.Pos[k] += e.Vel[k] * dt
	}
	e.weapons.age++
	if e.Pos[1] < Terrain(e.Pos[0], e.Pos[2]) || math.Abs(e.Pos[0]) > worldHalfM || math.Abs(e.Pos[2]) > worldHalfM {
		e.weapons.spent = true
	}
}

// forward is the unit vector along e's nose.
func forward(e *Entity) [3]float64 {
	sp, cp := math.Sincos(e.Pitch)
	sy, cy := math.Sincos(e.Yaw)
	return [3]float64{cp * sy, sp, cp * cy}
}

// fire runs every player's gun and store buttons (live in slot order):
// the gun fires a hitscan every gunIntervalTicks while held; the store
// button releases one projectile per press. It returns the stores to spawn
// (their releasers' slots). ignore turns the buttons off (the
// ignore_fire_buttons fault).
func (s *Sim) fire(live []int32, ignore bool) {
	w := s.World
	s.release = s.release[:0]
	for _, sl := range live {
		e := w.At(sl)
		if e.AI || e.Proj {
			continue
		}
		ws := &e.weapons
		b := e.Ctl.Buttons
		if ignore {
			b = 0
		}
		if ws.gunCool > 0 {
			ws.gunCool--
		}
		if b&proto.ButtonGun != 0 && ws.gunCool == 0 {
			ws.gunCool = gunIntervalTicks
			s.hitscan(sl, e)
		}
		if b&proto.ButtonStoreRelease != 0 && ws.prevButtons&proto.ButtonStoreRelease == 0 {
			s.release = append(s.release, sl)
		}
		ws.prevButtons = b
	}
}

// hitscan fires e's gun: the nearest aircraft within gunRangeM inside the
// gun's cone is hit. The query runs on the interest grid as last rebuilt;
// freed slots are skipped.
func (s *Sim) hitscan(sl int32, e *Entity) {
	w := s.World
	s.Weapons.ShotsFired++
	fwd := forward(e)
	s.scratch = s.interest.Query(w, e.Pos, gunRangeM, s.scratch[:0])
	best, bestD := int32(-1), math.Inf(1)
	cosCone := math.Cos(gunHalfConeRad)
	for _, o := range s.scratch {
		t := w.At(o)
		if o == sl || !w.Alive(o) || t.Proj {
			continue
		}
		dx, dy, dz := t.Pos[0]-e.Pos[0], t.Pos[1]-e.Pos[1], t.Pos[2]-e.Pos[2]
		d := math.Sqrt(dx*dx + dy*dy + dz*dz)
		if d < 1e-6 || (dx*fwd[0]+dy*fwd[1]+dz*fwd[2])/d < cosCone {
			continue
		}
		if d < bestD {
			best, bestD = o, d
		}
	}
	var hit uint32
	if best >= 0 {
		hit = w.At(best).ID
		s.Weapons.Hits++
	}
	w.emit(sl, snapshot.EventShot, e.ID, hit, 0, e.Pos)
	if best >= 0 {
		w.damage(best, e.ID, gunDamage)
	}
}

// spawnProjectile adds a projectile and tracks it until it expires.
func (s *Sim) spawnProjectile(p Entity, ttl uint32) {
	p.Type, p.Proj = TypeProjectile, true
	p.weapons.ttl = max(ttl, 1)
	p.Speed = math.Sqrt(p.Vel[0]*p.Vel[0] + p.Vel[1]*p.Vel[1] + p.Vel[2]*p.Vel[2])
	s.projs = append(s.projs, s.World.Add(p))
}

// lifecycle is the pool's tick: destroyed aircraft respawn in place (same
// slot and id), expired or spent projectiles are despawned (their slots
// return to the free list), and this tick's stores and churn projectiles
// are spawned into freed slots first.
func (s *Sim) lifecycle() {
	w := s.World
	for _, sl := range w.fx.doomed {
		e := w.At(sl)
		if !w.Alive(sl) || e.Health > 0 {
			continue
		}
		w.emit(sl, snapshot.EventDestroyed, e.ID, e.weapons.lastHitBy, 0, e.Pos)
		if e.AI {
			placeLoiterer(e, s.spreadKm, s.aglM)
		} else {
			placePlayer(e)
		}
		e.weapons.lastHitBy = 0
	}
	w.fx.doomed = w.fx.doomed[:0]
	kept := s.projs[:0]
	for _, sl := range s.projs {
		e := w.At(sl)
		e.weapons.ttl--
		if e.weapons.ttl == 0 || e.weapons.spent {
			w.emit(sl, snapshot.EventDespawn, e.ID, 0, 0, e.Pos)
			w.Remove(sl)
			s.Weapons.Despawns++
			continue
		}
		kept = append(kept, sl)
	}
	s.projs = kept
	for _, sl := range s.release {
		e := w.At(sl)
		fwd := forward(e)
		p := Entity{Yaw: e.Yaw, Pitch: e.Pitch, weapons: weaponState{owner: e.ID}}
		for k := range p.Pos {
			p.Pos[k] = e.Pos[k] + fwd[k]*4*entityRadiusM
			p.Vel[k] = e.Vel[k] + fwd[k]*storeSpeed
		}
		s.spawnProjectile(p, storeTTLTicks)
		s.Weapons.StoresReleased++
	}
	s.churnAcc += s.churnRate / TickHz
	for ; s.churnAcc >= 1; s.churnAcc-- {
		s.spawnChurn()
	}
}

// spawnChurn adds one test_projectile_rate projectile: a pure function of
// its sequence number, spread over the spawn square at the spawn height,
// flying level in a random direction for test_projectile_ttl_s.
func (s *Sim) spawnChurn() {
	rng := splitmix(s.churnSeq ^ 0xC4A77)
	s.churnSeq++
	half := s.spreadKm * 1000 / 2
	x := (2*unit(rng.next()) - 1) * half
	z := (2*unit(rng.next()) - 1) * half
	sy, cy := math.Sincos(2 * math.Pi * unit(rng.next()))
	p := Entity{
		Pos: [3]float64{x, Terrain(x, z) + s.aglM, z},
		Vel: [3]float64{churnSpeed * sy, 0, churnSpeed * cy},
	}
	p.Yaw = math.Atan2(sy, cy)
	s.spawnProjectile(p, s.churnTTL)
}

// publishEvents moves this tick's events into the ring peers read from
// and drops those older than eventKeepTicks.
func (s *Sim) publishEvents() {
	w := s.World
	cut := 0
	for cut < len(s.ring) && s.Tick-s.ring[cut].tick >= eventKeepTicks {
		cut++
	}
	if cut > 0 {
		s.ring = append(s.ring[:0], s.ring[cut:]...)
	}
	for _, ev := range w.fx.events {
		ev.tick = s.Tick
		s.ring = append(s.ring, ev)
	}
	w.fx.events = w.fx.events[:0]
}
