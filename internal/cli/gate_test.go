package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/run/exitcode"
)

// TestGateOverrideExitCodes: a bad --set is a profile error (exit 4) that
// names the field; a malformed flag or --set with --update-baseline is a
// usage error (exit 2) refused before anything runs.
func TestGateOverrideExitCodes(t *testing.T) {
	tests := []struct {
		args []string
		code exitcode.Code
		want string
	}{
		{[]string{"--profile", "smoke", "--set", "clinets=4"}, exitcode.InvalidProfile, "--set clinets=4: clinets: field not allowed (did you mean clients?)"},
		{[]string{"--profile", "smoke", "--set", "clients=abc"}, exitcode.InvalidProfile, `clients: "abc" is a string, want an int`},
		{[]string{"--profile", "smoke", "--set", "clients"}, exitcode.Usage, "want PATH=VALUE"},
		{[]string{"--profile", "pr", "--update-baseline", "--set", "clients=4"}, exitcode.Usage, "a baseline records the committed profile"},
		// --runs: 2 cannot give a spread; without --update-baseline it
		// records nothing. Refused before anything runs.
		{[]string{"--profile", "pr", "--update-baseline", "--runs", "2"}, exitcode.Usage, "--runs 2: use 1, or at least 3: a spread needs at least 3 runs (from two, the median absolute deviation is half their distance"},
		{[]string{"--profile", "pr", "--update-baseline", "--runs", "0"}, exitcode.Usage, "--runs 0: use 1, or at least 3"},
		{[]string{"--profile", "pr", "--runs", "3"}, exitcode.Usage, "--runs 3 goes with --update-baseline"},
		{[]string{"vet", "--set", "clients=4096"}, exitcode.InvalidProfile, "smoke: --set clients=4096: clients: invalid value 4096 (out of bound <=1024)"},
		{[]string{"profiles", "show", "smoke", "--set", "tier=nightly"}, exitcode.InvalidProfile, `--set tier=nightly: tier: "nightly" is not one of "pr", "strict"`},
	}
	for _, tc := range tests {
		dir := t.TempDir()
		env, _, stderr := testEnv(nil)
		args := append(tc.args, "--results", dir)
		if tc.args[0] == "vet" || tc.args[0] == "profiles" {
			args = tc.args
		}
		code := Run(context.Background(), env, args)
		if exitcode.Code(code) != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr:\n%s\nwant exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

func TestProfilesShowOverride(t *testing.T) {
	env, stdout, stderr := testEnv(nil)
	code := Run(context.Background(), env, []string{"profiles", "show", "smoke", "--set", "clients=4", "--set", "world.test_spawn_ai_count=2000"})
	if code != 0 || !strings.Contains(stdout.String(), `"clients": 4,`) || !strings.Contains(stdout.String(), `"test_spawn_ai_count": 2000`) {
		t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
	}
}
