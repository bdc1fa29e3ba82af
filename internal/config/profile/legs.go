package profile

import (
	"fmt"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// Leg is one server + swarm run of a profile: one pattern (or the mix), at
// one sweep point when the profile sweeps.
type Leg struct {
	// ID names the leg's artifact directory: "weave", "mix",
	// "weave_e2000_w4".
	ID string `json:"id"`
	// Pattern is the swarm --pattern, empty when PatternMix is set.
	Pattern    string `json:"pattern,omitempty"`
	PatternMix string `json:"pattern_mix,omitempty"`
	// BaselineKey is <profile>/<pattern> ("mix" for a pattern mix).
	BaselineKey string `json:"baseline_key"`
	// Clients, EntityCount, SimWorkers and SnapshotBudget are the sweep
	// point; nil on an axis the profile does not sweep.
	Clients        *int `json:"clients,omitempty"`
	EntityCount    *int `json:"entity_count,omitempty"`
	SimWorkers     *int `json:"sim_worker_threads,omitempty"`
	SnapshotBudget *int `json:"snapshot_budget_bytes,omitempty"`
	// Transport is the leg's own transport in a profile that runs several
	// ("" otherwise: the profile's); see Profile.TransportFor.
	Transport string `json:"transport,omitempty"`
}

// TransportFor is the transport a leg runs on: its own in a profile with
// transports, else the profile's.
func (p *Profile) TransportFor(l Leg) string {
	if l.Transport != "" {
		return l.Transport
	}
	return p.Transport
}

// TransportNames are every transport the profile runs, in order.
func (p *Profile) TransportNames() []string {
	if len(p.Transports) > 0 {
		return p.Transports
	}
	return []string{p.Transport}
}

// ClientsFor is the client count of a leg: its sweep point, else the
// profile's.
func (p *Profile) ClientsFor(l Leg) int {
	if l.Clients != nil {
		return *l.Clients
	}
	return p.Clients
}

// axis is one sweep axis's values, or a single nil point when the profile
// does not sweep it.
func axis(vals []int) []*int {
	if len(vals) == 0 {
		return []*int{nil}
	}
	out := make([]*int, len(vals))
	for i := range vals {
		out[i] = &vals[i]
	}
	return out
}

// Legs expands the profile into its legs, patterns outermost, then the
// sweep's axes (clients, entities, sim workers, snapshot budget), then the
// transports of a profile that runs several.
func (p *Profile) Legs() []Leg {
	var out []Leg
	for _, l := range p.sweepLegs() {
		if len(p.Transports) == 0 {
			out = append(out, l)
			continue
		}
		for _, t := range p.Transports {
			lt := l
			lt.Transport, lt.ID, lt.BaselineKey = t, l.ID+"_"+t, l.BaselineKey+"_"+t
			out = append(out, lt)
		}
	}
	return out
}

// sweepLegs is Legs before the transports.
func (p *Profile) sweepLegs() []Leg {
	type pat struct{ name, mix string }
	var pats []pat
	if p.PatternMix != "" {
		pats = []pat{{"mix", p.PatternMix}}
	}
	for _, n := range p.Patterns {
		pats = append(pats, pat{name: n})
	}
	var legs []Leg
	for _, pt := range pats {
		id := pt.name
		if rel, ok := TracePath(pt.name); ok {
			id = TraceLegID(rel)
		}
		base := Leg{ID: id, BaselineKey: p.Name + "/" + id, PatternMix: pt.mix}
		if pt.mix == "" {
			base.Pattern = pt.name
		}
		if p.Sweep == nil {
			legs = append(legs, base)
			continue
		}
		for _, c := range axis(p.Sweep.Clients) {
			for _, e := range axis(p.Sweep.EntityCounts) {
				for _, w := range axis(p.Sweep.SimWorkerThreads) {
					for _, b := range axis(p.Sweep.SnapshotBudgetBytes) {
						l := base
						l.Clients, l.EntityCount, l.SimWorkers, l.SnapshotBudget = c, e, w, b
						l.ID = id + sweepSuffix(c, "c") + sweepSuffix(e, "e") + sweepSuffix(w, "w") + sweepSuffix(b, "b")
						legs = append(legs, l)
					}
				}
			}
		}
	}
	return legs
}

func sweepSuffix(v *int, tag string) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("_%s%d", tag, *v)
}

// PatternLabel is what the leg flies, for tables.
func (l Leg) PatternLabel() string {
	if l.PatternMix != "" {
		return "mix " + l.PatternMix
	}
	return l.Pattern
}

// TransportError says a transport of the profile cannot be spoken by this
// build (lookup is the transport registry's). The gate never substitutes
// another transport: that would measure something else under this name.
func (p *Profile) TransportError(lookup func(name string) error) error {
	for _, t := range p.TransportNames() {
		if err := lookup(t); err != nil {
			return fmt.Errorf("profile %s pins transport %s: %w; scalegate never runs another transport in its place", p.Name, t, err)
		}
	}
	return nil
}

// LegByID finds a leg of the profile; with id "" the profile must have
// exactly one.
func (p *Profile) LegByID(id string) (Leg, error) {
	legs := p.Legs()
	if id == "" {
		if len(legs) == 1 {
			return legs[0], nil
		}
		return Leg{}, fmt.Errorf("profile %s has %d legs (%s): say which one the report is with --leg ID", p.Name, len(legs), legIDs(legs))
	}
	for _, l := range legs {
		if l.ID == id {
			return l, nil
		}
	}
	return Leg{}, fmt.Errorf("profile %s has no leg %q (legs: %s)", p.Name, id, legIDs(legs))
}

func legIDs(legs []Leg) string {
	ids := make([]string, len(legs))
	for i, l := range legs {
		ids[i] = l.ID
	}
	return strings.Join(ids, ", ")
}

// GateThreshold is the threshold a declared gate is checked against on a
// leg; ok is false when the profile does not declare the gate or it does
// not apply to the leg (spawn_took outside an entity sweep). A switch gate
// takes its threshold from the leg (its entity count, its client count).
func (p *Profile) GateThreshold(g gatetable.Gate, leg Leg) (thr float64, ok bool) {
	spec, declared := p.Gates[g.Name]
	if !declared {
		return 0, false
	}
	switch g.Source {
	case gatetable.SweepEntities:
		if leg.EntityCount == nil {
			return 0, false
		}
		return float64(*leg.EntityCount), true
	case gatetable.Clients:
		return float64(p.ClientsFor(leg)), true
	case gatetable.AcrossTransports:
		return 0, false // a run-level check: gate.TransportOverhead
	}
	if spec.Threshold == nil {
		return 0, false
	}
	return *spec.Threshold, true
}

// IDWithoutClients is the leg's ID without its client-sweep part: the
// group a capacity curve draws its client counts in ("weave_e2000" for
// "weave_c64_e2000").
func (l Leg) IDWithoutClients() string {
	return strings.Replace(l.ID, sweepSuffix(l.Clients, "c"), "", 1)
}

// AbortSetting is the gate's early-abort setting as declared (the gate's
// own fields over the profile's abort_on_breach over the defaults), ok
// false when the gate does not opt in. It does not say whether the gate
// can end a leg: AbortRules and vet do.
func (p *Profile) AbortSetting(name string) (afterS int, marginPct float64, ok bool) {
	spec, declared := p.Gates[name]
	if !declared {
		return 0, 0, false
	}
	afterS, marginPct = gatetable.DefaultAbortAfterS, gatetable.DefaultAbortMarginPct
	if g := p.AbortOnBreach; g != nil {
		afterS, marginPct, ok = g.AfterS, g.MarginPct, true
	}
	if spec.AbortAfterS != nil {
		afterS, ok = *spec.AbortAfterS, true
	}
	if spec.AbortMarginPct != nil {
		marginPct, ok = *spec.AbortMarginPct, true
	}
	if afterS == 0 {
		return 0, 0, false // abort_after_s: 0 opts the gate out
	}
	return afterS, marginPct, ok
}

// AbortRules are a leg's early-abort rules, in table order: one for each
// declared gate that opts in, can end a leg early (a per-second figure),
// is hard in the tier (an advisory gate never fails a leg, so it cannot
// end one) and reads the whole run (a phase-scoped gate is judged on its
// stretch, after the run). A sharded leg has none: each shard sees part
// of the load and the gates read the merged report.
func (p *Profile) AbortRules(leg Leg, strict bool) []gatetable.AbortRule {
	if p.Shards > 1 {
		return nil
	}
	var out []gatetable.AbortRule
	tier := p.EffectiveTier(strict)
	for _, g := range p.GateList() {
		spec, declared := p.Gates[g.Name]
		if !declared || !g.CanAbort() || spec.Phase != "" {
			continue
		}
		if level, _ := g.LevelIn(spec.Level, tier); level != gatetable.LevelHard {
			continue
		}
		afterS, margin, ok := p.AbortSetting(g.Name)
		thr, has := p.GateThreshold(g, leg)
		if ok && has {
			out = append(out, gatetable.AbortRule{Gate: g, Threshold: thr, AfterS: afterS, MarginPct: margin})
		}
	}
	return out
}

// IDWithoutTransport is the leg's ID without its transport part: what the
// legs of one load on different transports share ("weave" for
// "weave_quic").
func (l Leg) IDWithoutTransport() string {
	if l.Transport == "" {
		return l.ID
	}
	return strings.TrimSuffix(l.ID, "_"+l.Transport)
}
