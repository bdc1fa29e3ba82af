package catalog

import (
	"strings"
	"testing"
)

func TestProfilePhaseValidation(t *testing.T) {
	dir := t.TempDir()
	base := `description: "d"
transport: "enet"
clients: 2
duration_s: 10
patterns: ["weave"]
baselined: false
`
	for _, c := range []struct{ name, body, err string }{
		{"okphase", `impairment: [{start_s: 2, duration_s: 3, loss: 0.1, name: "spike"}]
gates: {tick_hz_min: {threshold: 50, phase: "spike"}, recover_s_max: threshold: 5}`, ""},
		{"badphase", `impairment: [{start_s: 2, duration_s: 3, loss: 0.1}]
gates: tick_hz_min: {threshold: 50, phase: "spike"}`, `"spike" is not a stretch of this profile's run (before, during, after)`},
		{"nophase", `gates: tick_hz_min: {threshold: 50, phase: "during"}`, "declares no impairment"},
		{"norecover", `gates: recover_s_max: threshold: 5`, "needs an impairment"},
		{"overlap", `impairment: [{start_s: 2, duration_s: 3, loss: 0.1}, {start_s: 3, duration_s: 3, loss: 0.1}]
gates: {}`, "must not overlap"},
		{"late", `impairment: [{start_s: 20, duration_s: 3, loss: 0.1}]
gates: {}`, "after the run ends"},
		{"nothing", `impairment: [{start_s: 2, duration_s: 3}]
gates: {}`, "impairs nothing"},
	} {
		writeProfile(t, dir, c.name, "name: \""+c.name+"\"\n"+base+c.body+"\n")
	}
	cat, err := NewCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, err string }{
		{"okphase", ""}, {"badphase", `is not a stretch`}, {"nophase", "declares no impairment"},
		{"norecover", "needs an impairment"}, {"overlap", "must not overlap"}, {"late", "after the run ends"}, {"nothing", "impairs nothing"},
	} {
		_, _, err := cat.Load(c.name)
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, FormatError(err))
		case c.err != "" && (err == nil || !strings.Contains(FormatError(err), c.err)):
			t.Errorf("%s: error %v, want %q", c.name, err, c.err)
		}
	}
}
