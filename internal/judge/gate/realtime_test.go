package gate

import (
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// TestRealtimePriority: a profile that asks the built-in server for
// [world] realtime_priority gets an advisory check that the workers ran at
// it, failing with the server's reason when they did not, unevaluable when
// the server cannot say, and absent when nothing was asked.
func TestRealtimePriority(t *testing.T) {
	const refused = "refused by the kernel (it needs CAP_SYS_NICE or RLIMIT_RTPRIO): SCHED_FIFO at priority 10: operation not permitted"
	tests := []struct {
		name   string
		asked  any // [world] realtime_priority as the profile decoder gives it; nil: unset
		custom bool
		tick   map[string]any // added to the healthy server_tick
		status rundir.Status  // "": no check
		want   []string       // in the detail
	}{
		{name: "granted", asked: int64(10), tick: map[string]any{"realtime_priority": 10}, status: rundir.StatusPass},
		{name: "refused", asked: int64(10), tick: map[string]any{"realtime_priority": 0, "realtime_priority_error": refused},
			status: rundir.StatusFail, want: []string{"normal priority, not SCHED_FIFO 10", "operation not permitted"}},
		{name: "another priority", asked: int64(10), tick: map[string]any{"realtime_priority": 5},
			status: rundir.StatusFail, want: []string{"SCHED_FIFO 5, not SCHED_FIFO 10"}},
		{name: "server cannot say", asked: int64(10), tick: map[string]any{},
			status: rundir.StatusUnevaluable, want: []string{"server_tick.realtime_priority missing"}},
		{name: "not asked", tick: map[string]any{"realtime_priority": 0}},
		{name: "asked of a custom server", asked: int64(10), custom: true, tick: map[string]any{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, tick := testProfile(), healthyTick()
			if tc.asked != nil {
				p.World.Extra = map[string]any{"realtime_priority": tc.asked}
			}
			if tc.custom {
				p.Server.Kind = "custom"
			}
			for k, v := range tc.tick {
				tick[k] = v
			}
			r := healthyReport(tick)
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
			c, ok := find(checks, gatetable.CheckRealtimePriority)
			if tc.status == "" {
				if ok {
					t.Fatalf("want no realtime_priority check, got %+v", c)
				}
				return
			}
			if !ok {
				t.Fatal("no realtime_priority check")
			}
			if c.Status != tc.status || c.Level != gatetable.LevelAdvisory {
				t.Errorf("status %s level %s, want %s advisory: %+v", c.Status, c.Level, tc.status, c)
			}
			for _, w := range tc.want {
				if !strings.Contains(c.Detail, w) {
					t.Errorf("detail %q lacks %q", c.Detail, w)
				}
			}
			if leg := LegVerdict(checks, Facts{}); leg != rundir.VerdictPassed {
				t.Errorf("leg %s: an advisory check must not move the verdict of a leg that passed every other check", leg)
			}
		})
	}
}
