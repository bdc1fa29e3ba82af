package gate

import (
	"fmt"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// capLeg is one evaluated leg of a client sweep with the given figures.
func capLeg(p *profile.Profile, clients int, tickHz, svcP99 float64) rundir.LegResult {
	tick := healthyTick()
	r := healthyReport(tick)
	r.Clients, r.ClientsConnected = clients, clients
	r.ObservedServerTickHz.Min = tickHz
	r.ServiceIntervalMs.P99 = svcP99
	leg := profile.Leg{ID: fmt.Sprintf("weave_c%d", clients), Pattern: "weave", Clients: &clients}
	checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: leg, Report: r})
	return rundir.LegResult{Leg: leg, Verdict: LegVerdict(checks, Facts{}), Checks: checks, Report: r}
}

func TestCapacityKnee(t *testing.T) {
	p := testProfile()
	p.Baselined = false
	p.Gates["tick_hz_min"] = profile.GateSpec{Threshold: f64(55), Level: gatetable.LevelAdvisory}
	p.Sweep = &profile.Sweep{Clients: []int{32, 64, 128, 256}}
	cases := []struct {
		name         string
		hz, svc      [4]float64 // tick-Hz min, service interval p99 ms (bound 33.33)
		knee, limit  int        // 0 = none
		verdictMatch string
	}{
		{"knee where tick-Hz falls", [4]float64{60, 60, 50, 30}, [4]float64{20, 20, 22, 24}, 128, 0, "knee at 128 clients: tick_hz_min (last count that held: 64)"},
		{"all hold", [4]float64{60, 60, 60, 60}, [4]float64{20, 20, 20, 20}, 0, 0, "no knee up to 256"},
		{"harness limit before any failure", [4]float64{60, 60, 60, 20}, [4]float64{20, 20, 40, 90}, 0, 128, "swarm became the limit"},
		{"a harness-bound timing failure is not a knee", [4]float64{60, 40, 30, 20}, [4]float64{20, 40, 40, 40}, 0, 64, "not a knee"},
		{"knee at the first count", [4]float64{50, 60, 60, 60}, [4]float64{20, 20, 20, 20}, 32, 0, "knee at 32 clients"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := &rundir.RunResult{Profile: p}
			for _, n := range []int{256, 32, 128, 64} { // out of order: the curve sorts
				j := map[int]int{32: 0, 64: 1, 128: 2, 256: 3}[n]
				res.Legs = append(res.Legs, capLeg(p, n, tc.hz[j], tc.svc[j]))
			}
			curves := Capacity(res)
			if len(curves) != 1 || len(curves[0].Points) != 4 || curves[0].Points[0].Clients != 32 {
				t.Fatalf("curves %+v", curves)
			}
			c := curves[0]
			if got := deref(c.Knee); got != tc.knee {
				t.Errorf("knee %d, want %d (%s)", got, tc.knee, c.Verdict)
			}
			if got := deref(c.HarnessLimit); got != tc.limit {
				t.Errorf("harness limit %d, want %d (%s)", got, tc.limit, c.Verdict)
			}
			if !strings.Contains(c.Verdict, tc.verdictMatch) {
				t.Errorf("verdict %q lacks %q", c.Verdict, tc.verdictMatch)
			}
			for i, pt := range c.Points {
				if pt.ServiceIntervalP99Ms == nil || *pt.ServiceIntervalP99Ms != tc.svc[i] {
					t.Errorf("%d clients: service interval p99 %v, want %g", pt.Clients, pt.ServiceIntervalP99Ms, tc.svc[i])
				}
			}
			md := rundir.Markdown(&rundir.RunResult{Profile: p, Capacity: curves})
			if !strings.Contains(md, "| 64") || (tc.knee != 0 && !strings.Contains(md, "◀ knee")) || !strings.Contains(md, "service interval p99 ms") {
				t.Errorf("markdown:\n%s", md)
			}
		})
	}
}

func deref(v *int) int {
	if v == nil {
		return 0
	}
	return *v
}

func TestCapacityOnlyForClientSweeps(t *testing.T) {
	p := testProfile()
	p.Sweep = &profile.Sweep{EntityCounts: []int{0, 100}}
	if c := Capacity(&rundir.RunResult{Profile: p, Legs: []rundir.LegResult{{Leg: profile.Leg{ID: "weave_e0"}, Report: &report.Report{}}}}); c != nil {
		t.Errorf("entity sweep produced a capacity curve: %+v", c)
	}
}

// A server that holds its tick rate on a saturated CPU is at its knee: 98 %
// of each thread its tick may use (sim_worker_threads), and a server that
// does not report its CPU is not judged on it (and the verdict says so).
func TestCapacityCPUKnee(t *testing.T) {
	p := testProfile()
	p.Baselined = false
	p.Sweep = &profile.Sweep{Clients: []int{32, 64, 128}}
	leg := func(clients int, cpu, workers any) rundir.LegResult {
		tick := healthyTick()
		if cpu != nil {
			tick["cpu_pct_mean"] = cpu
		}
		if workers != nil {
			tick["sim_worker_threads"] = workers
		}
		r := healthyReport(tick)
		r.Clients, r.ClientsConnected = clients, clients
		l := profile.Leg{ID: fmt.Sprintf("weave_c%d", clients), Pattern: "weave", Clients: &clients}
		checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: l, Report: r})
		return rundir.LegResult{Leg: l, Verdict: LegVerdict(checks, Facts{}), Checks: checks, Report: r}
	}
	cases := []struct {
		name    string
		legs    []rundir.LegResult
		knee    int
		verdict string
	}{
		{"one thread saturated at 128", []rundir.LegResult{leg(32, 40.0, 1), leg(64, 80.0, 1), leg(128, 98.0, 1)}, 128,
			"knee at 128 clients: every check held, but the server's CPU was saturated (cpu_pct_mean 98 % ≥ 98 %) (last count that held: 64)"},
		{"two threads: 150 % is headroom", []rundir.LegResult{leg(32, 60.0, 2), leg(64, 120.0, 2), leg(128, 150.0, 2)}, 0, "no knee up to 128"},
		{"two threads saturated", []rundir.LegResult{leg(32, 60.0, 2), leg(64, 197.0, 2), leg(128, 199.0, 2)}, 64, "cpu_pct_mean 197 % ≥ 196 %"},
		{"threads unreported: one", []rundir.LegResult{leg(32, 99.5, nil), leg(64, 99.0, nil), leg(128, 99.0, nil)}, 32, "knee at 32 clients"},
		{"CPU unreported is not judged", []rundir.LegResult{leg(32, nil, 1), leg(64, 97.9, 1), leg(128, nil, 1)}, 0,
			"no knee up to 128 clients: every check held at every count (the server reported no cpu_pct_mean at 2 of 3 counts: CPU saturation was not judged there)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			curves := Capacity(&rundir.RunResult{Profile: p, Legs: tc.legs})
			if len(curves) != 1 {
				t.Fatalf("curves %+v", curves)
			}
			c := curves[0]
			if got := deref(c.Knee); got != tc.knee || !strings.Contains(c.Verdict, tc.verdict) {
				t.Errorf("knee %d %q; want %d %q", got, c.Verdict, tc.knee, tc.verdict)
			}
		})
	}
}
