package runner

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// TestServerCommandOverride: ab's --a-server/--b-server template replaces
// the reference server's `scalegate serve` (its TOML config still written
// to {config}) and a custom server's command (its config rendered as
// declared); without one, each server starts as the profile says.
func TestServerCommandOverride(t *testing.T) {
	custom := profile.Server{Kind: "custom", Command: []string{"./own", "--port", "{port}"}, ConfigFormat: "toml",
		Config: map[string]any{"port": "{port}"}}
	cases := []struct {
		name     string
		server   profile.Server
		override []string
		want     string // the command line, dir for the leg directory
	}{
		{"reference server", profile.Server{Kind: "builtin"}, nil, "SELF serve --config dir/server.toml --port 4242 --transport enet --metrics-json dir/server_metrics.json"},
		{"reference server, template", profile.Server{Kind: "builtin"}, []string{"./main/scalegate", "serve", "--config", "{config}", "--clients", "{clients}"},
			"./main/scalegate serve --config dir/server.toml --clients 8"},
		{"custom server", custom, nil, "./own --port 4242"},
		{"custom server, template", custom, []string{"./pr/own", "--config", "{config}", "--metrics", "{metrics_json}", "--t", "{transport}"},
			"./pr/own --config dir/server_config.toml --metrics dir/server_metrics.json --t enet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := &profile.Profile{Name: "t", Transport: "enet", Clients: 8, Patterns: []string{"weave"}, Server: tc.server}
			leg := p.Legs()[0]
			lr := &rundir.LegResult{Leg: leg, Dir: dir}
			r := &legRun{o: Options{Profile: p, Self: "SELF", ServerCommand: tc.override}, leg: leg, res: lr,
				metrics: filepath.Join(dir, "server_metrics.json")}
			sl, err := r.serverSpec(4242)
			if err != nil {
				t.Fatal(err)
			}
			got := strings.ReplaceAll(strings.Join(append([]string{sl.spec.Path}, sl.spec.Args...), " "), dir, "dir")
			if got != tc.want {
				t.Errorf("command\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
