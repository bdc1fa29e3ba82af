package runner

import (
	"testing"

	"github.com/scalegate/scalegate/internal/config/catalog"
)

func TestBuiltinConfig(t *testing.T) {
	c, _ := catalog.NewCatalog("")
	p, _, _ := c.Load("entity-scale")
	leg := p.Legs()[5]
	cfg := BuiltinConfig(p, leg, 4242, "/m.json", "")
	w := cfg["world"].(map[string]any)
	if w["test_spawn_ai_count"] != 5000 || w["sim_worker_threads"] != 2 || w["snapshot_budget_bytes"] == nil {
		t.Errorf("world %v for leg %s", w, leg.ID)
	}
	if w["overrun_governor"] != false {
		t.Errorf("overrun_governor %v: capacity legs run the governor off, and say so", w["overrun_governor"])
	}
	if a := cfg["admin"].(map[string]any); a["socket"] != "/admin.sock" {
		t.Errorf("admin %v: want the socket beside the metrics file", a)
	}
	s := cfg["server"].(map[string]any)
	if s["port"] != 4242 || s["transport"] != "quic" || s["max_peers"] != 80 {
		t.Errorf("server %v", s)
	}
}
