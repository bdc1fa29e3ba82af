package server

import (
	"testing"

	"github.com/scalegate/scalegate/internal/gatetable"
)

// TestPrometheusMapProducesEveryGate: the reference server's own mapping
// (the one a profile gets with server.metrics.source "prometheus" and no
// map) produces every server_tick field any gate, the transport check and
// the wire baseline read, so a shipped profile gated through Prometheus
// alone never has a gate unevaluable by construction. vet checks a team's
// own mapping the same way.
func TestPrometheusMapProducesEveryGate(t *testing.T) {
	fields := append([]string{"transport"}, gatetable.WireKBsFields...)
	for _, g := range gatetable.All {
		fields = append(fields, g.ServerFields...)
	}
	for _, f := range fields {
		if ok, why := PrometheusMap.WithDefaults().Produces(f); !ok {
			t.Errorf("PrometheusMap cannot produce %s: %s", f, why)
		}
	}
}
