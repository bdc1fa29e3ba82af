package server

import (
	"cmp"
	"math"
	"slices"
)

// Sensors. Every builtin:sensor-fighter carries one: a cone ahead of the
// nose out to sensorRangeM, where a target is detected with a probability
// that falls with range and with aspect (nose- or tail-on targets show
// most). Each owner is checked at [world] sensor_check_hz, staggered by
// entity id so a tick carries only its share of the owners, and keeps a
// contact table (first and last seen, a track quality that decays between
// detections). Datalink fusion then shares tracks within a team (players:
// client index parity): each tick the team's picture merges the fresh
// tables of the members checked, and each of them rebuilds its fused table
// from its own tracks and the team's picture. Every owner fuses a picture
// whose size grows with the number of players (who detect each other), so
// the work grows as P²: the path a hollow world never exercises.
//
// Determinism: a detection is a pure function of (tick, owner id, target
// id) through a hash, never of scheduling; each owner's check writes only
// its own table, the team pictures are merged with order-free max/min, and
// fusion (a later pass) only reads what the earlier ones wrote. The
// snapshot bytes do not depend on the worker count.
const (
	sensorRangeM     = 10000.0
	sensorHalfCone   = 60 * math.Pi / 180
	sensorPMax       = 0.9  // detection probability at point-blank, nose-on
	trackGain        = 0.4  // quality added by a detection
	trackHalfLifeS   = 2.0  // an undetected track's quality halves this often
	trackDropQuality = 0.05 // a track below this is forgotten
	datalinkFactor   = 0.8  // a teammate's track is worth this much of its quality
	sensorSeed       = 0x5E2503
)

// Contact is one entry of a contact table.
type Contact struct {
	ID          uint32 // the entity tracked
	First, Last uint32 // ticks first and last detected
	Quality     float32
	Datalink    bool // known only from a teammate
}

// sensorTable is one owner's sensor state, kept per slot.
type sensorTable struct {
	id      uint32    // the owner (a different id: the slot was reused)
	checked uint32    // tick of the last check
	local   []Contact // own detections, sorted by id
	fused   []Contact // local ∪ teammates' local, sorted by id
	// shared counts the fused entries known only from a teammate
	// (Datalink): what fusion added beyond the owner's own sensor.
	shared int
}

// teamPicture is a team's fused tracks, sorted by id, as of tick at.
type teamPicture struct {
	at     uint32
	tracks []Contact
	fresh  []Contact // tracks new to it this tick (fold)
	scr    []Contact // addFresh's other buffer
}

// sensorScratch is one worker's buffers.
type sensorScratch struct {
	q     []int32
	det   []uint32
	merge []Contact
}

// senseSetup lists this tick's sensor owners and those due a check.
func (s *Sim) senseSetup() {
	w := s.World
	if n := w.Slots(); len(s.sensors) < n {
		s.sensors = append(s.sensors, make([]sensorTable, n-len(s.sensors))...)
	}
	s.owners, s.sensDue = s.owners[:0], s.sensDue[:0]
	period := uint32(max(1, math.Round(TickHz/s.sensorHz)))
	for _, sl := range w.Live() {
		e := w.At(sl)
		if e.Type != TypeSensorFighter || e.Proj {
			continue
		}
		st := &s.sensors[sl]
		if st.id != e.ID {
			*st = sensorTable{id: e.ID, checked: s.Tick, local: st.local[:0], fused: st.fused[:0]}
		}
		s.owners = append(s.owners, sl)
		if (s.Tick+e.ID)%period == 0 {
			s.sensDue = append(s.sensDue, sl)
		}
	}
}

// Sense runs the sensor checks due this tick and datalink fusion, and
// counts the contact-table entries. It is all that sensing_ms times.
func (s *Sim) Sense(t *timer) {
	s.senseSetup()
	due := s.sensDue
	s.pool.run(len(due), 4, func(wk, i int) { s.check(&s.sscr[wk], due[i]) })
	s.pool.run(len(s.pictures), 1, func(_, team int) { s.updatePicture(team) })
	s.pool.run(len(due), 4, func(_, i int) { s.fuse(due[i]) })
	s.SensorChecks = len(due)
	s.ContactEntries, s.FusedEntries = 0, 0
	for _, sl := range s.owners {
		s.ContactEntries += len(s.sensors[sl].fused)
		s.FusedEntries += s.sensors[sl].shared
	}
	t.lap(PhaseSensing)
}

// detectRoll is the deterministic uniform draw of one detection.
func detectRoll(tick, owner, target uint32) float64 {
	r := splitmix(uint64(tick)*0x9E3779B97F4A7C15 ^ uint64(owner)<<32 ^ uint64(target) ^ sensorSeed)
	return unit(r.next())
}

// check runs the owner's sensor over the interest grid (rebuilt this tick)
// and merges the detections into its local table.
func (s *Sim) check(sc *sensorScratch, sl int32) {
	w := s.World
	e := w.At(sl)
	st := &s.sensors[sl]
	decay := float32(math.Pow(0.5, float64(s.Tick-st.checked)/(trackHalfLifeS*TickHz)))
	st.checked = s.Tick
	sc.det = sc.det[:0]
	if !s.hollowSensors {
		sc.q = s.interest.Query(w, e.Pos, sensorRangeM, sc.q[:0])
		fwd := forward(e)
		cosCone := math.Cos(sensorHalfCone)
		for _, o := range sc.q {
			t := w.At(o)
			if o == sl || t.Proj {
				continue
			}
			dx, dy, dz := t.Pos[0]-e.Pos[0], t.Pos[1]-e.Pos[1], t.Pos[2]-e.Pos[2]
			d := math.Sqrt(dx*dx + dy*dy + dz*dz)
			if d < 1e-6 || d > sensorRangeM || (dx*fwd[0]+dy*fwd[1]+dz*fwd[2])/d < cosCone {
				continue
			}
			tf := forward(t)
			aspect := math.Abs(dx*tf[0]+dy*tf[1]+dz*tf[2]) / d
			p := sensorPMax * (1 - (d/sensorRangeM)*(d/sensorRangeM)) * (0.5 + 0.5*aspect)
			if detectRoll(s.Tick, e.ID, t.ID) < p {
				sc.det = append(sc.det, t.ID)
			}
		}
		slices.Sort(sc.det)
	}
	sc.merge = mergeDetections(sc.merge[:0], st.local, sc.det, decay, s.Tick)
	st.local = append(st.local[:0], sc.merge...)
}

// mergeDetections merges a sorted local table with sorted detected ids:
// detected tracks gain quality, the rest decay and are dropped below
// trackDropQuality, new ones start.
func mergeDetections(out, local []Contact, det []uint32, decay float32, tick uint32) []Contact {
	i, j := 0, 0
	for i < len(local) || j < len(det) {
		switch {
		case j == len(det) || (i < len(local) && local[i].ID < det[j]):
			c := local[i]
			c.Quality *= decay
			if c.Quality >= trackDropQuality {
				out = append(out, c)
			}
			i++
		case i == len(local) || det[j] < local[i].ID:
			out = append(out, Contact{ID: det[j], First: tick, Last: tick, Quality: trackGain})
			j++
		default:
			c := local[i]
			c.Quality, c.Last = min(1, c.Quality*decay+trackGain), tick
			out = append(out, c)
			i, j = i+1, j+1
		}
	}
	return out
}

// updatePicture decays the team's picture to this tick and merges in the
// local tables of its members checked this tick (team 0 has no datalink).
func (s *Sim) updatePicture(team int) {
	pic := &s.pictures[team]
	if team == 0 {
		pic.tracks = pic.tracks[:0]
		return
	}
	decay := float32(math.Pow(0.5, float64(s.Tick-pic.at)/(trackHalfLifeS*TickHz)))
	pic.at = s.Tick
	for i := range pic.tracks {
		pic.tracks[i].Quality *= decay
	}
	pic.fresh = pic.fresh[:0]
	for _, sl := range s.sensDue {
		if int(s.World.At(sl).Team) == team {
			pic.fold(s.sensors[sl].local)
		}
	}
	pic.addFresh()
	kept := pic.tracks[:0]
	for _, c := range pic.tracks {
		if c.Quality >= trackDropQuality {
			kept = append(kept, c)
		}
	}
	pic.tracks = kept
}

// fold merges a local table (sorted by id, one entry per id) into the
// picture: a track the picture has is combined in place (combineTrack),
// one it has not is kept in fresh for addFresh. The tables checked in a
// tick are mostly tracks the team already holds, so each is read once and
// the picture copied only when something is new. It replaced appending
// every table and sorting the lot, the sensing phase's longest pass on
// one worker (the sort: 127 µs a tick of the phase's 390,
// BenchmarkTickPaced's world, where one team's 21 tables of ~100 tracks
// meet a picture of ~450).
func (pic *teamPicture) fold(local []Contact) {
	t, i := pic.tracks, 0
	for _, c := range local {
		for i < len(t) && t[i].ID < c.ID {
			i++
		}
		if i < len(t) && t[i].ID == c.ID {
			combineTrack(&t[i], &c)
			continue
		}
		pic.fresh = append(pic.fresh, c)
	}
}

// addFresh merges the tracks new to the picture this tick into it: sorted
// by id, an id seen in several tables combined into one.
func (pic *teamPicture) addFresh() {
	if len(pic.fresh) == 0 {
		return
	}
	slices.SortFunc(pic.fresh, func(a, b Contact) int { return cmp.Compare(a.ID, b.ID) })
	u := pic.fresh[:1]
	for i := 1; i < len(pic.fresh); i++ {
		if c := &pic.fresh[i]; c.ID == u[len(u)-1].ID {
			combineTrack(&u[len(u)-1], c)
		} else {
			u = append(u, *c)
		}
	}
	pic.scr = mergeTracks(pic.scr[:0], pic.tracks, u)
	pic.tracks, pic.scr = pic.scr, pic.tracks
}

// combineTrack folds b into a, two entries for one id: the earliest First,
// the latest Last, the best Quality, and Datalink only if both had it.
// Each is order-free, so a picture is the same whatever order its tables
// are folded in.
func combineTrack(a, b *Contact) {
	a.First, a.Last, a.Quality = min(a.First, b.First), max(a.Last, b.Last), max(a.Quality, b.Quality)
	a.Datalink = a.Datalink && b.Datalink
}

// mergeTracks appends to out the tracks of a and b, each sorted by id, in
// id order. No id is in both: fold kept in fresh only the ids the picture
// did not have.
func mergeTracks(out, a, b []Contact) []Contact {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if a[i].ID < b[j].ID {
			out = append(out, a[i])
			i++
		} else {
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// fuse rebuilds the owner's fused table: its own tracks merged with its
// team's picture (a teammate's track is worth datalinkFactor of its
// quality; the owner itself is left out). Under the disable_datalink fault
// the picture is left out: the table is the owner's own tracks.
func (s *Sim) fuse(sl int32) {
	e := s.World.At(sl)
	st := &s.sensors[sl]
	local, pic := st.local, s.pictures[e.Team].tracks
	if s.noDatalink {
		pic = nil
	}
	out := st.fused[:0]
	shared := 0
	i, j := 0, 0
	for i < len(local) || j < len(pic) {
		switch {
		case j == len(pic) || (i < len(local) && local[i].ID < pic[j].ID):
			out = append(out, local[i])
			i++
		case i == len(local) || pic[j].ID < local[i].ID:
			if c := pic[j]; c.ID != e.ID {
				c.Quality *= datalinkFactor
				c.Datalink = true
				out = append(out, c)
				shared++
			}
			j++
		default:
			c, p := local[i], pic[j]
			c.First, c.Last, c.Quality = min(c.First, p.First), max(c.Last, p.Last), max(c.Quality, p.Quality*datalinkFactor)
			out = append(out, c)
			i, j = i+1, j+1
		}
	}
	st.fused, st.shared = out, shared
}

// ContactTable returns the fused contact table of the sensor owner in slot
// (nil for a slot without one). Tests read it.
func (s *Sim) ContactTable(slot int32) []Contact {
	if int(slot) >= len(s.sensors) || s.sensors[slot].id != s.World.At(slot).ID {
		return nil
	}
	return s.sensors[slot].fused
}
