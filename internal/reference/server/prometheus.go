package server

import (
	"math"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scalegate/scalegate/internal/guard/boundedhttp"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/reference/server/exposition"
)

// promLimits bound the Prometheus endpoint: it answers a scraper or two a
// second, so a handful of connections and short timeouts are plenty, and
// a client that holds connections open or trickles a request cannot tie
// the server's goroutines up.
type promLimits struct {
	maxConns, maxInFlight                         int
	readHeader, read, write, idle, handlerTimeout time.Duration
	maxHeaderBytes                                int
}

var defaultPromLimits = promLimits{
	maxConns: 16, maxInFlight: 4,
	readHeader: 2 * time.Second, read: 5 * time.Second, write: 10 * time.Second, idle: 30 * time.Second,
	handlerTimeout: 5 * time.Second, maxHeaderBytes: 8 << 10,
}

// promExport is the reference server's Prometheus exposition ([metrics]
// prometheus_listen): the same figures as the metrics file, with the same
// meanings (docs/metrics.md), as Prometheus series. The loop publishes
// its figures into atomics once a tick (no lock, no allocation); the
// collectors read them when a scrape comes. The histogram is observed on
// the loop directly (client_golang's Observe is lock-free).
type promExport struct {
	reg  *prometheus.Registry
	tick prometheus.Histogram
	// phase is each tick phase's histogram, by Phase (one child each,
	// resolved once: an observation takes no label lookup).
	phase [numPhases]prometheus.Observer

	peers, entities, contacts, projectiles      atomic.Int64
	fused                                       atomic.Int64
	shots, hits, stores, despawns               atomic.Int64
	dropped, slow, degraded, inputs, kicked     atomic.Int64
	loadFactor, interestScale, loadFactorS      atomicFloat
	ccMinHz, ccRecoveredHz, ccMaxLoss           atomicFloat
	wireOutBytes, wireInBytes, wireOutDatagrams atomicFloat
	srv                                         *boundedhttp.Server
}

// atomicFloat is a float64 the loop stores and a scrape loads.
type atomicFloat struct{ bits atomic.Uint64 }

func (f *atomicFloat) store(v float64) { f.bits.Store(math.Float64bits(v)) }
func (f *atomicFloat) load() float64   { return math.Float64frombits(f.bits.Load()) }
func (f *atomicFloat) add(v float64)   { f.store(f.load() + v) } // loop goroutine only

// newPromExport builds the registry: the tick histogram, the loop's
// figures, the info series naming the transport, and the Go and process
// collectors (process_resident_memory_bytes, process_cpu_seconds_total:
// what any client library exports, and what a scrape's rss_kb and cpu_pct
// default to).
func newPromExport(transportName string) *promExport {
	p := &promExport{reg: prometheus.NewRegistry()}
	p.tick = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: exposition.TickDuration, Buckets: exposition.TickBuckets(),
		Help: "Whole tick work, from the tick's start to the end of its sends (the metrics file's tick_ms).",
	})
	gauge := func(name, help string, v func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, v)
	}
	counter := func(name, help string, v func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, v)
	}
	phases := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: exposition.PhaseDuration, Buckets: exposition.TickBuckets(),
		Help: "Each tick phase's work time, by phase (the metrics file's phase timings, e.g. integrate_ms: the flight model).",
	}, []string{exposition.PhaseLabel})
	for i, name := range phaseNames {
		p.phase[i] = phases.WithLabelValues(name)
	}
	i := func(a *atomic.Int64) func() float64 { return func() float64 { return float64(a.Load()) } }
	f := func(a *atomicFloat) func() float64 { return a.load }
	p.reg.MustRegister(
		p.tick, phases,
		gauge(exposition.Peers, "Joined peers (with an entity) at the last tick (the file's peers).", i(&p.peers)),
		gauge(exposition.Entities, "Live entities at the last tick (the file's entities).", i(&p.entities)),
		gauge(exposition.Contacts, "Contact-table entries summed over every sensor owner (the file's contacts).", i(&p.contacts)),
		gauge(exposition.FusedContacts, "Of those, the entries known only through the team datalink (the file's fused_contacts).", i(&p.fused)),
		gauge(exposition.ProjectilesLive, "Live projectiles (the file's projectiles_live).", i(&p.projectiles)),
		counter(exposition.ShotsFired, "Gun hitscans fired since start (the file's shots_fired_total).", i(&p.shots)),
		counter(exposition.Hits, "Hitscans that hit since start (the file's hits_total).", i(&p.hits)),
		counter(exposition.StoresReleased, "Projectiles released by the store button since start.", i(&p.stores)),
		counter(exposition.Despawns, "Projectiles despawned since start (the file's despawns_total).", i(&p.despawns)),
		counter(exposition.DroppedTicks, "Ticks skipped by the loop's catch-up cap since start (the file's dropped_ticks).", i(&p.dropped)),
		counter(exposition.SlowTicks, "Ticks whose work exceeded [metrics] slow_tick_ms since start (the file's slow_ticks).", i(&p.slow)),
		counter(exposition.InputsAccepted, "Inputs applied to a peer's entity since start (the file's inputs_accepted).", i(&p.inputs)),
		counter(exposition.Kicked, "Peers sent Notice(kicked) since start (the file's kicked).", i(&p.kicked)),
		gauge(exposition.LoadFactor, "The overrun governor's load factor, 1 = full rate (the file's load_factor).", f(&p.loadFactor)),
		gauge(exposition.InterestScale, "The overrun governor's interest-radius scale (the file's interest_scale).", f(&p.interestScale)),
		counter(exposition.DegradedTicks, "Ticks run with load_factor < 1 since start (the file's degraded_ticks).", i(&p.degraded)),
		counter(exposition.LoadFactorSeconds, "The load factor integrated over wall time since start (the file's cumulative load_factor_s): its rate is the time-weighted mean load factor.", f(&p.loadFactorS)),
		gauge(exposition.CongestionMinHz, "Lowest snapshot send rate any peer was at, run-long watermark (the file's congestion_min_send_hz).", f(&p.ccMinHz)),
		gauge(exposition.CongestionRecovHz, "How far the lowest send rate climbed back (the file's congestion_recovered_send_hz).", f(&p.ccRecoveredHz)),
		gauge(exposition.CongestionMaxLoss, "Highest transport loss estimate any peer showed (the file's congestion_max_loss).", f(&p.ccMaxLoss)),
		counter(exposition.WireSentBytes, "Socket-level bytes sent (framing, compression, encryption included; IP/UDP headers excluded), added every tick.", f(&p.wireOutBytes)),
		counter(exposition.WireReceivedBytes, "Socket-level bytes received, added every tick.", f(&p.wireInBytes)),
		counter(exposition.WireSentDatagrams, "Datagrams sent, added every tick.", f(&p.wireOutDatagrams)),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: exposition.Info,
		Help: "Always 1; the transport label is the backend spoken (the file's transport)."}, []string{exposition.InfoTransportLabel})
	info.WithLabelValues(transportName).Set(1)
	p.reg.MustRegister(info)
	p.loadFactor.store(1)
	p.interestScale.store(1)
	return p
}

// publish is the loop's once-a-tick update: one histogram observation per
// phase and the tick, and a few atomic stores, nothing per peer.
func (p *promExport) publish(s *Server, total time.Duration, ph *[numPhases]time.Duration) {
	p.tick.Observe(total.Seconds())
	for i, d := range ph {
		p.phase[i].Observe(d.Seconds())
	}
	p.peers.Store(int64(len(s.viewers)))
	p.entities.Store(int64(s.sim.World.Len()))
	p.contacts.Store(int64(s.sim.ContactEntries))
	p.fused.Store(int64(s.sim.FusedEntries))
	p.projectiles.Store(int64(s.sim.ProjectilesLive()))
	w := &s.sim.Weapons
	p.shots.Store(w.ShotsFired)
	p.hits.Store(w.Hits)
	p.stores.Store(w.StoresReleased)
	p.despawns.Store(w.Despawns)
	p.dropped.Store(s.droppedTicks())
	p.slow.Store(s.met.slowTicks)
	p.inputs.Store(s.met.inputsAccepted)
	p.kicked.Store(s.met.kicked)
	p.loadFactor.store(s.gov.loadFactor())
	p.interestScale.store(s.gov.interestScale())
	p.degraded.Store(s.gov.engaged)
	p.loadFactorS.store(s.met.cum.lfS)
	p.ccMinHz.store(s.cc.minHz)
	p.ccRecoveredHz.store(s.cc.recoveredHz)
	p.ccMaxLoss.store(s.cc.maxLoss)
}

// addWire adds one wire-rate sample's traffic to the byte counters.
func (p *promExport) addWire(r transport.WireRates) {
	if r.Interval <= 0 {
		return
	}
	sec := r.Interval.Seconds()
	p.wireOutBytes.add(r.BytesOutPerSec * sec)
	p.wireInBytes.add(r.BytesInPerSec * sec)
	p.wireOutDatagrams.add(r.DatagramsOutPerSec * sec)
}

// listen serves /metrics on addr through boundedhttp, as the metrics
// document's endpoint is served ("PORT" binds loopback, ":PORT" every
// interface: exposing the endpoint beyond the machine takes an explicit
// choice), text or OpenMetrics as the scraper asks.
func (p *promExport) listen(addr string, lim promLimits) error {
	mux := http.NewServeMux()
	mux.Handle("GET "+exposition.Path, promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{
		EnableOpenMetrics:   true,
		MaxRequestsInFlight: lim.maxInFlight,
		Timeout:             lim.handlerTimeout,
		// A collector that fails leaves its series out; the rest are
		// served, and a scrape finds the missing one missing.
		ErrorHandling: promhttp.ContinueOnError,
	}))
	srv, err := boundedhttp.Listen(addr, mux, boundedhttp.Options{MaxConns: lim.maxConns, ReadHeaderTimeout: lim.readHeader,
		ReadTimeout: lim.read, WriteTimeout: lim.write, IdleTimeout: lim.idle, MaxHeaderBytes: lim.maxHeaderBytes})
	if err != nil {
		return &ListenError{Addr: addr + " ([metrics] prometheus_listen)", Err: err}
	}
	p.srv = srv
	return nil
}

// url is the exposition's URL, "" when not listening.
func (p *promExport) url() string {
	if p == nil || p.srv == nil {
		return ""
	}
	return "http://" + p.srv.Addr() + exposition.Path
}

// stop closes the endpoint and waits for its goroutines.
func (p *promExport) stop() {
	if p.srv != nil {
		p.srv.Close()
	}
}
