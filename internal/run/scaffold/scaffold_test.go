package scaffold

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/catalog"
	"github.com/scalegate/scalegate/internal/testkit/workflowlint"
)

// base is a valid set of options: the README's "Gate your own server"
// example.
func base() Options {
	return Options{Name: "mygame", Command: []string{"./bin/mygame-server", "--config", "{config}"},
		Transport: "enet", Clients: 32, DurationS: 30, Patterns: []string{"weave", "idle"},
		ConfigFormat: "yaml", Metrics: "file", PortKey: "port", MetricsKey: "metrics_path",
		Config: map[string]any{"max_players": int64(48)}, DeliveryRateHz: 60, ActionRef: "v0.1.0", ActionVersion: "0.1.0"}
}

// ownSwarm is a team's own game on its own protocol: its server measured
// through Prometheus alone, without a transport series, and its own bot
// (the path of docs/own-protocol.md, examples/udpgame).
func ownSwarm(o *Options) {
	o.Transport, o.Swarm, o.DeliveryRateHz = "udp", []string{"./bin/mybot", "--entity-type", "ship"}, 20
	o.Metrics, o.MetricsURL, o.TransportDeclared = "prometheus", "http://127.0.0.1:{metrics_port}/metrics", true
	o.Command, o.PortKey, o.MetricsKey, o.Config = []string{"./bin/mygame", "-listen", "127.0.0.1:{port}", "-prometheus-listen", "127.0.0.1:{metrics_port}"}, "", "", nil
}

// write renders o into a fresh directory and returns it.
func write(t *testing.T, o Options) string {
	t.Helper()
	files, err := Files(o)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := Write(dir, files); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestProfileLoads: the rendered profile loads through the catalog (as
// `scalegate vet` does) and says what the options said.
func TestProfileLoads(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
	}{
		{"config", func(*Options) {}},
		{"placeholders in the command", func(o *Options) {
			o.Command = []string{"srv", "--port={port}", "--metrics", "{metrics_json}"}
			o.PortKey, o.MetricsKey, o.Config = "", "", nil
		}},
		{"nested keys, odd labels", func(o *Options) {
			o.ConfigFormat, o.PortKey, o.MetricsKey = "toml", "net.port", "metrics.json-path"
			o.Config = map[string]any{"net.bind": "127.0.0.1", "if": true, "rate": 2.5, "note": `a "quoted" <word>`}
		}},
		{"quic", func(o *Options) { o.Transport = "quic"; o.DurationS = 2.5 }},
		{"prometheus, port in the config", func(o *Options) {
			o.Metrics, o.MetricsURL, o.MetricsKey = "prometheus", "http://127.0.0.1:{metrics_port}/metrics", "metrics.port"
		}},
		{"prometheus, port in the command", func(o *Options) {
			o.Metrics, o.MetricsURL, o.MetricsKey = "prometheus", "http://127.0.0.1:{metrics_port}/metrics", ""
			o.Command = append(o.Command, "--prom", "127.0.0.1:{metrics_port}")
		}},
		{"prometheus, a fixed endpoint", func(o *Options) {
			o.Metrics, o.MetricsURL, o.MetricsKey = "prometheus", "https://game.internal:9100/metrics", ""
		}},
		{"own swarm, prometheus, transport declared", ownSwarm},
		{"own swarm, prometheus, transport mapped", func(o *Options) { ownSwarm(o); o.TransportDeclared = false }},
		{"own swarm, metrics file, ws", func(o *Options) {
			o.Transport, o.Swarm, o.DeliveryRateHz = "ws", []string{"./bin/wsbot"}, 30.5
		}},
		{"own swarm, wss", func(o *Options) { o.Transport, o.Swarm = "wss", []string{"bot"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base()
			tc.edit(&o)
			dir := write(t, o)
			cat, err := catalog.NewCatalog(filepath.Join(dir, ProfileDir))
			if err != nil {
				t.Fatal(err)
			}
			p, _, err := cat.Load(o.Name)
			if err != nil {
				t.Fatalf("%s\n%s", catalog.FormatError(err), readFile(t, filepath.Join(dir, ProfileDir, o.Name+".cue")))
			}
			if p.Name != o.Name || p.Transport != o.Transport || p.Clients != o.Clients || p.DurationS != o.DurationS ||
				strings.Join(p.Patterns, ",") != strings.Join(o.Patterns, ",") || !p.Baselined {
				t.Errorf("loaded %+v", p)
			}
			if p.Server.Kind != "custom" || strings.Join(p.Server.Command, " ") != strings.Join(o.Command, " ") {
				t.Errorf("server %+v, want command %q", p.Server, o.Command)
			}
			if o.PortKey != "" {
				if got := lookup(p.Server.Config, o.PortKey); got != "{port}" {
					t.Errorf("config %s = %v, want {port}", o.PortKey, got)
				}
			}
			if o.MetricsKey != "" {
				want := "{metrics_json}"
				if o.Metrics == "prometheus" {
					want = "{metrics_port}"
				}
				if got := lookup(p.Server.Config, o.MetricsKey); got != want {
					t.Errorf("config %s = %v, want %s", o.MetricsKey, got, want)
				}
			}
			if p.Server.Prometheus() != (o.Metrics == "prometheus") {
				t.Errorf("server.metrics = %+v, want source %s", p.Server.Metrics, o.Metrics)
			}
			if o.Metrics == "prometheus" {
				want := len(promMap)
				_, mapped := p.Server.Metrics.Map["transport"]
				if o.TransportDeclared {
					want--
				}
				if p.Server.Metrics.URL != o.MetricsURL || len(p.Server.Metrics.Map) != want || mapped == o.TransportDeclared ||
					p.Server.TransportDeclared() != o.TransportDeclared {
					t.Errorf("server.metrics = %+v, want url %s, the %d-figure map, transport declared %v", p.Server.Metrics, o.MetricsURL, want, o.TransportDeclared)
				}
			}
			switch {
			case len(o.Swarm) == 0 && p.Swarm != nil:
				t.Errorf("swarm %+v, want the built-in one", p.Swarm)
			case len(o.Swarm) > 0 && (p.Swarm == nil || strings.Join(p.Swarm.Command, " ") != strings.Join(o.Swarm, " ")):
				t.Errorf("swarm %+v, want command %q", p.Swarm, o.Swarm)
			}
			// What every profile gates: admission, the inputs the server
			// applied, the state delivered at the server's own rate.
			for _, g := range []string{"admission", "inputs_accepted_ratio_min", "wire_kbs_max", "tick_hz_min"} {
				if !p.Gates.Has(g) {
					t.Errorf("gates %v lack %s", p.Gates, g)
				}
			}
			if p.Delivery.RateHz != o.DeliveryRateHz {
				t.Errorf("delivery.rate_hz %v, want %v", p.Delivery.RateHz, o.DeliveryRateHz)
			}
			for k, v := range o.Config {
				got := lookup(p.Server.Config, k)
				if fmt.Sprint(got) != fmt.Sprint(v) {
					t.Errorf("config %s = %#v, want %#v", k, got, v)
				}
			}
		})
	}
}

// lookup walks a dotted key through nested maps.
func lookup(m map[string]any, key string) any {
	var v any = m
	for _, p := range strings.Split(key, ".") {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

// TestWorkflowLints: the workflow the scaffold writes passes actionlint
// with no repository configuration (a team's repository has none).
func TestWorkflowLints(t *testing.T) {
	for _, tc := range []struct {
		ref, version string
		swarm        []string
	}{{"v0.1.0", "0.1.0", nil}, {"main", "", nil}, {"main", "", []string{"./bin/mybot", "--entity-type", "ship"}}} {
		o := base()
		o.ActionRef, o.ActionVersion, o.Swarm = tc.ref, tc.version, tc.swarm
		dir := write(t, o)
		cfg := filepath.Join(t.TempDir(), "actionlint.yaml")
		if err := os.WriteFile(cfg, []byte("self-hosted-runner:\n  labels: []\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		wf := filepath.Join(dir, filepath.FromSlash(WorkflowPath))
		findings, err := workflowlint.Lint(cfg, []string{wf})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range findings {
			t.Errorf("%s\n%s", f, readFile(t, wf))
		}
		body := readFile(t, wf)
		for _, want := range []string{"uses: scalegate/scalegate@" + tc.ref, "profiles: gates", "profile: mygame",
			"#   ./bin/mygame-server --config {config}"} {
			if !strings.Contains(body, want) {
				t.Errorf("workflow lacks %q:\n%s", want, body)
			}
		}
		if want := "#   ./bin/mybot --entity-type ship HOST PORT"; strings.Contains(body, want) != (tc.swarm != nil) {
			t.Errorf("swarm %q: the workflow names the bot to build = %v:\n%s", tc.swarm, !(tc.swarm != nil), body)
		}
		if got := strings.Contains(body, "version:"); got != (tc.version != "") {
			t.Errorf("ref %s: the workflow sets version = %v:\n%s", tc.ref, got, body)
		}
	}
}

// TestRefused: options that cannot make a runnable profile are refused,
// each with its reason.
func TestRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"bad name", func(o *Options) { o.Name = "My Game" }, "lower-case"},
		{"no command", func(o *Options) { o.Command = nil }, "command is empty"},
		{"blank program", func(o *Options) { o.Command = []string{" ", "{port}"} }, "command is empty"},
		{"no port", func(o *Options) { o.PortKey = "" }, "never told its port"},
		{"no metrics path", func(o *Options) { o.MetricsKey = "" }, "never told its metrics"},
		{"port twice", func(o *Options) { o.Command = append(o.Command, "--port", "{port}") }, "carries {port} and the config key port"},
		{"config without {config}", func(o *Options) {
			o.Command = []string{"srv", "{port}", "{metrics_json}"}
			o.PortKey, o.MetricsKey = "", ""
		}, "has no {config}"},
		{"bad key", func(o *Options) { o.Config = map[string]any{"a..b": 1} }, `config key "a..b"`},
		{"same key twice", func(o *Options) { o.MetricsKey = "port" }, "given twice"},
		{"key under a value", func(o *Options) { o.Config = map[string]any{"port.inner": 1} }, "given twice, or is a table"},
		{"value under a table", func(o *Options) { o.Config = map[string]any{"a": 1, "a.b": 2} }, "a is a value, not a table"},
		{"not a number", func(o *Options) { o.Config = map[string]any{"x": math.NaN()} }, "not a number"},
		{"a list", func(o *Options) { o.Config = map[string]any{"x": []string{"a"}} }, "want a string, number or boolean"},
		{"no metrics source", func(o *Options) { o.Metrics = "" }, `metrics "": want file or prometheus`},
		{"a URL for the file", func(o *Options) { o.MetricsURL = "http://x/metrics" }, "goes with Prometheus"},
		{"not a URL", func(o *Options) { o.Metrics, o.MetricsURL = "prometheus", "127.0.0.1:9100" }, "want http://"},
		{"prometheus port never told", func(o *Options) {
			o.Metrics, o.MetricsURL, o.MetricsKey = "prometheus", "http://127.0.0.1:{metrics_port}/metrics", ""
		}, "never told its metrics port"},
		{"transport declared with the file", func(o *Options) { o.TransportDeclared = true }, "declared transport goes with Prometheus"},
		{"blank swarm", func(o *Options) { o.Swarm = []string{""} }, "swarm command is empty"},
		{"no delivery rate", func(o *Options) { o.DeliveryRateHz = 0 }, "delivery rate 0 Hz"},
		{"delivery rate not a number", func(o *Options) { o.DeliveryRateHz = math.NaN() }, "delivery rate NaN Hz"},
		{"a fixed endpoint told a port", func(o *Options) {
			o.Metrics, o.MetricsURL, o.MetricsKey = "prometheus", "http://127.0.0.1:9100/metrics", "metrics.port"
		}, "has no {metrics_port}, yet the server is told one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base()
			tc.edit(&o)
			_, err := Files(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// TestWriteOverwritesNothing: with any file of the scaffold already there,
// Write writes none and names every one that exists.
func TestWriteOverwritesNothing(t *testing.T) {
	files, err := Files(base())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wf := filepath.Join(dir, filepath.FromSlash(WorkflowPath))
	if err := os.MkdirAll(filepath.Dir(wf), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(wf, []byte("ours\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err = Write(dir, files)
	var exists *ExistsError
	if !errors.As(err, &exists) || strings.Join(exists.Paths, ",") != WorkflowPath {
		t.Fatalf("err = %v, want an ExistsError naming %s", err, WorkflowPath)
	}
	if got := readFile(t, wf); got != "ours\n" {
		t.Errorf("the existing workflow was rewritten: %q", got)
	}
	for _, f := range files[:2] {
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f.Path))); err == nil {
			t.Errorf("%s was written although the scaffold was refused", f.Path)
		}
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
