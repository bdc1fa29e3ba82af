package catalog

import (
	"testing"
)

// abort_on_breach and a gate's own abort fields decode into the profile
// with the schema's defaults filled, and --set reaches them.
func TestAbortDecodes(t *testing.T) {
	dir := t.TempDir()
	writeProfile(t, dir, "ab", goodAs("ab")+"abort_on_breach: {}\ngates: tick_hz_min: {threshold: 30, abort_after_s: 2}\ngates: kbs_max: threshold: 100\n")
	c, err := NewCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := c.Load("ab")
	if err != nil {
		t.Fatal(FormatError(err))
	}
	if p.AbortOnBreach == nil || p.AbortOnBreach.AfterS != 3 || p.AbortOnBreach.MarginPct != 20 {
		t.Fatalf("abort_on_breach %+v, want the defaults 3 s, 20 %%", p.AbortOnBreach)
	}
	if a := p.Gates["tick_hz_min"].AbortAfterS; a == nil || *a != 2 {
		t.Fatalf("tick_hz_min abort_after_s %v", a)
	}
	rules := p.AbortRules(p.Legs()[0], false)
	if len(rules) != 2 || rules[0].Gate.Name != "kbs_max" || rules[0].AfterS != 3 || rules[1].Gate.Name != "tick_hz_min" || rules[1].AfterS != 2 {
		t.Fatalf("rules %+v", rules)
	}
	o, err := ParseOverride("abort_on_breach.margin_pct=0")
	if err != nil {
		t.Fatal(err)
	}
	p, _, err = c.Load("ab", o)
	if err != nil {
		t.Fatal(FormatError(err))
	}
	if p.AbortOnBreach.MarginPct != 0 {
		t.Fatalf("--set margin_pct=0: %+v", p.AbortOnBreach)
	}
}
