package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
)

func TestEmbeddedProfilesValid(t *testing.T) {
	c, err := NewCatalog("")
	if err != nil {
		t.Fatal(err)
	}
	names, _ := c.Names()
	want := []string{"burst-loss", "capacity", "congestion", "congestion-enet", "entity-churn", "entity-scale", "overrun", "pr", "pr-prometheus", "reference", "reference-enet", "smoke", "soak", "trace", "transports", "weapons"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("profiles %v, want %v", names, want)
	}
	for _, n := range names {
		p, _, err := c.Load(n)
		if err != nil {
			t.Errorf("%s: %s", n, FormatError(err))
			continue
		}
		if p.Description == "" || len(p.Legs()) == 0 {
			t.Errorf("%s: no description or no legs", n)
		}
	}
}

// TestShippedProfileFacts pins the seed's values and the transport split
// (issue 6 item 4).
func TestShippedProfileFacts(t *testing.T) {
	c, _ := NewCatalog("")
	tests := []struct {
		name, transport, tier string
		clients, legs         int
		baselined             bool
	}{
		{"smoke", "enet", "pr", 8, 1, false},
		{"pr", "enet", "pr", 64, 1, true},
		{"reference", "quic", "strict", 128, 3, true},
		{"reference-enet", "enet", "strict", 128, 3, true},
		{"soak", "quic", "strict", 128, 1, false},
		{"overrun", "enet", "strict", 32, 1, false},
		{"congestion", "quic", "strict", 16, 1, false},
		{"congestion-enet", "enet", "strict", 16, 1, false},
		{"burst-loss", "quic", "pr", 16, 1, false},
		{"entity-scale", "quic", "pr", 64, 6, false},
		{"entity-churn", "quic", "pr", 64, 6, false},
		{"weapons", "quic", "strict", 128, 1, false},
		{"capacity", "enet", "pr", 32, 5, false},
		{"trace", "enet", "pr", 128, 1, false},
		{"transports", "", "pr", 64, 4, false}, // transports: enet and quic
	}
	for _, tc := range tests {
		p, _, err := c.Load(tc.name)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if p.Transport != tc.transport || string(p.Tier) != tc.tier || p.Clients != tc.clients || len(p.Legs()) != tc.legs || p.Baselined != tc.baselined {
			t.Errorf("%s: transport %s tier %s clients %d legs %d baselined %v", tc.name, p.Transport, p.Tier, p.Clients, len(p.Legs()), p.Baselined)
		}
	}
}

func writeProfile(t testing.TB, dir, name, src string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name+".cue"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

const goodSrc = `name: "good"
description: "d"
transport: "enet"
clients: 4
duration_s: 2
patterns: ["weave"]
baselined: false
gates: admission: {}
`

func TestProfileErrors(t *testing.T) {
	// every want line must appear: all errors at once
	tests := []badProfile{
		{"bad", `name: "bad"
description: "x"
tier: "nightly"
transport: "tcp"
clients: 0
duration_s: 3
patterns: ["weave", "loop"]
baselined: false
gates: wire_kbs_max: threshold: "a"
`, []string{
			`bad.cue:3:7: tier: "nightly" is not one of "pr", "strict"`,
			`bad.cue:4:12: transport: "tcp" is not one of "enet", "quic"`,
			`bad.cue:5:10: clients: invalid value 0 (out of bound >=1)`,
			`bad.cue:7:21: patterns.1: "loop" is not one of`,
			`bad.cue:9:33: gates.wire_kbs_max.threshold: "a" is a string, want a number`,
		}},
		{"syntax", "name: \"syntax\"\nclients: [\n", []string{"syntax.cue:2:12: expected ']'"}},
		{"renamed", strings.Replace(goodSrc, `"good"`, `"other"`, 1), []string{`renamed.cue:1:7: name: is "other" but the file is renamed.cue`}},
		{"both", strings.Replace(goodSrc, `"good"`, `"both"`, 1) + "pattern_mix: \"weave:1\"\n", []string{"pattern_mix: the profile declares both"}},
		{"unknownfield", strings.Replace(goodSrc, `"good"`, `"unknownfield"`, 1) + "clinets: 5\n", []string{"unknownfield.cue:9:1: clinets: field not allowed"}},
		{"sweepbaselined", strings.Replace(strings.Replace(goodSrc, `"good"`, `"sweepbaselined"`, 1), "baselined: false", "baselined: true", 1) +
			"sweep: {entity_counts: [0], sim_worker_threads: [1]}\n", []string{"sweepbaselined.cue:7:12: baselined: must be false in a profile with a sweep"}},
	}
	_, outs := loadErrors(t, tests)
	for _, tc := range tests {
		out, failed := outs[tc.name]
		if !failed {
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: output lacks %q:\n%s", tc.name, w, out)
			}
		}
	}
}

// badProfile is a profile's source and what loading it must say.
type badProfile struct {
	name, src string
	want      []string
}

// loadErrors writes the profiles into one catalog directory, loads each
// and returns the directory and each one's formatted error; a profile that
// loads without one fails t and has no entry.
func loadErrors(t *testing.T, profiles []badProfile) (dir string, outs map[string]string) {
	t.Helper()
	dir = t.TempDir()
	for _, tc := range profiles {
		writeProfile(t, dir, tc.name, tc.src)
	}
	c, err := NewCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	outs = map[string]string{}
	for _, tc := range profiles {
		if _, _, err := c.Load(tc.name); err != nil {
			outs[tc.name] = FormatError(err)
		} else {
			t.Errorf("%s: loaded without error", tc.name)
		}
	}
	return dir, outs
}

func TestUnknownProfile(t *testing.T) {
	c, _ := NewCatalog("")
	_, _, err := c.Load("nope")
	if err == nil || !strings.Contains(err.Error(), `unknown profile "nope"`) || !strings.Contains(err.Error(), "pr") {
		t.Fatalf("err = %v", err)
	}
}

func TestLegsSweepAndMix(t *testing.T) {
	p := &profile.Profile{Name: "x", Patterns: []string{"idle", "weave"}, Sweep: &profile.Sweep{EntityCounts: []int{0, 2000}, SimWorkerThreads: []int{1, 4}}}
	var ids []string
	for _, l := range p.Legs() {
		ids = append(ids, l.ID)
	}
	if got := strings.Join(ids, " "); got != "idle_e0_w1 idle_e0_w4 idle_e2000_w1 idle_e2000_w4 weave_e0_w1 weave_e0_w4 weave_e2000_w1 weave_e2000_w4" {
		t.Errorf("legs %s", got)
	}
	m := &profile.Profile{Name: "x", PatternMix: "weave:80,idle:20"}
	l := m.Legs()
	if len(l) != 1 || l[0].BaselineKey != "x/mix" || l[0].PatternMix != "weave:80,idle:20" || l[0].Pattern != "" {
		t.Errorf("mix legs %+v", l)
	}
}

// TestReadmeNamesEveryProfile: README's "Profiles and exit codes" names
// every shipped profile, so the list a newcomer reads is the list that
// ships.
func TestReadmeNamesEveryProfile(t *testing.T) {
	raw, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	i := strings.Index(readme, "## Profiles and exit codes")
	j := strings.Index(readme[i+1:], "\n## ")
	if i < 0 || j < 0 {
		t.Fatal(`README.md has no "## Profiles and exit codes" section`)
	}
	section := readme[i : i+1+j]
	c, err := NewCatalog("")
	if err != nil {
		t.Fatal(err)
	}
	names, _ := c.Names()
	for _, n := range names {
		if !strings.Contains(section, "`"+n+"`") {
			t.Errorf("README's profile list does not name `%s`", n)
		}
	}
}
