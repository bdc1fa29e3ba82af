package gate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

// KneeCPUPct is the CPU at which a server that still holds its tick rate
// is at its knee: 98 % of each thread its tick may use (server_tick
// sim_worker_threads; one when the server does not say). It has no
// headroom left, so the next client count fails whatever the gates say.
const KneeCPUPct = 98

// Capacity builds the capacity curves of a run whose profile sweeps the
// client count; nil otherwise.
func Capacity(r *rundir.RunResult) []rundir.CapacityCurve {
	if r.Profile == nil || r.Profile.Sweep == nil || len(r.Profile.Sweep.Clients) == 0 {
		return nil
	}
	byGroup := map[string]*rundir.CapacityCurve{}
	var order []string
	for _, l := range r.Legs {
		if l.Leg.Clients == nil {
			continue
		}
		g := l.Leg.IDWithoutClients()
		c, ok := byGroup[g]
		if !ok {
			c = &rundir.CapacityCurve{Group: g}
			byGroup[g] = c
			order = append(order, g)
		}
		c.Points = append(c.Points, capacityPoint(l, timingIn(r.Profile)))
	}
	out := make([]rundir.CapacityCurve, 0, len(order))
	for _, g := range order {
		c := byGroup[g]
		sort.SliceStable(c.Points, func(i, j int) bool { return c.Points[i].Clients < c.Points[j].Clients })
		findKnee(c)
		out = append(out, *c)
	}
	return out
}

func capacityPoint(l rundir.LegResult, timing func(rundir.Check) bool) rundir.CapacityPoint {
	pt := rundir.CapacityPoint{Clients: *l.Leg.Clients, LegID: l.Leg.ID, Verdict: l.Verdict}
	for _, c := range l.Checks {
		if c.Gate == gatetable.CheckHarness && c.Status == rundir.StatusInconclusive {
			pt.HarnessBound = true
		}
	}
	for _, c := range l.Checks {
		// On a harness-bound leg a timing figure describes the swarm: a
		// hard one is already inconclusive, and an advisory one (a sweep
		// often declares its figures advisory) is no knee either.
		if (c.Status == rundir.StatusFail || c.Status == rundir.StatusUnevaluable) && !(pt.HarnessBound && c.Status == rundir.StatusFail && timing(c)) {
			pt.Failed = append(pt.Failed, c.Gate)
		}
	}
	if l.Verdict == rundir.VerdictLaunchFailed || l.Verdict == rundir.VerdictInterrupted || l.Verdict == rundir.VerdictNotRun {
		pt.Failed = append(pt.Failed, string(l.Verdict))
	}
	if l.Report == nil {
		return pt
	}
	m := gatetable.FromReport(l.Report)
	pt.TickHzMin, _ = gatetable.TickHzMin.Value(m)
	pt.TickMsP99, _ = gatetable.TickMsP99.Value(m)
	pt.KBsMean, _ = gatetable.KBsMean.Value(m)
	pt.WorkerDtP99Ms, _ = gatetable.WorkerDtP99.Value(m)
	pt.ServiceIntervalP99Ms, _ = gatetable.ServiceIntervalP99.Value(m)
	pt.CPUPctMean, _ = gatetable.CPUPctMean.Value(m)
	if pt.CPUPctMean != nil {
		threads := 1.0
		if w, err := gatetable.SimWorkers.Read(m); err == nil && w >= 1 {
			threads = w
		}
		bound := KneeCPUPct * threads
		pt.CPUBoundPct, pt.CPUSaturated = &bound, *pt.CPUPctMean >= bound
	}
	return pt
}

// findKnee walks the curve upwards: the first count with a failed check is
// the knee; a harness-bound count before it ends the walk without one; a
// count whose checks held on a saturated server CPU (KneeCPUPct) is the
// knee too — the tick rate held with nothing to spare. A failed timing
// check on a harness-bound leg is already inconclusive (Evaluate), so what
// fails there failed whatever the harness did.
func findKnee(c *rundir.CapacityCurve) {
	for i := range c.Points {
		p := &c.Points[i]
		held := ""
		if i > 0 {
			held = fmt.Sprintf(" (last count that held: %d)", c.Points[i-1].Clients)
		}
		if len(p.Failed) > 0 {
			c.Knee = &p.Clients
			c.Verdict = fmt.Sprintf("knee at %d clients: %s", p.Clients, strings.Join(p.Failed, ", ")) + held
			return
		}
		if p.HarnessBound {
			c.HarnessLimit = &p.Clients
			c.Verdict = fmt.Sprintf("no knee found below %d clients, where the swarm became the limit (inconclusive, not a knee)", p.Clients)
			return
		}
		if p.CPUSaturated {
			c.Knee = &p.Clients
			c.Verdict = fmt.Sprintf("knee at %d clients: every check held, but the server's CPU was saturated (cpu_pct_mean %s %% ≥ %s %%)",
				p.Clients, gatetable.FormatNumber(*p.CPUPctMean), gatetable.FormatNumber(*p.CPUBoundPct)) + held
			return
		}
	}
	if n := len(c.Points); n > 0 {
		c.Verdict = fmt.Sprintf("no knee up to %d clients: every check held at every count", c.Points[n-1].Clients)
		unread := 0
		for _, p := range c.Points {
			if p.CPUPctMean == nil {
				unread++
			}
		}
		if unread > 0 {
			c.Verdict += fmt.Sprintf(" (the server reported no cpu_pct_mean at %d of %d counts: CPU saturation was not judged there)", unread, n)
		}
	}
}
