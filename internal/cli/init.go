package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"

	"github.com/mattn/go-shellwords"

	"github.com/scalegate/scalegate/internal/config/catalog"
	"github.com/scalegate/scalegate/internal/run/exitcode"
	"github.com/scalegate/scalegate/internal/run/scaffold"
)

func init() {
	register("init", "scaffold a repository: a profile for your server, baselines/, a GitHub workflow", runInit)
}

// initFlags are scalegate init's flags.
type initFlags struct {
	dir, name, command, swarm, transport, patterns string
	metrics, metricsURL, configFormat              string
	portKey, metricsKey                            string
	transportDeclared                              bool
	clients                                        int
	duration, deliveryRateHz                       float64
	config                                         configFlags
}

// configFlags collects repeatable --config KEY=VALUE.
type configFlags map[string]any

func (c configFlags) String() string { return "" }

// Set parses KEY=VALUE: true/false are booleans, integers and finite
// decimals numbers, "quoted" text a string, anything else a string as is.
func (c configFlags) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want KEY=VALUE, e.g. security.max_connections_per_ip=64", s)
	}
	if _, dup := c[k]; dup {
		return fmt.Errorf("%s is given twice", k)
	}
	c[k] = configValue(v)
	return nil
}

// configValue types a --config value the way a config file would.
func configValue(v string) any {
	switch v {
	case "true":
		return true
	case "false":
		return false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		return n
	}
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return f
	}
	if u, err := strconv.Unquote(v); err == nil && strings.HasPrefix(v, `"`) {
		return u
	}
	return v
}

func parseInitFlags(env *Env, args []string) (*initFlags, *flag.FlagSet, error) {
	transports, err := catalog.Transports()
	if err != nil {
		return nil, nil, exitcode.With(exitcode.Internal, fmt.Errorf("init: %w", err))
	}
	f := &initFlags{config: configFlags{}}
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	fs.StringVar(&f.dir, "dir", ".", "repository root to scaffold")
	fs.StringVar(&f.name, "name", "", "profile name (default: the directory's name)")
	fs.StringVar(&f.command, "server-command", "", "how to start your server, as a shell would split it (no expansion); {port}, {metrics_json}, {metrics_port} and {config} are replaced for each leg")
	fs.StringVar(&f.swarm, "swarm-command", "", "your own bot (docs/own-protocol.md), run in place of the built-in swarm for a server that speaks its own protocol: the program and its first arguments, as a shell would split them (no expansion); the gate adds the swarm's arguments after them. Default: the built-in swarm (load protocol v1)")
	fs.StringVar(&f.transport, "transport", "enet", strings.Join(transports, ", ")+": what your server speaks (a server on its own protocol needs --swarm-command too)")
	fs.IntVar(&f.clients, "clients", 32, "bots per leg")
	fs.Float64Var(&f.duration, "duration", 30, "seconds per leg")
	fs.StringVar(&f.patterns, "patterns", "weave,idle", "flight patterns, one leg each (comma-separated)")
	fs.Float64Var(&f.deliveryRateHz, "delivery-rate-hz", 60, "the rate your server sends each client state at (delivery.rate_hz: every bot's state updates are measured against it)")
	fs.StringVar(&f.metrics, "metrics", "file", "how your server reports: file (it writes the JSON metrics file of docs/metrics.md) or prometheus (its endpoint is scraped)")
	fs.StringVar(&f.metricsURL, "metrics-url", "http://127.0.0.1:{metrics_port}/metrics", "with --metrics prometheus: the endpoint; {metrics_port} is picked per leg")
	fs.BoolVar(&f.transportDeclared, "transport-declared", false, "with --metrics prometheus: your server exports no series naming its transport, so the profile declares it (server.metrics.transport_declared) instead of mapping one")
	fs.StringVar(&f.configFormat, "config-format", "toml", "toml, json or yaml: the format {config} is written in")
	fs.StringVar(&f.portKey, "port-key", "", "config key (dotted) that gets the port, when the command has {config} and no {port} (default port)")
	fs.StringVar(&f.metricsKey, "metrics-key", "", "config key (dotted) that gets the metrics file path ({metrics_json}; default metrics_path), or with --metrics prometheus the endpoint's port ({metrics_port}; default metrics_port), when the command has {config} and not the placeholder")
	fs.Var(f.config, "config", "a further config value, `KEY=VALUE` (repeatable): security.max_connections_per_ip=64")
	fs.Usage = func() { initUsage(fs, transports) }
	if err := parseFlags(env, fs, args); err != nil {
		return nil, nil, err
	}
	if fs.NArg() > 0 {
		return nil, nil, exitcode.Errorf(exitcode.Usage, "init: unexpected argument %q", fs.Arg(0))
	}
	return f, fs, nil
}

// initUsage prints init's usage; the transports are the schema's.
func initUsage(fs *flag.FlagSet, transports []string) {
	fmt.Fprintf(fs.Output(), `usage: scalegate init --server-command "CMD ARGS..." [--swarm-command "BOT ARGS..."] [--name NAME]
                      [--transport %s] [--clients N] [--duration S] [--patterns P,...]
                      [--delivery-rate-hz HZ] [--metrics file|prometheus] [--metrics-url URL] [--transport-declared]
                      [--config-format toml|json|yaml] [--port-key KEY] [--metrics-key KEY]
                      [--config KEY=VALUE]... [--dir DIR]

Writes gates/NAME.cue (a profile for your server), baselines/ and .github/workflows/scale-gate.yml
(the scalegate action running that profile), overwriting nothing, and prints the next three commands.
A server that speaks its own protocol is driven by your own bot (--swarm-command; docs/own-protocol.md).

options:
`, strings.Join(transports, "|"))
	fs.PrintDefaults()
}

// runInit scaffolds a team's repository (internal/run/scaffold), checks the
// profile it renders against the schema before writing anything, and
// prints what to run next.
func runInit(_ context.Context, env *Env, args []string) error {
	f, fs, err := parseInitFlags(env, args)
	if err != nil {
		return err
	}
	opts, err := f.options(fs)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("init: %w", err))
	}
	if err := checkInitDir(f.dir); err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("init: %w", err))
	}
	files, err := scaffold.Files(opts)
	if err != nil {
		return exitcode.With(exitcode.Usage, fmt.Errorf("init: %w", err))
	}
	if err := vetScaffold(env, opts.Name, files); err != nil {
		return err
	}
	if err := scaffold.Write(f.dir, files); err != nil {
		var exists *scaffold.ExistsError
		if errors.As(err, &exists) {
			return exitcode.With(exitcode.Usage, fmt.Errorf("init: in %s: %w", f.dir, err))
		}
		return exitcode.With(exitcode.Internal, fmt.Errorf("init: %w", err))
	}
	printNext(env, f.dir, opts, files)
	return nil
}

var initName = regexp.MustCompile(`[^a-z0-9-]+`)

// options turns the flags into scaffold options.
func (f *initFlags) options(fs *flag.FlagSet) (scaffold.Options, error) {
	var o scaffold.Options
	given := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { given[fl.Name] = true })
	metricsURL, err := f.metricsEndpoint(given)
	if err != nil {
		return o, err
	}
	if f.command == "" {
		return o, errors.New("--server-command is required: how to start your server, e.g. --server-command \"./bin/server --config {config}\"")
	}
	cmd, err := splitCommand("server-command", f.command)
	if err != nil {
		return o, err
	}
	var swarm []string
	if given["swarm-command"] {
		if swarm, err = splitCommand("swarm-command", f.swarm); err != nil {
			return o, err
		}
		if len(swarm) == 0 {
			return o, errors.New("--swarm-command is empty: give your bot binary, e.g. --swarm-command ./bin/mybot, or leave the flag out for the built-in swarm")
		}
	}
	if f.transportDeclared && f.metrics != "prometheus" {
		return o, errors.New("--transport-declared goes with --metrics prometheus: the metrics file says its transport itself")
	}
	name, err := f.profileName()
	if err != nil {
		return o, err
	}
	o = scaffold.Options{Name: name, Command: cmd, Swarm: swarm, Transport: f.transport, Clients: f.clients, DurationS: f.duration,
		ConfigFormat: f.configFormat, Metrics: f.metrics, MetricsURL: metricsURL, TransportDeclared: f.transportDeclared,
		DeliveryRateHz: f.deliveryRateHz, PortKey: f.portKey, MetricsKey: f.metricsKey, Config: f.config}
	for _, p := range strings.Split(f.patterns, ",") {
		if p = strings.TrimSpace(p); p != "" {
			o.Patterns = append(o.Patterns, p)
		}
	}
	f.defaultConfigKeys(&o, given)
	o.ActionRef, o.ActionVersion = "main", ""
	if !strings.Contains(Version, "-") {
		// A release: the workflow pins the action at this version's tag
		// and downloads this version's binary.
		o.ActionRef, o.ActionVersion = "v"+Version, Version
	}
	return o, nil
}

// metricsEndpoint validates --metrics and returns the endpoint to scrape:
// --metrics-url carries a default, so only an explicit one is refused with
// the metrics file, and the file source gets no URL at all.
func (f *initFlags) metricsEndpoint(given map[string]bool) (string, error) {
	switch f.metrics {
	case "file":
		if given["metrics-url"] {
			return "", errors.New("--metrics-url goes with --metrics prometheus; the metrics file needs none")
		}
		return "", nil
	case "prometheus":
		return f.metricsURL, nil
	default:
		return "", fmt.Errorf("--metrics %q: want file or prometheus", f.metrics)
	}
}

// splitCommand splits a command flag (--server-command, --swarm-command)
// into argv as a shell would split the words, quotes and backslashes
// included, without a shell (no $VAR, no `cmd`, no globbing), and refuses
// a shell line whose tail the parser would silently drop.
func splitCommand(name, line string) ([]string, error) {
	parser := shellwords.NewParser() // no $VAR, no `cmd`: the words as written
	cmd, err := parser.Parse(line)
	if err != nil {
		return nil, fmt.Errorf("--%s %q: %w", name, line, err)
	}
	if at := parser.Position; at >= 0 {
		// The parser stops at a shell operator (; && | > &) and returns the
		// words before it: the rest would be dropped without a word.
		return nil, fmt.Errorf("--%s %q: %q from column %d is a shell operator and what follows it: the gate runs one command, not a shell line; quote it for a shell: --%s \"sh -c '...'\"",
			name, line, line[at:], at+1, name)
	}
	return cmd, nil
}

// profileName is --name, or else one derived from the directory's name so
// that `scalegate init` in a checkout needs no --name.
func (f *initFlags) profileName() (string, error) {
	if f.name != "" {
		return f.name, nil
	}
	abs, err := filepath.Abs(f.dir)
	if err != nil {
		return "", err
	}
	name := strings.Trim(initName.ReplaceAllString(strings.ToLower(filepath.Base(abs)), "-"), "-")
	if name == "" || name[0] < 'a' || name[0] > 'z' {
		return "", fmt.Errorf("the directory name %q makes no profile name: give --name", filepath.Base(abs))
	}
	return name, nil
}

// defaultConfigKeys picks config keys for what a {config} command does not
// carry itself, so a server told only its config file still learns its
// port and where its metrics go; a key given by flag is left as given.
func (f *initFlags) defaultConfigKeys(o *scaffold.Options, given map[string]bool) {
	if !strings.Contains(f.command, "{config}") {
		return
	}
	if !strings.Contains(f.command, "{port}") && !given["port-key"] {
		o.PortKey = "port"
	}
	switch {
	case given["metrics-key"]:
	case f.metrics == "file" && !strings.Contains(f.command, "{metrics_json}"):
		o.MetricsKey = "metrics_path"
	case f.metrics == "prometheus" && !strings.Contains(f.command, "{metrics_port}") && strings.Contains(o.MetricsURL, "{metrics_port}"):
		o.MetricsKey = "metrics_port"
	}
}

// checkInitDir refuses a --dir that is a file, or under one: a usage
// mistake, not the machine failing to write. A directory that does not
// exist yet is fine (init creates it).
func checkInitDir(dir string) error {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("--dir %s is a file, not a directory: give the repository's root", dir)
	case errors.Is(err, syscall.ENOTDIR):
		return fmt.Errorf("--dir %s: part of that path is a file, not a directory", dir)
	}
	return nil
}

// vetScaffold loads the profile the scaffold would write, from a temp
// directory, as `scalegate vet` would: a flag value the schema refuses
// (--clients 5000, --patterns loops) is reported with the schema's words
// and nothing is written.
func vetScaffold(env *Env, name string, files []scaffold.File) error {
	tmp, err := os.MkdirTemp("", "scalegate-init")
	if err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	defer os.RemoveAll(tmp)
	if err := scaffold.Write(tmp, files); err != nil {
		return exitcode.With(exitcode.Internal, err)
	}
	cat, err := catalog.NewCatalog(filepath.Join(tmp, scaffold.ProfileDir))
	if err == nil {
		_, _, err = cat.Load(name)
	}
	if err != nil {
		msg := strings.ReplaceAll(catalog.FormatError(err), filepath.Join(tmp, scaffold.ProfileDir)+string(filepath.Separator), scaffold.ProfileDir+"/")
		fmt.Fprintln(env.Stderr, msg)
		return exitcode.Errorf(exitcode.Usage, "init: the profile these flags make is invalid (above); nothing was written")
	}
	return nil
}

// printNext says what was written and the three commands to run next.
func printNext(env *Env, dir string, o scaffold.Options, files []scaffold.File) {
	name := o.Name
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	w := env.Stdout
	fmt.Fprintf(w, "scalegate init: wrote %s", strings.Join(paths, ", "))
	if dir != "." {
		fmt.Fprintf(w, " in %s", dir)
	}
	fmt.Fprintln(w)
	if o.Metrics == "prometheus" {
		fmt.Fprintf(w, "\nserver.metrics.map in %s/%s.cue names the reference server's series: rename each to your\nserver's before the first run (docs/metrics.md, \"From Prometheus\").\n", scaffold.ProfileDir, name)
	}
	if len(o.Swarm) > 0 {
		fmt.Fprintf(w, "\nThe gate runs your bot as %s HOST PORT --clients N ... in place of the built-in swarm:\nbuild it (and your server) before the first run (docs/own-protocol.md).\n", strings.Join(o.Swarm, " "))
	}
	fmt.Fprintln(w, "\nNext, from the repository root:")
	fmt.Fprintf(w, "  1. check the profile (every mistake as file:line:col):\n       scalegate vet --profiles %s\n", scaffold.ProfileDir)
	fmt.Fprintf(w, "  2. the first run; if every gate holds it records the baseline (read its report.html,\n     then commit %s/scale-gate-baseline.json):\n       scalegate --profiles %s --profile %s --update-baseline\n", scaffold.BaselineDir, scaffold.ProfileDir, name)
	fmt.Fprintf(w, "  3. the gate, as %s runs it on every pull request:\n       scalegate --profiles %s --profile %s\n", scaffold.WorkflowPath, scaffold.ProfileDir, name)
}
