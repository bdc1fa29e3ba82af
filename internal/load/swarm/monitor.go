package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/scalegate/scalegate/internal/guard/safetext"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
)

// monitor runs on the caller's goroutine while the workers run: once a
// second it reads the workers' published figures and the server's metrics
// file, appends a timeline row and prints progress.
type monitor struct {
	cfg     *Config
	workers []*worker
	start   time.Time

	// timeline holds the per-second rows (compactly: timelineStore).
	timeline timelineStore
	rss      []report.RSSPoint
	nextRSS  time.Time
	rssZero  bool // the server reported rss_kb 0 (unavailable on its platform)
	// rssTicks is ticks_total of the metrics file the last fast RSS sample
	// came from (sampleRSS): a reading the server has not rewritten since
	// is the same sample, not a second one.
	rssTicks int64
	srvErr   error // the last failed read, for the record
	srvReads int

	lastLog   time.Time
	statusLen int

	// final is the metrics file as read while every client was still
	// connected (captureFinal); finalErr why that read failed.
	final     []byte
	finalErr  error
	finalTime time.Time

	// prom is the Prometheus source (--server-metrics-prometheus), nil
	// when the metrics come from a file or URL document or not at all;
	// file is the metrics file's (or URL document's) readings for the
	// figures over the hold, nil without one.
	prom *promSampler
	file *fileWindow

	// rttScratch is reused each second to build the row's RTT histogram,
	// which the row keeps encoded.
	rttScratch *stats.Histogram
	// latScratch is reused each second to pool the workers' input latency
	// buckets for the row.
	latScratch []uint64

	// left is set when the bots begin to leave (endHold): a reading of the
	// metrics file after it moves the counters, not the population gauges.
	left atomic.Bool

	// watch applies the run's early-abort rules to each row; abort is the
	// one that fired (nil: none), and stop ends the run when it does.
	watch *gatetable.AbortWatch
	abort *gatetable.Abort
	stop  func()
}

func newMonitor(cfg *Config, workers []*worker, start time.Time) *monitor {
	m := &monitor{cfg: cfg, workers: workers, start: start, nextRSS: start, lastLog: start,
		watch: gatetable.NewAbortWatch(cfg.Abort), rttScratch: stats.NewHistogram()}
	if cfg.ServerMetrics != "" {
		m.file = newFileWindow(cfg, start)
	}
	return m
}

// loop runs until done is closed (every worker has returned). Once it is,
// a scrape in flight is cancelled and no other starts: the final reading
// was captured while the workers were parked, so a slow or silent endpoint
// lengthens the run by at most that one scrape's deadline (a sample that
// outlasted the ticker used to start another half the time, because select
// picks among ready cases at random: 4 s runs took 13 s).
func (m *monitor) loop(done <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-done:
		case <-ctx.Done():
		}
		cancel()
	}()
	m.sampleServer(ctx, time.Now())
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var rssC <-chan time.Time // nil unless RSS is sampled faster than the rows
	if m.fastRSS() {
		rt := time.NewTicker(m.cfg.RSSSampleInterval)
		defer rt.Stop()
		rssC = rt.C
	}
	for {
		select {
		case <-done:
			m.clearStatus()
			return
		case now := <-rssC:
			if ctx.Err() == nil {
				m.sampleRSS(now)
			}
		case now := <-t.C:
			if ctx.Err() != nil {
				continue // done is closed: the next turn returns
			}
			st := m.sampleServer(ctx, now)
			p := m.point(now, st)
			m.timeline.add(p)
			m.progress(now, p)
			m.watchAbort(p)
		}
	}
}

// sampleServer reads the server's metrics (nil when not wired or
// unreadable) and records an RSS sample when one is due.
func (m *monitor) sampleServer(ctx context.Context, now time.Time) *serverFigures {
	f, err := m.readServer(ctx, now)
	if err != nil {
		m.srvErr = err
		return nil
	}
	if f == nil {
		return nil
	}
	m.srvReads++
	if !m.fastRSS() && !now.Before(m.nextRSS) {
		for !now.Before(m.nextRSS) {
			m.nextRSS = m.nextRSS.Add(m.cfg.RSSSampleInterval)
		}
		m.keepRSS(now, f)
	}
	return f
}

// keepRSS appends f's RSS to the series at now, or notes that the server
// reported none.
func (m *monitor) keepRSS(now time.Time, f *serverFigures) {
	if f.rssKB != nil {
		m.rss = append(m.rss, report.RSSPoint{TS: round3(now.Sub(m.start).Seconds()), RSSKB: *f.rssKB})
	} else if f.rssZero {
		m.rssZero = true
	}
}

// fastRSS reports whether RSS is sampled on its own schedule, faster than
// the once-a-second rows: a short leg's slope needs more samples than its
// seconds (the bucket-median estimator wants RSSSlopeBuckets buckets of
// RSSSlopeMinSamplesPerBucket samples over the tail; fewer fall back to a
// least-squares fit that one allocation step can tip). Only a metrics file
// or URL document is read that often: a Prometheus source is sampled with
// the rows (Config.metricsErrors refuses a shorter interval for one).
func (m *monitor) fastRSS() bool {
	return m.cfg.RSSSampleInterval < time.Second && m.cfg.ServerMetrics != "" && m.prom == nil
}

// sampleRSS is a fast RSS sample (fastRSS): the metrics file read for its
// rss_kb alone, kept only when the server has rewritten the file since the
// last one, so a sample interval below the server's write interval
// (tick_json_interval_ms) repeats no reading under a new time. A failed
// read is skipped: the row's read records the error.
func (m *monitor) sampleRSS(now time.Time) {
	st, _, err := report.ReadServerTick(m.cfg.ServerMetrics)
	if err != nil || st.TicksTotal != 0 && st.TicksTotal == m.rssTicks {
		return
	}
	m.rssTicks = st.TicksTotal
	m.keepRSS(now, figuresOfFile(st))
}

// readServer is one read of the metrics file, URL document or Prometheus
// endpoint; nil, nil when none is wired.
func (m *monitor) readServer(ctx context.Context, now time.Time) (*serverFigures, error) {
	if m.prom != nil {
		return m.prom.sample(ctx, now)
	}
	if m.cfg.ServerMetrics == "" {
		return nil, nil
	}
	st, raw, err := report.ReadServerTick(m.cfg.ServerMetrics)
	if err != nil {
		return nil, err
	}
	// Read after the file: a reading the flag does not mark was taken
	// before the first goodbye went out (endHold sets it first).
	inGame := !m.left.Load()
	f := figuresOfFile(st)
	// The server's diagnostics that second, read by name through the gate
	// table (a field the server left out stays empty, never 0).
	f.diag = gatetable.TimelineServer(gatetable.FromServerTick(raw))
	// With cumulative state, the row's CPU and wire rate are the server's
	// over the second since the previous reading, and its ticks are kept
	// as a histogram: nothing between two reads goes unseen.
	step := m.file.observe(now, st, raw, inGame)
	f.tickHist, f.own = step.TickHist, step.Own
	if step.CPUPct != nil {
		f.diag.ServerCPUPct = step.CPUPct
	}
	if step.WireKBsPerClient != nil {
		f.diag.WireKBsPerClient = step.WireKBsPerClient
	}
	return f, nil
}

// point aggregates the workers' last second into one timeline row.
func (m *monitor) point(now time.Time, st *serverFigures) report.TimelinePoint {
	p := report.TimelinePoint{TS: round3(now.Sub(m.start).Seconds())}
	sum := m.sumWorkers(&p)
	if p.ServiceIntervals > 0 {
		mean := sum.svcSum / float64(p.ServiceIntervals)
		p.ServiceIntervalMeanMs = &mean
	}
	if lo, _, _, ok := stats.MinMeanMax(sum.hz); ok {
		p.TickHzMin = &lo
	}
	if sum.kbsN > 0 {
		p.KBs = sum.kbsSum / float64(sum.kbsN)
		p.KBsClients = sum.kbsN
	}
	if m.cfg.sharded() {
		// The row's RTT distribution in mergeable form, for the shards'
		// merge (a lone swarm's row needs only its p95, below).
		p.RTTHist = m.rttHist(sum.rtt)
	}
	if s := stats.Summarize(sum.rtt); s.Count > 0 {
		p.RTTP95Ms = &s.P95
	}
	if v, ok := latencyP95(sum.lat); ok {
		p.InputLatencyP95Ms = &v
	}
	if !math.IsNaN(sum.dt) {
		p.WorkerDtP99 = sum.dt
	}
	if st != nil {
		p.TickMsP99, p.RSSKB = st.tickP99, st.rssKB
		p.TimelineServer = st.diag
		p.TickHist = st.tickHist
		p.Own = st.own
	}
	return p
}

// workerSums is the workers' last second pooled across workers, the raw
// material point turns into a row's figures.
type workerSums struct {
	hz, rtt []float64
	lat     []uint64 // the workers' input latencies of the second (intervalBounds' buckets)
	kbsSum  float64
	kbsN    int
	dt      float64 // the worst worker's loop dt p99; NaN: none had one
	svcSum  float64
}

// sumWorkers pools every worker's last published second; the counts the
// row holds as they are (connected clients, service intervals) go
// straight into p. Kept apart from point so the row's derivations read
// without the per-worker loop.
func (m *monitor) sumWorkers(p *report.TimelinePoint) workerSums {
	if m.latScratch == nil {
		m.latScratch = make([]uint64, len(intervalBounds)-1)
	}
	clear(m.latScratch)
	sum := workerSums{dt: math.NaN(), lat: m.latScratch}
	for _, w := range m.workers {
		pub := w.published()
		if pub.at.IsZero() {
			continue
		}
		p.Connected += pub.connected
		sum.hz = append(sum.hz, pub.tickHz...)
		sum.rtt = append(sum.rtt, pub.rttMs...)
		w.addLatency(sum.lat)
		sum.kbsSum += pub.kbsSum
		sum.kbsN += pub.kbsN
		if !math.IsNaN(pub.dtP99) && (math.IsNaN(sum.dt) || pub.dtP99 > sum.dt) {
			sum.dt = pub.dtP99
		}
		sum.svcSum += pub.svcSum
		p.ServiceIntervals += pub.svcN
	}
	return sum
}

// rttHist is the row's RTT samples as a mergeable histogram, built in the
// monitor's reused scratch histogram so a second costs no new one.
func (m *monitor) rttHist(rtt []float64) *stats.Encoded {
	m.rttScratch.Reset()
	for _, v := range rtt {
		m.rttScratch.Record(v)
	}
	// Encoding cannot fail for a histogram of this geometry; a row
	// without it is a row without the RTT a merge would need.
	enc, _ := stats.Encode(m.rttScratch)
	return enc
}

// watchAbort ends the run at the first row an early-abort rule fires on:
// the workers stop as at the end of the duration (the last metrics read
// while the clients are connected, then the report), and the report says
// when and why.
func (m *monitor) watchAbort(p report.TimelinePoint) {
	if m.abort != nil {
		return
	}
	if a := m.watch.Observe(p); a != nil {
		m.abort = a
		if m.cfg.Progress != nil {
			m.clearStatus()
			fmt.Fprintf(m.cfg.Progress, "swarm: ending the run early at %.1fs: %s\n", a.AtS, safetext.Terminal(a.Reason))
		}
		if m.stop != nil {
			m.stop()
		}
	}
}

func (m *monitor) statusLine(p report.TimelinePoint) string {
	opt := func(v *float64, format string) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf(format, *v)
	}
	return fmt.Sprintf("swarm %5.0fs  connected %d/%d  tick-Hz min %s  KB/s %.1f  RTT p95 %s ms  service mean %s ms  worker dt p99 %.2f ms",
		p.TS, p.Connected, m.cfg.ShardClients(), opt(p.TickHzMin, "%.1f"), p.KBs, opt(p.RTTP95Ms, "%.1f"),
		opt(p.ServiceIntervalMeanMs, "%.2f"), p.WorkerDtP99)
}

// progress prints the status: in place on a terminal, a plain line every
// ProgressEvery otherwise (logs and CI must not fill with carriage returns).
func (m *monitor) progress(now time.Time, p report.TimelinePoint) {
	if m.cfg.Progress == nil {
		return
	}
	line := safetext.Terminal(m.statusLine(p)) // nothing from outside may act on the terminal
	if m.cfg.ProgressTTY {
		pad := max(0, m.statusLen-len(line))
		fmt.Fprintf(m.cfg.Progress, "\r%s%*s", line, pad, "")
		m.statusLen = len(line)
		return
	}
	if now.Sub(m.lastLog) >= m.cfg.ProgressEvery {
		m.lastLog = now
		fmt.Fprintln(m.cfg.Progress, line)
	}
}

func (m *monitor) clearStatus() {
	if m.cfg.Progress != nil && m.cfg.ProgressTTY && m.statusLen > 0 {
		fmt.Fprintf(m.cfg.Progress, "\r%*s\r", m.statusLen, "")
		m.statusLen = 0
	}
}

// endHold is called once every worker's hold is over and before the bots
// of a Leaver protocol say goodbye: the server's population gauges
// (serverwindow.Gauges: peers, entities, …) stay as the hold's last
// reading left them, since a server that ends a session on a goodbye
// reports fewer peers at the final read, which would make the hold's
// lowest reading 0 (no per-client wire rate, a failed entities floor).
// Counters still move until the final read: what the server counted of
// the goodbyes is in it. Called from drive's goroutine, concurrently with
// the monitor loop.
func (m *monitor) endHold() {
	m.left.Store(true)
	if m.prom != nil {
		m.prom.endHold()
	}
}

// captureFinal reads the metrics file once more while every worker is
// parked with its clients still connected. Reading it after they have
// disconnected would race the server's next write, which may already count
// the departures (peers, entities) and describe a server being drained.
// It runs on its own goroutine; the monitor loop never touches final, and
// finish reads it only after the workers (released after this returns)
// are done.
func (m *monitor) captureFinal() {
	if m.prom != nil {
		m.prom.captureFinal(time.Now())
		return
	}
	if m.cfg.ServerMetrics == "" {
		return
	}
	m.final, m.finalErr = freshMetrics(m.cfg.ServerMetrics, finalFreshWait)
	m.finalTime = time.Now()
}

// finalAt is when the final reading was taken: captureFinal's, or end
// when the run ended before the workers parked (the file is read then).
func (m *monitor) finalAt(end time.Time) time.Time {
	if m.final != nil {
		return m.finalTime
	}
	return end
}

// finalFreshWait bounds how long captureFinal waits for a metrics write
// newer than its first read: a few of the server's write intervals (250 ms
// by default) with room for a loaded machine.
const finalFreshWait = 1500 * time.Millisecond

// freshMetrics reads the metrics file, then waits (up to wait) for the
// server's next write, and returns it. The workers are parked, so every
// Input has been sent: a write after that counts every Input that arrived
// (inputs_accepted), where the file as it stood may be one write interval
// old and miss the last quarter second of them, enough to read a healthy
// 3 s leg's ratio as 0.92. A server that writes nothing newer in time is
// read as it stood.
func freshMetrics(path string, wait time.Duration) ([]byte, error) {
	first, err := report.ReadServerMetrics(path)
	if err != nil {
		return nil, err
	}
	since := ticksTotal(first)
	deadline := time.Now().Add(wait)
	for since >= 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // the file has no change notification to wait on
		if b, err := report.ReadServerMetrics(path); err == nil && ticksTotal(b) > since {
			return b, nil
		}
	}
	return first, nil
}

// ticksTotal is a metrics document's ticks_total, -1 when it has none (a
// server that does not count ticks: its first read is used).
func ticksTotal(b []byte) float64 {
	var d struct {
		TicksTotal *float64 `json:"ticks_total"`
	}
	if json.Unmarshal(b, &d) != nil || d.TicksTotal == nil {
		return -1
	}
	return *d.TicksTotal
}

// finish embeds the metrics file captured at the end of the run whole, or
// records why it could not (never zeros), and fits the RSS trend.
func (m *monitor) finish(res *Result, end time.Time) {
	r := res.Report
	r.Timeline = m.timeline.points()
	if m.prom != nil {
		r.ServerMetricsPath = m.prom.src.URL()
		m.prom.finish(res, r)
		m.fitRSS(r)
		return
	}
	if m.cfg.ServerMetrics == "" {
		return
	}
	r.ServerMetricsPath = m.cfg.ServerMetrics
	b, err := m.final, m.finalErr
	if b == nil && err == nil {
		b, err = report.ReadServerMetrics(m.cfg.ServerMetrics)
	}
	if err == nil && m.left.Load() {
		b = m.file.freeze(b)
	}
	if err == nil {
		var raw map[string]json.RawMessage
		var st *report.ServerTick
		st, raw, err = report.ParseServerTick(b)
		if err == nil {
			// The block the gate reads: the final file with every figure its
			// cumulative state allows computed over the hold (serverwindow).
			hold, warns := m.file.hold(m.finalAt(end), st, raw)
			r.Warnings = append(r.Warnings, warns...)
			if enc, merr := json.Marshal(hold); merr == nil {
				r.ServerTick = enc
				res.ServerTick, res.ServerTickRaw = st, hold
			} else {
				err = merr
			}
		}
	}
	m.file.removeResetRequest()
	if err != nil {
		r.ServerMetricsError = fmt.Sprintf("%s: %v", m.cfg.ServerMetrics, err)
	}
	m.fitRSS(r)
}

func (m *monitor) fitRSS(r *report.Report) {
	r.RSSSeries = m.rss
	if m.rssZero && len(m.rss) == 0 {
		r.Warnings = append(r.Warnings, "server reported rss_kb 0 (unavailable on its platform): no RSS series")
	}
	// The fit leaves the warm-up out (the series keeps it, for the chart):
	// a server's first allocations are not a leak.
	pts := make([]stats.Point, 0, len(m.rss))
	for _, p := range m.rss {
		if r.WarmupEndS == nil || p.TS >= *r.WarmupEndS {
			pts = append(pts, stats.Point{T: p.TS, V: float64(p.RSSKB)})
		}
	}
	if s := stats.RSSSlope(pts); s.OK {
		slope, step, at := s.KBPerMin, s.StepMaxKB, s.StepAtS
		r.RSSSlopeKBPerMin, r.RSSStepMaxKB, r.RSSStepAtS = &slope, &step, &at
		r.RSSSlopeMethod = s.Method
	}
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
