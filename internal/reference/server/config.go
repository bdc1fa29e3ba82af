package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"regexp"
	"runtime"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
	"github.com/scalegate/scalegate/internal/guard/boundedhttp"
	"github.com/scalegate/scalegate/internal/load/trace"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// MaxPeersCeiling is the largest [server] max_peers accepted: the
// project's client cap (proto.MaxClients), a testing affordance, not a
// capacity guarantee.
const MaxPeersCeiling = proto.MaxClients

// Config is the server configuration (docs/server.md lists every key).
// The TOML sections map onto the nested structs one to one.
type Config struct {
	Server   ServerConfig   `toml:"server"`
	Security SecurityConfig `toml:"security"`
	World    WorldConfig    `toml:"world"`
	Network  NetworkConfig  `toml:"network"`
	Metrics  MetricsConfig  `toml:"metrics"`
	Faults   FaultConfig    `toml:"faults"`
	Trace    TraceConfig    `toml:"trace"`
	Admin    AdminConfig    `toml:"admin"`
}

// ServerConfig is [server].
type ServerConfig struct {
	Port         int     `toml:"port"`      // 0: an ephemeral port
	Bind         string  `toml:"bind"`      // IP address to bind; default 127.0.0.1
	MaxPeers     int     `toml:"max_peers"` // joined + joining peers
	Transport    string  `toml:"transport"` // backend name ("enet", "quic")
	IdleTimeoutS float64 `toml:"idle_timeout_s"`
	JoinTimeoutS float64 `toml:"join_timeout_s"`
}

// SecurityConfig is [security]: admission limits.
type SecurityConfig struct {
	ConnectRateLimitCount   int     `toml:"connect_rate_limit_count"`    // connects per window per IP
	ConnectRateLimitWindowS float64 `toml:"connect_rate_limit_window_s"` // window length
	MaxConnectionsPerIP     int     `toml:"max_connections_per_ip"`
	// The transport's connect guard (ENet), below admission: attempts per
	// source ip:port per window before a peer slot is taken (0: off), and
	// how long a handshake may stay incomplete (0: ENet's 25-30 s).
	SourceConnectLimitCount   int     `toml:"source_connect_limit_count"`
	SourceConnectLimitWindowS float64 `toml:"source_connect_limit_window_s"`
	HalfOpenTimeoutS          float64 `toml:"half_open_timeout_s"`
}

// WorldConfig is [world].
type WorldConfig struct {
	SimWorkerThreads int `toml:"sim_worker_threads"` // 0 auto (GOMAXPROCS), 1 serial
	// PinSimWorkers pins each sim worker (the loop goroutine and the
	// pool's helpers) to its own allowed CPU, and lets the helpers spin
	// between a tick's passes instead of parking (pool.go says why). Off
	// by default: it suits a server that owns its CPUs, and would crowd
	// several servers sharing them (the test suite's). It applies only
	// with 2+ workers and as many allowed CPUs.
	PinSimWorkers bool `toml:"pin_sim_workers"`
	// RealtimePriority, when above 0, runs the pinned workers' threads
	// under SCHED_FIFO at this priority (1..99), so no ordinary thread on
	// the machine (a load generator beside the server, the server's own
	// runtime threads) takes a worker's CPU mid-tick. Only the pinned
	// workers: each is locked to its goroutine, so the priority follows
	// the tick's work and nothing else of the process. It needs
	// CAP_SYS_NICE (or RLIMIT_RTPRIO); refused, the server says so and runs
	// at normal priority. Ignored unless the workers are pinned.
	RealtimePriority    int     `toml:"realtime_priority"`
	SnapshotBudgetBytes int     `toml:"snapshot_budget_bytes"` // per Snapshot message; 0 unlimited
	InterestRadiusM     float64 `toml:"interest_radius_m"`
	SpatialCellSizeM    float64 `toml:"spatial_cell_size_m"` // 0: the interest radius
	TestSpawnAICount    int     `toml:"test_spawn_ai_count"`
	TestSpawnSpreadKm   float64 `toml:"test_spawn_spread_km"`
	TestSpawnAGLM       float64 `toml:"test_spawn_agl_m"`
	TestSpawnEntityType string  `toml:"test_spawn_entity_type"`
	// OverrunGovernor sheds snapshot rate, AI updates and interest radius
	// when the tick outgrows its period (governor.go). Off by default: a
	// capacity measurement must not be masked by shed work.
	OverrunGovernor bool `toml:"overrun_governor"`
	// The populated world (docs/server.md): how often each sensor owner is
	// checked, the AI controller mix of the test spawn, and the projectile
	// churn generator (projectiles per second, each living ttl seconds).
	SensorCheckHz      float64 `toml:"sensor_check_hz"`
	TestSpawnAIMix     string  `toml:"test_spawn_ai_mix"`
	TestProjectileRate float64 `toml:"test_projectile_rate"`
	TestProjectileTTLS float64 `toml:"test_projectile_ttl_s"`
	// TestAICostUs is busy work (wall-clock microseconds of CPU spin)
	// every AI controller run adds: an AI as expensive as a real one's
	// pathfinding, and one the governor's AI stride sheds. Because it is
	// wall time, N AI cost N × this per tick at full rate on any machine,
	// so an overload sized with it is one on a machine twice as fast.
	TestAICostUs float64 `toml:"test_ai_cost_us"`
}

// NetworkConfig is [network].
type NetworkConfig struct {
	CompressSnapshots bool `toml:"compress_snapshots"`
	// CongestionControl runs the per-peer congestion controller
	// (congestion.go); off, every peer gets a snapshot every tick.
	CongestionControl bool `toml:"congestion_control"`
	// SnapshotDeltas offers delta bodies (sg-entities/3) in Welcome and
	// sends them to the peers that ask; off, every peer gets version 2.
	SnapshotDeltas bool `toml:"snapshot_deltas"`
}

// MetricsConfig is [metrics].
type MetricsConfig struct {
	TickJSONPath string `toml:"tick_json_path"`
	// HTTPListen serves the metrics document over HTTP at /metrics as
	// well: "PORT" on loopback, ":PORT" on every interface, "IP:PORT" on
	// that address; "" = no HTTP endpoint.
	HTTPListen string `toml:"http_listen"`
	// PrometheusListen serves the same figures as a Prometheus exposition
	// at /metrics (docs/metrics.md, "The reference server's Prometheus
	// endpoint"), bound like HTTPListen: "PORT" on loopback, ":PORT" on
	// every interface, "IP:PORT" on that address; "" = none.
	PrometheusListen   string  `toml:"prometheus_listen"`
	TickJSONIntervalMs int     `toml:"tick_json_interval_ms"`
	SlowTickMs         float64 `toml:"slow_tick_ms"` // 0: 12.5 ms (3/4 of the 60 Hz period)
	// TickStatsWarmupS restarts the tick statistics (tick_ms and the
	// phase timings, tick_hz) once, this many seconds after the first
	// peer joined, so the connect ramp and a warm-up are left out of the
	// figures a gate reads; 0: a rolling window from the start. The gate
	// sets it to the leg's ramp plus the profile's warmup_s.
	TickStatsWarmupS float64 `toml:"tick_stats_warmup_s"`
}

// maxSourceConnectLimit is the largest source_connect_limit_count: the
// transport keeps that many attempt times per source address.
const maxSourceConnectLimit = 16

// TraceConfig is [trace]: recording every peer's accepted Input to FLIT
// files (docs/trace-format.md).
type TraceConfig struct {
	// InputTraceDir: record into this directory (created if missing); ""
	// records nothing.
	InputTraceDir string `toml:"input_trace_dir"`
	// MaxFileBytes caps one file; the next record rolls to the peer's next
	// file. 0: 64 MiB.
	MaxFileBytes int64 `toml:"max_file_bytes"`
}

// AdminConfig is [admin]: the local admin channel (docs/admin.md).
type AdminConfig struct {
	Socket string `toml:"socket"` // Unix socket path; "" = no admin channel
}

// DefaultConfig is the configuration with every key at its default.
func DefaultConfig() Config {
	return Config{
		Server: ServerConfig{Port: 7777, Bind: BindHost, MaxPeers: 256, Transport: "enet", IdleTimeoutS: 10, JoinTimeoutS: 5},
		Security: SecurityConfig{
			ConnectRateLimitCount:   16,
			ConnectRateLimitWindowS: 1,
			MaxConnectionsPerIP:     8,

			SourceConnectLimitCount:   4,
			SourceConnectLimitWindowS: 1,
			HalfOpenTimeoutS:          3,
		},
		World: WorldConfig{
			SimWorkerThreads:    0,
			SnapshotBudgetBytes: 1200,
			InterestRadiusM:     8000,
			SpatialCellSizeM:    0,
			TestSpawnAICount:    0,
			TestSpawnSpreadKm:   50,
			TestSpawnAGLM:       4000,
			TestSpawnEntityType: "builtin:loiter-ai",
			SensorCheckHz:       10,
			TestProjectileTTLS:  3,
		},
		Network: NetworkConfig{CompressSnapshots: true, CongestionControl: true, SnapshotDeltas: true},
		Metrics: MetricsConfig{TickJSONIntervalMs: 1000, SlowTickMs: 0},
	}
}

// ConfigError names the key that is wrong.
type ConfigError struct {
	File string // "" for flags
	Key  string // "section.key"
	Msg  string
}

// Error names the file (when known), the key and what is wrong.
func (e *ConfigError) Error() string {
	if e.File == "" {
		return fmt.Sprintf("config: %s: %s", e.Key, e.Msg)
	}
	return fmt.Sprintf("config %s: %s: %s", e.File, e.Key, e.Msg)
}

// MaxConfigBytes bounds a config file: a complete one is about 3 KB.
const MaxConfigBytes = 1 << 20

// LoadConfig reads a TOML file over the defaults. Unknown keys are errors
// naming the key; so are values out of range (Validate).
func LoadConfig(path string) (Config, error) {
	return LoadConfigContext(context.Background(), path)
}

// LoadConfigContext is LoadConfig abandoning the read when ctx ends (an
// admin reload that cannot finish never holds the server). Only a regular
// file of at most MaxConfigBytes is read: a FIFO or a device put in the
// config's place is refused without blocking.
func LoadConfigContext(ctx context.Context, path string) (Config, error) {
	if path == "" {
		cfg := DefaultConfig()
		return cfg, cfg.Validate()
	}
	b, err := boundedfile.ReadFile(ctx, path, MaxConfigBytes)
	if err != nil {
		return DefaultConfig(), &ConfigError{File: path, Key: "(file)", Msg: err.Error()}
	}
	return ParseConfig(path, b)
}

// ParseConfig decodes a TOML config (named file in errors) over the
// defaults and validates it.
func ParseConfig(file string, b []byte) (Config, error) {
	cfg := DefaultConfig()
	path := file
	md, err := toml.Decode(string(b), &cfg)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return cfg, &ConfigError{File: path, Key: keyOfParseError(pe), Msg: pe.Message}
		}
		var ppe *toml.ParseError
		if errors.As(err, &ppe) {
			return cfg, &ConfigError{File: path, Key: keyOfParseError(*ppe), Msg: ppe.Message}
		}
		// Type mismatches are plain errors that name the key in their text.
		key := "(parse)"
		if m := lastKeyRe.FindStringSubmatch(err.Error()); m != nil {
			key = m[1]
		}
		return cfg, &ConfigError{File: path, Key: key, Msg: err.Error()}
	}
	if und := md.Undecoded(); len(und) > 0 {
		return cfg, &ConfigError{File: path, Key: und[0].String(), Msg: "unknown key"}
	}
	if err := cfg.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.File = path
		}
		return cfg, err
	}
	return cfg, nil
}

var lastKeyRe = regexp.MustCompile(`last key "([^"]+)"`)

func keyOfParseError(pe toml.ParseError) string {
	if pe.LastKey != "" {
		return pe.LastKey
	}
	return fmt.Sprintf("line %d", pe.Position.Line)
}

type check struct {
	key string
	ok  bool
	msg string
}

// Validate checks every value's range and names the first bad key.
func (c *Config) Validate() error {
	_, aiMixErr := ParseAIMix(c.World.TestSpawnAIMix)
	checks := []check{
		{"server.port", c.Server.Port >= 0 && c.Server.Port <= 65535, "must be 0..65535"},
		{"server.bind", net.ParseIP(c.Server.Bind) != nil, "must be an IP address (127.0.0.1 keeps the server on loopback; 0.0.0.0 or :: every interface)"},
		{"metrics.http_listen", c.Metrics.HTTPListen == "" || validListen(c.Metrics.HTTPListen), "must be PORT (loopback: 9100), :PORT (every interface: :9100) or IP:PORT (127.0.0.1:9100), or empty for none"},
		{"metrics.prometheus_listen", c.Metrics.PrometheusListen == "" || validListen(c.Metrics.PrometheusListen), "must be PORT (loopback: 9464), :PORT (every interface: :9464) or IP:PORT (127.0.0.1:9464), or empty for none"},
		{"server.max_peers", c.Server.MaxPeers >= 1 && c.Server.MaxPeers <= MaxPeersCeiling, fmt.Sprintf("must be 1..%d", MaxPeersCeiling)},
		{"server.transport", strings.TrimSpace(c.Server.Transport) != "", "must name a transport"},
		{"server.idle_timeout_s", c.Server.IdleTimeoutS >= 1 && c.Server.IdleTimeoutS <= 3600, "must be 1..3600"},
		{"server.join_timeout_s", c.Server.JoinTimeoutS >= 0.5 && c.Server.JoinTimeoutS <= 600, "must be 0.5..600"},
		{"security.connect_rate_limit_count", c.Security.ConnectRateLimitCount >= 1 && c.Security.ConnectRateLimitCount <= 10000000, "must be 1..10000000"},
		{"security.connect_rate_limit_window_s", c.Security.ConnectRateLimitWindowS > 0 && c.Security.ConnectRateLimitWindowS <= 3600, "must be > 0 and ≤ 3600"},
		{"security.max_connections_per_ip", c.Security.MaxConnectionsPerIP >= 0 && c.Security.MaxConnectionsPerIP <= MaxPeersCeiling, fmt.Sprintf("must be 0 (no cap: every bot shares 127.0.0.1) ..%d", MaxPeersCeiling)},
		{"security.source_connect_limit_count", c.Security.SourceConnectLimitCount >= 0 && c.Security.SourceConnectLimitCount <= maxSourceConnectLimit, fmt.Sprintf("must be 0 (off)..%d", maxSourceConnectLimit)},
		{"security.source_connect_limit_window_s", c.Security.SourceConnectLimitWindowS >= 0.001 && c.Security.SourceConnectLimitWindowS <= 3600, "must be 0.001..3600"},
		{"security.half_open_timeout_s", c.Security.HalfOpenTimeoutS == 0 || (c.Security.HalfOpenTimeoutS >= 0.1 && c.Security.HalfOpenTimeoutS <= 600), "must be 0 (the transport's own) or 0.1..600"},
		{"world.sim_worker_threads", c.World.SimWorkerThreads >= 0 && c.World.SimWorkerThreads <= 256, "must be 0 (auto)..256"},
		{"world.snapshot_budget_bytes", c.World.SnapshotBudgetBytes == 0 || (c.World.SnapshotBudgetBytes >= 64 && c.World.SnapshotBudgetBytes <= 1<<20), "must be 0 (unlimited) or 64..1048576"},
		{"world.interest_radius_m", c.World.InterestRadiusM >= 100 && c.World.InterestRadiusM <= 200000, "must be 100..200000"},
		{"world.spatial_cell_size_m", c.World.SpatialCellSizeM == 0 || (c.World.SpatialCellSizeM >= 50 && c.World.SpatialCellSizeM <= 200000), "must be 0 (auto) or 50..200000"},
		{"world.test_spawn_ai_count", c.World.TestSpawnAICount >= 0 && c.World.TestSpawnAICount <= 60000, "must be 0..60000"},
		{"world.test_spawn_spread_km", c.World.TestSpawnSpreadKm >= 0.1 && c.World.TestSpawnSpreadKm <= 240, "must be 0.1..240 (the snapshot position range is ±131 km)"},
		{"world.test_spawn_agl_m", c.World.TestSpawnAGLM >= 50 && c.World.TestSpawnAGLM <= 10000, "must be 50..10000"},
		{"world.test_spawn_entity_type", strings.TrimSpace(c.World.TestSpawnEntityType) != "" && len(c.World.TestSpawnEntityType) <= 255, "must be a non-empty name of at most 255 bytes"},
		{"world.sensor_check_hz", c.World.SensorCheckHz > 0 && c.World.SensorCheckHz <= TickHz, fmt.Sprintf("must be > 0 and ≤ %d (the tick rate)", TickHz)},
		{"world.test_spawn_ai_mix", aiMixErr == nil, fmt.Sprint(aiMixErr)},
		{"world.realtime_priority", c.World.RealtimePriority >= 0 && c.World.RealtimePriority <= 99, "must be 0 (off)..99"},
		{"world.test_ai_cost_us", c.World.TestAICostUs >= 0 && c.World.TestAICostUs <= 10000, "must be 0..10000"},
		{"world.test_projectile_rate", c.World.TestProjectileRate >= 0 && c.World.TestProjectileRate <= 10000, "must be 0 (off)..10000 per second"},
		{"world.test_projectile_ttl_s", c.World.TestProjectileTTLS >= 1.0/TickHz && c.World.TestProjectileTTLS <= 600, "must be one tick (1/60 s)..600"},
		{"metrics.tick_json_interval_ms", c.Metrics.TickJSONIntervalMs >= 10 && c.Metrics.TickJSONIntervalMs <= 600000, "must be 10..600000"},
		// Bounded above by what a reader loads, so every recording replays.
		{"trace.max_file_bytes", c.Trace.MaxFileBytes == 0 || c.Trace.MaxFileBytes >= trace.HeaderSize+trace.RecordSize && c.Trace.MaxFileBytes <= trace.MaxFileBytes,
			fmt.Sprintf("must be 0 (64 MiB) or %d (the header and one record) ..%d (64 MiB: the largest file a replay reads)", trace.HeaderSize+trace.RecordSize, trace.MaxFileBytes)},
		{"metrics.slow_tick_ms", c.Metrics.SlowTickMs >= 0 && c.Metrics.SlowTickMs <= 10000, "must be 0 (default) ..10000"},
		{"metrics.tick_stats_warmup_s", c.Metrics.TickStatsWarmupS >= 0 && c.Metrics.TickStatsWarmupS <= 604800, "must be 0 (off) ..604800"},
		{"admin.socket", !strings.ContainsRune(c.Admin.Socket, 0), "must be a path (no NUL byte)"},
	}
	checks = append(checks, c.Faults.checks()...)
	for _, k := range checks {
		if !k.ok {
			return &ConfigError{Key: k.key, Msg: k.msg}
		}
	}
	return nil
}

// validListen accepts what boundedhttp.ResolveAddr resolves.
func validListen(s string) bool {
	_, err := boundedhttp.ResolveAddr(s)
	return err == nil
}

// Workers is the effective number of sim workers (0 resolves to GOMAXPROCS).
func (c *Config) Workers() int {
	if c.World.SimWorkerThreads > 0 {
		return c.World.SimWorkerThreads
	}
	return runtime.GOMAXPROCS(0)
}

// CellSize is the effective spatial cell size in metres.
func (c *Config) CellSize() float64 {
	if c.World.SpatialCellSizeM > 0 {
		return c.World.SpatialCellSizeM
	}
	return c.World.InterestRadiusM
}

// SensorHz is the sensor check rate per owner.
func (c *Config) SensorHz() float64 { return c.World.SensorCheckHz }

// ProjectileTTL is a churn projectile's life in seconds.
func (c *Config) ProjectileTTL() float64 { return c.World.TestProjectileTTLS }

// SlowTick is the SLOW TICK threshold in milliseconds.
func (c *Config) SlowTick() float64 {
	if c.Metrics.SlowTickMs > 0 {
		return c.Metrics.SlowTickMs
	}
	return 0.75 * 1000 / TickHz
}
