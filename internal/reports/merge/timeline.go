package merge

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// mergeTimelines merges the shards' per-second rows by the shared clock:
// every shard's t_s counts from the same start instant, so the rows of
// one second (t_s rounded to the second) describe the same moment.
// Connected clients add up; the slowest client's tick rate is the minimum
// of the shards' minima; KB/s is the client-weighted mean; RTT p95 comes
// from the merged per-second RTT histogram; the worker dt p99 is the worst
// shard's (each is already the worst of its workers); the service interval
// mean is weighted by each shard's interval count; the server's figures
// (tick ms p99, RSS) are the first shard's that read them.
func mergeTimelines(picked []Input) ([]report.TimelinePoint, error) {
	rows := map[int][]report.TimelinePoint{}
	for _, s := range picked {
		seen := map[int]int{}
		for _, p := range s.Report.Timeline {
			sec := int(math.Round(p.TS))
			if at, dup := seen[sec]; dup {
				// Ticker jitter put two rows of one shard in one second:
				// keep the later, or the shard's clients count twice.
				rows[sec][at] = p
				continue
			}
			seen[sec] = len(rows[sec])
			rows[sec] = append(rows[sec], p)
		}
	}
	var out []report.TimelinePoint
	for _, sec := range slices.Sorted(maps.Keys(rows)) {
		r, err := mergeRow(float64(sec), rows[sec])
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

func mergeRow(ts float64, ps []report.TimelinePoint) (report.TimelinePoint, error) {
	m := report.TimelinePoint{TS: ts}
	var kbsSum, svcSum float64
	rtt := stats.NewHistogram()
	for _, p := range ps {
		m.Connected += p.Connected
		m.TickHzMin = fold(m.TickHzMin, p.TickHzMin, less)
		kbsSum += p.KBs * float64(p.KBsClients)
		m.KBsClients += p.KBsClients
		if p.RTTHist != nil {
			h, err := p.RTTHist.Decode()
			if err != nil {
				return m, fmt.Errorf("timeline row t=%.0f s: rtt_hist: %w", ts, err)
			}
			rtt.Merge(h)
		}
		m.TickMsP99 = fold(m.TickMsP99, p.TickMsP99, never)
		if m.TickHist == nil {
			m.TickHist = p.TickHist.Clone() // the server's: the first shard that read it
		}
		if m.Own == nil && len(p.Own) > 0 {
			m.Own = maps.Clone(p.Own) // the server's too
		}
		m.RSSKB = fold(m.RSSKB, p.RSSKB, never)
		if !m.TimelineServer.Measured() {
			// The server's figures are one server's: any shard that read
			// them that second carries them.
			m.TimelineServer = p.TimelineServer.Clone()
		}
		m.WorkerDtP99 = max(m.WorkerDtP99, p.WorkerDtP99)
		if p.ServiceIntervalMeanMs != nil && p.ServiceIntervals > 0 {
			svcSum += *p.ServiceIntervalMeanMs * float64(p.ServiceIntervals)
			m.ServiceIntervals += p.ServiceIntervals
		}
	}
	if m.ServiceIntervals > 0 {
		mean := svcSum / float64(m.ServiceIntervals)
		m.ServiceIntervalMeanMs = &mean
	}
	if m.KBsClients > 0 {
		m.KBs = kbsSum / float64(m.KBsClients)
	}
	if rtt.Count() > 0 {
		p95 := rtt.Summary().P95
		enc, err := stats.Encode(rtt)
		if err != nil {
			return m, fmt.Errorf("timeline row t=%.0f s: rtt_hist: %w", ts, err)
		}
		m.RTTP95Ms, m.RTTHist = &p95, enc
	}
	return m, nil
}
