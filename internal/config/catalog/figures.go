package catalog

import (
	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// metricsSource is which source of an own figure the profile's legs
// read: its prometheus series under server.metrics.source "prometheus" or
// "promql" (the same series, scraped or queried), else its file path.
func (c *checker) metricsSource() string {
	if v, ok := c.concrete("server.metrics.source"); ok {
		if s, _ := v.String(); s == "prometheus" || s == "promql" {
			return gatetable.SourcePrometheus
		}
	}
	return gatetable.SourceFile
}

// ownFigures is the profile's figures block, nil when it has none or it
// does not decode (the schema reports its shape).
func (c *checker) ownFigures() gatetable.OwnFigures {
	v, ok := c.valid("figures")
	if !ok {
		return nil
	}
	var ds gatetable.OwnFigures
	if v.Decode(&ds) != nil {
		return nil
	}
	return ds
}

// checkOwnFigures vets the profile's own figures and every gate that is
// not a table gate: the schema lets any NAME_STAT_max or NAME_STAT_min
// through, so a misspelt built-in gate, a figure nobody declared, a
// statistic the figure's kind cannot give (p99 of a gauge) or a bound
// against the figure's direction is caught here, each named.
func (c *checker) checkOwnFigures() {
	src := c.metricsSource()
	ds := c.ownFigures()
	for _, e := range ds.Check(src) {
		c.at(e.Path, "%s", e.Msg)
	}
	gv, ok := c.valid("gates")
	var gates profile.Gates
	if !ok || gv.Decode(&gates) != nil {
		return
	}
	budgets := gatetable.Budgets()
	for _, name := range sortedGateNames(gates) {
		if _, builtin := gatetable.Lookup(name); builtin {
			continue
		}
		if _, shorthand := budgets[name]; shorthand {
			continue
		}
		if _, err := gatetable.ParseOwnGate(name, ds, src); err != nil {
			c.instead("gates."+name, "%v", err)
		}
	}
}
