package profile

import (
	"fmt"
	"strings"
	"testing"
)

func num[T any](v T) *T { return &v }

// AbortRules: the gate's own setting over the profile's over the
// defaults; only hard, unscoped gates with a per-second figure; none on a
// sharded leg.
func TestAbortRules(t *testing.T) {
	base := func() *Profile {
		return &Profile{Tier: "pr", Shards: 1, Gates: Gates{
			"tick_hz_min":     {Threshold: num(30.0), Level: "hard"},
			"kbs_max":         {Threshold: num(100.0), Level: "hard"},
			"wire_kbs_max":    {Threshold: num(150.0), Level: "hard"},
			"entities_min":    {Threshold: num(8.0), Level: "hard"},
			"tick_ms_p99_max": {Threshold: num(16.6), Level: "hard"},
		}}
	}
	show := func(p *Profile) string {
		var s []string
		for _, r := range p.AbortRules(Leg{}, false) {
			s = append(s, fmt.Sprintf("%s:%g:%d:%g", r.Gate.Name, r.Threshold, r.AfterS, r.MarginPct))
		}
		return strings.Join(s, " ")
	}
	for _, tc := range []struct {
		name string
		mut  func(p *Profile)
		want string
	}{
		{"nothing opts in", func(*Profile) {}, ""},
		{"global", func(p *Profile) { p.AbortOnBreach = &AbortPolicy{AfterS: 5, MarginPct: 10} },
			"wire_kbs_max:150:5:10 kbs_max:100:5:10 tick_hz_min:30:5:10"},
		{"one gate, defaults", func(p *Profile) {
			p.Gates["tick_hz_min"] = GateSpec{Threshold: num(30.0), Level: "hard", AbortAfterS: num(2)}
		},
			"tick_hz_min:30:2:20"},
		{"margin alone opts in", func(p *Profile) {
			p.Gates["kbs_max"] = GateSpec{Threshold: num(100.0), Level: "hard", AbortMarginPct: num(0.0)}
		},
			"kbs_max:100:3:0"},
		{"gate over global, 0 opts out", func(p *Profile) {
			p.AbortOnBreach = &AbortPolicy{AfterS: 5, MarginPct: 10}
			p.Gates["tick_hz_min"] = GateSpec{Threshold: num(30.0), Level: "hard", AbortMarginPct: num(0.0)}
			p.Gates["kbs_max"] = GateSpec{Threshold: num(100.0), Level: "hard", AbortAfterS: num(0)}
		}, "wire_kbs_max:150:5:10 tick_hz_min:30:5:0"},
		{"advisory and scoped gates never end a leg", func(p *Profile) {
			p.AbortOnBreach = &AbortPolicy{AfterS: 3, MarginPct: 20}
			p.Gates["tick_hz_min"] = GateSpec{Threshold: num(30.0), Level: "advisory"}
			p.Gates["kbs_max"] = GateSpec{Threshold: num(100.0), Level: "hard", Phase: "during"}
		}, "wire_kbs_max:150:3:20"},
		{"sharded", func(p *Profile) { p.AbortOnBreach, p.Shards = &AbortPolicy{AfterS: 3}, 2 }, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := base()
			tc.mut(p)
			if got := show(p); got != tc.want {
				t.Fatalf("rules %q, want %q", got, tc.want)
			}
		})
	}
}
