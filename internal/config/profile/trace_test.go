package profile

import (
	"testing"
)

func TestTraceLegID(t *testing.T) {
	for in, want := range map[string]string{
		"traces/sample.flit":     "trace-sample",
		"traces/Peer 3.flit":     "trace-peer-3",
		"traces/session-2026/":   "trace-session-2026",
		"a/b/trace_peer0_0.flit": "trace-trace_peer0_0",
	} {
		if got := TraceLegID(in); got != want {
			t.Errorf("TraceLegID(%q) = %q, want %q", in, got, want)
		}
	}
}
