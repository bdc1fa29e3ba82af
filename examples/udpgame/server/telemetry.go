package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/scalegate/scalegate/examples/internal/metricsfile"
)

// telemetry is what the server says of itself: the metrics file the gate
// reads (-metrics-json), a Prometheus endpoint (-prometheus-listen), both
// or neither. Only the tick loop calls it.
type telemetry struct {
	file *metricsfile.File
	prom *promMetrics
}

func (t *telemetry) tick(start time.Time, work time.Duration) {
	if t.file != nil {
		t.file.Tick(start, work)
	}
	if t.prom != nil {
		t.prom.tick.Observe(work.Seconds())
	}
}

// playing sets the players gauge the moment the count changes (the file
// writes the count with its next write).
func (t *telemetry) playing(n int) {
	if t.prom != nil {
		t.prom.players.Set(float64(n))
	}
}

func (t *telemetry) sent(n int) {
	if t.file != nil {
		t.file.CountOut(n)
	}
	if t.prom != nil {
		t.prom.sent.Add(float64(n))
	}
}

func (t *telemetry) received(n int) {
	if t.file != nil {
		t.file.CountIn(n)
	}
}

// inputApplied counts one input applied to a player: inputs_accepted,
// which the gate compares with the inputs its bots sent.
func (t *telemetry) inputApplied() {
	if t.file != nil {
		t.file.CountInputAccepted()
	}
	if t.prom != nil {
		t.prom.inputs.Inc()
	}
}

// bye counts a player's goodbye.
func (t *telemetry) bye() {
	if t.file != nil {
		t.file.CountBye()
	}
	if t.prom != nil {
		t.prom.byes.Inc()
	}
}

// promMetrics are the server's Prometheus series, on a registry of its
// own with the process collector (RSS and CPU). No series names the
// transport: a profile gating it declares the transport
// (server.metrics.transport_declared), as most teams' servers must.
type promMetrics struct {
	reg     *prometheus.Registry
	tick    prometheus.Histogram
	players prometheus.Gauge
	sent    prometheus.Counter
	inputs  prometheus.Counter
	byes    prometheus.Counter
}

func newPromMetrics() *promMetrics {
	m := &promMetrics{
		reg: prometheus.NewRegistry(),
		tick: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "udpgame_tick_duration_seconds", Help: "Tick work.",
			// 0.25 ms wide to 20 ms: a p99 near the 16.7 ms budget within 0.25 ms.
			Buckets: prometheus.LinearBuckets(0.00025, 0.00025, 80),
		}),
		players: prometheus.NewGauge(prometheus.GaugeOpts{Name: "udpgame_players", Help: "Players admitted."}),
		sent:    prometheus.NewCounter(prometheus.CounterOpts{Name: "udpgame_net_bytes_sent_total", Help: "UDP payload bytes sent."}),
		inputs:  prometheus.NewCounter(prometheus.CounterOpts{Name: "udpgame_inputs_accepted_total", Help: "Inputs applied to a player."}),
		byes:    prometheus.NewCounter(prometheus.CounterOpts{Name: "udpgame_byes_total", Help: "Players that said bye."}),
	}
	m.reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), m.tick, m.players, m.sent, m.inputs, m.byes)
	return m
}

// serve serves /metrics on addr until ctx ends. It returns once the
// listener is bound, so that "listening on" is printed only when both
// the game and its endpoint are up; a failure to serve later is printed.
func (m *promMetrics) serve(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("-prometheus-listen %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "udpgame server: /metrics: %v\n", err)
		}
	}()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Printf("metrics on http://%s/metrics\n", ln.Addr())
	return nil
}
