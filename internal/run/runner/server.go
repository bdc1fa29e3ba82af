package runner

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// serverSpec writes the leg's server config and returns how to start it.
func (r *legRun) serverSpec(port int) (serverLaunch, error) {
	p := r.o.Profile
	timeout := time.Duration(p.Server.ReadyTimeoutS * float64(time.Second))
	spec := launcher.Spec{Name: "server", LogPath: filepath.Join(r.res.Dir, "server.log"), Grace: r.o.Grace,
		LogMaxBytes: int64(p.Server.LogMaxMB * (1 << 20))}
	if p.Server.Kind == "custom" {
		spec, err := r.customSpec(spec, port)
		return serverLaunch{spec: spec, readyTimeout: timeout}, err
	}
	cfgPath := filepath.Join(r.res.Dir, "server.toml")
	promListen := ""
	if r.prom != nil {
		promListen = "127.0.0.1:" + strconv.Itoa(r.prom.port)
	}
	b, err := launcher.RenderConfig("toml", BuiltinConfig(p, r.leg, port, r.metrics, promListen))
	if err != nil {
		return serverLaunch{}, err
	}
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		return serverLaunch{}, fmt.Errorf("write server config: %w", err)
	}
	if len(r.o.ServerCommand) > 0 {
		spec.Path, spec.Args = r.expandCommand(r.o.ServerCommand, port, cfgPath)
		return serverLaunch{spec: spec, readyTimeout: timeout}, nil
	}
	spec.Path = r.o.Self
	spec.Args = []string{"serve", "--config", cfgPath, "--port", strconv.Itoa(port), "--transport", p.TransportFor(r.leg), "--metrics-json", r.metrics}
	if r.leg.SimWorkers != nil {
		spec.Args = append(spec.Args, "--sim-worker-threads", strconv.Itoa(*r.leg.SimWorkers))
	}
	return serverLaunch{spec: spec, readyTimeout: timeout}, nil
}

// customSpec renders a team's server: the command template and its config
// in the declared format, both with {port}, {metrics_json} and {config}
// replaced.
func (r *legRun) customSpec(spec launcher.Spec, port int) (launcher.Spec, error) {
	p := r.o.Profile
	cfgPath := filepath.Join(r.res.Dir, "server_config."+p.Server.ConfigFormat)
	vars := r.templateVars(port, cfgPath)
	if p.Server.Config != nil {
		b, err := launcher.RenderConfig(p.Server.ConfigFormat, launcher.ExpandAll(p.Server.Config, vars))
		if err != nil {
			return spec, err
		}
		if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
			return spec, fmt.Errorf("write server config: %w", err)
		}
	}
	cmd := p.Server.Command
	if len(r.o.ServerCommand) > 0 {
		cmd = r.o.ServerCommand
	}
	spec.Path, spec.Args = r.expandCommand(cmd, port, cfgPath)
	return spec, nil
}

// templateVars are the placeholders of a custom server's command, config
// and metrics URL: {port}, {metrics_json}, {metrics_port} (a Prometheus
// source's), {config}, {transport} and {clients}.
func (r *legRun) templateVars(port int, cfgPath string) map[string]string {
	p := r.o.Profile
	vars := map[string]string{"port": strconv.Itoa(port), "metrics_json": r.metrics, "config": cfgPath,
		"transport": p.TransportFor(r.leg), "clients": strconv.Itoa(p.ClientsFor(r.leg))}
	if r.prom != nil {
		vars["metrics_port"] = strconv.Itoa(r.prom.port)
	}
	return vars
}

// expandCommand fills a command template's placeholders: the program and
// its arguments.
func (r *legRun) expandCommand(cmd []string, port int, cfgPath string) (string, []string) {
	vars := r.templateVars(port, cfgPath)
	args := make([]string, 0, len(cmd)-1)
	for _, a := range cmd[1:] {
		args = append(args, launcher.Expand(a, vars))
	}
	return launcher.Expand(cmd[0], vars), args
}

// BuiltinConfig is the reference server's TOML for a leg: the admission
// limits a load test needs (all bots share 127.0.0.1 and ramp fast), the
// profile's world and network knobs, the metrics file, the admin socket
// (AdminSocket, beside the metrics file in the leg's directory, so a leg in
// progress can be asked for `status` or `tickstats`), and any fault knobs.
//
// With promListen set the server also serves /metrics there, and the gate
// reads its figures through that endpoint alone; the metrics file is still
// written, as an artifact to compare the two sources on one run.
func BuiltinConfig(p *profile.Profile, leg profile.Leg, port int, metricsPath, promListen string) map[string]any {
	maxPeers := min(p.ClientsFor(leg)+16, proto.MaxClients)
	world := map[string]any{}
	for k, v := range p.World.Extra {
		world[k] = v
	}
	world["sim_worker_threads"] = p.World.SimWorkerThreads
	world["overrun_governor"] = p.World.OverrunGovernor
	world["test_spawn_ai_count"] = p.World.TestSpawnAICount
	if leg.SimWorkers != nil {
		world["sim_worker_threads"] = *leg.SimWorkers
	}
	if leg.EntityCount != nil {
		world["test_spawn_ai_count"] = *leg.EntityCount
	}
	if leg.SnapshotBudget != nil {
		world["snapshot_budget_bytes"] = *leg.SnapshotBudget
	}
	cfg := map[string]any{
		"server": map[string]any{"port": port, "max_peers": maxPeers, "transport": p.TransportFor(leg)},
		"security": map[string]any{
			"connect_rate_limit_count":    100000,
			"connect_rate_limit_window_s": 1,
			"max_connections_per_ip":      maxPeers, // all bots share 127.0.0.1
		},
		"world": world,
		"network": map[string]any{"compress_snapshots": p.Network.CompressSnapshots, "congestion_control": p.Network.CongestionControl,
			"snapshot_deltas": p.Network.SnapshotDeltas},
		"metrics": map[string]any{"tick_json_path": metricsPath, "tick_json_interval_ms": p.Server.TickJSONIntervalMs},
		"admin":   map[string]any{"socket": AdminSocket(filepath.Dir(metricsPath))},
	}
	if promListen != "" {
		cfg["metrics"].(map[string]any)["prometheus_listen"] = promListen
	}
	if p.WarmupS > 0 {
		// The server counts from its first join, about when the swarm
		// starts: the ramp plus the warm-up ends where the swarm's hold
		// after the warm-up begins.
		ramp := float64(max(p.ClientsFor(leg)-1, 0)*p.RampMs) / 1000
		cfg["metrics"].(map[string]any)["tick_stats_warmup_s"] = ramp + p.WarmupS
	}
	if len(p.Server.Faults) > 0 {
		cfg["faults"] = p.Server.Faults
	}
	return cfg
}

// AdminSocket is the reference server's admin socket in a leg directory:
// `scalegate admin RUN/LEG/admin.sock status` while the leg runs.
func AdminSocket(legDir string) string { return filepath.Join(legDir, "admin.sock") }
