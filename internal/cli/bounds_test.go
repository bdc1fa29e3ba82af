package cli

import (
	"context"
	"strings"
	"testing"
)

// TestDurationFlagsBounded: seconds past what a time.Duration holds used to
// wrap into a negative duration (or an impairment phase never applied);
// each is now a usage error naming the flag and the bound, before anything
// starts.
func TestDurationFlagsBounded(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--degrade-duration", "1e10", "--degrade-loss", "0.1"}, "a phase must end within 604800 s (7 days)"},
		{[]string{"--degrade-start", "1e300", "--degrade-duration", "5", "--degrade-loss", "0.1"}, "a phase must end within 604800 s"},
		{[]string{"--duration", "1e308"}, "--duration must be at most 604800 (7 days), got 1e+308"},
		{[]string{"--ramp-ms", "1e18"}, "--ramp-ms must be at most 6.048e+08 (7 days)"},
		{[]string{"--timeout-s", "1e300"}, "--timeout-s must be at most 604800"},
		// 1e-300 Hz made the loop interval overflow into a negative one: the
		// swarm flooded (572,915 Inputs in 3 s from 2 clients).
		{[]string{"--rate", "1e-300"}, "rate must be in [1, 1000] Hz, got 1e-300"},
	} {
		env, _, stderr := serveEnv()
		code := Run(context.Background(), env, append([]string{"swarm", "127.0.0.1", "9"}, tc.args...))
		if code != 2 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 saying %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}
