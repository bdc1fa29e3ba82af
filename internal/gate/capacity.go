package gate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/scalegate/scalegate/internal/gatetable"
)

// CapacityPoint is one client count of a capacity curve.
type CapacityPoint struct {
	Clients int     `json:"clients"`
	LegID   string  `json:"leg"`
	Verdict Verdict `json:"verdict"`
	// The curve's figures; nil when the leg's report did not carry them.
	TickHzMin     *float64 `json:"tick_hz_min"`
	TickMsP99     *float64 `json:"tick_ms_p99"`
	KBsMean       *float64 `json:"kbs_mean"`
	WorkerDtP99Ms *float64 `json:"worker_dt_p99_ms"`
	// ServiceIntervalP99Ms is the per-client service interval p99, the
	// figure the harness check judges (WorkerDtP99Ms is information).
	ServiceIntervalP99Ms *float64 `json:"service_interval_p99_ms"`
	// Failed names the checks that failed or could not be evaluated at this
	// count (any level); HarnessBound: the swarm was the limit.
	Failed       []string `json:"failed,omitempty"`
	HarnessBound bool     `json:"harness_bound"`
}

// CapacityCurve is the client sweep of one pattern at one (entity count,
// sim workers) point, in ascending client order, with its knee.
type CapacityCurve struct {
	// Group is the leg ID without its client part ("weave", "weave_e2000").
	Group  string          `json:"group"`
	Points []CapacityPoint `json:"points"`
	// Knee is the first client count at which a check failed (advisory
	// ones included: a capacity profile declares its limits advisory so the
	// run itself passes). Nil when none failed below the harness limit.
	Knee *int `json:"knee"`
	// HarnessLimit is the first count at which the swarm, not the server,
	// was the limit (an inconclusive leg): the curve says nothing beyond
	// it, and it is not a knee.
	HarnessLimit *int `json:"harness_limit"`
	// Verdict is the curve in one sentence.
	Verdict string `json:"verdict"`
}

// Capacity builds the capacity curves of a run whose profile sweeps the
// client count; nil otherwise.
func Capacity(r *RunResult) []CapacityCurve {
	if r.Profile == nil || r.Profile.Sweep == nil || len(r.Profile.Sweep.Clients) == 0 {
		return nil
	}
	byGroup := map[string]*CapacityCurve{}
	var order []string
	for _, l := range r.Legs {
		if l.Leg.Clients == nil {
			continue
		}
		g := strings.Replace(l.Leg.ID, sweepSuffix(l.Leg.Clients, "c"), "", 1)
		c, ok := byGroup[g]
		if !ok {
			c = &CapacityCurve{Group: g}
			byGroup[g] = c
			order = append(order, g)
		}
		c.Points = append(c.Points, capacityPoint(l))
	}
	out := make([]CapacityCurve, 0, len(order))
	for _, g := range order {
		c := byGroup[g]
		sort.SliceStable(c.Points, func(i, j int) bool { return c.Points[i].Clients < c.Points[j].Clients })
		c.findKnee()
		out = append(out, *c)
	}
	return out
}

func capacityPoint(l LegResult) CapacityPoint {
	pt := CapacityPoint{Clients: *l.Leg.Clients, LegID: l.Leg.ID, Verdict: l.Verdict}
	for _, c := range l.Checks {
		switch {
		case c.Gate == "harness" && c.Status == StatusInconclusive:
			pt.HarnessBound = true
		case c.Status == StatusFail || c.Status == StatusUnevaluable:
			pt.Failed = append(pt.Failed, c.Gate)
		}
	}
	if l.Verdict == VerdictLaunchFailed || l.Verdict == VerdictInterrupted || l.Verdict == VerdictNotRun {
		pt.Failed = append(pt.Failed, string(l.Verdict))
	}
	r := l.Report
	if r == nil {
		return pt
	}
	if r.ObservedServerTickHz != nil {
		pt.TickHzMin = &r.ObservedServerTickHz.Min
	}
	if r.DownstreamKBsPerClient != nil {
		pt.KBsMean = &r.DownstreamKBsPerClient.Mean
	}
	if r.WorkerLoopDtMs != nil {
		pt.WorkerDtP99Ms = &r.WorkerLoopDtMs.P99
	}
	if r.ServiceIntervalMs != nil {
		pt.ServiceIntervalP99Ms = &r.ServiceIntervalMs.P99
	}
	if v, err := gatetable.FromReport(r).Tick("tick_ms", "p99"); err == nil {
		pt.TickMsP99 = &v
	}
	return pt
}

// findKnee walks the curve upwards: the first count with a failed check is
// the knee; a harness-bound count before it ends the walk without one.
// A failed timing check on a harness-bound leg is already inconclusive
// (Evaluate), so what fails there failed whatever the harness did.
func (c *CapacityCurve) findKnee() {
	for i := range c.Points {
		p := &c.Points[i]
		if len(p.Failed) > 0 {
			c.Knee = &p.Clients
			c.Verdict = fmt.Sprintf("knee at %d clients: %s", p.Clients, strings.Join(p.Failed, ", "))
			if i > 0 {
				c.Verdict += fmt.Sprintf(" (last count that held: %d)", c.Points[i-1].Clients)
			}
			return
		}
		if p.HarnessBound {
			c.HarnessLimit = &p.Clients
			c.Verdict = fmt.Sprintf("no knee found below %d clients, where the swarm became the limit (inconclusive, not a knee)", p.Clients)
			return
		}
	}
	if n := len(c.Points); n > 0 {
		c.Verdict = fmt.Sprintf("no knee up to %d clients: every check held at every count", c.Points[n-1].Clients)
	}
}

// capacityMarkdown renders the curves for summary.md.
func capacityMarkdown(curves []CapacityCurve) string {
	var b strings.Builder
	for _, c := range curves {
		fmt.Fprintf(&b, "### capacity `%s` — %s\n\n", c.Group, mdEscape(c.Verdict))
		b.WriteString("| clients | tick-Hz min | tick-ms p99 | KB/s per client | swarm dt p99 ms | service interval p99 ms | leg | failed |\n")
		b.WriteString("|---:|---:|---:|---:|---:|---:|---|---|\n")
		for _, p := range c.Points {
			mark := ""
			if c.Knee != nil && p.Clients == *c.Knee {
				mark = " ◀ knee"
			}
			if c.HarnessLimit != nil && p.Clients == *c.HarnessLimit {
				mark = " ◀ harness limit"
			}
			fmt.Fprintf(&b, "| %d%s | %s | %s | %s | %s | %s | %s (%s) | %s |\n", p.Clients, mark, optNum(p.TickHzMin), optNum(p.TickMsP99),
				optNum(p.KBsMean), optNum(p.WorkerDtP99Ms), optNum(p.ServiceIntervalP99Ms), p.LegID, p.Verdict, strings.Join(p.Failed, ", "))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func optNum(v *float64) string {
	if v == nil {
		return "—"
	}
	return fmtNum(*v)
}
