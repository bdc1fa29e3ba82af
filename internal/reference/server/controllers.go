package server

import (
	"fmt"
	"math"

	"github.com/scalegate/scalegate/internal/load/mix"
)

// Controller is an AI entity's flight controller ([world] test_spawn_ai_mix).
type Controller uint8

// Controllers, in ai_by_controller order.
const (
	// CtlLoiter flies a circle at a fixed height above the ground: cheap,
	// reads nothing but its own state.
	CtlLoiter Controller = iota
	// CtlPursuit follows a moving target entity, looked up by id every
	// tick.
	CtlPursuit
	// CtlPatrol is a state machine (patrol → intercept → return) whose
	// within-range transitions run the spatial radius query every tick:
	// the expensive AI path, and the one the overrun governor's AI-sample
	// stride decimates.
	CtlPatrol
	numControllers
)

var controllerNames = [numControllers]string{"loiter", "pursuit", "patrol"}

// String is the controller's name in the mix and the metrics file.
func (c Controller) String() string { return controllerNames[c] }

// ParseAIMix parses test_spawn_ai_mix ("loiter:60,pursuit:25,patrol:15");
// "" is all loiter.
func ParseAIMix(spec string) (mix.Mix, error) {
	if spec == "" {
		return mix.Mix{{Name: CtlLoiter.String(), Weight: 1}}, nil
	}
	return mix.Parse(spec, "test_spawn_ai_mix", func(name string) error {
		if _, ok := controllerByName(name); !ok {
			return fmt.Errorf("unknown controller %q (known: loiter, pursuit, patrol)", name)
		}
		return nil
	})
}

func controllerByName(name string) (Controller, bool) {
	for i, n := range controllerNames {
		if n == name {
			return Controller(i), true
		}
	}
	return 0, false
}

// AI tuning.
const (
	patrolRangeM    = 4000.0 // an entity this close makes a patroller intercept
	pursuitStandoff = 600.0  // a pursuer aims this far behind its target
)

// Patrol states.
const (
	patrolCircle uint8 = iota
	patrolIntercept
	patrolReturn
)

// mind is an AI controller's state beyond the loiter circle.
type mind struct {
	target uint32 // pursuit: the entity followed
	state  uint8  // patrol: patrolCircle, patrolIntercept, patrolReturn
	seen   int32  // patrol: the slot intercepted
}

// AssignControllers gives the n AI entities spawned first (slots 0..n-1,
// spawn order) their controllers by index from m, so the counts match the
// weights exactly (internal/load/mix). A pursuer follows the AI entity half the
// spawn order away (a moving target, found by id every tick): the mix
// assigns contiguous index blocks, so "the next one" would chain the
// pursuers into one conga line behind a single leader.
func (w *World) AssignControllers(m mix.Mix, n int) {
	for i := 0; i < n; i++ {
		e := w.At(int32(i))
		name := m.Assign(i, n)
		e.Ctrl, _ = controllerByName(name)
		if e.Ctrl == CtlPursuit && n > 1 {
			t := (i + n/2) % n
			if t == i {
				t = (i + 1) % n
			}
			e.mind.target = w.At(int32(t)).ID
		}
	}
}

// aiScratch is one worker's query buffer for the patrol controller.
type aiScratch struct{ q []int32 }

// think runs e's controller. g is the interest grid as last rebuilt (a
// patroller's radius query); slots it returns that have since been freed
// are skipped.
func think(w *World, g *Grid, e *Entity, sc *aiScratch) {
	switch e.Ctrl {
	case CtlPursuit:
		if s, ok := w.Lookup(e.mind.target); ok && s >= 0 && w.At(s) != e {
			pursue(e, w.At(s))
			return
		}
	case CtlPatrol:
		if patrol(w, g, e, sc) {
			return
		}
	}
	loiterStep(e)
}

// pursue steers e toward a point pursuitStandoff behind t, at t's height
// (held clear of the ground).
func pursue(e, t *Entity) {
	sy, cy := math.Sincos(t.Yaw)
	aim := [3]float64{t.Pos[0] - pursuitStandoff*sy, t.Pos[1], t.Pos[2] - pursuitStandoff*cy}
	dist := math.Hypot(aim[0]-e.Pos[0], aim[2]-e.Pos[2])
	throttle := 0.4
	if dist > 1500 {
		throttle = 0.9
	}
	steerTo(e, aim, math.Max(aim[1], Terrain(e.Pos[0], e.Pos[2])+500), throttle)
}

// patrol runs the patrol state machine and reports whether it set the
// controls (false: fly the loiter circle). Every tick, in every state, the
// transition "any entity within patrolRangeM" runs a radius query.
func patrol(w *World, g *Grid, e *Entity, sc *aiScratch) bool {
	sc.q = g.Query(w, e.Pos, patrolRangeM, sc.q[:0])
	near, best := int32(-1), math.Inf(1)
	for _, s := range sc.q {
		o := w.At(s)
		if !w.Alive(s) || o == e || o.Proj {
			continue
		}
		if d := dist2(&e.Pos, &o.Pos); d < best {
			near, best = s, d
		}
	}
	m := &e.mind
	switch {
	case near >= 0:
		m.state, m.seen = patrolIntercept, near
	case m.state == patrolIntercept:
		m.state = patrolReturn
	case m.state == patrolReturn && math.Hypot(e.Pos[0]-e.ai.cx, e.Pos[2]-e.ai.cz) <= e.ai.radius*1.2:
		m.state = patrolCircle
	}
	switch m.state {
	case patrolIntercept:
		o := w.At(m.seen)
		steerTo(e, o.Pos, math.Max(o.Pos[1], Terrain(e.Pos[0], e.Pos[2])+500), 0.8)
		return true
	case patrolReturn:
		steerTo(e, [3]float64{e.ai.cx, 0, e.ai.cz}, Terrain(e.Pos[0], e.Pos[2])+e.ai.agl, 0.6)
		return true
	}
	return false
}

// steerTo sets e's controls to turn toward aim's x/z and climb or descend
// toward height y, with the loiter controller's damping.
func steerTo(e *Entity, aim [3]float64, y, throttle float64) {
	want := math.Atan2(aim[0]-e.Pos[0], aim[2]-e.Pos[2])
	headingErr := wrapAngle(want - e.Yaw)
	e.Ctl.Aileron = clamp(1.5*headingErr/maxBankRad, -1, 1)
	e.Ctl.Elevator = clamp((y-e.Pos[1]-4*e.Vel[1])/800, -0.5, 0.5)
	e.Ctl.Rudder = 0
	e.Ctl.Throttle = throttle
}
