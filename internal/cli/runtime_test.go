package cli

import (
	"slices"
	"testing"
)

func TestWithSysmonAwake(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want []string // nil: left alone
	}{
		{"no GODEBUG", []string{"A=1"}, []string{"A=1", "GODEBUG=" + sysmonAwake}},
		{"empty GODEBUG", []string{"GODEBUG=", "B=2"}, []string{"GODEBUG=" + sysmonAwake, "B=2"}},
		{"other settings kept", []string{"GODEBUG=gctrace=1,madvdontneed=1"}, []string{"GODEBUG=gctrace=1,madvdontneed=1," + sysmonAwake}},
		{"already set", []string{"GODEBUG=schedtrace=2147483647"}, nil},
		{"opted out", []string{"X=1", "GODEBUG=gctrace=1,schedtrace=0"}, nil},
		{"a lookalike is not schedtrace", []string{"GODEBUG=xschedtrace=1"}, []string{"GODEBUG=xschedtrace=1," + sysmonAwake}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := withSysmonAwake(tc.in)
			if tc.want == nil {
				if ok {
					t.Fatalf("changed %q into %q; want it left alone", tc.in, got)
				}
				return
			}
			if !ok || !slices.Equal(got, tc.want) {
				t.Fatalf("withSysmonAwake(%q) = %q, %v; want %q", tc.in, got, ok, tc.want)
			}
		})
	}
}

// TestExecTunedOnlyForLoadCommands: the gate, vet and the rest never exec;
// a load command whose GODEBUG already decides does not either.
func TestExecTunedOnlyForLoadCommands(t *testing.T) {
	for _, args := range [][]string{nil, {"vet"}, {"--profile", "pr"}, {"profiles"}, {"merge", "a.json"}} {
		if tried, err := execTuned(args, nil); tried || err != nil {
			t.Fatalf("execTuned(%q) tried an exec (%v)", args, err)
		}
	}
	if tried, err := execTuned([]string{"swarm"}, []string{"GODEBUG=schedtrace=0"}); tried || err != nil {
		t.Fatalf("execTuned(swarm) with schedtrace already set tried an exec (%v)", err)
	}
}
