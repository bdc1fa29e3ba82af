package cli

import (
	"context"
	"flag"
	"fmt"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reference/server"
	"github.com/scalegate/scalegate/internal/run/exitcode"
)

const serveUsage = `usage: scalegate serve [--config PATH] [options]

Runs the reference game server: a 60 Hz authoritative tick over a populated
world, per-peer snapshots under a byte budget, admission control, and the
metrics file (--metrics-json) every gate reads. Binds 127.0.0.1 unless
--bind (or [server] bind) says otherwise: 0.0.0.0 lets swarms on other
machines in (docs/scale-out.md); the gate's own runs stay on loopback.
[metrics] http_listen also serves the metrics document at
http://HOST:PORT/metrics for swarms that cannot read the file;
[metrics] prometheus_listen (--prometheus-listen) serves the same figures
as a Prometheus exposition (docs/metrics.md), with or without the file.
Flags override the config file. docs/server.md lists every config key;
docs/faults.md the [faults] section (deliberate defects, off by default).

On bind it prints "scalegate serve: listening on ADDR:PORT transport=NAME"
(and "scalegate serve: metrics at URL" with http_listen, "scalegate serve:
prometheus metrics at URL" with prometheus_listen) and writes the
metrics document once. SIGINT/SIGTERM: Notice(shutdown) to every
peer, a final metrics write, exit 0. Exit 4: bad config (the key is named);
5: the metrics file cannot be written (checked before binding, so nothing
claims to listen) or the port cannot be bound; 2: usage or a transport this
build cannot speak.

options:
`

func init() {
	register("serve", "run the reference game server", runServe)
}

// serveFlags are the overrides of `scalegate serve`.
type serveFlags struct {
	config    string
	port      int
	transport string
	metrics   string
	promAddr  string
	workers   int
	bind      string
}

func newServeFlagSet(f *serveFlags, env *Env) *flag.FlagSet {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), serveUsage)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.config, "config", "", "server config TOML `path` (defaults apply without one)")
	fs.IntVar(&f.port, "port", 0, "UDP `port` (overrides [server] port; 0 = ephemeral)")
	fs.StringVar(&f.bind, "bind", server.BindHost, "IP `address` to bind (overrides [server] bind; 0.0.0.0 = every interface)")
	fs.StringVar(&f.transport, "transport", "", "transport `name` (overrides [server] transport)")
	fs.StringVar(&f.metrics, "metrics-json", "", "metrics file `path` (overrides [metrics] tick_json_path)")
	fs.StringVar(&f.promAddr, "prometheus-listen", "", "serve a Prometheus exposition at http://`ADDR`/metrics (overrides [metrics] prometheus_listen; PORT binds 127.0.0.1, :PORT every interface)")
	fs.IntVar(&f.workers, "sim-worker-threads", 0, "sim worker threads, 0 auto, 1 serial (overrides [world] sim_worker_threads)")
	return fs
}

func runServe(ctx context.Context, env *Env, args []string) error {
	var f serveFlags
	fs := newServeFlagSet(&f, env)
	if err := parseFlags(env, fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return exitcode.Errorf(exitcode.Usage, "serve: unexpected argument %q", fs.Arg(0))
	}
	cfg, err := loadServeConfig(ctx, fs, &f)
	if err != nil {
		return exitcode.With(exitcode.InvalidProfile, err)
	}
	if _, err := transport.Lookup(cfg.Server.Transport); err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("serve: %w", err))
	}
	srv, err := server.New(cfg, env.Stderr)
	if err != nil {
		return exitcode.With(exitcode.InvalidProfile, err)
	}
	srv.SetStdout(env.Stdout)
	srv.SetReload(f.config, func(ctx context.Context) (server.Config, error) { return loadServeConfig(ctx, fs, &f) })
	if err := srv.Listen(); err != nil {
		return exitcode.With(exitcode.LaunchFailure, fmt.Errorf("serve: %w", err))
	}
	// The metrics file is written before the line is printed: a reader that
	// waits for "listening" may read the file at once (the gate's readiness
	// is the file; a script's may be the line).
	if err := srv.WriteMetrics(); err != nil {
		return exitcode.With(exitcode.LaunchFailure, fmt.Errorf("serve: %w", err))
	}
	fmt.Fprintf(env.Stdout, "scalegate serve: listening on %s transport=%s\n", srv.Addr(), srv.Backend())
	if u := srv.MetricsURL(); u != "" {
		fmt.Fprintf(env.Stdout, "scalegate serve: metrics at %s\n", u)
	}
	if u := srv.PrometheusURL(); u != "" {
		fmt.Fprintf(env.Stdout, "scalegate serve: prometheus metrics at %s\n", u)
	}
	if err := srv.Run(ctx); err != nil {
		return exitcode.With(exitcode.Internal, fmt.Errorf("serve: %w", err))
	}
	return nil
}

// loadServeConfig reads the config file and applies the flags that were
// given on the command line (and only those: an unset flag keeps the
// file's value).
func loadServeConfig(ctx context.Context, fs *flag.FlagSet, f *serveFlags) (server.Config, error) {
	cfg, err := server.LoadConfigContext(ctx, f.config)
	if err != nil {
		return cfg, err
	}
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "port":
			cfg.Server.Port = f.port
		case "transport":
			cfg.Server.Transport = f.transport
		case "metrics-json":
			cfg.Metrics.TickJSONPath = f.metrics
		case "prometheus-listen":
			cfg.Metrics.PrometheusListen = f.promAddr
		case "sim-worker-threads":
			cfg.World.SimWorkerThreads = f.workers
		case "bind":
			cfg.Server.Bind = f.bind
		}
	})
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("%w (after command-line overrides)", err)
	}
	return cfg, nil
}
