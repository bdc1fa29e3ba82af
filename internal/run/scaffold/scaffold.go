// Package scaffold writes what `scalegate init` gives a team's repository.
//
// That is a profile for their own server (gates/NAME.cue), the baselines/
// directory, and a GitHub workflow that runs the profile with the scalegate
// action. It renders and writes files; it knows nothing of flags, and the
// profile it renders is checked against the schema by its caller.
package scaffold

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"cuelang.org/go/cue/format"
)

// Options is everything the scaffold is rendered from.
type Options struct {
	// Name is the profile's name (and file name): ^[a-z][a-z0-9-]*$.
	Name string
	// Command is the server's argv template; {port}, {metrics_json} and
	// {config} are replaced per leg by the gate.
	Command []string
	// Transport is what the server speaks: one of the schema's transports
	// (catalog.Transports), checked when the profile is vetted.
	Transport string
	// Swarm is the team's own bot's argv (built with the bot package, or
	// any program keeping docs/swarm-contract.md), run in place of the
	// built-in swarm; empty runs the built-in swarm (load protocol v1).
	Swarm []string
	// Clients is the swarm size per leg; DurationS each leg's length.
	Clients   int
	DurationS float64
	// Patterns are the flight patterns, one leg each.
	Patterns []string
	// ConfigFormat is how config is rendered to {config}: toml, json, yaml.
	ConfigFormat string
	// Metrics is where the server's figures come from: "file" (the JSON
	// metrics file the server writes to {metrics_json}) or "prometheus"
	// (its endpoint, scraped at MetricsURL, served on {metrics_port}).
	Metrics, MetricsURL string
	// TransportDeclared (Prometheus only): the server exports no series
	// naming its transport, so the profile declares it
	// (server.metrics.transport_declared) and the map has no transport.
	TransportDeclared bool
	// DeliveryRateHz is the rate the server sends each client state at:
	// the profile's delivery.rate_hz, the delivery check's reference.
	DeliveryRateHz float64
	// PortKey and MetricsKey are dotted paths in the server's config that
	// receive "{port}" and the metrics placeholder ("{metrics_json}", or
	// "{metrics_port}" for Prometheus), used when Command has {config} and
	// does not carry the placeholder itself. Empty: not in the config.
	PortKey, MetricsKey string
	// Config holds further config values by dotted path
	// ("security.max_connections_per_ip" → 64).
	Config map[string]any
	// ActionRef is the ref of the action the workflow uses (v0.1.0, main);
	// ActionVersion, when set, is the release the action downloads instead
	// of building.
	ActionRef, ActionVersion string
}

// File is one file of the scaffold, by slash path relative to the
// repository root.
type File struct {
	Path string
	Body []byte
}

// ProfileDir, BaselineDir and WorkflowPath are where the scaffold writes.
const (
	ProfileDir   = "gates"
	BaselineDir  = "baselines"
	WorkflowPath = ".github/workflows/scale-gate.yml"
)

var (
	nameRE = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)
	keyRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$`)
)

// Files renders the scaffold. It refuses options that cannot make a
// profile a server can run: a server that is told neither its port nor
// where to write its metrics file would never become ready.
func Files(o Options) ([]File, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	prof, err := o.profile()
	if err != nil {
		return nil, err
	}
	return []File{
		{Path: ProfileDir + "/" + o.Name + ".cue", Body: prof},
		{Path: BaselineDir + "/README.md", Body: []byte(o.baselineReadme())},
		{Path: WorkflowPath, Body: []byte(o.workflow())},
	}, nil
}

// uses reports whether the command template carries placeholder p.
func (o Options) uses(p string) bool {
	for _, a := range o.Command {
		if strings.Contains(a, "{"+p+"}") {
			return true
		}
	}
	return false
}

// metricsPlaceholder is what tells the server where its figures go: the
// metrics file's path, or the port its Prometheus endpoint listens on.
func (o Options) metricsPlaceholder() string {
	if o.Metrics == "prometheus" {
		return "metrics_port"
	}
	return "metrics_json"
}

func (o Options) check() error {
	if err := o.checkMetrics(); err != nil {
		return err
	}
	if !nameRE.MatchString(o.Name) {
		return fmt.Errorf("name %q: lower-case letters, digits and '-', starting with a letter", o.Name)
	}
	if len(o.Command) == 0 || strings.TrimSpace(o.Command[0]) == "" {
		return errors.New("the server command is empty: give the program to run and its arguments")
	}
	if len(o.Swarm) > 0 && strings.TrimSpace(o.Swarm[0]) == "" {
		return errors.New("the swarm command is empty: give your bot binary and its arguments, or none for the built-in swarm")
	}
	if !(o.DeliveryRateHz > 0) || math.IsInf(o.DeliveryRateHz, 0) {
		return fmt.Errorf("delivery rate %v Hz: want the rate your server sends each client state at, e.g. 60", o.DeliveryRateHz)
	}
	config := o.uses("config")
	if !config && (len(o.Config) > 0 || o.PortKey != "" || o.MetricsKey != "") {
		return errors.New("config values are given but the server command has no {config}: add {config} where your server takes its config file")
	}
	if err := o.checkPlaceholders(); err != nil {
		return err
	}
	return o.checkConfig()
}

// checkMetrics refuses a metrics source the gate could not read from.
func (o Options) checkMetrics() error {
	switch o.Metrics {
	case "file":
		if o.MetricsURL != "" {
			return errors.New("a metrics URL goes with Prometheus; the metrics file needs none")
		}
		if o.TransportDeclared {
			return errors.New("a declared transport goes with Prometheus; the metrics file says its transport itself")
		}
	case "prometheus":
		if !strings.HasPrefix(o.MetricsURL, "http://") && !strings.HasPrefix(o.MetricsURL, "https://") {
			return fmt.Errorf("metrics URL %q: want http://… or https://…, e.g. http://127.0.0.1:{metrics_port}/metrics", o.MetricsURL)
		}
	default:
		return fmt.Errorf("metrics %q: want file or prometheus", o.Metrics)
	}
	return nil
}

// checkPlaceholders makes sure the server is told its port and where its
// metrics go exactly once, by the command or by a config key: told
// neither, it would never become ready.
func (o Options) checkPlaceholders() error {
	what := "metrics file path"
	if o.Metrics == "prometheus" {
		what = "metrics port"
	}
	for _, p := range []struct{ placeholder, key, flag string }{
		{"port", o.PortKey, "port"}, {o.metricsPlaceholder(), o.MetricsKey, what},
	} {
		if p.placeholder == "metrics_port" && !strings.Contains(o.MetricsURL, "{metrics_port}") {
			// A fixed endpoint: the server listens where the URL says.
			if o.uses(p.placeholder) || p.key != "" {
				return fmt.Errorf("metrics URL %s has no {metrics_port}, yet the server is told one: put {metrics_port} in the URL, or drop it from the server", o.MetricsURL)
			}
			continue
		}
		if o.uses(p.placeholder) && p.key != "" {
			return fmt.Errorf("the command carries {%s} and the config key %s would too: give one", p.placeholder, p.key)
		}
		if !o.uses(p.placeholder) && p.key == "" {
			return fmt.Errorf("the server is never told its %s: put {%s} in the command, or {config} in the command and a %s key for it in the config", p.flag, p.placeholder, p.flag)
		}
	}
	return nil
}

// checkConfig refuses config values and keys a config file cannot hold, so
// that lit never meets a value it cannot render.
func (o Options) checkConfig() error {
	keys := []string{o.PortKey, o.MetricsKey}
	for k, v := range o.Config {
		keys = append(keys, k)
		switch x := v.(type) {
		case string, bool, int, int64:
		case float64:
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("config key %s: %v is not a number a config file can hold", k, x)
			}
		default:
			return fmt.Errorf("config key %s: a %T value; want a string, number or boolean", k, v)
		}
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if k == "" {
			continue
		}
		if !keyRE.MatchString(k) {
			return fmt.Errorf("config key %q: want dotted names, e.g. server.port", k)
		}
		if seen[k] {
			return fmt.Errorf("config key %s is given twice", k)
		}
		seen[k] = true
	}
	return nil
}

// profile renders gates/NAME.cue, formatted by CUE's own formatter (which
// also proves it parses).
func (o Options) profile() ([]byte, error) {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	o.writeHead(w)
	if err := o.writeServer(w); err != nil {
		return nil, err
	}
	o.writeSwarm(w)
	o.writeDelivery(w)
	o.writeGates(w)
	out, err := format.Source([]byte(b.String()))
	if err != nil {
		return nil, fmt.Errorf("render %s.cue: %w", o.Name, err)
	}
	return out, nil
}

// writeHead writes the profile's top-level fields, with the comments that
// tell a team how to check and edit what init wrote for them.
func (o Options) writeHead(w func(string, ...any)) {
	w("// %s: the scale gate of our server, written by `scalegate init`.\n", o.Name)
	w("// Edit freely; `scalegate vet --profiles %s` checks it and\n", ProfileDir)
	w("// `scalegate profiles show %s --profiles %s` prints it with every default\n", o.Name, ProfileDir)
	w("// filled. Fields and gates: docs/profiles.md and docs/gate.md of scalegate.\n")
	w("name:        %s\n", lit(o.Name))
	w("description: %s\n", lit(fmt.Sprintf("%s: %d clients, %s, %s, %s s each", o.Name, o.Clients, strings.Join(o.Patterns, " + "), transportName(o.Transport), trimFloat(o.DurationS))))
	w("// Both ends speak it; the gate never runs another in its place.\n")
	w("transport:   %s\n", lit(o.Transport))
	w("clients:     %d\n", o.Clients)
	w("duration_s:  %s\n", trimFloat(o.DurationS))
	w("// One leg per pattern.\n")
	w("patterns: %s\n", lit(o.Patterns))
	w("// Payload and wire KB/s per client are compared with\n")
	w("// %s/scale-gate-baseline.json (10 %% tolerance). Record it with\n", BaselineDir)
	w("// --update-baseline from a run you trust, then commit the file.\n")
	w("baselined: true\n")
}

// writeServer writes the server block: how the gate starts the team's
// server and, when it takes one, the config it is given.
func (o Options) writeServer(w func(string, ...any)) error {
	w("server: {\n")
	w("kind: \"custom\"\n")
	w("// {port}, {metrics_json} and {config} are replaced for each leg: scalegate\n")
	w("// picks a free port and the metrics file path in the run directory.\n")
	w("command: %s\n", lit(o.Command))
	if o.uses("config") {
		config, err := o.config()
		if err != nil {
			return err
		}
		w("// config is rendered to {config} in this format.\n")
		w("config_format: %s\n", lit(o.ConfigFormat))
		w("config: %s\n", config)
	}
	if o.Metrics == "prometheus" {
		o.writePrometheus(w)
	}
	w("}\n")
	return nil
}

// writeSwarm writes the team's own bot, when it has one.
func (o Options) writeSwarm(w func(string, ...any)) {
	if len(o.Swarm) == 0 {
		return
	}
	w("// Your own bot (the bot package of scalegate, or any program keeping\n")
	w("// docs/swarm-contract.md) runs in place of the built-in swarm, with the\n")
	w("// same arguments and report (docs/own-protocol.md).\n")
	w("swarm: command: %s\n", lit(o.Swarm))
}

// writeDelivery writes the rate the delivery check measures every bot's
// state updates against: a protocol whose server announces no rate and
// whose updates carry no tick has no other reference, and the check then
// fails as unevaluable (docs/gate.md, "Delivery").
func (o Options) writeDelivery(w func(string, ...any)) {
	w("// The rate your server sends each client state at (a 60 Hz tick that\n")
	w("// sends every other tick: 30). The built-in delivery check, always on,\n")
	w("// fails a bot lost to silence, one 4 s without an update, or one under\n")
	w("// 5 %% of this rate (docs/gate.md, \"Delivery\").\n")
	w("delivery: rate_hz: %s\n", trimFloat(o.DeliveryRateHz))
}

// writeGates writes the gates a first profile starts with: the ones any
// server can meet, timing advisory until the team trusts its runner, and
// the ones every shipped profile declares (the server applied the inputs
// sent).
func (o Options) writeGates(w func(string, ...any)) {
	w("gates: {\n")
	w("// Every client admitted; none refused, none dropped.\n")
	w("admission: {}\n")
	w("// The server applied the inputs the bots sent (a server that ignores\n")
	if o.Metrics == "prometheus" {
		w("// them still sends state and passes every other gate): inputs_accepted\n")
		w("// in the map above, the inputs it applied since it started.\n")
	} else {
		w("// them still sends state and passes every other gate): your metrics\n")
		w("// file must write inputs_accepted, the inputs applied since start.\n")
	}
	w("inputs_accepted_ratio_min: threshold: 0.95\n")
	if o.Metrics == "prometheus" {
		w("// The server's wire KB/s per client: wire_out_kbs over the peers (map above).\n")
	} else {
		w("// The server's wire KB/s per client: your metrics file must write\n")
		w("// wire_out_kbs_per_client and wire_peers (a missing field fails the gate).\n")
	}
	w("wire_kbs_max: threshold: 150\n")
	w("// The tick rate the clients observe never collapses below this.\n")
	w("tick_hz_min: threshold: 30\n")
	w("// Tick time depends on the machine: shown, never failing, unless a run is --strict.\n")
	w("tick_ms_p99_max: {threshold: 16.6, level: \"advisory\"}\n")
	w("}\n")
}

// promMap is the mapping the scaffold starts from: the reference server's
// series (scalegate serve --prometheus-listen, docs/metrics.md), giving
// exactly the figures the scaffold's gates, the transport check and the
// wire baseline read. A team renames each to its own series; transport is
// left out when the profile declares it.
var promMap = []struct{ figure, value string }{
	{"tick_ms", `{histogram: "scalegate_tick_duration_seconds", scale: 1000}`},
	{"peers", `{gauge: "scalegate_peers"}`},
	{"wire_out_kbs", `{counter_rate: "scalegate_wire_sent_bytes_total", scale: 0.001}`},
	{"inputs_accepted", `{gauge: "scalegate_inputs_accepted_total"}`},
	{"transport", `{info: "scalegate_server_info", label: "transport"}`},
}

// writePrometheus writes the server.metrics block of a Prometheus source.
func (o Options) writePrometheus(w func(string, ...any)) {
	w("// The figures come from the server's Prometheus endpoint, scraped by the\n")
	w("// swarm ({metrics_port} is picked per leg like {port}).\n")
	w("metrics: {\n")
	w("source: \"prometheus\"\n")
	w("url: %s\n", lit(o.MetricsURL))
	if o.TransportDeclared {
		w("// Your server exports no series naming its transport: the profile's\n")
		w("// transport is taken as the server's side of the transport check\n")
		w("// (docs/metrics.md, \"The transport series\").\n")
		w("transport_declared: true\n")
	}
	w("// Which series gives each figure the gates read (docs/metrics.md, \"From\n")
	w("// Prometheus\"). These are the reference server's series: rename each to\n")
	w("// yours. tick_ms: the tick duration histogram (seconds × 1000); peers:\n")
	w("// connected players; wire_out_kbs: bytes sent (× 0.001 for KB/s);\n")
	w("// inputs_accepted: inputs applied since start (a counter read as a gauge\n")
	if o.TransportDeclared {
		w("// is its total). RSS and CPU come from the process collector every\n")
		w("// client library exports.\n")
	} else {
		w("// is its total); transport: an info series whose label names the\n")
		w("// transport. RSS and CPU come from the process collector every client\n")
		w("// library exports.\n")
	}
	w("map: {\n")
	for _, f := range promMap {
		if f.figure == "transport" && o.TransportDeclared {
			continue
		}
		w("%s: %s\n", f.figure, f.value)
	}
	w("}\n")
	w("}\n")
}

// config builds the config struct from the keys and renders it as JSON,
// which is CUE.
func (o Options) config() (string, error) {
	root := map[string]any{}
	set := func(key string, v any) error {
		parts := strings.Split(key, ".")
		m := root
		for i, p := range parts[:len(parts)-1] {
			next, ok := m[p]
			if !ok {
				n := map[string]any{}
				m[p], m = n, n
				continue
			}
			if m, ok = next.(map[string]any); !ok {
				return fmt.Errorf("config key %s: %s is a value, not a table", key, strings.Join(parts[:i+1], "."))
			}
		}
		last := parts[len(parts)-1]
		if _, taken := m[last]; taken {
			return fmt.Errorf("config key %s is given twice, or is a table of other keys", key)
		}
		m[last] = v
		return nil
	}
	// Sorted, so a table given after one of its keys is caught the same way
	// whatever the flag order.
	keys := make([]string, 0, len(o.Config))
	for k := range o.Config {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if err := set(k, o.Config[k]); err != nil {
			return "", err
		}
	}
	if o.PortKey != "" {
		if err := set(o.PortKey, "{port}"); err != nil {
			return "", err
		}
	}
	if o.MetricsKey != "" {
		if err := set(o.MetricsKey, "{"+o.metricsPlaceholder()+"}"); err != nil {
			return "", err
		}
	}
	return cueStruct(root), nil
}

// identRE is a label CUE takes unquoted.
var identRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// cueKeywords are identifiers a label must not be left bare as.
var cueKeywords = map[string]bool{"if": true, "for": true, "in": true, "let": true, "true": true, "false": true, "null": true, "package": true, "import": true}

// cueStruct renders a config map as a CUE struct, one field a line, keys
// sorted (format.Source indents it).
func cueStruct(m map[string]any) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("{\n")
	for _, k := range keys {
		label := k
		if !identRE.MatchString(k) || cueKeywords[k] {
			label = lit(k)
		}
		if sub, ok := m[k].(map[string]any); ok {
			fmt.Fprintf(&b, "%s: %s\n", label, cueStruct(sub))
		} else {
			fmt.Fprintf(&b, "%s: %s\n", label, lit(m[k]))
		}
	}
	b.WriteString("}")
	return b.String()
}

// baselineReadme says what baselines/ is for until the file is there.
func (o Options) baselineReadme() string {
	return fmt.Sprintf(`# Baselines

scale-gate-baseline.json will hold the byte figures of %[1]s (payload and wire KB/s per
client, per leg) that later runs are compared with. It is written only by a run in which
every gate held:

    scalegate --profiles %[2]s --profile %[1]s --update-baseline

Look at that run's report.html before committing the file.
`, o.Name, ProfileDir)
}

// workflow renders the GitHub workflow that runs the profile through the
// action.
func (o Options) workflow() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# The scale gate (written by `scalegate init`): every pull request and push to\n")
	w("# main runs %s/%s.cue with the scalegate action, which puts the summary in\n", ProfileDir, o.Name)
	w("# the job summary, uploads the run directory (report.html) and fails the job\n")
	w("# when a hard gate fails.\n")
	w("name: scale-gate\n\n")
	w("on:\n  pull_request:\n  push:\n    branches: [main]\n\n")
	w("permissions:\n  contents: read\n\n")
	w("jobs:\n  scale-gate:\n    runs-on: ubuntu-latest\n")
	w("    timeout-minutes: %d\n", o.timeoutMinutes())
	w("    steps:\n      - uses: actions/checkout@v4\n")
	w("      # The gate starts your server as:\n")
	w("      #   %s\n", strings.Join(o.Command, " "))
	if len(o.Swarm) > 0 {
		w("      # and your bot as:\n")
		w("      #   %s HOST PORT --clients N ...\n", strings.Join(o.Swarm, " "))
		w("      # so build them in a step here, before the gate, if they are not in the repository.\n")
	} else {
		w("      # so build it in a step here, before the gate, if it is not in the repository.\n")
	}
	w("      - name: scale gate (%s)\n", o.Name)
	w("        uses: scalegate/scalegate@%s\n", o.ActionRef)
	w("        with:\n")
	w("          profiles: %s\n", ProfileDir)
	w("          profile: %s\n", o.Name)
	if o.ActionVersion != "" {
		w("          # a released binary instead of a build: nothing to install\n")
		w("          version: %q\n", o.ActionVersion)
	}
	return b.String()
}

// timeoutMinutes bounds the job: every leg's duration, plus 15 minutes for
// the build and each leg's start and stop.
func (o Options) timeoutMinutes() int {
	legs := float64(len(o.Patterns)) * o.DurationS / 60
	return int(legs) + 15
}

// Write writes files under dir. Nothing is overwritten: when any file is
// already there, it writes none and names them all.
func Write(dir string, files []File) error {
	var taken []string
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.Path))); err == nil {
			taken = append(taken, f.Path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if len(taken) > 0 {
		return &ExistsError{Paths: taken}
	}
	for _, f := range files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		// O_EXCL: a file that appeared since the check is still not
		// overwritten.
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			return err
		}
		if _, err := fh.Write(f.Body); err != nil {
			fh.Close()
			return err
		}
		if err := fh.Close(); err != nil {
			return err
		}
	}
	return nil
}

// ExistsError names the scaffold's files that are already there.
type ExistsError struct{ Paths []string }

func (e *ExistsError) Error() string {
	return fmt.Sprintf("%s already exist(s); scalegate init overwrites nothing (move them away, or pick another --name)", strings.Join(e.Paths, ", "))
}

// lit renders v as a CUE literal: JSON is CUE. check has made sure the
// options hold only strings, booleans, integers, finite floats and maps
// and lists of them, which always encode.
func lit(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("scaffold: %T does not render: %v", v, err))
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// transportName spells a transport as its project does.
func transportName(t string) string {
	switch t {
	case "enet":
		return "ENet"
	case "quic":
		return "QUIC"
	case "udp":
		return "raw UDP"
	case "ws":
		return "WebSocket"
	case "wss":
		return "WebSocket over TLS"
	}
	return t
}

// trimFloat prints 30 as "30" and 2.5 as "2.5".
func trimFloat(f float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}
