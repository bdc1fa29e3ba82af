package catalog

import (
	"fmt"
	"os"
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
		{"no transport", head + strings.Replace(custom, "%s", `url: "http://x/m", map: {tick_ms: {histogram: "t"}}`, 1), "the transport identity check reads server_tick.transport, which the Prometheus mapping cannot produce"},
		{"no transport: the fix is named", head + strings.Replace(custom, "%s", `url: "http://x/m", map: {tick_ms: {histogram: "t"}}`, 1), "or, when the server cannot say which transport it speaks, set server.metrics.transport_declared: true"},
		{"transport declared", head + strings.Replace(custom, "%s", `url: "http://x/m", transport_declared: true, map: {tick_ms: {histogram: "t", scale: 1000}}`, 1) + "gates: tick_ms_p99_max: threshold: 16\n", ""},
		{"transport declared and mapped", head + strings.Replace(custom, "%s", okMap+`, transport_declared: true`, 1), "server.metrics.transport_declared: the map reads the server's transport from a series"},
		{"transport declared with the file", head + "server: metrics: {source: \"file\", transport_declared: true}\n", "server.metrics.transport_declared: goes with source \"prometheus\""},
		{"bad entry", head + strings.Replace(custom, "%s", `url: "http://x/m", map: {transport: {info: "i", label: "transport"}, bogus_figure: {gauge: "g"}}`, 1), "server.metrics.map.bogus_figure"},
		// PromQL: the same mapping under queries, labels with placeholders.
		{"promql ok", head + promqlSource(`labels: {pod: "{pod}", scalegate_leg: "{leg}"}, pod: "game-0", queries: {tick_ms: {histogram: "t", scale: 1000}, transport: {info: "i", label: "transport"}}`) + "gates: tick_ms_p99_max: threshold: 16\n", ""},
		{"promql reference server", head + "server: metrics: {source: \"promql\", url: \"http://127.0.0.1:9090\", targets_file: \"/tmp/t.json\", labels: {leg: \"{leg}\"}}\n", ""},
		{"promql without url", head + "server: metrics: {source: \"promql\"}\n", "server.metrics: a promql source needs url: the Prometheus server to query"},
		{"promql without queries", head + promqlSource(`pod: "p"`), "server.metrics: a custom server's PromQL source needs queries"},
		{"promql map", head + promqlSource(`map: {transport: {info: "i", label: "transport"}}, queries: {transport: {info: "i", label: "transport"}}`), "server.metrics.map: goes with source \"prometheus\"; source \"promql\" reads none"},
		{"queries with prometheus", head + strings.Replace(custom, "%s", okMap+`, queries: {}`, 1), "server.metrics.queries: goes with source \"promql\"; source \"prometheus\" reads none"},
		{"promql pod unset", head + promqlSource(`labels: {pod: "{pod}"}, queries: {transport: {info: "i", label: "transport"}}`), "server.metrics.labels.pod: {pod} has no value (set server.metrics.pod)"},
		{"promql unknown placeholder", head + promqlSource(`queries: {transport: {info: "i", label: "transport", labels: {job: "{job}"}}}`), "server.metrics.queries.transport.labels.job: unknown placeholder {job}"},
		{"promql gate the queries cannot feed", head + promqlSource(`queries: {transport: {info: "i", label: "transport"}}`) + "gates: entities_min: threshold: 1\n", "gates.entities_min: gate entities_min reads server_tick.entities, which the Prometheus mapping cannot produce"},
		{"promql bad entry", head + promqlSource(`queries: {transport: {info: "i", label: "transport"}, bogus_figure: {gauge: "g"}}`), "server.metrics.queries.bogus_figure"},
		// RSS faster than once a second comes only from the metrics file.
		{"fast rss from prometheus", head + "rss_sample_interval_s: 0.1\n" + strings.Replace(custom, "%s", okMap, 1), "rss_sample_interval_s: 0.1s: a prometheus source is read once a second"},
		{"fast rss from promql", head + "rss_sample_interval_s: 0.5\nserver: metrics: {source: \"promql\", url: \"http://127.0.0.1:9090\", targets_file: \"/tmp/t.json\", labels: {leg: \"{leg}\"}}\n", "rss_sample_interval_s: 0.5s: a promql source is read once a second"},
		{"fast rss from the file", head + "rss_sample_interval_s: 0.1\nserver: metrics: source: \"file\"\n", ""},
		{"rss once a second from prometheus", head + "rss_sample_interval_s: 1\n" + strings.Replace(custom, "%s", okMap, 1), ""},
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

// promqlSource is a custom server's "promql" source with the given fields.
func promqlSource(fields string) string {
	return "server: {kind: \"custom\", command: [\"srv\", \"{port}\"]\n\tmetrics: {source: \"promql\", url: \"http://127.0.0.1:9090\", " + fields + "}}\n"
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

// TestDocExamplesVet: every Prometheus profile block the docs show a team
// (docs/metrics.md, docs/own-protocol.md, the README's route A) vets in a custom server's
// profile, so an example copied from the docs is never refused. A block is
// `server: metrics: {…}`, or a bare `map: {…}` given the example url.
func TestDocExamplesVet(t *testing.T) {
	const head = "name: \"m\"\ndescription: \"d\"\ntransport: \"enet\"\nclients: 4\nduration_s: 2\npatterns: [\"weave\"]\nbaselined: false\n" +
		"server: {kind: \"custom\", command: [\"srv\", \"{port}\"]}\n"
	n := 0
	for _, doc := range []string{"../../../docs/metrics.md", "../../../docs/own-protocol.md", "../../../README.md"} {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, block := range cueBlocks(string(raw)) {
			var src string
			switch {
			case strings.HasPrefix(block, "server: metrics: {\n"):
				src = head + block
			case strings.HasPrefix(block, "map: {\n"):
				src = head + "server: metrics: {source: \"prometheus\", url: \"http://127.0.0.1:{metrics_port}/metrics\"\n" + block + "}\n"
			default:
				continue // a one-line fragment inside the prose
			}
			n++
			dir := t.TempDir()
			writeProfile(t, dir, "m", src)
			cat, err := NewCatalog(dir)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := cat.Load("m"); err != nil {
				t.Errorf("%s, cue block %d does not vet:\n%s\n%s", doc, i+1, block, FormatError(err))
			}
		}
	}
	if n < 3 {
		t.Errorf("vetted %d doc examples; the Go example, the mapping and the README's route A were expected", n)
	}
}

// cueBlocks returns the bodies of the ```cue fences of a Markdown text.
func cueBlocks(md string) []string {
	var out []string
	for {
		i := strings.Index(md, "```cue\n")
		if i < 0 {
			return out
		}
		md = md[i+len("```cue\n"):]
		j := strings.Index(md, "```")
		if j < 0 {
			return out
		}
		out = append(out, md[:j])
		md = md[j+3:]
	}
}

// TestOwnFigureDocExamplesVet: every profile block of docs/metrics.md's
// "Your own figures" section vets, and every line of its block of vet's
// messages is what vet says of the mistakes it names.
func TestOwnFigureDocExamplesVet(t *testing.T) {
	section := metricsSection(t, "Your own figures")
	blocks := cueBlocks(section)
	if len(blocks) < 4 {
		t.Fatalf("%d cue blocks in the section; the file, the kinds, the Prometheus and the reference server examples were expected", len(blocks))
	}
	for i, block := range blocks {
		if err := vetSource(t, docHead+block); err != nil {
			t.Errorf("cue block %d does not vet:\n%s\n%s", i+1, block, FormatError(err))
		}
	}
	// The messages block: each line is vet's own for the gate it names,
	// on the section's first two blocks' figures.
	_, msgs, ok := strings.Cut(section, "```text\n")
	if !ok {
		t.Fatal("the section has no block of vet's messages")
	}
	msgs, _, _ = strings.Cut(msgs, "```")
	wrong := docHead + `figures: {
	physics_ms: {unit: "ms", better: "lower", stats: ["p50", "p99", "max"], file: histogram: "physics.step_ms"}
	bodies: {unit: "", better: "higher", file: gauge: "world.bodies"}
}
gates: {physcs_ms_p99_max: threshold: 4, bodies_p99_min: threshold: 4, physics_ms_p95_max: threshold: 4, physics_ms_p99_min: threshold: 4}
`
	err := vetSource(t, wrong)
	if err == nil {
		t.Fatal("the mistakes vetted")
	}
	got := FormatError(err)
	for _, line := range strings.Split(strings.TrimSpace(msgs), "\n") {
		if !strings.Contains(got, line) {
			t.Errorf("vet does not say %q; it says:\n%s", line, got)
		}
	}
}

// docHead is the top of a profile a docs example is vetted in.
const docHead = "name: \"m\"\ndescription: \"d\"\ntransport: \"enet\"\nclients: 4\nduration_s: 2\npatterns: [\"weave\"]\nbaselined: false\n"

// metricsSection is the text of docs/metrics.md's "## heading" section,
// up to the next one.
func metricsSection(t *testing.T, heading string) string {
	t.Helper()
	raw, err := os.ReadFile("../../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(raw), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("docs/metrics.md has no %q section", "## "+heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	return section
}

// vetSource vets one profile's source as profile m.
func vetSource(t *testing.T, src string) error {
	t.Helper()
	dir := t.TempDir()
	writeProfile(t, dir, "m", src)
	cat, err := NewCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = cat.Load("m")
	return err
}

// TestPromQLDocExamplesVet: every cue block of docs/metrics.md's "PromQL"
// section vets as a profile.
func TestPromQLDocExamplesVet(t *testing.T) {
	blocks := cueBlocks(metricsSection(t, "PromQL"))
	if len(blocks) < 2 {
		t.Fatalf("%d cue blocks in the section; the custom server's and the targets_file examples were expected", len(blocks))
	}
	for i, block := range blocks {
		if err := vetSource(t, docHead+block+"gates: {tick_ms_p99_max: threshold: 16, entities_min: threshold: 1}\n"); err != nil {
			t.Errorf("cue block %d does not vet:\n%s\n%s", i+1, block, FormatError(err))
		}
	}
}
