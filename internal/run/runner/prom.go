package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"github.com/scalegate/scalegate/internal/reference/server/exposition"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// promLeg is a leg whose server's metrics are read from its Prometheus
// endpoint (profile server.metrics.source "prometheus"): the port picked
// for it ({metrics_port}), the URL scraped, the mapping and where it was
// written for the swarm.
type promLeg struct {
	port     int
	url      string
	m        promsource.Map
	mapPath  string
	fallback string
}

// preparePrometheus picks the leg's metrics port, resolves the URL (the
// reference server's own /metrics unless the profile names one) and the
// mapping (the reference server's unless the profile gives one), and
// writes the mapping into the leg directory for the swarm.
func (r *legRun) preparePrometheus() error {
	sm := r.o.Profile.Server.Metrics
	port, err := r.ports.Next()
	if err != nil {
		return fmt.Errorf("metrics port: %w", err)
	}
	pl := &promLeg{port: port, fallback: sm.FallbackFormat, m: exposition.Map(),
		url: "http://127.0.0.1:" + strconv.Itoa(port) + "/metrics", mapPath: filepath.Join(r.res.Dir, "prometheus_map.json")}
	if sm.URL != "" {
		pl.url = launcher.Expand(sm.URL, map[string]string{"metrics_port": strconv.Itoa(port), "port": strconv.Itoa(r.res.Port)})
	}
	if sm.Map != nil {
		b, err := json.Marshal(sm.Map)
		if err != nil {
			return fmt.Errorf("server.metrics.map: %w", err)
		}
		if pl.m, err = promsource.ParseMap(b); err != nil {
			return fmt.Errorf("server.metrics.map: %w", err)
		}
	}
	if err := report.WriteJSONAtomic(pl.mapPath, pl.m); err != nil {
		return fmt.Errorf("prometheus map: %w", err)
	}
	r.prom = pl
	return nil
}

// seriesGrace is how long after the endpoint first answers a leg waits
// for the mapped series to appear. A series still absent then stays
// missing for the run (each gate reading it is unevaluable, naming the
// metric and selector) instead of holding the leg to ready_timeout_s.
const seriesGrace = 5 * time.Second

// ready is the leg's readiness check for its metrics source: the metrics
// file parses; or the Prometheus endpoint answers 200 with a body that
// parses and every mapped series exists (or seriesGrace has passed since
// it first answered).
//
// Each call gets a context that ends with the readiness wait (its timeout,
// or SIGINT), so a metrics path that is a FIFO or an endpoint that accepts
// and never answers cannot hold the leg.
func (r *legRun) ready() launcher.ReadyContextFunc {
	if r.prom == nil {
		return func(ctx context.Context) error { _, _, err := report.ReadServerTickContext(ctx, r.metrics); return err }
	}
	scraper := &promsource.Scraper{URL: r.prom.url, Fallback: r.prom.fallback}
	var answered time.Time
	return func(ctx context.Context) error {
		if _, _, err := scraper.Fetch(ctx); err != nil {
			return err
		}
		if answered.IsZero() {
			answered = time.Now()
		}
		err := promsource.Ready(ctx, scraper, r.prom.m)
		if err != nil && time.Since(answered) >= seriesGrace {
			fmt.Fprintf(r.o.Progress, "scalegate: leg %s: %v; still absent %s after the endpoint answered: the gates reading them will be unevaluable\n", r.leg.ID, err, seriesGrace)
			return nil
		}
		return err
	}
}
