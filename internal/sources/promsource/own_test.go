package promsource

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestOwnFigures: a profile's own figures are scraped like mapped ones and
// written as objects of their statistics over the hold: a histogram's
// quantiles, a gauge's lowest and highest scrape, a counter's increase,
// a counter rate's per second; a series that is not there is missing,
// naming its selector.
func TestOwnFigures(t *testing.T) {
	body := func(physics [3]float64, bodies, steps float64) Families {
		b := fmt.Sprintf(`# TYPE phys histogram
phys_bucket{phase="integrate",le="0.001"} %g
phys_bucket{phase="integrate",le="0.004"} %g
phys_bucket{phase="integrate",le="+Inf"} %g
phys_sum{phase="integrate"} 0
phys_count{phase="integrate"} %g
# TYPE bodies gauge
bodies %g
# TYPE steps counter
steps_total %g
`, physics[0], physics[1], physics[2], physics[2], bodies, steps)
		fams, err := Parse(strings.NewReader(b), FormatText)
		if err != nil {
			t.Fatal(err)
		}
		return fams
	}
	own := Map{
		"physics_ms": {Histogram: "phys", Labels: map[string]string{"phase": "integrate"}, Scale: ptr(1000.0)},
		"bodies":     {Gauge: "bodies"},
		"steps":      {Counter: "steps_total"},
		"step_rate":  {CounterRate: "steps_total"},
		"absent_ms":  {Histogram: "nothing_seconds"},
	}
	start := time.Unix(1000, 0)
	src, err := New(Config{Start: start, Own: own})
	if err != nil {
		t.Fatal(err)
	}
	src.Record(start, body([3]float64{10, 10, 10}, 3, 100), true)
	src.Record(start.Add(5*time.Second), body([3]float64{10, 90, 110}, 9, 400), true)
	src.Record(start.Add(10*time.Second), body([3]float64{10, 90, 110}, 5, 600), true)
	b := src.Final()
	want := map[string]map[string]float64{
		"bodies":    {"min": 3, "max": 9},
		"steps":     {"increase": 500},
		"step_rate": {"rate": 50},
	}
	for name, w := range want {
		for stat, v := range w {
			if got, ok := b.Phases[name][stat]; !ok || got != v {
				t.Errorf("%s.%s = %v (present %v), want %v", name, stat, got, ok, v)
			}
		}
		if _, ok := b.Numbers[name]; ok {
			t.Errorf("%s is a number too: an own figure is only its object", name)
		}
	}
	// 100 observations in the hold, 80 in (1, 4] ms, 20 above 4 ms: p50
	// interpolates in (1, 4]; p99 is in the open top, so missing.
	if got := b.Phases["physics_ms"]["p50"]; !(got > 1 && got <= 4) {
		t.Errorf("physics_ms.p50 = %v, want in (1, 4] ms", got)
	}
	if why := b.Missing["physics_ms.p99"]; !strings.Contains(why, "unbounded") {
		t.Errorf("physics_ms.p99 missing %q, want unbounded", why)
	}
	if why := b.Missing["absent_ms"]; !strings.Contains(why, "nothing_seconds") {
		t.Errorf("absent_ms missing %q, want the selector named", why)
	}
	if got := src.OwnFigures(); strings.Join(got, ",") != "absent_ms,bodies,physics_ms,step_rate,steps" {
		t.Errorf("OwnFigures %v", got)
	}
}

// TestOwnFiguresRefused: an own figure cannot take a mapped field's name,
// be an info series, or choose quantiles (its stats do).
func TestOwnFiguresRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    Figure
		want string
	}{
		{"tick_ms", Figure{Histogram: "x"}, "built-in server_tick field"},
		{"build", Figure{Info: "x", Label: "v"}, "info"},
		{"q_ms", Figure{Histogram: "x", Quantiles: []string{"p99"}}, "stats choose"},
		{"bad", Figure{Gauge: "0x"}, "not a Prometheus metric name"},
		{"lbl", Figure{Gauge: "x", Labels: map[string]string{"le": "1"}}, "not a label"},
		{"none", Figure{}, "names no kind"},
	} {
		_, err := New(Config{Own: Map{tc.name: tc.f}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
