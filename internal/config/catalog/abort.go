package catalog

import (
	"strings"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// checkAbort: a gate's early-abort setting must be one the run can act
// on. Only a gate with a per-second figure can end a leg; an advisory
// gate never fails one, so it cannot end one; a phase-scoped gate is
// judged on its stretch after the run; a sharded leg's shards each see
// part of the load. And abort_on_breach with nothing it could apply to is
// a profile that believes it is protected when it is not.
func (c *checker) checkAbort() {
	gv, ok := c.valid("gates")
	var gates profile.Gates
	if !ok || gv.Decode(&gates) != nil {
		return
	}
	can := strings.Join(gatetable.Abortable(), ", ")
	applies := false
	for _, name := range sortedGateNames(gates) {
		spec := gates[name]
		own := spec.AbortAfterS != nil || spec.AbortMarginPct != nil
		field := "gates." + name + ".abort_after_s"
		if spec.AbortAfterS == nil {
			field = "gates." + name + ".abort_margin_pct"
		}
		g, known := gatetable.LookupWith(name, c.ownFigures(), c.metricsSource())
		switch {
		case !known:
			continue
		case own && !g.CanAbort():
			c.at(field, "%s cannot end a leg early: it has no per-second figure (those that can: %s)", name, can)
		case own && spec.Level == gatetable.LevelAdvisory:
			c.at(field, "%s is advisory: an advisory gate never fails a leg, so it cannot end one", name)
		case own && spec.Phase != "":
			c.at(field, "%s is scoped to phase %q: it is judged on that stretch after the run, not watched during it", name, spec.Phase)
		}
		if g.CanAbort() && spec.Level != gatetable.LevelAdvisory && spec.Phase == "" && (spec.AbortAfterS == nil || *spec.AbortAfterS > 0) {
			applies = applies || own || c.has("abort_on_breach")
		}
	}
	if c.has("abort_on_breach") && !applies {
		c.at("abort_on_breach", "no gate it could apply to: declare one of %s, hard and not scoped to a phase", can)
	}
	if sv, ok := c.valid("shards"); ok {
		if n, _ := sv.Int64(); n > 1 && applies {
			c.at("shards", "is %d but the profile ends legs early on a breach (abort_on_breach / abort_after_s): each shard sees only its own clients, so early abort needs an unsharded leg", n)
		}
	}
}
