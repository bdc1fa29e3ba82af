package gate

import (
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// transportsRun is a run of testProfile on both transports with the given
// wire rates per client (nil: that leg has no report).
func transportsRun(t *testing.T, thr float64, level gatetable.Level, wire map[string]any, hz map[string]float64) *rundir.RunResult {
	t.Helper()
	p := testProfile()
	p.Transport, p.Transports, p.Baselined = "", []string{"enet", "quic"}, false
	p.Patterns = []string{"weave", "idle"}
	p.Gates["transport_overhead_kbs_max"] = profile.GateSpec{Threshold: f64(thr), Level: level}
	res := &rundir.RunResult{Profile: p}
	for _, leg := range p.Legs() {
		w, ok := wire[leg.ID]
		if !ok {
			res.Legs = append(res.Legs, rundir.LegResult{Leg: leg, Verdict: rundir.VerdictLaunchFailed})
			continue
		}
		tick := healthyTick()
		tick["transport"] = leg.Transport
		if w == nil {
			delete(tick, "wire_out_kbs_per_client")
		} else {
			tick["wire_out_kbs_per_client"] = w
		}
		r := healthyReport(tick)
		r.Transport, r.ServerTransport = leg.Transport, leg.Transport
		if h, ok := hz[leg.ID]; ok {
			r.ObservedServerTickHz.Mean = h
		}
		checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: leg, Report: r})
		for _, c := range checks {
			if c.Gate == "transport_overhead_kbs_max" {
				t.Fatalf("leg %s evaluated the run-level gate itself: %+v", leg.ID, c)
			}
		}
		res.Legs = append(res.Legs, rundir.LegResult{Leg: leg, Verdict: LegVerdict(checks, Facts{}), Checks: checks, Report: r})
	}
	res.Checks = RunChecks(res, false)
	res.Verdict = RunVerdict(res)
	return res
}

// One check per load: QUIC's wire rate minus ENet's against the bound; a
// leg without the figure is unevaluable, and the run's verdict follows its
// checks across legs.
func TestTransportOverhead(t *testing.T) {
	cases := []struct {
		name    string
		thr     float64
		level   gatetable.Level
		wire    map[string]any
		hz      map[string]float64 // observed tick-Hz mean, 60 where not given
		status  []rundir.Status    // weave, idle
		measure []string
		verdict rundir.Verdict
		detail  string
	}{
		{"within", 3, gatetable.LevelHard, map[string]any{"weave_enet": 71.9, "weave_quic": 73.4, "idle_enet": 71.9, "idle_quic": 72.6},
			nil, []rundir.Status{rundir.StatusPass, rundir.StatusPass}, []string{"1.50 KB/s", "0.70 KB/s"}, rundir.VerdictPassed,
			"wire per client: quic 73.40, enet 71.90 KB/s (payload quic 60, enet 60 KB/s; observed tick-Hz mean quic 60, enet 60)"},
		{"quic inflated", 3, gatetable.LevelHard, map[string]any{"weave_enet": 71.9, "weave_quic": 91.9, "idle_enet": 71.9, "idle_quic": 72.6},
			nil, []rundir.Status{rundir.StatusFail, rundir.StatusPass}, []string{"20 KB/s", "0.70 KB/s"}, rundir.VerdictFailed, "must be ≤ 3 KB/s"},
		{"advisory fails nothing", 3, gatetable.LevelAdvisory, map[string]any{"weave_enet": 71.9, "weave_quic": 91.9, "idle_enet": 71.9, "idle_quic": 72.6},
			nil, []rundir.Status{rundir.StatusFail, rundir.StatusPass}, []string{"20 KB/s", "0.70 KB/s"}, rundir.VerdictPassed, ""},
		// A starved QUIC server sent fewer snapshots: its low wire rate is
		// not the same payload, and must not pass.
		{"one server starved", 3, gatetable.LevelHard, map[string]any{"weave_enet": 59.4, "weave_quic": 5.2, "idle_enet": 71.9, "idle_quic": 72.6},
			map[string]float64{"weave_quic": 10}, []rundir.Status{rundir.StatusInconclusive, rundir.StatusPass}, []string{"-54.20 KB/s", "0.70 KB/s"},
			rundir.VerdictInconclusive, "the two servers did not keep the same rate (more than 2 % apart)"},
		{"within 2 % is the same rate", 3, gatetable.LevelHard, map[string]any{"weave_enet": 71.9, "weave_quic": 73.4, "idle_enet": 71.9, "idle_quic": 72.6},
			map[string]float64{"weave_quic": 59}, []rundir.Status{rundir.StatusPass, rundir.StatusPass}, []string{"1.50 KB/s", "0.70 KB/s"}, rundir.VerdictPassed, "tick-Hz mean quic 59, enet 60"},
		{"wire missing on one leg", 3, gatetable.LevelHard, map[string]any{"weave_enet": nil, "weave_quic": 73.4, "idle_enet": 71.9, "idle_quic": 72.6},
			nil, []rundir.Status{rundir.StatusUnevaluable, rundir.StatusPass}, []string{"missing", "0.70 KB/s"}, rundir.VerdictFailed, "leg weave_enet: server_tick.wire_out_kbs_per_client missing"},
		{"leg without a report", 3, gatetable.LevelHard, map[string]any{"weave_enet": 71.9, "idle_enet": 71.9, "idle_quic": 72.6},
			nil, []rundir.Status{rundir.StatusUnevaluable, rundir.StatusPass}, []string{"missing", "0.70 KB/s"}, rundir.VerdictFailed, "leg weave_quic: no report (launch failure)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := transportsRun(t, tc.thr, tc.level, tc.wire, tc.hz)
			if len(res.Checks) != 2 || res.Checks[0].Title != "QUIC − ENet wire KB/s per client [weave]" || res.Checks[1].Title != "QUIC − ENet wire KB/s per client [idle]" {
				t.Fatalf("checks %+v", res.Checks)
			}
			for i, c := range res.Checks {
				if c.Status != tc.status[i] || c.MeasuredText != tc.measure[i] || c.Level != tc.level || c.Threshold != "≤ 3 KB/s" {
					t.Errorf("check %d: %s %q level %s threshold %q; want %s %q", i, c.Status, c.MeasuredText, c.Level, c.Threshold, tc.status[i], tc.measure[i])
				}
			}
			if res.Verdict != tc.verdict || !strings.Contains(res.Checks[0].Detail, tc.detail) {
				t.Errorf("verdict %s, detail %q; want %s, %q", res.Verdict, res.Checks[0].Detail, tc.verdict, tc.detail)
			}
			md := rundir.Markdown(res)
			if !strings.Contains(md, "### run checks (across legs)") || !strings.Contains(md, `QUIC − ENet wire KB/s per client \[weave\]`) ||
				!strings.Contains(md, "transport **enet, quic**") {
				t.Errorf("summary.md lacks the run checks:\n%s", md)
			}
		})
	}
	// A profile that does not declare the gate has no run check.
	p := testProfile()
	if got := RunChecks(&rundir.RunResult{Profile: p}, false); got != nil {
		t.Errorf("undeclared: %+v", got)
	}
}
