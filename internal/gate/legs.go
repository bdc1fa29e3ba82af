package gate

import (
	"fmt"
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
	// Clients, EntityCount and SimWorkers are the sweep point; nil on an
	// axis the profile does not sweep.
	Clients     *int `json:"clients,omitempty"`
	EntityCount *int `json:"entity_count,omitempty"`
	SimWorkers  *int `json:"sim_worker_threads,omitempty"`
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

// Legs expands the profile into its legs, patterns outermost.
func (p *Profile) Legs() []Leg {
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
		if rel, ok := tracePath(pt.name); ok {
			id = traceLegID(rel)
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
					l := base
					l.Clients, l.EntityCount, l.SimWorkers = c, e, w
					l.ID = id + sweepSuffix(c, "c") + sweepSuffix(e, "e") + sweepSuffix(w, "w")
					legs = append(legs, l)
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

// TransportError says the profile's transport cannot be spoken by this
// build (lookup is the transport registry's). The gate never substitutes
// another transport: that would measure something else under this name.
func (p *Profile) TransportError(lookup func(name string) error) error {
	if err := lookup(p.Transport); err != nil {
		return fmt.Errorf("profile %s pins transport %s: %w; scalegate never runs another transport in its place", p.Name, p.Transport, err)
	}
	return nil
}
