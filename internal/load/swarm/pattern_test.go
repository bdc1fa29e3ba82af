package swarm

import (
	"math"
	"reflect"
	"testing"

	"github.com/scalegate/scalegate/internal/wire/proto"
)

func TestMixCountsExact(t *testing.T) {
	tests := []struct {
		name string
		spec string
		n    int
		want map[string]int
	}{
		{"80/20 of 100", "weave:80,aggressive:20", 100, map[string]int{"weave": 80, "aggressive": 20}},
		{"80/20 of 10", "weave:80,aggressive:20", 10, map[string]int{"weave": 8, "aggressive": 2}},
		{"80/15/5 of 100", "weave:80,aggressive:15,idle:5", 100, map[string]int{"weave": 80, "aggressive": 15, "idle": 5}},
		// floor(i·2/7) for i = 0..6 is 0,0,0,0,1,1,1.
		{"1:1 of 7", "level:1,random:1", 7, map[string]int{"level": 4, "random": 3}},
		// floor(i·100/3) = 0, 33, 66: all three fall in the first 90.
		{"90/10 of 3", "weave:90,weapons:10", 3, map[string]int{"weave": 3}},
		{"single", "idle:3", 5, map[string]int{"idle": 5}},
		{"128 of 3:1", "weave:3,aggressive:1", 128, map[string]int{"weave": 96, "aggressive": 32}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMix(tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if got := m.Counts(tc.n); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Counts(%d) = %v, want %v", tc.n, got, tc.want)
			}
		})
	}
}

func TestMixAssignOrder(t *testing.T) {
	m, err := ParseMix("weave:1,idle:1")
	if err != nil {
		t.Fatal(err)
	}
	// floor(i·2/4) = 0,0,1,1: the first half weaves, the second idles.
	want := []string{"weave", "weave", "idle", "idle"}
	for i, w := range want {
		if got := m.Assign(i, 4); got != w {
			t.Errorf("Assign(%d, 4) = %q, want %q", i, got, w)
		}
	}
	if m.String() != "weave:1,idle:1" {
		t.Errorf("String() = %q", m.String())
	}
	single, _ := SinglePattern("weave")
	if single.String() != "weave" {
		t.Errorf("single String() = %q, want weave", single.String())
	}
}

func TestParseMixErrors(t *testing.T) {
	for _, spec := range []string{"", "weave", "weave:0", "weave:-1", "weave:1.5", "nope:3", "weave:1,weave:2", "weave:x", "weave:1,"} {
		if _, err := ParseMix(spec); err == nil {
			t.Errorf("ParseMix(%q) accepted", spec)
		}
	}
	for _, name := range []string{"nope", "trace:", "trace: "} {
		if _, err := SinglePattern(name); err == nil {
			t.Errorf("SinglePattern(%q) accepted", name)
		}
	}
	for _, spec := range []string{"trace::3", "trace:a.flit", "trace:a.flit:0"} {
		if _, err := ParseMix(spec); err == nil {
			t.Errorf("ParseMix(%q) accepted", spec)
		}
	}
}

func TestPatternsProduceFiniteControls(t *testing.T) {
	for _, name := range PatternNames() {
		t.Run(name, func(t *testing.T) {
			p := patterns[name](3, 10)
			sent := 0
			for k := 0; k < 600; k++ {
				var c Control
				if !p.Control(float64(k)/60, &c) {
					continue
				}
				sent++
				for _, v := range []float32{c.Throttle, c.Elevator, c.Aileron, c.Rudder} {
					if math.IsNaN(float64(v)) || v < -1 || v > 1 {
						t.Fatalf("tick %d: control %v out of range", k, c)
					}
				}
				if c.Throttle < 0 {
					t.Fatalf("tick %d: negative throttle", k)
				}
			}
			if name == "idle" && sent != 10 {
				t.Errorf("idle sent %d inputs over 10 s, want 10 keepalives", sent)
			}
			if name != "idle" && sent != 600 {
				t.Errorf("%s sent %d of 600 inputs", name, sent)
			}
		})
	}
}

func TestWeaponsScheduleIsFunctionOfTimeAndIndex(t *testing.T) {
	a, b := patterns["weapons"](5, 128), patterns["weapons"](5, 128)
	gun, store := 0, 0
	const ticks = 60 * 40 // 40 s: ten gun cycles, four store cycles
	for k := 0; k < ticks; k++ {
		ts := float64(k) / 60
		var ca, cb Control
		a.Control(ts, &ca)
		b.Control(ts, &cb)
		if ca != cb {
			t.Fatalf("t=%g: two instances for client 5 differ: %v vs %v", ts, ca, cb)
		}
		if ca.Buttons&proto.ButtonGun != 0 {
			gun++
		}
		if ca.Buttons&proto.ButtonStoreRelease != 0 {
			store++
		}
	}
	// 25 % gun duty ±1 tick per cycle; 0.5 s of store per 10 s cycle.
	if gun < ticks/4-10 || gun > ticks/4+10 {
		t.Errorf("gun held %d of %d ticks, want ≈%d", gun, ticks, ticks/4)
	}
	if store < 4*30-4 || store > 4*30+4 {
		t.Errorf("store held %d ticks, want ≈120", store)
	}
	// Different clients fire at different times (smeared, not lockstep).
	c0, c1 := patterns["weapons"](0, 128), patterns["weapons"](1, 128)
	differ := false
	for k := 0; k < 240 && !differ; k++ {
		var x, y Control
		c0.Control(float64(k)/60, &x)
		c1.Control(float64(k)/60, &y)
		differ = x.Buttons != y.Buttons
	}
	if !differ {
		t.Error("clients 0 and 1 fire in lockstep")
	}
}

func TestRandomSeededPerClient(t *testing.T) {
	run := func(i int) []Control {
		p := patterns["random"](i, 10)
		out := make([]Control, 50)
		for k := range out {
			p.Control(0, &out[k])
		}
		return out
	}
	if !reflect.DeepEqual(run(4), run(4)) {
		t.Error("random pattern for the same client index is not reproducible")
	}
	if reflect.DeepEqual(run(4), run(5)) {
		t.Error("random pattern is identical for two client indices")
	}
}

func BenchmarkPatternWeave(b *testing.B) {
	p := patterns["weave"](7, 128)
	var c Control
	for i := 0; b.Loop(); i++ {
		p.Control(float64(i)/60, &c)
	}
}
