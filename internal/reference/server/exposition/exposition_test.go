package exposition

import (
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// TestMapProducesEveryGate: the reference server's own mapping
// (the one a profile gets with server.metrics.source "prometheus" and no
// map) produces every server_tick field any gate, the transport check and
// the wire baseline read, so a shipped profile gated through Prometheus
// alone never has a gate unevaluable by construction. vet checks a team's
// own mapping the same way.
func TestMapProducesEveryGate(t *testing.T) {
	fields := append([]string{"transport"}, gatetable.WireKBsFields()...)
	for _, g := range gatetable.All() {
		fields = append(fields, g.ServerFields...)
	}
	for _, f := range fields {
		if ok, why := Map().WithDefaults().Produces(f); !ok {
			t.Errorf("exposition.Map cannot produce %s: %s", f, why)
		}
	}
}
