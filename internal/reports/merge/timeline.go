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

// mergeRow merges the shards' rows of one second: the swarm's figures
// add up over the shards, the server's are the first shard's that read
// them.
func mergeRow(ts float64, ps []report.TimelinePoint) (report.TimelinePoint, error) {
	m := report.TimelinePoint{TS: ts}
	sums := shardSums{rtt: stats.NewHistogram()}
	for _, p := range ps {
		if err := sums.add(&m, p); err != nil {
			return m, fmt.Errorf("timeline row t=%.0f s: rtt_hist: %w", ts, err)
		}
		takeServer(&m, p)
	}
	if err := sums.means(&m); err != nil {
		return m, fmt.Errorf("timeline row t=%.0f s: rtt_hist: %w", ts, err)
	}
	return m, nil
}

// shardSums are what the swarm's means of one second are taken from: each
// shard's KB/s weighted by the clients it is over, its service interval
// mean by its interval count, and its RTT estimates as one histogram.
type shardSums struct {
	kbs, svc float64
	rtt      *stats.Histogram
}

// add folds a shard's swarm figures into m and the sums: counts add up,
// the slowest tick rate is the lowest, the worker dt the worst shard's.
func (s *shardSums) add(m *report.TimelinePoint, p report.TimelinePoint) error {
	m.Connected += p.Connected
	m.TickHzMin = fold(m.TickHzMin, p.TickHzMin, less)
	s.kbs += p.KBs * float64(p.KBsClients)
	m.KBsClients += p.KBsClients
	m.WorkerDtP99 = max(m.WorkerDtP99, p.WorkerDtP99)
	if p.ServiceIntervalMeanMs != nil && p.ServiceIntervals > 0 {
		s.svc += *p.ServiceIntervalMeanMs * float64(p.ServiceIntervals)
		m.ServiceIntervals += p.ServiceIntervals
	}
	if p.RTTHist == nil {
		return nil
	}
	h, err := p.RTTHist.Decode()
	if err != nil {
		return err
	}
	s.rtt.Merge(h)
	return nil
}

// means sets m's weighted means and its RTT p95 (with the merged
// histogram, for a merge of merges); a figure no shard had stays unset.
func (s *shardSums) means(m *report.TimelinePoint) error {
	if m.ServiceIntervals > 0 {
		mean := s.svc / float64(m.ServiceIntervals)
		m.ServiceIntervalMeanMs = &mean
	}
	if m.KBsClients > 0 {
		m.KBs = s.kbs / float64(m.KBsClients)
	}
	if s.rtt.Count() == 0 {
		return nil
	}
	p95 := s.rtt.Summary().P95
	enc, err := stats.Encode(s.rtt)
	if err != nil {
		return err
	}
	m.RTTP95Ms, m.RTTHist = &p95, enc
	return nil
}

// takeServer gives m the server's figures of p where m has none yet: they
// are one server's, so any shard that read them that second carries them.
func takeServer(m *report.TimelinePoint, p report.TimelinePoint) {
	m.TickMsP99 = fold(m.TickMsP99, p.TickMsP99, never)
	if m.TickHist == nil {
		m.TickHist = p.TickHist.Clone()
	}
	if m.Own == nil && len(p.Own) > 0 {
		m.Own = maps.Clone(p.Own)
	}
	m.RSSKB = fold(m.RSSKB, p.RSSKB, never)
	if !m.TimelineServer.Measured() {
		m.TimelineServer = p.TimelineServer.Clone()
	}
}
