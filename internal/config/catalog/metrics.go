package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/sources/promql"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// checkMetrics vets a Prometheus metrics source: a custom server must say
// where its endpoint is, the mapping must be valid (every mistake at its
// figure and field), and every server_tick field the profile's checks read
// (the declared gates, the transport identity, a baselined profile's wire
// rate) must be one the mapping can produce: a gate that reads a figure
// the mapping cannot make would be unevaluable on every run. The
// reference server's own mapping is held to every gate by its tests.
func (c *checker) checkMetrics() {
	v, ok := c.concrete("server.metrics.source")
	if !ok {
		return
	}
	src, _ := v.String()
	c.refuseForeignFields(src)
	if src != "prometheus" && src != "promql" {
		return
	}
	custom := false
	if k, ok := c.concrete("server.kind"); ok {
		kind, _ := k.String()
		custom = kind == "custom"
	}
	field := "map"
	switch {
	case src == "promql":
		field = "queries"
		c.checkPromQL()
	case custom && !c.has("server.metrics.url"):
		c.at("server.metrics", `a custom server's Prometheus source needs url, e.g. "http://127.0.0.1:{metrics_port}/metrics"`)
	}
	mv, ok := c.concrete("server.metrics." + field)
	if !ok {
		if custom {
			what := map[string]string{"prometheus": "Prometheus", "promql": "PromQL"}[src]
			c.at("server.metrics", "a custom server's %s source needs %s: which series gives which figure (docs/metrics.md, \"From Prometheus\")", what, field)
		}
		return
	}
	var raw map[string]any
	if err := mv.Decode(&raw); err != nil {
		return // the schema reports the shape
	}
	b, _ := json.Marshal(raw)
	m, err := promsource.ParseMap(b)
	if err != nil {
		c.mapErrors(field, err)
		return
	}
	c.checkProduced(field, m)
}

// checkRSSInterval applies the swarm's rule (swarm.Config's): RSS is
// sampled faster than once a second only from the metrics file; a
// Prometheus source is read with the once-a-second rows.
func (c *checker) checkRSSInterval() {
	iv, ok := c.valid("rss_sample_interval_s")
	sv, ok1 := c.concrete("server.metrics.source")
	if !ok || !ok1 {
		return
	}
	every, _ := iv.Float64()
	if src, _ := sv.String(); every < 1 && (src == "prometheus" || src == "promql") {
		c.at("rss_sample_interval_s", "%gs: a %s source is read once a second, so RSS can be sampled no faster; give 1 or more, or read the metrics file (server.metrics.source \"file\")", every, src)
	}
}

// sourceFields are the server.metrics fields each source takes (source
// itself aside).
var sourceFields = map[string][]string{
	"file":       nil,
	"prometheus": {"url", "map", "fallback_format", "transport_declared"},
	"promql":     {"url", "queries", "labels", "pod", "targets_file", "transport_declared"},
}

// refuseForeignFields reports each server.metrics field the source does
// not read, naming the source that does.
func (c *checker) refuseForeignFields(src string) {
	for _, f := range []string{"url", "map", "queries", "labels", "pod", "targets_file", "fallback_format", "transport_declared"} {
		if !c.has("server.metrics."+f) || slices.Contains(sourceFields[src], f) {
			continue
		}
		var takers []string
		for _, s := range []string{"prometheus", "promql"} {
			if slices.Contains(sourceFields[s], f) {
				takers = append(takers, fmt.Sprintf("%q", s))
			}
		}
		c.at("server.metrics."+f, "goes with source %s; source %q reads none", strings.Join(takers, " or "), src)
	}
}

// checkPromQL vets what only a "promql" source has: the Prometheus
// server's URL, and placeholders every label can fill ({leg}, and {pod}
// when pod is set).
func (c *checker) checkPromQL() {
	if !c.has("server.metrics.url") {
		c.at("server.metrics", `a promql source needs url: the Prometheus server to query, e.g. "http://prometheus:9090"`)
	}
	vars := map[string]string{promql.VarLeg: "leg"}
	if v, ok := c.concrete("server.metrics.pod"); ok {
		vars[promql.VarPod], _ = v.String()
	}
	check := func(at string) {
		lv, ok := c.concrete(at)
		if !ok {
			return
		}
		var labels map[string]string
		if lv.Decode(&labels) != nil {
			return // the schema reports the shape
		}
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			if _, err := promql.Expand(labels[k], vars); err != nil {
				c.at(at+"."+k, "%v", err)
			}
		}
	}
	check("server.metrics.labels")
	if qv, ok := c.concrete("server.metrics.queries"); ok {
		var raw map[string]any
		if qv.Decode(&raw) == nil {
			for _, name := range slices.Sorted(maps.Keys(raw)) {
				check("server.metrics.queries." + name + ".labels")
			}
		}
	}
}

// mapErrors reports each problem of a mapping at its figure and field.
func (c *checker) mapErrors(field string, err error) {
	var joined interface{ Unwrap() []error }
	errs := []error{err}
	if errors.As(err, &joined) {
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		var fe *promsource.FieldError
		if !errors.As(e, &fe) {
			c.at("server.metrics."+field, "%v", e)
			continue
		}
		path := "server.metrics." + field + "." + fe.Figure
		if fe.Field != "" && c.has(path+"."+fe.Field) {
			path += "." + fe.Field
		}
		c.at(path, "%s", fe.Msg)
	}
}

// checkTransport: the transport identity check needs the server's side,
// from an info series or declared by the profile, not both.
func (c *checker) checkTransport(field string, m promsource.Map) {
	declared := false
	if v, ok := c.concrete("server.metrics.transport_declared"); ok {
		declared, _ = v.Bool()
	}
	ok, why := m.Produces("transport")
	switch {
	case declared && ok && c.has("server.metrics."+field+".transport"):
		c.at("server.metrics.transport_declared", "the %s reads the server's transport from a series (%s.transport): observed beats declared; drop one", field, field)
	case !declared && !ok:
		c.at("server.metrics."+field, "the transport identity check reads server_tick.transport, which the Prometheus mapping cannot produce: %s. "+
			"Map it to a label of an info series (transport: {info: \"game_build_info\", label: \"transport\"}), or, when the server cannot say which transport it speaks, "+
			"set server.metrics.transport_declared: true: the check then takes the profile's transport as the server's side, marked declared, not observed (docs/metrics.md, \"The transport series\")", why)
	}
}

// checkProduced reports every check that reads a server_tick field the
// mapping cannot produce.
func (c *checker) checkProduced(field string, m promsource.Map) {
	need := func(at, what, field string) {
		if ok, why := m.Produces(field); !ok {
			c.at(at, "%s reads server_tick.%s, which the Prometheus mapping cannot produce: %s", what, field, why)
		}
	}
	c.checkTransport(field, m)
	if v, ok := c.concrete("baselined"); ok {
		if b, _ := v.Bool(); b {
			for _, f := range gatetable.WireKBsFields() {
				need("baselined", "the wire KB/s baseline", f)
			}
		}
	}
	for _, g := range gatetable.All() {
		if !c.has("gates." + g.Name) {
			continue
		}
		for _, f := range g.ServerFields {
			need("gates."+g.Name, fmt.Sprintf("gate %s", g.Name), f)
		}
	}
}
