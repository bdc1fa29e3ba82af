package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/load/swarmcli"
)

// TestSwarmPrometheusFlags: --server-metrics-prometheus with a map file
// configures the swarm's Prometheus source; a map without an endpoint, a
// map that does not parse, both sources at once and a bad fallback format
// are usage errors naming what is wrong.
func TestSwarmPrometheusFlags(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "map.json")
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(good, []byte(`{"tick_ms": {"histogram": "game_tick_duration_seconds", "scale": 1000}}`), 0o644)
	os.WriteFile(bad, []byte(`{"tick_ms": {"gauge": "x"}}`), 0o644)
	env, _, _ := testEnv(nil)
	f, err := swarmcli.Scalegate.Parse(swarmEnv(env), []string{"127.0.0.1", "7777", "--server-metrics-prometheus", "http://127.0.0.1:9464/metrics", "--server-metrics-map", good, "--server-metrics-fallback-format", "text"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Cfg.ServerMetricsPrometheus != "http://127.0.0.1:9464/metrics" || f.Cfg.ServerMetricsMap["tick_ms"].Histogram != "game_tick_duration_seconds" || f.Cfg.ServerMetricsFallback != "text" {
		t.Fatalf("config %+v", f.Cfg)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"127.0.0.1", "7777", "--server-metrics-map", good}, "--server-metrics-map goes with --server-metrics-prometheus"},
		{[]string{"127.0.0.1", "7777", "--server-metrics-prometheus", "http://x/m", "--server-metrics-map", bad}, bad + ": prometheus map: map.tick_ms.gauge"},
		{[]string{"127.0.0.1", "7777", "--server-metrics-prometheus", "http://x/m", "--server-metrics-map", filepath.Join(dir, "none.json")}, "none.json"},
		{[]string{"127.0.0.1", "7777", "--server-metrics-prometheus", "http://x/m", "--server-metrics", "m.json"}, "not both"},
		{[]string{"127.0.0.1", "7777", "--server-metrics-prometheus", "http://x/m", "--server-metrics-fallback-format", "json"}, `fallback format "json"`},
	} {
		env, _, _ := testEnv(nil)
		if _, err := swarmcli.Scalegate.Parse(swarmEnv(env), tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: %v, want %q", tc.args, err, tc.want)
		}
	}
}
