package swarm

import (
	"encoding/json"
	"math"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// timelineStore holds the run's per-second rows compactly until the report
// is written. A report.TimelinePoint is a dozen small pointers, an encoded
// histogram and three bucket slices: kept one a second for hours, those
// small long-lived objects pin the runtime's spans that the second's
// garbage also uses, and the process's memory grows with the run's length
// although the live heap does not (measured: the heap's unused bytes grew
// 1.8 MB in three minutes at 128 QUIC clients with the objects flat). Here
// a row is one pointer-free struct, and its histograms are appended to two
// growing arrays, so a day of rows is a few dense allocations: memory is
// proportional to the rows' contents (~0.5 KB a second) and nothing else.
type timelineStore struct {
	rows []compactRow
	// rtt holds every row's encoded RTT histogram, back to back.
	rtt []byte
	// ticks holds every row's tick histogram as (bucket, count) pairs, a
	// bucket being an index into bounds (interned: a server's layout
	// repeats from row to row).
	ticks   []uint32
	bounds  []tickBound
	boundAt map[tickBound]uint32
	// own holds every row's own figures as (key, value) pairs, a key
	// being an index into ownKeys (interned like bounds).
	own      []ownValue
	ownKeys  []string
	ownKeyAt map[string]uint32
}

type ownValue struct {
	key uint32
	v   float64
}

type tickBound struct{ lo, hi float64 }

// compactRow is a TimelinePoint without a pointer: NaN (or -1 for the RSS)
// is a figure not measured that second.
type compactRow struct {
	ts, tickHzMin, kbs, rttP95, tickP99, workerDt, svcMean float64
	latP95                                                 float64
	rssKB                                                  int64
	connected, kbsClients                                  int32
	svcN                                                   int64
	srv                                                    [serverFields]float64
	rttAt, rttLen                                          int32 // rttLen 0: no RTT histogram
	tickAt, tickLen                                        int32 // tickLen 0: no tick histogram
	tickSum                                                float64
	tickCount                                              uint64
	ownAt, ownLen                                          int32 // ownLen 0: no own figure
}

// serverFields is how many figures report.TimelineServer has
// (TestTimelineStoreRoundTrip fails if it gains one this does not count).
const serverFields = 7

func nanOr(v *float64) float64 {
	if v == nil {
		return math.NaN()
	}
	return *v
}

func ptrOr(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}

// add keeps p.
func (s *timelineStore) add(p report.TimelinePoint) {
	c := compactRow{ts: p.TS, tickHzMin: nanOr(p.TickHzMin), kbs: p.KBs, rttP95: nanOr(p.RTTP95Ms), tickP99: nanOr(p.TickMsP99), latP95: nanOr(p.InputLatencyP95Ms),
		workerDt: p.WorkerDtP99, svcMean: nanOr(p.ServiceIntervalMeanMs), rssKB: -1,
		connected: int32(p.Connected), kbsClients: int32(p.KBsClients), svcN: p.ServiceIntervals}
	if p.RSSKB != nil {
		c.rssKB = *p.RSSKB
	}
	for i, f := range p.TimelineServer.Fields() {
		c.srv[i] = nanOr(*f.V)
	}
	if p.RTTHist != nil {
		if b, err := p.RTTHist.MarshalJSON(); err == nil {
			c.rttAt, c.rttLen = int32(len(s.rtt)), int32(len(b))
			s.rtt = append(s.rtt, b...)
		}
	}
	if h := p.TickHist; h != nil {
		c.tickAt, c.tickLen, c.tickSum, c.tickCount = int32(len(s.ticks)), int32(len(h.N)), h.Sum, h.Count
		for i := range h.N {
			s.ticks = append(s.ticks, s.bound(h.Lo[i], h.Hi[i]), uint32(min(h.N[i], math.MaxUint32)))
		}
	}
	if len(p.Own) > 0 {
		c.ownAt, c.ownLen = int32(len(s.own)), int32(len(p.Own))
		for k, v := range p.Own {
			s.own = append(s.own, ownValue{s.ownKey(k), v})
		}
	}
	s.rows = append(s.rows, c)
}

// ownKey interns an own figure's "NAME.STAT".
func (s *timelineStore) ownKey(k string) uint32 { return intern(&s.ownKeyAt, &s.ownKeys, k) }

// bound interns a bucket's bounds.
func (s *timelineStore) bound(lo, hi float64) uint32 {
	return intern(&s.boundAt, &s.bounds, tickBound{lo, hi})
}

// intern is k's index in list, appending it (and indexing it in at) the
// first time it is seen.
func intern[K comparable](at *map[K]uint32, list *[]K, k K) uint32 {
	if i, ok := (*at)[k]; ok {
		return i
	}
	if *at == nil {
		*at = map[K]uint32{}
	}
	i := uint32(len(*list))
	*list = append(*list, k)
	(*at)[k] = i
	return i
}

// points are the rows as the report carries them.
func (s *timelineStore) points() []report.TimelinePoint {
	if len(s.rows) == 0 {
		return nil
	}
	out := make([]report.TimelinePoint, len(s.rows))
	for i := range s.rows {
		out[i] = s.point(&s.rows[i])
	}
	return out
}

func (s *timelineStore) point(c *compactRow) report.TimelinePoint {
	p := report.TimelinePoint{TS: c.ts, Connected: int(c.connected), TickHzMin: ptrOr(c.tickHzMin), KBs: c.kbs, RTTP95Ms: ptrOr(c.rttP95),
		TickMsP99: ptrOr(c.tickP99), WorkerDtP99: c.workerDt, ServiceIntervalMeanMs: ptrOr(c.svcMean), InputLatencyP95Ms: ptrOr(c.latP95),
		KBsClients: int(c.kbsClients), ServiceIntervals: c.svcN}
	if c.rssKB >= 0 {
		rss := c.rssKB
		p.RSSKB = &rss
	}
	for i, f := range p.TimelineServer.Fields() {
		*f.V = ptrOr(c.srv[i])
	}
	if c.rttLen > 0 {
		var e stats.Encoded
		if json.Unmarshal(s.rtt[c.rttAt:c.rttAt+c.rttLen], &e) == nil {
			p.RTTHist = &e
		}
	}
	if c.tickLen > 0 {
		h := &stats.Buckets{Sum: c.tickSum, Count: c.tickCount,
			Lo: make([]float64, c.tickLen), Hi: make([]float64, c.tickLen), N: make([]uint64, c.tickLen)}
		for k := range int(c.tickLen) {
			j := int(c.tickAt) + 2*k
			b := s.bounds[s.ticks[j]]
			h.Lo[k], h.Hi[k], h.N[k] = b.lo, b.hi, uint64(s.ticks[j+1])
		}
		p.TickHist = h
	}
	if c.ownLen > 0 {
		p.Own = make(map[string]float64, c.ownLen)
		for _, o := range s.own[c.ownAt : c.ownAt+c.ownLen] {
			p.Own[s.ownKeys[o.key]] = o.v
		}
	}
	return p
}
