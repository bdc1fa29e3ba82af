package server

import (
	"math"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/wire/proto"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// TickHz is the fixed simulation and snapshot rate.
const TickHz = 60

// dt is one tick in seconds.
const dt = 1.0 / TickHz

// Flight-model and world constants. They are chosen for a model that is
// stable under any input (every angle is a first-order lag toward a bounded
// target), not for realism.
const (
	gravity        = 9.81
	entityRadiusM  = 12.0  // collision sphere
	minSpeed       = 60.0  // m/s at zero throttle
	maxSpeed       = 250.0 // m/s at full throttle, before afterburner
	burnerBonus    = 80.0  // m/s with ButtonAfterburner
	maxBankRad     = 70 * math.Pi / 180
	maxPitchRad    = 45 * math.Pi / 180
	worldHalfM     = 120000.0 // x and z stay inside ±this (the record covers ±131 km)
	ceilingM       = 14000.0
	groundClearM   = 30.0 // an aircraft is held at least this far above terrain
	loiterThrottle = 0.4
)

// Entity type codes (docs/snapshot-format.md).
const (
	TypeAircraft      uint8 = 1
	TypeSensorFighter uint8 = 2
	TypeDebug         uint8 = 3
	TypeBomber        uint8 = 4
	TypeLoiterAI      uint8 = 16
	TypeProjectile    uint8 = 32 // a released store or a churn projectile
)

// DefaultEntityType is what a peer flies when its Join names no
// entity_type (an empty string).
const DefaultEntityType = "builtin:debug-entity"

// typeCode maps a requested entity type name to its code; any other
// non-empty name flies as a generic aircraft.
func typeCode(name string) uint8 {
	switch name {
	case "builtin:sensor-fighter":
		return TypeSensorFighter
	case "builtin:debug-entity":
		return TypeDebug
	case "builtin:bomber":
		return TypeBomber
	case "builtin:loiter-ai":
		return TypeLoiterAI
	}
	return TypeAircraft
}

// Terrain is the deterministic ground height in metres at (x, z): rolling
// hills between 425 and 575 m. Deterministic so a world is reproducible and
// AI altitude can be checked against the local ground in tests.
func Terrain(x, z float64) float64 {
	return 500 + 50*math.Sin(x/7000)*math.Cos(z/9000) + 25*math.Sin((x+z)/3100)
}

// Controls are an entity's current flight inputs.
type Controls struct {
	Throttle, Elevator, Aileron, Rudder float64
	Buttons                             uint32
}

// clampControls bounds an Input to the model's ranges. Decoding already
// rejects NaN and ±Inf.
func clampControls(in *proto.Input) Controls {
	return Controls{
		Throttle: clamp(float64(in.Throttle), 0, 1),
		Elevator: clamp(float64(in.Elevator), -1, 1),
		Aileron:  clamp(float64(in.Aileron), -1, 1),
		Rudder:   clamp(float64(in.Rudder), -1, 1),
		Buttons:  in.Buttons,
	}
}

// loiter is the AI state of a test-spawned loiterer.
type loiter struct {
	cx, cz float64 // circle centre
	radius float64
	dir    float64 // +1 or −1: which way round
	agl    float64 // height held above the local terrain
}

// Entity is one simulated aircraft or projectile.
type Entity struct {
	ID       uint32
	Type     uint8
	AI       bool
	Peer     transport.PeerID // owning peer (player entities)
	Pos      [3]float64
	Vel      [3]float64
	Yaw      float64 // heading, radians, 0 = +z (north), increasing toward +x
	Pitch    float64
	Roll     float64
	Speed    float64
	Ctl      Controls
	Collided bool
	ai       loiter
	// The populated world (populated.go): what the entity is, its team
	// (players: 1 + client index parity; 0 none), its health, its spawn
	// index (respawn puts it back where that index spawns) and its AI
	// controller's and weapons' state.
	Proj    bool
	Team    uint8
	Health  float64
	Index   uint32
	Ctrl    Controller
	mind    mind
	weapons weaponState
}

// World holds every entity. Slots are dense: Live lists the occupied ones in
// ascending order, so every pass over the world is deterministic.
type World struct {
	ents   []Entity
	alive  []bool
	free   []int32
	live   []int32
	dirty  bool
	nextID uint32
	byID   map[uint32]int32
	// fx collects this tick's damage events and destroyed slots
	// (populated.go); the tick loop drains it.
	fx effects
}

// NewWorld returns an empty world.
func NewWorld() *World { return &World{nextID: 1, byID: map[uint32]int32{}} }

// Lookup returns the slot of the live entity with the given id. It only
// reads, so the AI pass may call it from every worker.
func (w *World) Lookup(id uint32) (int32, bool) {
	s, ok := w.byID[id]
	return s, ok
}

// Alive reports whether slot holds an entity.
func (w *World) Alive(slot int32) bool { return slot >= 0 && int(slot) < len(w.alive) && w.alive[slot] }

// Add places e in a free slot, assigns its ID and returns the slot.
func (w *World) Add(e Entity) int32 {
	e.ID = w.nextID
	w.nextID++
	var slot int32
	if n := len(w.free); n > 0 {
		slot = w.free[n-1]
		w.free = w.free[:n-1]
		w.ents[slot] = e
		w.alive[slot] = true
	} else {
		slot = int32(len(w.ents))
		w.ents = append(w.ents, e)
		w.alive = append(w.alive, true)
	}
	w.byID[e.ID] = slot
	w.dirty = true
	return slot
}

// Remove frees a slot.
func (w *World) Remove(slot int32) {
	if !w.alive[slot] {
		return
	}
	w.alive[slot] = false
	delete(w.byID, w.ents[slot].ID)
	w.ents[slot] = Entity{}
	w.free = append(w.free, slot)
	w.dirty = true
}

// Live returns the occupied slots in ascending order.
func (w *World) Live() []int32 {
	if w.dirty {
		w.live = w.live[:0]
		for i, a := range w.alive {
			if a {
				w.live = append(w.live, int32(i))
			}
		}
		w.dirty = false
	}
	return w.live
}

// Len is the live entity count.
func (w *World) Len() int { return len(w.Live()) }

// Slots is the slot capacity (an upper bound on slot indices).
func (w *World) Slots() int { return len(w.ents) }

// At returns the entity in slot.
func (w *World) At(slot int32) *Entity { return &w.ents[slot] }

// SpawnLoiterers adds n AI loiterers spread uniformly over a square of side
// spreadKm centred on the origin, each at aglM above the terrain under it.
// Placement is a pure function of the index, so every run builds the same
// world.
func (w *World) SpawnLoiterers(n int, spreadKm, aglM float64, typeName string) {
	code := typeCode(typeName)
	for i := 0; i < n; i++ {
		e := Entity{Type: code, AI: true, Index: uint32(i)}
		placeLoiterer(&e, spreadKm, aglM)
		w.Add(e)
	}
}

// placeLoiterer puts e on the loiter circle its Index spawns on, at full
// health: the initial spawn and every respawn.
func placeLoiterer(e *Entity, spreadKm, aglM float64) {
	half := spreadKm * 1000 / 2
	rng := splitmix(uint64(e.Index) + 0x5C47E)
	r := 1500 + 1500*unit(rng.next())
	cx := (2*unit(rng.next()) - 1) * half
	cz := (2*unit(rng.next()) - 1) * half
	phase := 2 * math.Pi * unit(rng.next())
	dir := 1.0
	if rng.next()&1 == 1 {
		dir = -1
	}
	x, z := cx+r*math.Sin(phase), cz+r*math.Cos(phase)
	e.Pos = [3]float64{x, Terrain(x, z) + aglM, z}
	e.Yaw = wrapAngle(phase + dir*math.Pi/2)
	e.Pitch = 0
	e.Speed = minSpeed + (maxSpeed-minSpeed)*loiterThrottle
	e.ai = loiter{cx: cx, cz: cz, radius: r, dir: dir, agl: aglM}
	e.Roll = dir * math.Atan(e.Speed*e.Speed/(gravity*r))
	e.Ctl = Controls{Throttle: loiterThrottle}
	e.Health = maxHealth
	e.mind = mind{target: e.mind.target}
}

// SpawnPlayer adds a peer's aircraft. Players start on a ring around the
// origin (by join order) at 3000 m above the ground, heading outward; the
// client index's parity is the team the datalink shares contacts within.
func (w *World) SpawnPlayer(peer transport.PeerID, code uint8, index uint32) int32 {
	e := Entity{Type: code, Peer: peer, Index: index, Team: 1 + uint8(index%2)}
	placePlayer(&e)
	return w.Add(e)
}

// placePlayer puts a player's entity where its index spawns, at full
// health: the join and every respawn.
func placePlayer(e *Entity) {
	a := float64(e.Index%360) * (2 * math.Pi / 360) * 7
	x, z := 2000*math.Sin(a), 2000*math.Cos(a)
	e.Pos = [3]float64{x, Terrain(x, z) + 3000, z}
	e.Yaw = wrapAngle(a)
	e.Pitch, e.Roll = 0, 0
	e.Speed = minSpeed + (maxSpeed-minSpeed)*0.5
	e.Ctl = Controls{Throttle: 0.5}
	e.Health = maxHealth
}

// loiterStep is the loiter controller: it sets e.Ctl so the flight model flies a
// circle at the entity's AGL above the local ground. Bank has a feed-forward
// term for the circle and altitude uses vertical-speed damping, so the
// entity converges instead of oscillating (the seed's loiter AI swung ±250 m
// and flew into hills; this one must not).
func loiterStep(e *Entity) {
	l := &e.ai
	dx, dz := e.Pos[0]-l.cx, e.Pos[2]-l.cz
	dist := math.Hypot(dx, dz)
	theta := math.Atan2(dx, dz)
	errR := clamp((dist-l.radius)/l.radius, -0.6, 0.6)
	want := theta + l.dir*(math.Pi/2+errR)
	headingErr := wrapAngle(want - e.Yaw)
	ff := l.dir * math.Atan(e.Speed*e.Speed/(gravity*l.radius))
	e.Ctl.Aileron = clamp((ff+1.5*headingErr)/maxBankRad, -1, 1)
	targetY := Terrain(e.Pos[0], e.Pos[2]) + l.agl
	e.Ctl.Elevator = clamp((targetY-e.Pos[1]-4*e.Vel[1])/800, -0.5, 0.5)
	e.Ctl.Rudder = 0
	e.Ctl.Throttle = loiterThrottle
}

// integrate advances e by one tick.
func integrate(e *Entity) {
	if e.Proj {
		integrateProjectile(e)
		return
	}
	c := &e.Ctl
	target := minSpeed + (maxSpeed-minSpeed)*c.Throttle
	if c.Buttons&proto.ButtonAfterburner != 0 {
		target += burnerBonus
	}
	e.Speed += (target - e.Speed) * (dt / 2)
	e.Roll += (c.Aileron*maxBankRad - e.Roll) * (dt * 2.5)
	e.Pitch += (c.Elevator*maxPitchRad - e.Pitch) * (dt * 1.5)
	e.Yaw = wrapAngle(e.Yaw + (gravity*math.Tan(e.Roll)/math.Max(e.Speed, 30)+0.35*c.Rudder)*dt)
	sp, cp := math.Sincos(e.Pitch)
	sy, cy := math.Sincos(e.Yaw)
	e.Vel = [3]float64{e.Speed * cp * sy, e.Speed * sp, e.Speed * cp * cy}
	for k := range e.Pos {
		e.Pos[k] += e.Vel[k] * dt
	}
	keepInWorld(e)
}

// keepInWorld holds e above the ground, below the ceiling and inside the
// record's position range. An aircraft never dies by leaving the world, and
// one destroyed by damage respawns in place: a population that decays while
// it is measured makes every figure a function of run length.
func keepInWorld(e *Entity) {
	if floor := Terrain(e.Pos[0], e.Pos[2]) + groundClearM; e.Pos[1] < floor {
		e.Pos[1] = floor
		e.Pitch = math.Max(e.Pitch, 0)
		e.Vel[1] = math.Max(e.Vel[1], 0)
	}
	if e.Pos[1] > ceilingM {
		e.Pos[1] = ceilingM
		e.Pitch = math.Min(e.Pitch, 0)
		e.Vel[1] = math.Min(e.Vel[1], 0)
	}
	for _, k := range [2]int{0, 2} {
		if math.Abs(e.Pos[k]) > worldHalfM {
			e.Pos[k] = math.Copysign(worldHalfM, e.Pos[k])
			e.Yaw = wrapAngle(e.Yaw + math.Pi)
		}
	}
}

// quat is the entity's orientation: yaw about +y, then pitch (nose up),
// then roll about the nose.
func (e *Entity) quat() [4]float32 {
	sy, cy := math.Sincos(e.Yaw / 2)
	sp, cp := math.Sincos(-e.Pitch / 2)
	sr, cr := math.Sincos(e.Roll / 2)
	// q = qYaw(y) * qPitch(x) * qRoll(z)
	w := cy*cp*cr + sy*sp*sr
	x := cy*sp*cr + sy*cp*sr
	y := sy*cp*cr - cy*sp*sr
	z := cy*cp*sr - sy*sp*cr
	return [4]float32{float32(x), float32(y), float32(z), float32(w)}
}

// record fills r with e as seen by a peer.
func (e *Entity) record(r *snapshot.Record) {
	r.ID = e.ID
	r.Pos = [3]float32{float32(e.Pos[0]), float32(e.Pos[1]), float32(e.Pos[2])}
	r.Vel = [3]float32{float32(e.Vel[0]), float32(e.Vel[1]), float32(e.Vel[2])}
	r.Rot = e.quat()
	r.Type = e.Type
	r.Flags = 0
	if e.AI {
		r.Flags |= snapshot.FlagAI
	}
	if e.Collided {
		r.Flags |= snapshot.FlagCollided
	}
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

func wrapAngle(a float64) float64 {
	a = math.Mod(a+math.Pi, 2*math.Pi)
	if a < 0 {
		a += 2 * math.Pi
	}
	return a - math.Pi
}

// splitmix is a tiny deterministic generator for world placement.
type splitmix uint64

func (s *splitmix) next() uint64 {
	*s += 0x9E3779B97F4A7C15
	z := uint64(*s)
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// unit maps a random word to [0, 1).
func unit(v uint64) float64 { return float64(v>>11) / (1 << 53) }
