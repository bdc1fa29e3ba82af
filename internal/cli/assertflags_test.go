package cli

import (
	"flag"
	"io"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/load/swarmcli"
	"github.com/scalegate/scalegate/internal/load/swarmcmd"
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
	for _, g := range gatetable.All() {
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

// The whole command line the gate builds for a swarm (swarmcmd.Args, with
// every load flag a profile can set and every forwarded assert) parses in
// the swarm, and each assert enables the same gate at the same threshold:
// the builder and the swarm's flags cannot drift apart.
func TestForwardedFlagsRoundTrip(t *testing.T) {
	p := &profile.Profile{Name: "t", Tier: "strict", Transport: "enet", Clients: 8, DurationS: 5, RateHz: 60, RampMs: 1,
		RSSSampleIntervalS: 1, Threads: 2, EntityType: "fighter", Patterns: []string{"weave"}, Gates: profile.Gates{},
		Harness: profile.Harness{TestBusyUsPerClient: 1}}
	want := map[string]float64{}
	for i, g := range gatetable.All() {
		spec := profile.GateSpec{Level: gatetable.LevelHard}
		if g.Kind == gatetable.Threshold {
			thr := float64(i + 1)
			spec.Threshold = &thr
		}
		p.Gates[g.Name] = spec
		if g.Flag != "" {
			thr, ok := p.GateThreshold(g, p.Legs()[0])
			if ok && g.Kind == gatetable.Switch {
				thr = 0
			}
			if ok {
				want[g.Name] = thr
			}
		}
	}
	args := swarmcmd.Args(p, p.Legs()[0], swarmcmd.Options{Host: "127.0.0.1", Port: "1", Report: "r.json", ServerMetrics: "m.json",
		Asserts: true, Progress: "plain", Shard: "0/2", StartAt: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
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
