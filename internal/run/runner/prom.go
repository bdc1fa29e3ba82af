package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/reference/server/exposition"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/launcher"
	"github.com/scalegate/scalegate/internal/sources/promql"
	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// promLeg is a leg whose server's metrics are Prometheus series
// (profile server.metrics.source "prometheus" or "promql"): the port
// picked for its endpoint ({metrics_port}), the URL read (the endpoint, or
// the Prometheus server queried), the mapping and where it was written
// for the swarm. A "promql" leg also has its client, the labels that pick
// its server's series, and the file_sd file its target is announced in.
type promLeg struct {
	port     int
	url      string
	m        promsource.Map
	mapPath  string
	fallback string

	client  *promql.Client
	labels  map[string]string
	targets string
	// own are the profile's own figures' series: readiness waits for them
	// as for the mapping's.
	own promsource.Map
}

// preparePrometheus picks the leg's metrics port, resolves the URL (the
// reference server's own /metrics unless the profile names one; for
// "promql" the Prometheus server) and the mapping (the reference server's
// unless the profile gives one, placeholders filled for "promql"), and
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
	field, given := "map", sm.Map
	if r.o.Profile.Server.PromQL() {
		field, given = "queries", sm.Queries
	}
	if given != nil {
		b, err := json.Marshal(given)
		if err != nil {
			return fmt.Errorf("server.metrics.%s: %w", field, err)
		}
		if pl.m, err = promsource.ParseMap(b); err != nil {
			return fmt.Errorf("server.metrics.%s: %w", field, err)
		}
	}
	for name, d := range r.o.Profile.Figures {
		if d.Prometheus != nil {
			if pl.own == nil {
				pl.own = promsource.Map{}
			}
			pl.own[name] = *d.Prometheus
		}
	}
	if r.o.Profile.Server.PromQL() {
		if err := r.preparePromQL(pl, sm); err != nil {
			return err
		}
	}
	if err := report.WriteJSONAtomic(pl.mapPath, pl.m); err != nil {
		return fmt.Errorf("prometheus map: %w", err)
	}
	r.prom = pl
	return nil
}

// preparePromQL fills the placeholders of a "promql" leg's labels ({leg},
// {pod}) and makes its client.
func (r *legRun) preparePromQL(pl *promLeg, sm *profile.ServerMetrics) error {
	vars := map[string]string{promql.VarLeg: r.leg.ID, promql.VarPod: sm.Pod}
	m, labels, err := promql.Resolve(pl.m, sm.Labels, vars)
	if err != nil {
		return fmt.Errorf("server.metrics: %w", err)
	}
	if pl.client, err = promql.New(sm.URL); err != nil {
		return fmt.Errorf("server.metrics.url: %w", err)
	}
	if sm.TargetsFile != "" {
		if labels == nil {
			labels = map[string]string{}
		}
		if _, set := labels[announcedInstance]; !set {
			// The runner announces this leg's server itself, so it knows
			// the instance Prometheus scrapes it as: a leg whose labels
			// equal an earlier leg's (the same profile run twice against
			// one Prometheus) must not read that leg's series, which stay
			// queryable after its target is withdrawn.
			labels[announcedInstance] = pl.endpoint()
		}
	}
	pl.m, pl.labels, pl.url, pl.targets = m, labels, sm.URL, sm.TargetsFile
	return nil
}

// announcedInstance is the label Prometheus gives a scraped target's
// address, which an announced target carries explicitly.
const announcedInstance = "instance"

// endpoint is the address the leg's server exports its metrics on: the
// target announced in targets_file and the instance its queries match,
// which must be the same string.
func (pl *promLeg) endpoint() string { return "127.0.0.1:" + strconv.Itoa(pl.port) }

// fetcher reads the leg's series: a scrape of the endpoint, or the
// Prometheus server's instant query.
func (pl *promLeg) fetcher() promsource.Fetcher {
	if pl.client == nil {
		return &promsource.Scraper{URL: pl.url, Fallback: pl.fallback}
	}
	return promql.NewSeries(pl.client, promsource.Plan(promsource.Config{Map: pl.m, Own: pl.own, Labels: pl.labels}))
}

// awaited is what readiness waits for: the mapping's series and the own
// figures'.
func (pl *promLeg) awaited() promsource.Map {
	m := maps.Clone(pl.m)
	maps.Copy(m, pl.own)
	return m
}

// announceTarget writes a "promql" leg's server endpoint into the
// profile's targets_file (Prometheus's file_sd format), labelled with the
// leg's labels so the queries find exactly its series; withdraw empties
// the file when the leg ends, so the next leg's server is not confused
// with a port this one left. No targets_file: nothing to do (the team's
// Prometheus finds the server itself).
func (r *legRun) announceTarget() (withdraw func(), err error) {
	pl := r.prom
	if pl == nil || pl.targets == "" {
		return func() {}, nil
	}
	target := []map[string]any{{"targets": []string{pl.endpoint()}, "labels": pl.labels}}
	if err := report.WriteJSONAtomic(pl.targets, target); err != nil {
		return nil, fmt.Errorf("server.metrics.targets_file: %w", err)
	}
	return func() {
		if err := report.WriteJSONAtomic(pl.targets, []any{}); err != nil {
			fmt.Fprintf(r.o.Progress, "scalegate: leg %s: withdrawing its target: %v\n", r.leg.ID, err)
		}
	}, nil
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
	fe := r.prom.fetcher()
	var answered time.Time
	return func(ctx context.Context) error {
		fams, _, err := fe.Fetch(ctx)
		if err != nil {
			return err
		}
		if s, ok := fe.(*promql.Series); ok && len(fams) == 0 {
			// Prometheus answers before it has scraped the server (or
			// found it): the grace starts with the first series.
			return fmt.Errorf("%s holds no series of the leg's server yet: %s gave nothing", r.prom.url, s.Expr())
		}
		if answered.IsZero() {
			answered = time.Now()
		}
		err = promsource.Ready(ctx, fe, r.prom.awaited())
		if err != nil && time.Since(answered) >= seriesGrace {
			fmt.Fprintf(r.o.Progress, "scalegate: leg %s: %v; still absent %s after the endpoint answered: the gates reading them will be unevaluable\n", r.leg.ID, err, seriesGrace)
			return nil
		}
		return err
	}
}
