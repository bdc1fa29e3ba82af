package gate

import (
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

func hostBlock(others float64) *report.Host {
	return &report.Host{OtherCores: &report.MeanMax{Mean: others, Max: others * 1.5}, CPUs: 2, HoldSamples: 10}
}

// TestHostBusySoftensTimingOnly: on a leg whose host other processes kept
// busy, a failed timing gate is inconclusive (the verdict would describe
// the machine) and a failed byte gate still fails; on a quiet host the
// timing failure stands; a passing leg on a busy host stays passed; a host
// that could not be measured changes nothing.
func TestHostBusySoftensTimingOnly(t *testing.T) {
	for _, tc := range []struct {
		name       string
		host       *report.Host
		slow, fat  bool
		verdict    rundir.Verdict
		tickStatus rundir.Status
	}{
		{"busy host, slow tick", hostBlock(0.9), true, false, rundir.VerdictInconclusive, rundir.StatusInconclusive},
		{"quiet host, slow tick", hostBlock(0.05), true, false, rundir.VerdictFailed, rundir.StatusFail},
		{"busy host, slow tick and fat wire", hostBlock(0.9), true, true, rundir.VerdictFailed, rundir.StatusInconclusive},
		{"busy host, healthy", hostBlock(0.9), false, false, rundir.VerdictPassed, rundir.StatusPass},
		{"unmeasured host, slow tick", &report.Host{Missing: map[string]string{"other_cores": "not Linux"}}, true, false, rundir.VerdictFailed, rundir.StatusFail},
		{"no host block, slow tick", nil, true, false, rundir.VerdictFailed, rundir.StatusFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, tick := testProfile(), healthyTick()
			p.Host.MaxOtherCores = 0.25
			r := healthyReport(tick)
			if tc.slow {
				r.ObservedServerTickHz.Min = 20
			}
			if tc.fat {
				tick["wire_out_kbs_per_client"] = 400.0
				r.ServerTick = mustJSON(tick)
			}
			r.Host = tc.host
			checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: p.Legs()[0], Report: r, Baseline: testBaseline()})
			if c, _ := find(checks, "tick_hz_min"); c.Status != tc.tickStatus {
				t.Errorf("tick_hz_min %s, want %s (%s)", c.Status, tc.tickStatus, c.Detail)
			}
			if v := LegVerdict(checks, Facts{}); v != tc.verdict {
				t.Errorf("verdict %s, want %s", v, tc.verdict)
			}
			h, ok := find(checks, "host")
			if ok != (tc.host != nil) {
				t.Fatalf("host check present %v", ok)
			}
			if ok && h.Status != rundir.StatusRecorded {
				t.Errorf("host check %s: it records, it never passes or fails", h.Status)
			}
			if ok && tc.host.OtherCores != nil && tc.host.OtherCores.Mean > 0.25 && !strings.HasPrefix(h.Detail, "host busy: ") {
				t.Errorf("busy host detail %q", h.Detail)
			}
		})
	}
}
