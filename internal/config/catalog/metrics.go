package catalog

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
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
	if src, _ := v.String(); src != "prometheus" {
		for _, f := range []string{"url", "map", "fallback_format", "transport_declared"} {
			if c.has("server.metrics." + f) {
				c.at("server.metrics."+f, "goes with source \"prometheus\"; the metrics file needs none")
			}
		}
		return
	}
	custom := false
	if k, ok := c.concrete("server.kind"); ok {
		kind, _ := k.String()
		custom = kind == "custom"
	}
	if custom && !c.has("server.metrics.url") {
		c.at("server.metrics", `a custom server's Prometheus source needs url, e.g. "http://127.0.0.1:{metrics_port}/metrics"`)
	}
	mv, ok := c.concrete("server.metrics.map")
	if !ok {
		if custom {
			c.at("server.metrics", "a custom server's Prometheus source needs map: which series gives which figure (docs/metrics.md, \"From Prometheus\")")
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
		c.mapErrors(err)
		return
	}
	c.checkProduced(m)
}

// mapErrors reports each problem of a mapping at its figure and field.
func (c *checker) mapErrors(err error) {
	var joined interface{ Unwrap() []error }
	errs := []error{err}
	if errors.As(err, &joined) {
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		var fe *promsource.FieldError
		if !errors.As(e, &fe) {
			c.at("server.metrics.map", "%v", e)
			continue
		}
		path := "server.metrics.map." + fe.Figure
		if fe.Field != "" && c.has(path+"."+fe.Field) {
			path += "." + fe.Field
		}
		c.at(path, "%s", fe.Msg)
	}
}

// checkTransport: the transport identity check needs the server's side,
// from an info series or declared by the profile, not both.
func (c *checker) checkTransport(m promsource.Map) {
	declared := false
	if v, ok := c.concrete("server.metrics.transport_declared"); ok {
		declared, _ = v.Bool()
	}
	ok, why := m.Produces("transport")
	switch {
	case declared && ok && c.has("server.metrics.map.transport"):
		c.at("server.metrics.transport_declared", "the map reads the server's transport from a series (map.transport): observed beats declared; drop one")
	case !declared && !ok:
		c.at("server.metrics.map", "the transport identity check reads server_tick.transport, which the Prometheus mapping cannot produce: %s. "+
			"Map it to a label of an info series (transport: {info: \"game_build_info\", label: \"transport\"}), or, when the server cannot say which transport it speaks, "+
			"set server.metrics.transport_declared: true: the check then takes the profile's transport as the server's side, marked declared, not observed (docs/metrics.md, \"The transport series\")", why)
	}
}

// checkProduced reports every check that reads a server_tick field the
// mapping cannot produce.
func (c *checker) checkProduced(m promsource.Map) {
	need := func(at, what, field string) {
		if ok, why := m.Produces(field); !ok {
			c.at(at, "%s reads server_tick.%s, which the Prometheus mapping cannot produce: %s", what, field, why)
		}
	}
	c.checkTransport(m)
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
