package gatetable

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocTableInStep: docs/gate.md's gate table is the one MarkdownTable
// makes from All; run `go generate ./internal/judge/gatetable` after changing a
// gate.
func TestDocTableInStep(t *testing.T) {
	b, err := os.ReadFile("../../../docs/gate.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReplaceDocTable(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(b) {
		t.Errorf("docs/gate.md's gate table differs from the gate table: run go generate ./internal/judge/gatetable\nwant:\n%s", MarkdownTable())
	}
	for _, g := range table {
		if !strings.Contains(string(b), "| `"+g.Name+"` |") {
			t.Errorf("docs/gate.md has no row for %s", g.Name)
		}
	}
}

// TestServerFieldsCoverMetric: a gate whose metric names server_tick fields
// lists each in ServerFields, so vet's check of a metrics source against
// the declared gates sees every field a gate reads.
func TestServerFieldsCoverMetric(t *testing.T) {
	re := regexp.MustCompile(`server_tick\.([a-z0-9_.]+)`)
	for _, g := range table {
		for _, m := range re.FindAllStringSubmatch(g.Metric, -1) {
			if !slices.Contains(g.ServerFields, m[1]) {
				t.Errorf("%s reads %s but ServerFields %v lacks it", g.Name, m[0], g.ServerFields)
			}
		}
	}
}

// TestMissingNamesThePrometheusSelector: a field a Prometheus source could
// not produce is missing with the source's reason, naming the metric and
// selector, so the summary says what was not found.
func TestMissingNamesThePrometheusSelector(t *testing.T) {
	tick := map[string]json.RawMessage{
		"transport":  json.RawMessage(`"enet"`),
		"tick_ms":    json.RawMessage(`{"p95": 3}`),
		"prometheus": json.RawMessage(`{"missing": {"tick_ms.p99": "game_tick_seconds{shard=\"a\"}: no such series", "entities": "game_entities: no such series"}}`),
	}
	m := FromServerTick(tick)
	if _, err := TickMsP99.Read(m); err == nil || !strings.Contains(err.Error(), `game_tick_seconds{shard="a"}: no such series`) {
		t.Errorf("tick p99: %v", err)
	}
	if _, err := Entities.Read(m); err == nil || !strings.Contains(err.Error(), "game_entities: no such series") {
		t.Errorf("entities: %v", err)
	}
	if _, err := m.Tick("rss_kb"); err == nil || strings.Contains(err.Error(), "(") {
		t.Errorf("a field with no reason: %v", err)
	}
}
