package server

import (
	"math"
	rtmetrics "runtime/metrics"
	"time"

	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// SlowSendThreshold: a Host.Send call that takes longer than this is a slow
// send. Send only queues a copy on both transports (microseconds), so a
// millisecond inside it means the loop goroutine stalled there — a GC
// assist, an allocation, a lock held by a QUIC sender goroutine.
const SlowSendThreshold = time.Millisecond

// Runtime metrics the diagnostics read. The pause histogram is the one
// runtime/metrics also publishes, deprecated, as /gc/pauses:seconds.
const (
	gcCyclesMetric = "/gc/cycles/total:gc-cycles"
	gcPausesMetric = "/sched/pauses/total/gc:seconds"
)

// diag is what tells why a tick was slow beyond its phase times — the
// process's CPU, garbage collection, the outbound backlog and stalled sends
// (a load run's phase times alone said "the tick body is too big"; CPU, lock
// wait, GC and queue depth said why). It belongs to the loop goroutine.
type diag struct {
	rt        []rtmetrics.Sample // [0] GC cycles, [1] GC pause histogram
	gcBase    uint64             // cycles completed before the server started
	pauseBase []uint64           // pause histogram counts before the server started

	cpuOK    bool
	cpuAt    time.Time     // start of the cpu_pct window (the previous write)
	cpuPrev  time.Duration // process CPU at cpuAt
	queueMax int           // deepest per-peer backlog since the previous write
	// queueHWM is the deepest backlog since the start or the last reset
	// request honoured (marksReset, the request's number).
	queueHWM   int
	marksReset int64

	slowSends int64 // all-time slow or failed sends

	// hold is the process CPU sampled once a second, for the CPU figures
	// over the tick window (cpu_pct_mean, cpu_pct_max): cpu_pct alone
	// covers one write window, a 250 ms glimpse under the gate.
	hold cpuRing
}

// cpuSampleEvery is how often the process CPU is sampled for the window
// figures: the max is the busiest such second.
const cpuSampleEvery = time.Second

// cpuRingLen bounds the samples kept: 128 s, more than the 600-tick window
// spans unless the loop runs below 4.7 Hz (then the figures cover the last
// 127 s of it).
const cpuRingLen = 128

// cpuSample is the process's CPU time at one instant.
type cpuSample struct {
	at  time.Time
	cpu time.Duration
}

// cpuRing keeps the last cpuRingLen CPU samples, oldest first from head.
type cpuRing struct {
	s    [cpuRingLen]cpuSample
	head int // index of the oldest sample
	n    int
}

// add appends a sample, dropping the oldest when full.
func (r *cpuRing) add(at time.Time, cpu time.Duration) {
	r.s[(r.head+r.n)%cpuRingLen] = cpuSample{at: at, cpu: cpu}
	if r.n < cpuRingLen {
		r.n++
		return
	}
	r.head = (r.head + 1) % cpuRingLen
}

// last is the newest sample (ok false when empty).
func (r *cpuRing) last() (cpuSample, bool) {
	if r.n == 0 {
		return cpuSample{}, false
	}
	return r.s[(r.head+r.n-1)%cpuRingLen], true
}

// window is the CPU over the samples taken at or after since, as a
// percentage of one core: the mean is the CPU between the first and the
// last of them over their wall time, the max the busiest interval between
// two consecutive ones. ok is false with fewer than two such samples.
func (r *cpuRing) window(since time.Time) (mean, peak float64, ok bool) {
	var first, prev cpuSample
	k := 0
	for i := 0; i < r.n; i++ {
		c := r.s[(r.head+i)%cpuRingLen]
		if c.at.Before(since) {
			continue
		}
		if k > 0 {
			if wall := c.at.Sub(prev.at); wall > 0 {
				peak = max(peak, 100*float64(c.cpu-prev.cpu)/float64(wall))
			}
		} else {
			first = c
		}
		prev = c
		k++
	}
	wall := prev.at.Sub(first.at)
	if k < 2 || wall <= 0 {
		return 0, 0, false
	}
	return 100 * float64(prev.cpu-first.cpu) / float64(wall), peak, true
}

// sampleCPU takes a window sample when one is due at now.
func (d *diag) sampleCPU(now time.Time) {
	if last, ok := d.hold.last(); ok && now.Sub(last.at) < cpuSampleEvery {
		return
	}
	if cpu, ok := cpuTime(); ok {
		d.hold.add(now, cpu)
	}
}

func newDiag(now time.Time) *diag {
	d := &diag{rt: []rtmetrics.Sample{{Name: gcCyclesMetric}, {Name: gcPausesMetric}}}
	rtmetrics.Read(d.rt)
	d.gcBase = d.cyclesRaw()
	if h := d.pauseHist(); h != nil {
		d.pauseBase = append([]uint64(nil), h.Counts...)
	}
	d.cpuAt = now
	d.cpuPrev, d.cpuOK = cpuTime()
	return d
}

func (d *diag) cyclesRaw() uint64 {
	if d.rt[0].Value.Kind() != rtmetrics.KindUint64 {
		return 0
	}
	return d.rt[0].Value.Uint64()
}

func (d *diag) pauseHist() *rtmetrics.Float64Histogram {
	if d.rt[1].Value.Kind() != rtmetrics.KindFloat64Histogram {
		return nil
	}
	return d.rt[1].Value.Float64Histogram()
}

// gcCount is the GC cycles completed since the server started. It reads
// only the counter: cheap enough for every tick.
func (d *diag) gcCount() uint64 {
	rtmetrics.Read(d.rt[:1])
	return d.cyclesRaw() - d.gcBase
}

// gcPauses is the longest and the p99 stop-the-world GC pause since the
// server started, in ms, at the runtime histogram's bucket resolution
// (stats.HistogramPercentile: a bucket's upper bound). No pause yet: 0.
func (d *diag) gcPauses() report.GCPause {
	rtmetrics.Read(d.rt[1:])
	h := d.pauseHist()
	if h == nil {
		return report.GCPause{}
	}
	counts := make([]uint64, len(h.Counts))
	for i, c := range h.Counts {
		counts[i] = c
		if i < len(d.pauseBase) {
			counts[i] -= d.pauseBase[i]
		}
	}
	toMs := func(p float64) float64 {
		v := stats.HistogramPercentile(counts, h.Buckets, p)
		if math.IsNaN(v) {
			return 0
		}
		return v * 1000
	}
	return report.GCPause{Max: toMs(100), P99: toMs(99)}
}

// pauseBuckets is the GC pause histogram since the server started, in ms
// (nil where the runtime does not publish it).
func (d *diag) pauseBuckets() *stats.Buckets {
	rtmetrics.Read(d.rt[1:])
	h := d.pauseHist()
	if h == nil {
		return nil
	}
	b := &stats.Buckets{}
	for i, c := range h.Counts {
		if i < len(d.pauseBase) {
			c -= d.pauseBase[i]
		}
		if c == 0 {
			continue
		}
		lo, hi := max(h.Buckets[i], 0)*1000, h.Buckets[i+1]*1000
		if !(hi > lo) {
			continue // a pause histogram has no mass at or below 0
		}
		b.Lo, b.Hi, b.N = append(b.Lo, lo), append(b.Hi, hi), append(b.N, c)
		b.Count += c
		// The runtime keeps no sum: each pause counts as its bucket's
		// middle (the lower bound for the open top one).
		if math.IsInf(hi, 1) {
			b.Sum += lo * float64(c)
		} else {
			b.Sum += (lo + hi) / 2 * float64(c)
		}
	}
	return b
}

// resetMarks honours a reset request numbered n: the marks (the send
// queue's high-water mark) restart now.
func (d *diag) resetMarks(n int64) {
	d.queueHWM, d.marksReset = 0, n
}

// cpuWindow is the process's user+system CPU since the previous call (or
// since the server was built), as a percentage of one core, and starts the
// next window. ok is false where getrusage is unavailable.
func (d *diag) cpuWindow(now time.Time) (pct float64, ok bool) {
	cur, ok := cpuTime()
	if !ok || !d.cpuOK {
		return 0, false
	}
	wall := now.Sub(d.cpuAt)
	if wall > 0 {
		pct = 100 * float64(cur-d.cpuPrev) / float64(wall)
	}
	d.cpuAt, d.cpuPrev = now, cur
	return pct, true
}

// sampleQueues reads every joined peer's backlog after the tick's flush and
// returns the deepest.
func (d *diag) sampleQueues(h transport.Host, peers []*peer) int {
	deepest := 0
	for _, p := range peers {
		deepest = max(deepest, h.QueuedSends(p.id))
	}
	d.queueMax = max(d.queueMax, deepest)
	d.queueHWM = max(d.queueHWM, deepest)
	return deepest
}

// takeQueueMax returns the deepest backlog since the previous write and
// starts the next window.
func (d *diag) takeQueueMax() int {
	q := d.queueMax
	d.queueMax = 0
	return q
}

// send is Host.Send, counted as a slow send when it fails or takes longer
// than SlowSendThreshold.
func (s *Server) send(id transport.PeerID, dl transport.Delivery, msg []byte) error {
	t0 := time.Now()
	err := s.host.Send(id, dl, msg)
	if err != nil || time.Since(t0) > SlowSendThreshold {
		s.diag.slowSends++
	}
	return err
}
