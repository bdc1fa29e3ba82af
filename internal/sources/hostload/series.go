package hostload

import (
	"fmt"
	"math"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// Series is a sampler's samples in time order.
type Series struct {
	Samples []Sample
	// CPUs is how many CPUs /proc/stat listed (0: never read).
	CPUs int
}

// Host is the report block: every sample as a per-second point, with t_s on the clock that
// starts at zero (the leg's clock: the time the runner started the swarm, so the points line up
// with the swarm's timeline), and the hold summary over the samples whose interval's midpoint
// lies in [from, to].
//
// The hold's other_cores and own_cores means are CPU-seconds over wall seconds of the samples
// that measured them (the per-second rounding at 0 is not applied to the sums, so it cancels;
// the mean is then shown as at least 0), steal_pct's mean is steal ticks over all ticks, and
// cpu_pressure_avg10's mean is the mean of the samples (the kernel's figure is already an
// average). Each max is the largest per-second figure. A figure no hold sample measured is nil,
// with its reason in Missing; one some samples missed says how many, and why.
func (s Series) Host(zero, from, to time.Time) *report.Host {
	h := &report.Host{CPUs: s.CPUs, HoldFromS: round3(from.Sub(zero).Seconds()), HoldToS: round3(to.Sub(zero).Seconds())}
	var hold []*Sample
	for i := range s.Samples {
		sm := &s.Samples[i]
		h.Series = append(h.Series, report.HostPoint{TS: round3(sm.At.Sub(zero).Seconds()),
			OtherCores: round3p(sm.OtherCores), StealPct: round3p(sm.StealPct),
			CPUPressureAvg10: round3p(sm.CPUPressureAvg10), OwnCores: round3p(sm.OwnCores)})
		mid := sm.From.Add(sm.At.Sub(sm.From) / 2)
		if !mid.Before(from) && !mid.After(to) {
			hold = append(hold, sm)
		}
	}
	h.HoldSamples = len(hold)
	h.OtherCores = cpuMeanMax(hold, func(sm *Sample) (*float64, float64) { return sm.OtherCores, sm.otherCPU })
	h.OwnCores = cpuMeanMax(hold, func(sm *Sample) (*float64, float64) { return sm.OwnCores, sm.ownCPU })
	h.StealPct = stealMeanMax(hold)
	h.CPUPressureAvg10 = pressureMeanMax(hold)
	for fig, key := range figureKeys {
		if why := missingIn(hold, fig); why != "" {
			if h.Missing == nil {
				h.Missing = map[string]string{}
			}
			h.Missing[key] = why
		}
	}
	return h
}

// cpuMeanMax summarises a CPU figure: the mean from the unrounded CPU-seconds.
func cpuMeanMax(hold []*Sample, fig func(*Sample) (*float64, float64)) *report.MeanMax {
	var cpu, wall float64
	var per []float64
	for _, sm := range hold {
		if v, raw := fig(sm); v != nil {
			cpu += raw
			wall += sm.wall
			per = append(per, *v)
		}
	}
	_, _, hi, ok := stats.MinMeanMax(per)
	if !ok {
		return nil
	}
	return &report.MeanMax{Mean: round3(max(0, cpu/wall)), Max: round3(hi)}
}

// stealMeanMax summarises steal: the mean over all ticks of the hold.
func stealMeanMax(hold []*Sample) *report.MeanMax {
	var steal, total uint64
	var per []float64
	for _, sm := range hold {
		if sm.StealPct != nil {
			steal += sm.stealTicks
			total += sm.totalTicks
			per = append(per, *sm.StealPct)
		}
	}
	_, _, hi, ok := stats.MinMeanMax(per)
	if !ok {
		return nil
	}
	return &report.MeanMax{Mean: round3(100 * float64(steal) / float64(total)), Max: round3(hi)}
}

func pressureMeanMax(hold []*Sample) *report.MeanMax {
	var per []float64
	for _, sm := range hold {
		if sm.CPUPressureAvg10 != nil {
			per = append(per, *sm.CPUPressureAvg10)
		}
	}
	_, mean, hi, ok := stats.MinMeanMax(per)
	if !ok {
		return nil
	}
	return &report.MeanMax{Mean: round3(mean), Max: round3(hi)}
}

// missingIn says why figure fig is missing from some or all of the hold's samples, "" when no
// sample misses it.
func missingIn(hold []*Sample, fig int) string {
	if len(hold) == 0 {
		return "no sample in the hold"
	}
	n, why := 0, ""
	for _, sm := range hold {
		if sm.why[fig] != "" {
			if n == 0 {
				why = sm.why[fig]
			}
			n++
		}
	}
	switch {
	case n == 0:
		return ""
	case n == len(hold):
		return why
	}
	return fmt.Sprintf("missing in %d of %d samples of the hold: %s", n, len(hold), why)
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func round3p(v *float64) *float64 {
	if v == nil {
		return nil
	}
	return ptr(round3(*v))
}
