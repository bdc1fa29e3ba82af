package server

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "server.toml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadConfigEverySection(t *testing.T) {
	p := writeConfig(t, `
[server]
port = 7000
max_peers = 1024
transport = "quic"
idle_timeout_s = 20
join_timeout_s = 3
[security]
connect_rate_limit_count = 500
connect_rate_limit_window_s = 2.5
max_connections_per_ip = 1024
[world]
sim_worker_threads = 2
snapshot_budget_bytes = 0
interest_radius_m = 5000
spatial_cell_size_m = 2500
test_spawn_ai_count = 2000
test_spawn_spread_km = 40
test_spawn_agl_m = 3000
test_spawn_entity_type = "builtin:bomber"
[network]
compress_snapshots = false
[metrics]
tick_json_path = "/tmp/x.json"
tick_json_interval_ms = 250
slow_tick_ms = 20
[faults]
rss_leak_kb_per_min = 512
rss_step_kb = 4096
rss_step_at_s = 30
extra_tick_ms = 20
refuse_every_nth_join = 3
inflate_snapshot_bytes = 4000
report_transport = "enet"
omit_metrics = ["tick_ms"]
`)
	c, err := LoadConfig(p)
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Port != 7000 || c.Server.MaxPeers != 1024 || c.Server.Transport != "quic" ||
		c.Security.ConnectRateLimitWindowS != 2.5 || c.World.SnapshotBudgetBytes != 0 ||
		c.World.TestSpawnAICount != 2000 || c.Network.CompressSnapshots || c.Metrics.TickJSONIntervalMs != 250 ||
		c.CellSize() != 2500 || c.Workers() != 2 || c.SlowTick() != 20 {
		t.Fatalf("config %+v", c)
	}
	if got := strings.Join(c.Faults.Active(), " "); got != "rss_leak_kb_per_min=512 rss_step_kb=4096 rss_step_at_s=30 extra_tick_ms=20 refuse_every_nth_join=3 inflate_snapshot_bytes=4000 report_transport=enet omit_metrics=tick_ms" {
		t.Fatalf("active faults %q", got)
	}
}

func TestDefaults(t *testing.T) {
	c, err := LoadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if c.World.SnapshotBudgetBytes != 1200 || !c.Network.CompressSnapshots || c.Metrics.TickJSONIntervalMs != 1000 ||
		c.CellSize() != c.World.InterestRadiusM || len(c.Faults.Active()) != 0 || c.SlowTick() != 12.5 {
		t.Fatalf("defaults %+v", c)
	}
	// A file that sets nothing keeps every default, compress included.
	c2, err := LoadConfig(writeConfig(t, "[network]\n"))
	if err != nil || !c2.Network.CompressSnapshots {
		t.Fatalf("%v %+v", err, c2.Network)
	}
}

func TestConfigErrorsNameTheKey(t *testing.T) {
	cases := []struct{ body, key string }{
		{"[server]\nmax_peers = 1025\n", "server.max_peers"},
		{"[server]\nmax_peers = 0\n", "server.max_peers"},
		{"[server]\nport = 70000\n", "server.port"},
		{"[server]\nportt = 1\n", "server.portt"},
		{"[bogus]\nx = 1\n", "bogus"},
		{"[world]\nsnapshot_budget_bytes = 10\n", "world.snapshot_budget_bytes"},
		{"[world]\nsim_worker_threads = -1\n", "world.sim_worker_threads"},
		{"[world]\nrealtime_priority = 100\n", "world.realtime_priority"},
		{"[world]\nrealtime_priority = -1\n", "world.realtime_priority"},
		{"[world]\ntest_spawn_agl_m = 5\n", "world.test_spawn_agl_m"},
		{"[world]\ntest_spawn_spread_km = 500\n", "world.test_spawn_spread_km"},
		{"[world]\ninterest_radius_m = \"far\"\n", "world.interest_radius_m"},
		{"[security]\nconnect_rate_limit_window_s = 0\n", "security.connect_rate_limit_window_s"},
		{"[metrics]\ntick_json_interval_ms = 1\n", "metrics.tick_json_interval_ms"},
		{"[faults]\nomit_metrics = [\"tick_mss\"]\n", "faults.omit_metrics"},
		{"[faults]\nextra_tick_ms = -1\n", "faults.extra_tick_ms"},
		{"[faults]\nexit_after_s = -1\n", "faults.exit_after_s"},
		{"[faults]\ndelay_mode = \"nap\"\n", "faults.delay_mode"},
		{"[faults]\nleak = 1\n", "faults.leak"},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			p := writeConfig(t, c.body)
			_, err := LoadConfig(p)
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v is not a *ConfigError", err)
			}
			if !strings.Contains(ce.Key, c.key) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %q does not name key %q and file", err, c.key)
			}
		})
	}
}

func TestConfigMissingFile(t *testing.T) {
	_, err := LoadConfig(filepath.Join(t.TempDir(), "nope.toml"))
	if err == nil || !strings.Contains(err.Error(), "nope.toml") {
		t.Fatalf("err %v", err)
	}
}
