package cli

import (
	"flag"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/gate"
	"github.com/scalegate/scalegate/internal/gatetable"
	"github.com/scalegate/scalegate/internal/swarmcli"
)

// The swarm's --assert-* flags are exactly the gate table's flags and
// aliases: no flag without a gate, no forwarded gate without a flag.
func TestSwarmAssertFlagsMatchTable(t *testing.T) {
	var f swarmcli.Flags
	fs := swarmcli.Scalegate.NewFlagSet(&f, io.Discard)
	var got []string
	fs.VisitAll(func(fl *flag.Flag) {
		if strings.HasPrefix(fl.Name, "assert-") {
			got = append(got, fl.Name)
		}
	})
	var want []string
	for _, g := range gatetable.All {
		if g.Flag != "" {
			want = append(want, g.Flag)
			want = append(want, g.Aliases...)
		}
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		t.Errorf("swarm assert flags %v\n  gate table flags %v", got, want)
	}
}

// Every flag the gate forwards parses in the swarm and enables the same
// gate at the same threshold: the gate's forwarding and the swarm's flags
// cannot drift apart.
func TestForwardedFlagsRoundTrip(t *testing.T) {
	p := &gate.Profile{Name: "t", Tier: "strict", Transport: "enet", Clients: 8, Patterns: []string{"weave"}, Gates: gate.Gates{}}
	want := map[string]float64{}
	for i, g := range gatetable.All {
		spec := gate.GateSpec{Level: gate.LevelHard}
		if g.Kind == gatetable.Threshold {
			thr := float64(i + 1)
			spec.Threshold = &thr
		}
		p.Gates[g.Name] = spec
		if g.Flag != "" {
			thr, ok := gate.Threshold(g, spec, p, p.Legs()[0])
			if ok && g.Kind == gatetable.Switch {
				thr = 0
			}
			if ok {
				want[g.Name] = thr
			}
		}
	}
	args := append([]string{"127.0.0.1", "1"}, gate.AssertFlags(p, p.Legs()[0], false)...)
	env, _, errb := testEnv(nil)
	f, err := swarmcli.Scalegate.Parse(swarmEnv(env), args)
	if err != nil {
		t.Fatalf("forwarded flags %v do not parse: %v (%s)", args, err, errb)
	}
	for name, thr := range want {
		if got, ok := f.Asserts[name]; !ok || got != thr {
			t.Errorf("gate %s: swarm assert %v (on %v), want %v", name, got, ok, thr)
		}
	}
	if len(f.Asserts) != len(want) {
		t.Errorf("swarm enabled %v, want %v", f.Asserts, want)
	}
}
