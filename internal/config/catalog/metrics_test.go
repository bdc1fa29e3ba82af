package catalog

import (
	"fmt"
	"strings"
	"testing"

	_ "github.com/scalegate/scalegate/internal/load/transport/udp" // registers "udp"
	_ "github.com/scalegate/scalegate/internal/load/transport/ws"  // registers "ws", "wss"
)

// TestVetPrometheusSource: vet refuses a Prometheus source that cannot
// work (a custom server without url or map, url or map under the file
// source, a mapping Validate refuses) and a declared gate that reads a
// field the mapping cannot produce, each at its field.
func TestVetPrometheusSource(t *testing.T) {
	const head = "name: \"m\"\ndescription: \"d\"\ntransport: \"enet\"\nclients: 4\nduration_s: 2\npatterns: [\"weave\"]\nbaselined: false\n"
	const custom = "server: {kind: \"custom\", command: [\"srv\", \"{port}\"]\n\tmetrics: {source: \"prometheus\", %s}}\n"
	okMap := `url: "http://127.0.0.1:{metrics_port}/metrics", map: {tick_ms: {histogram: "t", scale: 1000}, transport: {info: "i", label: "transport"}}`
	for _, tc := range []struct {
		name, src, want string
	}{
		{"ok", head + strings.Replace(custom, "%s", okMap, 1) + "gates: tick_ms_p99_max: threshold: 16\n", ""},
		{"no url", head + strings.Replace(custom, "%s", `map: {transport: {info: "i", label: "transport"}}`, 1), "server.metrics: a custom server's Prometheus source needs url"},
		{"no map", head + strings.Replace(custom, "%s", `url: "http://x/metrics"`, 1), "server.metrics: a custom server's Prometheus source needs map"},
		{"url with file", head + "server: metrics: {source: \"file\", url: \"http://x\"}\n", "server.metrics.url: goes with source \"prometheus\""},
		{"gate the map cannot feed", head + strings.Replace(custom, "%s", okMap, 1) + "gates: entities_min: threshold: 1\n", "gates.entities_min: gate entities_min reads server_tick.entities, which the Prometheus mapping cannot produce"},
		{"no transport", head + strings.Replace(custom, "%s", `url: "http://x/m", map: {tick_ms: {histogram: "t"}}`, 1), "the transport identity check reads server_tick.transport"},
		{"bad entry", head + strings.Replace(custom, "%s", `url: "http://x/m", map: {transport: {info: "i", label: "transport"}, bogus_figure: {gauge: "g"}}`, 1), "server.metrics.map.bogus_figure"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeProfile(t, dir, "m", tc.src)
			cat, err := NewCatalog(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, _, err = cat.Load("m")
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("refused: %v", FormatError(err))
			case tc.want != "" && (err == nil || !strings.Contains(FormatError(err), tc.want)):
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestVetRefusesImpairedWebSocket: the impairment relay impairs datagrams;
// a profile that impairs a WebSocket leg is refused at vet, naming why.
func TestVetRefusesImpairedWebSocket(t *testing.T) {
	const src = "name: \"w\"\ndescription: \"d\"\ntransport: \"%s\"\nclients: 4\nduration_s: 20\npatterns: [\"weave\"]\nbaselined: false\nimpairment: [{start_s: 5, duration_s: 5, loss: 0.1}]\n"
	for _, tc := range []struct{ transport, want string }{{"ws", "runs over TCP"}, {"udp", ""}} {
		dir := t.TempDir()
		writeProfile(t, dir, "w", fmt.Sprintf(src, tc.transport))
		cat, err := NewCatalog(dir)
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = cat.Load("w")
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(FormatError(err), tc.want)) {
			t.Errorf("%s: %v", tc.transport, err)
		}
	}
}
