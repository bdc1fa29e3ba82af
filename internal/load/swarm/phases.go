package swarm

import (
	"fmt"
	"math"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/relay/impairment"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// Recovery: the swarm's per-second snapshot rate counts as recovered once
// it is within recoverTolerance of the "before" rate for recoverHold
// consecutive seconds.
const (
	recoverTolerance = 0.05
	recoverHold      = 2
)

// stretchAcc is one client's figures in one stretch; the tick rate is over
// the state updates that carried a tick (ticks of them), as for the run.
type stretchAcc struct {
	snaps, ticks            int64
	firstTick, lastTick     uint32
	firstTickAt, lastTickAt time.Time
	firstAt, lastAt         time.Time
	bytes, firstBytes       int64
	maxGap                  time.Duration
}

func (a *stretchAcc) snapshot(hasTick bool, tick uint32, now time.Time, size int, gap time.Duration) {
	if a.snaps == 0 {
		a.firstAt, a.firstBytes = now, int64(size)
	}
	a.snaps++
	a.lastAt = now
	a.bytes += int64(size)
	a.maxGap = max(a.maxGap, gap)
	if hasTick {
		if a.ticks == 0 {
			a.firstTick, a.firstTickAt = tick, now
		}
		a.ticks++
		a.lastTick, a.lastTickAt = tick, now
	}
}

func (a *stretchAcc) tickHz() float64 {
	return spanRate(a.ticks, float64(a.lastTick-a.firstTick), a.firstTickAt, a.lastTickAt)
}

func (a *stretchAcc) kbs() float64 {
	return spanRate(a.snaps, float64(a.bytes-a.firstBytes), a.firstAt, a.lastAt) / 1000
}

// phaseClock maps a time to its stretch and second for one worker.
type phaseClock struct {
	start     time.Time
	stretches []impairment.Stretch
}

// at is the index of the stretch holding now, searched from hint (time
// only moves forward for a client).
func (pc *phaseClock) at(now time.Time, hint int) int {
	el := now.Sub(pc.start)
	i := hint
	for i+1 < len(pc.stretches) && el >= pc.stretches[i+1].From {
		i++
	}
	return i
}

// buildPhases summarises every stretch over all clients, and recover_s
// from the per-second snapshot counts.
func buildPhases(cfg *Config, workers []*worker, start, end time.Time) []report.Stretch {
	sts := cfg.Impairment.Stretches()
	if len(sts) == 0 {
		return nil
	}
	runS := end.Sub(start).Seconds()
	var perSec []int64
	out := make([]report.Stretch, len(sts))
	for i, st := range sts {
		out[i] = summarizeStretch(st, i, workers, runS)
	}
	for _, w := range workers {
		for s, n := range w.perSec {
			for len(perSec) <= s {
				perSec = append(perSec, 0)
			}
			perSec[s] += n
		}
	}
	after := &out[len(out)-1]
	after.RecoverS, after.RecoverNote = recoverS(perSec, cfg, runS)
	return out
}

func summarizeStretch(st impairment.Stretch, i int, workers []*worker, runS float64) report.Stretch {
	rs := report.Stretch{Name: st.Name, StartS: round3(math.Min(st.From.Seconds(), runS)), EndS: round3(math.Min(st.To.Seconds(), runS))}
	var hz, kbs []float64
	gap := time.Duration(-1)
	for _, w := range workers {
		for _, c := range w.clients {
			if i >= len(c.stretch) {
				continue
			}
			a := &c.stretch[i]
			rs.SnapshotsReceived += a.snaps
			hz = append(hz, a.tickHz())
			kbs = append(kbs, a.kbs())
			if a.snaps > 0 && a.maxGap > gap {
				gap = a.maxGap
			}
		}
	}
	if lo, mean, hi, ok := stats.MinMeanMax(hz); ok {
		rs.ObservedServerTickHz = &report.MinMeanMax{Min: lo, Mean: mean, Max: hi}
	}
	if _, mean, hi, ok := stats.MinMeanMax(kbs); ok {
		rs.DownstreamKBsPerClient = &report.MeanMax{Mean: mean, Max: hi}
	}
	h, rtt, lat := stats.NewHistogram(), stats.NewHistogram(), stats.NewHistogram()
	for _, w := range workers {
		mergeStretch(h, w.stretchIntervals, i)
		mergeStretch(rtt, w.stretchRTT, i)
		mergeStretch(lat, w.stretchLat, i)
	}
	rs.RTTMs = report.PercentilesOf(rtt.Summary())
	rs.StateIntervalMs = report.PercentilesOf(h.Summary())
	rs.InputLatencyMs = report.PercentilesOf(lat.Summary())
	if gap > 0 {
		rs.MaxSnapshotGapMs = nanPtr(float64(gap) / float64(time.Millisecond))
	}
	if span := rs.EndS - rs.StartS; span > 0 {
		rs.SnapshotsPerS = nanPtr(float64(rs.SnapshotsReceived) / span)
	}
	return rs
}

// recoverS is seconds from the end of the last phase until the swarm's
// per-second snapshot count is within 5 % of the "before" reference for 2
// consecutive whole seconds. The reference is the median of the whole
// seconds of "before" that start at least half a second after the last
// client's connect slot (the ramp's seconds are not a steady rate), and
// after the warm-up (whose snapshots are not counted). Only whole seconds
// before the run's end count.
func recoverS(perSec []int64, cfg *Config, runS float64) (*float64, string) {
	rampEnd := (time.Duration(cfg.Clients-1)*cfg.Ramp + time.Second/2).Seconds()
	if cfg.Warmup > 0 {
		rampEnd = max(rampEnd, (time.Duration(cfg.Clients-1)*cfg.Ramp + cfg.Warmup).Seconds())
	}
	first := int(math.Ceil(rampEnd))
	before := int(math.Floor(cfg.Impairment[0].StartS))
	var ref []float64
	for s := first; s < before && s < len(perSec); s++ {
		ref = append(ref, float64(perSec[s]))
	}
	if len(ref) == 0 {
		return nil, fmt.Sprintf("no whole second of steady traffic before the first phase (ramp ends %.1fs, first phase at %gs): no reference rate", rampEnd, cfg.Impairment[0].StartS)
	}
	want := stats.Summarize(ref).P50
	if want <= 0 {
		return nil, "no snapshots arrived before the first phase: no reference rate"
	}
	endS := cfg.Impairment.End().Seconds()
	whole := int(math.Floor(runS))
	held := 0
	for s := int(math.Ceil(endS)); s < whole && s < len(perSec); s++ {
		if math.Abs(float64(perSec[s])-want)/want > recoverTolerance {
			held = 0
			continue
		}
		held++
		if held == recoverHold {
			v := round3(float64(s-recoverHold+1) - endS)
			return &v, ""
		}
	}
	return nil, fmt.Sprintf("the snapshot rate never held within %.0f%% of the before rate (%.0f/s) for %d s after %.1fs", recoverTolerance*100, want, recoverHold, endS)
}

// mergeStretch adds stretch i of one worker's per-stretch histograms to
// dst (a worker that saw nothing in it has none).
func mergeStretch(dst *stats.Histogram, hs []*stats.Histogram, i int) {
	if i < len(hs) {
		dst.Merge(hs[i])
	}
}
