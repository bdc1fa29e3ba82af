package server

import (
	"errors"
	"strings"
	"testing"
)

// TestRealtimeOf: what the metrics file says became of [world]
// realtime_priority, for each way the workers can end up.
func TestRealtimeOf(t *testing.T) {
	eperm := errors.New("SCHED_FIFO at priority 10: operation not permitted")
	tests := []struct {
		name          string
		asked, got    int
		err           error
		pinned        bool
		wantPrio      int
		wantWhy       string // "" : none; else a substring
		wantWhyAbsent bool
	}{
		{name: "not asked", asked: 0, got: 0, pinned: true, wantWhyAbsent: true},
		{name: "not asked, unpinned", asked: 0, got: 0, wantWhyAbsent: true},
		{name: "granted", asked: 10, got: 10, pinned: true, wantPrio: 10, wantWhyAbsent: true},
		{name: "refused", asked: 10, got: 0, err: eperm, pinned: true, wantWhy: "CAP_SYS_NICE or RLIMIT_RTPRIO): SCHED_FIFO at priority 10: operation not permitted"},
		{name: "unpinned", asked: 10, got: 0, wantWhy: "not pinned"},
		{name: "pin refused", asked: 10, got: 0, pinned: true, wantWhy: "could not be pinned"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt := realtimeOf(tc.asked, tc.got, tc.err, tc.pinned)
			if rt.prio != tc.wantPrio {
				t.Errorf("prio %d, want %d", rt.prio, tc.wantPrio)
			}
			if tc.wantWhyAbsent != (rt.why == "") || !strings.Contains(rt.why, tc.wantWhy) {
				t.Errorf("why %q, want %q (absent: %v)", rt.why, tc.wantWhy, tc.wantWhyAbsent)
			}
		})
	}
}
