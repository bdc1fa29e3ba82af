package swarm

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/judge/stats"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/promql"
	"github.com/scalegate/scalegate/internal/sources/promsource"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// serverFigures are what one read of the server's metrics gives the
// timeline and the RSS series: the tick p99 and the RSS, each nil when the
// read did not carry it (missing, never zero).
type serverFigures struct {
	tickP99 *float64
	rssKB   *int64
	rssZero bool // the server reported rss_kb ≤ 0: unavailable on its platform
	// tickHist is the server's ticks since the previous reading (nil
	// without a cumulative or Prometheus histogram).
	tickHist *stats.Buckets
	// own are the profile's own figures over the second ("NAME.STAT").
	own map[string]float64
	// diag are the server's per-second diagnostics (CPU, wire, slow ticks,
	// GC, send queue) from a metrics file; from a Prometheus source only
	// the wire rate (the early-abort rule of wire_kbs_max reads it).
	diag report.TimelineServer
}

// wireFigure reads the wire KB/s per client of a metrics block by the
// gate's rule: nil when the block did not measure one.
func wireFigure(raw map[string]json.RawMessage) *float64 {
	v, err := gatetable.WireKBs.Value(gatetable.FromServerTick(raw))
	if err != nil {
		return nil
	}
	return v
}

// figuresOfFile is a metrics file's share of a timeline row.
func figuresOfFile(st *report.ServerTick) *serverFigures {
	p99 := st.TickMs.P99
	f := &serverFigures{tickP99: &p99}
	if st.RSSKB > 0 {
		rss := st.RSSKB
		f.rssKB = &rss
	} else {
		f.rssZero = true
	}
	return f
}

// promScrapeTimeout bounds one scrape from the monitor: the scraper's own
// client timeout plus slack, so a wedged endpoint costs one second's row.
const promScrapeTimeout = promsource.DefaultTimeout + time.Second

// promSampler is the monitor's Prometheus source (--server-metrics-
// prometheus): it scrapes on the monitor's schedule and keeps the windows
// the figures need. The monitor loop and captureFinal (on its own
// goroutine, while the loop still runs) both scrape, so mu guards src;
// each fetches and parses before taking mu (Source.Fetch touches no
// state), so the end of the run never waits behind a slow scrape.
type promSampler struct {
	mu     sync.Mutex
	src    *promsource.Source
	holdAt time.Time // every client of the run has had its connect slot
	// query, when the series are read through a Prometheus server, has it
	// compute the figures over the hold (promsource.Source.FinalQuery);
	// series are the series read each second; stale that the final
	// reading came before Prometheus scraped the server again.
	query  promsource.Querier
	series *promql.Series
	stale  bool

	final    *promsource.Block // captured while every client was connected
	finalErr error
	defaults promsource.Map // the profile's mapping, to tell the process_* defaults from what it named
}

func newPromSampler(cfg *Config, start time.Time) (*promSampler, error) {
	pc := promsource.Config{
		Scraper: promsource.Scraper{URL: cfg.ServerMetricsPrometheus, Fallback: cfg.ServerMetricsFallback},
		Map:     cfg.ServerMetricsMap, Start: start, Own: cfg.OwnPrometheus, Labels: cfg.ServerMetricsLabels,
	}
	p := &promSampler{holdAt: cfg.holdStart(start), defaults: cfg.ServerMetricsMap}
	if cfg.ServerMetricsPromQL != "" {
		c, err := promql.New(cfg.ServerMetricsPromQL)
		if err != nil {
			return nil, fmt.Errorf("server metrics: %w", err)
		}
		p.series, p.query = promql.NewSeries(c, promsource.Plan(pc)), c
		pc.Fetcher = p.series
	}
	src, err := promsource.New(pc)
	if err != nil {
		return nil, fmt.Errorf("server metrics map: %w", err)
	}
	p.src = src
	return p, nil
}

// promqlFreshWait bounds how long the final reading through Prometheus
// waits for a scrape of the server taken after the workers parked. Until
// then Prometheus holds what it scraped up to a scrape interval earlier,
// short of the last Inputs (inputs_accepted read 0.88 of those sent on a
// healthy 8 s leg at a 1 s interval). It is short of ENet's 5 s peer
// timeout: the parked workers do not service their hosts meanwhile.
const promqlFreshWait = 3 * time.Second

// awaitFresh waits, up to promqlFreshWait, until Prometheus holds a
// sample of the server taken at or after parked; false when it does not
// in time (the figures then stop at its last scrape, and a warning says
// so).
func (p *promSampler) awaitFresh(parked time.Time) bool {
	ctx, cancel := context.WithTimeout(context.Background(), promqlFreshWait)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		if t, err := p.series.Newest(ctx); err == nil && !t.Before(parked) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

// finalQueryTimeout bounds the Prometheus server's evaluation of the
// figures over the hold (a few queries per figure).
const finalQueryTimeout = 30 * time.Second

// sample scrapes once and returns the trailing window's figures for the
// timeline row.
func (p *promSampler) sample(ctx context.Context, now time.Time) (*serverFigures, error) {
	scrape := p.fetch(ctx)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := scrape.Apply(now, !now.Before(p.holdAt)); err != nil {
		return nil, err
	}
	b := p.src.Recent()
	f := &serverFigures{tickHist: p.src.LastStep("tick_ms"), own: p.src.OwnStep()}
	if v, ok := b.Phase("tick_ms", "p99"); ok {
		f.tickP99 = &v
	}
	if v, ok := b.Number("rss_kb"); ok {
		if v > 0 {
			rss := int64(v)
			f.rssKB = &rss
		} else {
			f.rssZero = true
		}
	}
	raw := map[string]json.RawMessage{}
	for _, k := range gatetable.WireKBsFields() {
		if v, ok := b.Number(k); ok {
			if j, err := json.Marshal(v); err == nil {
				raw[k] = j
			}
		}
	}
	f.diag.WireKBsPerClient = wireFigure(raw)
	return f, nil
}

// endHold freezes the population gauges at the latest scrape (monitor.
// endHold). Scrapes are applied under mu, so one applied before it was
// fetched before any goodbye went out; one applied after it is left out
// of the gauges even if its fetch began a moment before.
func (p *promSampler) endHold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.src.Freeze(serverwindow.Gauges())
}

// captureFinal takes the last scrape while every client is connected and
// fixes the figures over the hold.
func (p *promSampler) captureFinal(now time.Time) {
	if p.series != nil {
		fresh := p.awaitFresh(now)
		now = time.Now()
		p.mu.Lock()
		p.stale = !fresh
		p.mu.Unlock()
	}
	scrape := p.fetch(context.Background())
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := scrape.Apply(now, true); err != nil {
		p.finalErr = err
		return
	}
	if p.query == nil {
		p.final = p.src.Final()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), finalQueryTimeout)
	defer cancel()
	p.final = p.src.FinalQuery(ctx, p.query)
}

// fetch scrapes once, bounded by promScrapeTimeout and ctx, without mu.
func (p *promSampler) fetch(ctx context.Context) promsource.Scrape {
	ctx, cancel := context.WithTimeout(ctx, promScrapeTimeout)
	defer cancel()
	return p.src.Took(p.src.Fetch(ctx))
}

// finish embeds the figures over the hold as the report's server_tick,
// or records why there are none. Every missing figure becomes a warning
// naming its series; the block carries the same reasons under
// prometheus.missing for the gate.
func (p *promSampler) finish(res *Result, r *report.Report) {
	p.mu.Lock()
	captured := p.final != nil || p.finalErr != nil
	p.mu.Unlock()
	if !captured {
		// The run ended before the workers parked (every client gone):
		// scrape now, as the file source reads the file now.
		p.captureFinal(time.Now())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finalErr != nil {
		r.ServerMetricsError = p.finalErr.Error()
		return
	}
	b, err := json.Marshal(p.final)
	if err != nil {
		r.ServerMetricsError = fmt.Sprintf("%s: %v", p.src.URL(), err)
		return
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		r.ServerMetricsError = fmt.Sprintf("%s: %v", p.src.URL(), err)
		return
	}
	// The same account of its window a metrics file's block carries: every
	// figure of a Prometheus block is over it.
	if h, err := json.Marshal(promHold(p.final)); err == nil {
		raw[serverwindow.Key] = h
	}
	if b, err = json.Marshal(raw); err != nil {
		r.ServerMetricsError = fmt.Sprintf("%s: %v", p.src.URL(), err)
		return
	}
	r.ServerTick, res.ServerTickRaw = b, raw
	for _, path := range p.final.MissingPaths() {
		if p.defaults.FromDefault(path) {
			// rss_kb (and rss_startup_kb) and cpu_pct come unasked from a process collector: a
			// server without one would warn on every run. They stay under
			// prometheus.missing, so a gate that reads them says why.
			continue
		}
		r.Warnings = append(r.Warnings, fmt.Sprintf("server metrics (prometheus): %s missing: %s", path, p.final.Missing[path]))
	}
	if !p.final.Window.Hold {
		r.Warnings = append(r.Warnings, fmt.Sprintf("server metrics (prometheus): no scrape between the last connect slot and the end of the run; the figures cover t=%.1f–%.1f s, ramp included",
			p.final.Window.FromS, p.final.Window.ToS))
	}
	if p.stale {
		r.Warnings = append(r.Warnings, fmt.Sprintf("server metrics (promql): %s had not scraped the server again %s after the clients stopped sending: the figures end at its last scrape, and a total since start (inputs_accepted) may miss the last Inputs; scrape the server every second or two",
			p.src.URL(), promqlFreshWait))
	}
	if ok, failed, last := p.src.Scrapes(); failed > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("server metrics (prometheus): %d of %d scrapes failed, the last: %v", failed, ok+failed, last))
	}
}

// promHold is a Prometheus block's window as a serverwindow.Info: its
// figures, and the gauges' lowest and highest scrape over it.
func promHold(b *promsource.Block) serverwindow.Info {
	w := b.Window
	h := serverwindow.Info{FromS: w.FromS, ToS: w.ToS, SpanS: w.SpanS, Hold: w.Hold, Cumulative: true, Missing: b.Missing}
	for k := range b.Numbers {
		h.Figures = append(h.Figures, k)
	}
	for k := range b.Phases {
		h.Figures = append(h.Figures, k)
	}
	slices.Sort(h.Figures)
	for _, name := range serverwindow.Gauges() {
		d := b.Details[name]
		if d == nil || d.Kind != promsource.Gauge || d.Min == nil || d.Max == nil {
			continue
		}
		if h.Extremes == nil {
			h.Extremes = map[string]serverwindow.MinMax{}
		}
		h.Extremes[name] = serverwindow.MinMax{Min: *d.Min, Max: *d.Max, N: d.Scrapes}
	}
	return h
}
