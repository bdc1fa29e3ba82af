package hostload

import (
	"math"
	"slices"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// JoinTimeline fills the host columns of the swarm's timeline from h.Series: each row gets the
// host point nearest its t_s when one lies within half a second of it, and none otherwise (a
// second the sampler did not cover stays empty, not zero). Both series are one row a second
// and each row covers the second that ends at its t_s; the swarm's clock starts when its
// process does, a little after the runner's zero, so rows and points are matched by nearest
// time rather than by index.
func JoinTimeline(tl []report.TimelinePoint, h *report.Host) {
	if h == nil {
		return
	}
	pts := h.Series
	j := 0
	for i := range tl {
		t := tl[i].TS
		// Both are in time order: advance to the last point not after t, then pick it or the
		// next, whichever is nearer.
		for j+1 < len(pts) && pts[j+1].TS <= t {
			j++
		}
		best := -1
		for _, k := range []int{j, j + 1} {
			if k < len(pts) && math.Abs(pts[k].TS-t) <= 0.5 && (best < 0 || math.Abs(pts[k].TS-t) < math.Abs(pts[best].TS-t)) {
				best = k
			}
		}
		tl[i].HostOtherCores, tl[i].HostStealPct, tl[i].HostCPUPressureAvg10 = nil, nil, nil
		if best >= 0 {
			p := pts[best]
			tl[i].HostOtherCores, tl[i].HostStealPct, tl[i].HostCPUPressureAvg10 = p.OtherCores, p.StealPct, p.CPUPressureAvg10
		}
	}
}

// TimelineColumns are the timeline.csv columns JoinTimeline fills, in order; an empty cell is
// a second the host was not measured.
func TimelineColumns() []string { return slices.Clone(timelineColumns) }

// timelineColumns backs TimelineColumns; never handed out itself, so no caller can change it.
var timelineColumns = []string{"host_other_cores", "host_steal_pct", "host_cpu_pressure_avg10"}
