package hostload

import (
	"math"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
)

func TestDecide(t *testing.T) {
	mm := func(mean float64) *report.MeanMax { return &report.MeanMax{Mean: mean, Max: mean * 2} }
	measured := func(other, pressure, steal *report.MeanMax, missing map[string]string) *report.Host {
		return &report.Host{OtherCores: other, CPUPressureAvg10: pressure, StealPct: steal, Missing: missing, HoldSamples: 60}
	}
	cases := []struct {
		name   string
		host   *report.Host
		policy Policy
		state  State
		reason string
		notes  []string
	}{
		{name: "busy", host: measured(mm(0.9), nil, nil, nil), policy: DefaultPolicy(), state: StateBusy,
			reason: "host busy: other processes used 0.9 cores on average over the hold (limit 0.25)"},
		{name: "quiet", host: measured(mm(0.04), nil, nil, nil), policy: DefaultPolicy(), state: StateQuiet,
			reason: "host quiet: other processes used 0.04 cores on average over the hold (limit 0.25)"},
		{name: "at the limit is quiet", host: measured(mm(0.25), nil, nil, nil), policy: DefaultPolicy(), state: StateQuiet,
			reason: "host quiet: other processes used 0.25 cores"},
		{name: "zero others", host: measured(mm(0), nil, nil, nil), policy: DefaultPolicy(), state: StateQuiet,
			reason: "host quiet: other processes used 0 cores"},
		{name: "no host block", host: nil, policy: DefaultPolicy(), state: StateUnmeasured, reason: "host load not measured"},
		{name: "others missing", host: measured(nil, mm(50), nil, map[string]string{"other_cores": reasonNoProcStat}),
			policy: DefaultPolicy(), state: StateUnmeasured, reason: "host load not measured: " + reasonNoProcStat},
		{name: "pressure over its ceiling", host: measured(mm(0.1), mm(42), nil, nil),
			policy: Policy{MaxOtherCores: 0.25, MaxCPUPressureAvg10: ptr(30)}, state: StateBusy,
			reason: "host busy: CPU pressure (some, avg10) averaged 42 % over the hold (limit 30 %)"},
		{name: "both over", host: measured(mm(1.2), mm(42), nil, nil),
			policy: Policy{MaxOtherCores: 0.25, MaxCPUPressureAvg10: ptr(30)}, state: StateBusy,
			reason: "host busy: other processes used 1.2 cores on average over the hold (limit 0.25); CPU pressure (some, avg10) averaged 42 %"},
		{name: "pressure ceiling without PSI is a note", host: measured(mm(0.1), nil, nil, map[string]string{"cpu_pressure_avg10": reasonNoPSI}),
			policy: Policy{MaxOtherCores: 0.25, MaxCPUPressureAvg10: ptr(30)}, state: StateQuiet,
			reason: "host quiet: other processes used 0.1 cores",
			notes:  []string{"CPU pressure (some, avg10) limit 30 % not checked: " + reasonNoPSI}},
		{name: "steal over its ceiling", host: measured(mm(0.1), nil, mm(12.346), nil),
			policy: Policy{MaxOtherCores: 0.25, MaxStealPct: ptr(10)}, state: StateBusy,
			reason: "host busy: CPU steal averaged 12.35 % over the hold (limit 10 %)"},
		{name: "invalid policy judges nothing", host: measured(mm(5), nil, nil, nil), policy: Policy{}, state: StateUnmeasured,
			reason: "host load not judged: host.max_other_cores 0: want a number > 0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.host, c.policy)
			if d.State != c.state || !strings.HasPrefix(d.Reason, c.reason) {
				t.Errorf("%s %q, want %s %q…", d.State, d.Reason, c.state, c.reason)
			}
			if d.Busy() != (c.state == StateBusy) {
				t.Errorf("Busy() %v for %s", d.Busy(), d.State)
			}
			if strings.Join(d.Notes, "|") != strings.Join(c.notes, "|") {
				t.Errorf("notes %q, want %q", d.Notes, c.notes)
			}
		})
	}
}

func TestPolicyValidate(t *testing.T) {
	cases := []struct {
		p   Policy
		err string
	}{
		{DefaultPolicy(), ""},
		{Policy{MaxOtherCores: 1.5, MaxCPUPressureAvg10: ptr(0), MaxStealPct: ptr(99.9)}, ""},
		{Policy{MaxOtherCores: -1}, "max_other_cores -1"},
		{Policy{MaxOtherCores: math.NaN()}, "max_other_cores NaN"},
		{Policy{MaxOtherCores: math.Inf(1)}, "max_other_cores +Inf"},
		{Policy{MaxOtherCores: 1, MaxCPUPressureAvg10: ptr(100)}, "max_cpu_pressure_avg10 100"},
		{Policy{MaxOtherCores: 1, MaxStealPct: ptr(-1)}, "max_steal_pct -1"},
	}
	for _, c := range cases {
		err := c.p.Validate()
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: %v, want %q", c.p, err, c.err)
		}
	}
	if DefaultPolicy().MaxOtherCores != DefaultMaxOtherCores || DefaultMaxOtherCores != 0.25 {
		t.Errorf("default %v: docs/host-contention.md says 0.25", DefaultPolicy().MaxOtherCores)
	}
}

func TestJoinTimeline(t *testing.T) {
	h := &report.Host{Series: []report.HostPoint{
		{TS: 0.98, OtherCores: ptr(0.1), StealPct: ptr(1), CPUPressureAvg10: ptr(5)},
		{TS: 1.98, OtherCores: ptr(0.2)},
		{TS: 2.99, OtherCores: ptr(0.3)},
		// no point near 4
		{TS: 5.01, OtherCores: ptr(0.5)},
		{TS: 5.4, OtherCores: ptr(0.54)},
	}}
	tl := []report.TimelinePoint{{TS: 0.5}, {TS: 1.02}, {TS: 2.03}, {TS: 3.05}, {TS: 4.03}, {TS: 5.36}, {TS: 9}}
	// A stale value is overwritten, not kept.
	tl[4].HostOtherCores = ptr(7)
	JoinTimeline(tl, h)
	want := []*float64{ptr(0.1), ptr(0.1), ptr(0.2), ptr(0.3), nil, ptr(0.54), nil}
	for i, w := range want {
		got := tl[i].HostOtherCores
		if (got == nil) != (w == nil) || got != nil && *got != *w {
			t.Errorf("row %d (t %v): %v, want %v", i, tl[i].TS, fmtp(got), fmtp(w))
		}
	}
	if tl[1].HostStealPct == nil || *tl[1].HostStealPct != 1 || tl[1].HostCPUPressureAvg10 == nil || tl[2].HostStealPct != nil {
		t.Errorf("steal/pressure not carried with their point: %+v %+v", tl[1], tl[2])
	}
	JoinTimeline(tl, nil) // no host block: nothing to do, no panic
}

func fmtp(v *float64) string {
	if v == nil {
		return "nil"
	}
	return fmtFig(*v)
}
