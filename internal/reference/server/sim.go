package server

import (
	"fmt"
	"math"
	"slices"
	"sync/atomic"
	"time"

	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// Phase indexes the tick phases the metrics file reports (docs/metrics.md).
type Phase int

// Tick phases, in metrics-file order.
const (
	PhaseMaintenance Phase = iota // network drain, admission, timeouts, spatial rebuilds, entity pool (spawn, respawn, despawn), faults' allocations
	PhaseSensing                  // sensor checks, contact tables, datalink fusion
	PhaseIntegrate                // flight model, every entity
	PhaseAI                       // AI controllers (loiter, pursuit, patrol)
	PhaseCollision                // broadphase + sphere-sphere + relative-speed damage + the fire path
	PhaseSerialize                // per-peer interest query + snapshot build + send
	PhaseOther                    // tick − Σ phases
	numPhases
)

var phaseNames = [numPhases]string{"maintenance", "sensing", "integrate", "ai", "collision", "serialize", "other"}

// phaseKeys are the phases' keys in the metrics file's cumulative block.
var phaseKeys = func() (k [numPhases]string) {
	for i, n := range phaseNames {
		k[i] = n + "_ms"
	}
	return k
}()

// String is the phase name as the metrics file spells it (without "_ms").
func (p Phase) String() string { return phaseNames[p] }

// collisionCellM is the collision grid's cell: a few sphere diameters, so a
// 3×3 neighbourhood covers every possible contact and cells stay sparse.
const collisionCellM = 8 * entityRadiusM

// Viewer is a peer's entity and its snapshot state.
type Viewer struct {
	Slot int32
	In   Interest
}

// stagger is the viewer's phase in [0,1) for the governor's reduced
// snapshot rate: a golden-ratio sequence over the entity slot, so peers
// spread over the ticks instead of all sending on the same one.
func (v *Viewer) stagger() float64 {
	x := float64(v.Slot) * 0.6180339887498949
	return x - math.Floor(x)
}

// Sim is the world plus everything a tick does to it that does not touch
// the network: the server drives it between draining and sending, and the
// benchmarks drive it directly.
type Sim struct {
	World    *World
	interest *Grid
	collide  *Grid
	pool     *pool
	encs     []*snapshot.Encoder
	radius   float64
	aiSlots  []int32
	recs     [][snapshot.RecordSize]byte
	built    builtSet         // Build's hand-over to SnapshotParams.Ready
	states   []snapshot.State // version-3 codes by slot, when a viewer takes deltas
	// byID, idRank and idKeys: the live slots in id order, each slot's
	// place in it, and the sort's keys (rankByID), when a viewer takes deltas.
	byID, idRank  []int32
	idKeys        []uint64
	sortInEncoder bool // no byID: the encoder sorts each peer's states (tests compare the two)
	aiscr         []aiScratch
	aiCost        time.Duration // [world] test_ai_cost_us per controller run
	// integrateCost is the slow_integrate_ms fault: time added inside the
	// integrate phase every tick, spun or slept as delayMode says.
	integrateCost time.Duration
	delayMode     string // [faults] delay_mode
	// The populated world: sensors (sensors.go), the fire path and the
	// projectile pool (weapons.go).
	sensorHz      float64
	hollowSensors bool
	noDatalink    bool           // the disable_datalink fault
	sensors       []sensorTable  // by slot
	owners        []int32        // sensor owners this tick
	sensDue       []int32        // owners checked this tick
	pictures      [3]teamPicture // by team (0: no datalink)
	sscr          []sensorScratch
	ignoreFire    bool
	release       []int32 // releasers of this tick's stores
	projs         []int32 // live projectiles, in spawn order
	scratch       []int32
	ring          []tickEvent // the last eventKeepTicks of events
	churnRate     float64     // projectiles per second
	churnTTL      uint32      // ticks
	churnAcc      float64
	churnSeq      uint64
	spreadKm      float64
	aglM          float64
	// SensorChecks is the number of sensor checks the last tick ran;
	// ContactEntries the contact-table entries (fused) after it, and
	// FusedEntries those of them known only through the datalink.
	SensorChecks   int
	ContactEntries int
	FusedEntries   int
	// Weapons are the fire path's run-long totals.
	Weapons WeaponCounts
	// Contacts is the number of entity-entity contacts found by the last tick.
	Contacts int
	// Tick is the tick being simulated; AIStride k (the overrun governor's
	// lever) runs each AI controller every k-th tick, staggered by index
	// (0 or 1: every tick); InterestScale (0 or 1: full radius) scales the
	// interest radius.
	Tick          uint32
	AIStride      int
	InterestScale float64
}

// NewSim builds a world from cfg (spawning the test AI) with workers
// parallel workers. Close releases the workers.
func NewSim(cfg *Config, workers int) (*Sim, error) {
	s := &Sim{
		World:    NewWorld(),
		interest: NewGrid(cfg.CellSize()),
		collide:  NewGrid(collisionCellM),
		pool:     newPool(workers, simCPUs(cfg), cfg.World.RealtimePriority),
		radius:   cfg.World.InterestRadiusM,
	}
	for i := 0; i < s.pool.n; i++ {
		e, err := snapshot.NewEncoder()
		if err != nil {
			s.pool.stop()
			return nil, fmt.Errorf("server: %w", err)
		}
		s.encs = append(s.encs, e)
	}
	w := &cfg.World
	m, err := ParseAIMix(w.TestSpawnAIMix)
	if err != nil {
		s.pool.stop()
		return nil, &ConfigError{Key: "world.test_spawn_ai_mix", Msg: err.Error()}
	}
	s.aiscr = make([]aiScratch, s.pool.n)
	s.sscr = make([]sensorScratch, s.pool.n)
	s.sensorHz, s.hollowSensors, s.ignoreFire = cfg.SensorHz(), cfg.Faults.HollowSensors, cfg.Faults.IgnoreFireButtons
	s.noDatalink = cfg.Faults.DisableDatalink
	s.churnRate, s.churnTTL = w.TestProjectileRate, uint32(math.Round(cfg.ProjectileTTL()*TickHz))
	s.spreadKm, s.aglM = w.TestSpawnSpreadKm, w.TestSpawnAGLM
	s.aiCost = time.Duration(w.TestAICostUs * float64(time.Microsecond))
	s.integrateCost = time.Duration(cfg.Faults.SlowIntegrateMs * float64(time.Millisecond))
	s.delayMode = cfg.Faults.DelayMode
	s.World.SpawnLoiterers(w.TestSpawnAICount, w.TestSpawnSpreadKm, w.TestSpawnAGLM, w.TestSpawnEntityType)
	s.World.AssignControllers(m, w.TestSpawnAICount)
	return s, nil
}

// simCPUs is the CPUs the workers are pinned to: the allowed ones, or
// nil with [world] pin_sim_workers off.
func simCPUs(cfg *Config) []int {
	if !cfg.World.PinSimWorkers {
		return nil
	}
	return allowedCPUs()
}

// PinCaller pins the calling goroutine (the tick loop, worker 0) to its
// CPU when the workers are pinned, and raises it to [world]
// realtime_priority when that is set, and returns what undoes both and
// the SCHED_FIFO priority it got (0: normal). err says the kernel refused
// the priority: the workers run pinned at normal priority.
func (s *Sim) PinCaller() (restore func(), prio int, err error) { return s.pool.pinCaller() }

// realtime is what became of [world] realtime_priority: the SCHED_FIFO
// priority the pinned workers run at (0: normal), and why, when it is not
// the one asked for. A tick figure measured without it is a figure of a
// different setup, so the metrics file says so (docs/metrics.md) and the
// gate shows it beside the tick.
type realtime struct {
	prio int
	why  string
}

// realtimeOf says what became of asked, given the priority the loop's
// thread got, the refusal, and whether the workers are pinned at all.
func realtimeOf(asked, got int, err error, pinned bool) realtime {
	switch {
	case got == asked:
		return realtime{prio: got}
	case err != nil:
		return realtime{why: "refused by the kernel (it needs CAP_SYS_NICE or RLIMIT_RTPRIO): " + err.Error()}
	case !pinned:
		return realtime{why: "the sim workers are not pinned ([world] pin_sim_workers off, fewer than 2 workers, or fewer allowed CPUs than workers), and the priority applies to pinned workers only"}
	default:
		return realtime{prio: got, why: "the loop's thread could not be pinned to its CPU"}
	}
}

// Pinned reports whether the workers are pinned to CPUs of their own.
func (s *Sim) Pinned() bool { return s.pool.cpus != nil }

// PinnedCPUs is the CPUs the workers are pinned to, worker 0's first (nil:
// not pinned).
func (s *Sim) PinnedCPUs() []int { return slices.Clone(s.pool.cpus) }

// Close stops the worker goroutines.
func (s *Sim) Close() { s.pool.stop() }

// Warm wakes pinned workers for a tick's passes: until Cool they spin
// between passes rather than park, so each pass starts on every worker at
// once (unpinned workers park between passes whatever the tick calls). The
// tick calls it at its start, before its serial work.
func (s *Sim) Warm() { s.pool.warm() }

// Cool ends what Warm began: after the tick's last pass the workers sleep
// until next, when the next tick is due, and wake by themselves to be
// running when it starts (the zero time: they wait for the next Warm).
func (s *Sim) Cool(next time.Time) { s.pool.coolUntil(next) }

// Workers is the parallelism of the data-parallel passes.
func (s *Sim) Workers() int { return s.pool.n }

// timer accumulates elapsed time into phases.
type timer struct {
	at  time.Time
	sum *[numPhases]time.Duration
}

func (t *timer) lap(p Phase) {
	now := time.Now()
	t.sum[p] += now.Sub(t.at)
	t.at = now
}

// Simulate runs AI, integration, collision and damage, the fire path, the
// entity pool's spawns and despawns, and the spatial rebuilds.
func (s *Sim) Simulate(t *timer) {
	w := s.World
	live := w.Live()
	s.aiSlots = s.aiSlots[:0]
	for _, sl := range live {
		if w.At(sl).AI {
			s.aiSlots = append(s.aiSlots, sl)
		}
	}
	// The overrun governor's stride decimates every controller, patrol's
	// radius query included.
	stride := uint32(max(s.AIStride, 1))
	s.pool.run(len(s.aiSlots), 64, func(wk, i int) {
		if stride == 1 || (s.Tick+uint32(i))%stride == 0 {
			think(w, s.interest, w.At(s.aiSlots[i]), &s.aiscr[wk])
			if s.aiCost > 0 {
				busyWork(s.aiCost)
			}
		}
	})
	t.lap(PhaseAI)
	s.pool.run(len(live), 64, func(_, i int) {
		e := w.At(live[i])
		e.Collided = false
		integrate(e)
	})
	if s.integrateCost > 0 {
		delayTick(s.delayMode, s.integrateCost)
	}
	t.lap(PhaseIntegrate)
	s.collide.Rebuild(w, live)
	t.lap(PhaseMaintenance)
	s.Contacts = s.collide.Collide(w)
	s.fire(live, s.ignoreFire)
	t.lap(PhaseCollision)
	s.lifecycle()
	s.publishEvents()
	s.interest.Rebuild(w, w.Live()) // after collision moved entities apart and the pool changed
	t.lap(PhaseMaintenance)
}

// ProjectilesLive is the number of live projectiles.
func (s *Sim) ProjectilesLive() int { return len(s.projs) }

// AIByController counts the live AI entities of each controller.
func (s *Sim) AIByController() [numControllers]int {
	var n [numControllers]int
	for _, sl := range s.World.Live() {
		if e := s.World.At(sl); e.AI {
			n[e.Ctrl]++
		}
	}
	return n
}

// anyDeltas reports whether a viewer takes version-3 deltas this tick.
func anyDeltas(vs []*Viewer) bool {
	for _, v := range vs {
		if v.In.Deltas {
			return true
		}
	}
	return false
}

// Build runs every viewer's interest query and builds its Snapshot message
// in parallel; worker k uses encoder k, and each viewer's output depends
// only on the world and its own state.
func (s *Sim) Build(vs []*Viewer, p *SnapshotParams) {
	if len(vs) == 0 {
		return // nobody to send to: skip encoding the world
	}
	radius := s.radius
	if s.InterestScale > 0 && s.InterestScale < 1 {
		radius *= s.InterestScale
	}
	var st []snapshot.State // nil: no viewer takes deltas, quantise nothing
	if anyDeltas(vs) {
		if st = s.states; st == nil {
			st = []snapshot.State{}
		}
	}
	s.recs, st = encodeAll(s.World, s.World.Live(), s.recs, st, s.pool.run)
	if st != nil {
		s.states = st
	}
	p.Records, p.States, p.Events, p.EventRadius = s.recs, st, s.ring, radius
	p.ByID, p.IDRank = nil, nil
	if st != nil && !s.sortInEncoder {
		s.rankByID()
		p.ByID, p.IDRank = s.byID, s.idRank
	}
	s.built.reset(len(vs), p.Ready)
	s.pool.run(len(vs), 1, func(wk, i int) {
		vs[i].In.Sense(s.World, s.interest, vs[i].Slot, radius)
		vs[i].In.Build(s.World, vs[i].Slot, s.encs[wk], p)
		s.built.done(wk, i)
	})
	s.built.finish()
}

// rankByID lists the live slots in entity id order (byID) and gives every
// slot its place in that list (idRank, -1 for a slot not live). Once a
// tick, so that each delta peer appends its states in id order without a
// sort of its own. Slots are reused and ids only grow, so the live list is
// nearly in id order already, which the sort is quick on.
func (s *Sim) rankByID() {
	live := s.World.Live()
	s.idKeys = s.idKeys[:0]
	for _, sl := range live {
		s.idKeys = append(s.idKeys, uint64(s.World.At(sl).ID)<<32|uint64(uint32(sl)))
	}
	slices.Sort(s.idKeys)
	n := s.World.Slots()
	if cap(s.idRank) < n {
		s.idRank = make([]int32, n)
	}
	s.idRank = s.idRank[:n]
	for i := range s.idRank {
		s.idRank[i] = -1
	}
	s.byID = s.byID[:0]
	for r, k := range s.idKeys {
		sl := int32(uint32(k))
		s.byID = append(s.byID, sl)
		s.idRank[sl] = int32(r)
	}
}

// builtSet hands built messages to SnapshotParams.Ready on worker 0 while
// the pass still runs, so the caller's sends overlap the other workers'
// builds instead of following them.
type builtSet struct {
	ready  func(i int)
	flags  []atomic.Bool // item i is built
	cursor int           // items before it handed over (worker 0's)
}

// reset readies the set for a pass of n items (ready nil: nothing to hand).
func (b *builtSet) reset(n int, ready func(int)) {
	b.ready, b.cursor = ready, 0
	if ready == nil {
		return
	}
	if cap(b.flags) < n {
		b.flags = make([]atomic.Bool, n)
	}
	b.flags = b.flags[:n]
	for i := range b.flags {
		b.flags[i].Store(false)
	}
}

// done marks item i built; on worker 0 it then hands over every item built
// so far in order, up to the first one still being built.
func (b *builtSet) done(wk, i int) {
	if b.ready == nil {
		return
	}
	b.flags[i].Store(true) // publishes the item's message to worker 0
	if wk != 0 {
		return
	}
	for b.cursor < len(b.flags) && b.flags[b.cursor].Load() {
		b.ready(b.cursor)
		b.cursor++
	}
}

// finish hands over what is left once the pass is over (every item built).
func (b *builtSet) finish() {
	if b.ready == nil {
		return
	}
	for ; b.cursor < len(b.flags); b.cursor++ {
		b.ready(b.cursor)
	}
	b.ready = nil
}
