package serverwindow

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/stats"
)

// ownReading is a team's file with its own fields: a cumulative physics
// histogram, a since-start step counter, a body gauge and a summary.
func ownReading(at float64, phys *stats.LogLinear, steps, bodies float64) Reading {
	file := map[string]any{
		"physics": map[string]any{"step_ms": phys.Snapshot(), "steps": steps},
		"bodies":  bodies,
		"net_ms":  map[string]any{"p99": 7.5, "mean": 2},
	}
	b, _ := json.Marshal(file)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		panic(err)
	}
	return Reading{At: at, Raw: raw}
}

// TestOwnFiguresOverTheHold: each kind of own figure read from the file is
// computed over the hold into an object of its statistics: the histogram
// from its buckets' difference (the ramp's slow steps left out), the
// counter's increase and rate, the gauge's extremes over the readings, the
// summary as written (and not listed as over the hold); a path the file
// does not have is missing, naming it.
func TestOwnFiguresOverTheHold(t *testing.T) {
	phys := stats.NewLogLinear()
	for range 100 {
		phys.Record(50) // the ramp: slow
	}
	base := ownReading(2, phys, 1000, 10)
	for i := range 1000 {
		phys.Record(1 + float64(i%10)/10) // the hold: 1.0–1.9 ms
	}
	end := ownReading(12, phys, 1600, 12)
	own := map[string]FileFigure{
		"physics_ms": {Histogram: "physics.step_ms"},
		"steps":      {Counter: "physics.steps"},
		"step_hz":    {CounterRate: "physics.steps"},
		"bodies":     {Gauge: "bodies", Scale: ptr(2.0)},
		"net_ms":     {Summary: "net_ms"},
		"gone_ms":    {Histogram: "physics.gone_ms"},
	}
	var ex Extremes
	for _, r := range []Reading{base, ownReading(7, phys, 1300, 4), end} {
		ex.AddOwn(r.Raw, own)
	}
	out := Compute(Hold{Base: base, End: end, InHold: true, Extremes: ex, Own: own})
	get := func(name string) map[string]float64 {
		var m map[string]float64
		if raw, ok := out[name]; ok {
			_ = json.Unmarshal(raw, &m)
		}
		return m
	}
	for _, tc := range []struct {
		name, stat string
		lo, hi     float64
	}{
		{"physics_ms", "p99", 1.8, 1.95},
		{"physics_ms", "max", 1.9, 1.95},
		{"physics_ms", "mean", 1.44, 1.46},
		{"steps", "increase", 600, 600},
		{"step_hz", "rate", 60, 60},
		{"bodies", "min", 8, 8},
		{"bodies", "max", 24, 24},
		{"net_ms", "p99", 7.5, 7.5},
	} {
		v, ok := get(tc.name)[tc.stat]
		if !ok || v < tc.lo || v > tc.hi {
			t.Errorf("%s.%s = %v (present %v), want in [%v, %v]", tc.name, tc.stat, v, ok, tc.lo, tc.hi)
		}
	}
	var info Info
	if err := json.Unmarshal(out[Key], &info); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"physics_ms", "steps", "step_hz", "bodies"} {
		if !strings.Contains(strings.Join(info.Figures, ","), f) {
			t.Errorf("%s not listed as over the hold: %v", f, info.Figures)
		}
	}
	if strings.Contains(strings.Join(info.Figures, ","), "net_ms") {
		t.Error("a summary is the file's own window, not over the hold")
	}
	if why := info.Missing["gone_ms"]; !strings.Contains(why, "physics.gone_ms") {
		t.Errorf("gone_ms missing %q, want the path named", why)
	}
}

// TestFileFigureCheck: exactly one kind, a path of field names, a
// positive scale.
func TestFileFigureCheck(t *testing.T) {
	for _, tc := range []struct {
		f    FileFigure
		want string
	}{
		{FileFigure{Histogram: "cumulative.phase_ms.integrate_ms"}, ""},
		{FileFigure{}, "names no kind"},
		{FileFigure{Gauge: "a", Counter: "b"}, "names 2 kinds"},
		{FileFigure{Gauge: "a..b"}, "not a JSON path"},
		{FileFigure{Gauge: "a", Scale: ptr(-1.0)}, "positive finite"},
	} {
		err := tc.f.Check()
		if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
}
