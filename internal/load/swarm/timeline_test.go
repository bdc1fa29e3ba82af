package swarm

import (
	"encoding/json"
	"runtime"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// rowAt is a timeline row as the monitor builds one, with every figure
// present on odd seconds and most of them missing on even ones.
func rowAt(i int) report.TimelinePoint {
	p := report.TimelinePoint{TS: float64(i) + 0.001, Connected: 128, KBs: 71.5, KBsClients: 128, WorkerDtP99: 0.4}
	if i%2 == 1 {
		rss := int64(70000 + i)
		p.TickHzMin, p.RTTP95Ms, p.TickMsP99, p.RSSKB, p.ServiceIntervalMeanMs = f64(60), f64(1.5), f64(6.1), &rss, f64(16.67)
		p.ServiceIntervals = 7680
		for k, f := range p.TimelineServer.Fields() {
			*f.V = f64(float64(k) + 0.5)
		}
		h := stats.NewHistogram()
		l := stats.NewLogLinear()
		for j := range 128 {
			h.Record(0.4 + float64((i+j)%40)/10)
		}
		for j := range 60 {
			l.Record(4 + float64((i*7+j*13)%300)/100)
		}
		p.RTTHist, _ = stats.Encode(h)
		p.TickHist = l.Snapshot()
	}
	return p
}

// TestTimelineStoreRoundTrip: a row kept compactly comes back as it was,
// every figure present or missing as it was, the histograms the same.
func TestTimelineStoreRoundTrip(t *testing.T) {
	if n := len((&report.TimelineServer{}).Fields()); n != serverFields {
		t.Fatalf("report.TimelineServer has %d figures, the store keeps %d", n, serverFields)
	}
	var s timelineStore
	var want []report.TimelinePoint
	for i := range 50 {
		p := rowAt(i)
		if i%3 == 0 { // own figures in some rows only
			p.Own = map[string]float64{"physics_ms.p99": float64(i) / 7, "bodies.min": float64(i)}
		}
		want = append(want, p)
		s.add(p)
	}
	got := s.points()
	a, _ := json.Marshal(want)
	b, _ := json.Marshal(got)
	if string(a) != string(b) {
		t.Fatalf("rows changed in the store:\n%s\n%s", a[:400], b[:400])
	}
	if (&timelineStore{}).points() != nil {
		t.Error("an empty store has rows")
	}
}

// TestTimelineStoreIsCompact: an hour of rows costs under 1 KB a second
// live, and a day stays in tens of megabytes (a TimelinePoint each would be
// 1.3 KB plus the fragmentation its small objects cause).
func TestTimelineStoreIsCompact(t *testing.T) {
	rows := make([]report.TimelinePoint, 64)
	for i := range rows {
		rows[i] = rowAt(2*i + 1)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var s timelineStore
	for i := range 3600 {
		p := rows[i%len(rows)]
		p.TS = float64(i)
		s.add(p)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	perRow := float64(after.HeapAlloc-before.HeapAlloc) / 3600
	t.Logf("an hour of rows: %.0f B a row live", perRow)
	if perRow > 1000 {
		t.Errorf("%.0f B a row: not compact", perRow)
	}
	runtime.KeepAlive(&s)
}
