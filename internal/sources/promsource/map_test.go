package promsource

import (
	"errors"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/guard/boundedfile/boundedfiletest"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		m    Map
		want []string // each must be in the error; none = valid
	}{
		{"the issue's map", gameMap, nil},
		{"summary with quantiles", Map{"tick_ms": {Summary: "x_seconds", Quantiles: []string{"p99", "min"}}}, nil},
		{"unknown figure", Map{"tick_msec": {Histogram: "x"}}, []string{"map.tick_msec: unknown figure"}},
		{"no kind", Map{"entities": {Labels: map[string]string{"a": "b"}}}, []string{"map.entities: names no kind"}},
		{"two kinds", Map{"entities": {Gauge: "a", CounterRate: "b"}}, []string{"map.entities: names 2 kinds (gauge, counter_rate)"}},
		{"histogram for a count", Map{"entities": {Histogram: "a"}}, []string{"map.entities.histogram: entities is an integer; a histogram figure takes gauge, counter_rate"}},
		{"gauge for a timing object", Map{"tick_ms": {Gauge: "a"}}, []string{"map.tick_ms.gauge: tick_ms is a timing object"}},
		{"bad metric name", Map{"peers": {Gauge: "game-players"}}, []string{`map.peers.gauge: "game-players" is not a Prometheus metric name`}},
		{"le label", Map{"peers": {Gauge: "p", Labels: map[string]string{"le": "1"}}}, []string{"map.peers.labels"}},
		{"zero scale", Map{"peers": {Gauge: "p", Scale: scale(0)}}, []string{"map.peers.scale: must be a positive finite number"}},
		{"quantiles on a gauge", Map{"peers": {Gauge: "p", Quantiles: []string{"p99"}}}, []string{"map.peers.quantiles: only histogram and summary"}},
		{"histogram min", Map{"tick_ms": {Histogram: "h", Quantiles: []string{"min"}}}, []string{`map.tick_ms.quantiles: "min": a histogram produces`}},
		{"info without label", Map{"transport": {Info: "build_info"}}, []string{"map.transport.label: an info figure needs the label"}},
		{"label on a gauge", Map{"peers": {Gauge: "p", Label: "x"}}, []string{"map.peers.label: only an info figure"}},
		{"inputs accepted as a gauge of a counter", Map{"inputs_accepted": {Gauge: "game_inputs_total"}}, nil},
		{"inputs accepted as a counter rate", Map{"inputs_accepted": {CounterRate: "game_inputs_total"}}, []string{`map.inputs_accepted.counter_rate: inputs_accepted must be the server's total since start, read as a gauge even when the series is a counter ({gauge: "game_inputs_total"})`}},
		{"inputs accepted as a counter", Map{"inputs_accepted": {Counter: "game_inputs_total"}}, []string{"map.inputs_accepted.counter: ", "inputs sent over the whole run"}},
		{"every problem at once", Map{"a": {}, "peers": {Histogram: "h"}}, []string{"map.a:", "map.peers.histogram"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("valid map refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("invalid map accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Errorf("error %T carries no *FieldError", err)
			}
		})
	}
}

func TestProduces(t *testing.T) {
	m := Map{
		"tick_ms":      {Histogram: "h", Scale: scale(1000), Quantiles: []string{"p95", "p99"}},
		"peers":        {Gauge: "p"},
		"wire_out_kbs": {CounterRate: "b_total"},
	}
	for path, want := range map[string]bool{
		"tick_ms.p99": true, "tick_ms.p95": true, "tick_ms.max": false, "tick_ms.min": false,
		"rss_kb": true, "rss_startup_kb": true, "cpu_pct": true, // the defaults
		"wire_peers": true, "wire_out_kbs_per_client": true, "ticks_sampled": true, "tick_hz": true,
		"entities": false, "contacts": false, "transport": false, "peers.p99": false, "bogus": false,
	} {
		got, why := m.Produces(path)
		if got != want {
			t.Errorf("Produces(%s) = %v (%s), want %v", path, got, why, want)
		}
		if !got && why == "" {
			t.Errorf("Produces(%s): no reason", path)
		}
	}
	if ok, _ := (Map{"wire_out_kbs": {CounterRate: "b_total"}}).Produces("wire_out_kbs_per_client"); ok {
		t.Error("per-client rate without peers to divide by")
	}
	if ok, _ := (Map{"tick_ms": {Summary: "s"}}).Produces("tick_ms.p99"); !ok {
		t.Error("a summary may export p99")
	}
}

func TestParseMap(t *testing.T) {
	m, err := ParseMap([]byte(`{"tick_ms": {"histogram": "game_tick_duration_seconds", "scale": 1000},
		"peers": {"gauge": "game_players", "labels": {"state": "joined"}}}`))
	if err != nil || *m["tick_ms"].Scale != 1000 || m["peers"].Labels["state"] != "joined" {
		t.Fatalf("%v %v", m, err)
	}
	for body, want := range map[string]string{
		`{"peers": {"gauge": "p", "lables": {}}}`: `unknown field "lables"`,
		`[]`:                          "cannot unmarshal array",
		`null`:                        "not a JSON object",
		`{"peers": {"gauge": "p"}} x`: "trailing data",
		`{"peers": {"summary": "p"}}`: "map.peers.summary",
	} {
		if _, err := ParseMap([]byte(body)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", body, err, want)
		}
	}
}

// TestLoadMapRefusesHostileFiles: --server-metrics-map given a symlink to
// /dev/zero, a FIFO or a huge file is refused at once, naming it (a FIFO
// hung the swarm past SIGINT).
func TestLoadMapRefusesHostileFiles(t *testing.T) {
	boundedfiletest.Refuses(t, boundedfiletest.Files(t, t.TempDir(), "map.json"), func(p string) error {
		_, err := LoadMap(p)
		return err
	})
}
