// Package swarmcmd builds a profile leg's `scalegate swarm` command line
// and vets its flags.
//
// It is the one builder of the `scalegate swarm` command line from a
// profile's leg, used by the gate's leg runner and by the Kubernetes Job
// renderer, and it holds the rules a swarm's flags must satisfy that a
// profile is vetted against before anything starts. A flag added to the
// swarm's load is added here once, so the local run, the shards and the
// pods cannot drift apart.
package swarmcmd

import (
	"maps"
	"slices"
	"strconv"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// Options says where one swarm process of a leg runs and what it writes.
type Options struct {
	// Host and Port are the server's address as the swarm reaches it.
	Host, Port string
	// Pattern replaces the leg's pattern (a trace materialised into the
	// leg's directory); "" keeps the leg's.
	Pattern string
	// Report is the --json path; "" leaves it to the caller (a pod script
	// that adds its own).
	Report string
	// ServerMetrics is the server's metrics file or URL; "" for none.
	ServerMetrics string
	// Prometheus, instead, has the swarm scrape the server's Prometheus
	// endpoint through a mapping file.
	Prometheus *Prometheus
	// ImpairmentFile is where the profile's impairment schedule was
	// written (--degrade-schedule); "" when the profile has none.
	ImpairmentFile string
	// Strict is the run's --strict, which decides the asserts' levels.
	Strict bool
	// Asserts forwards the leg's hard gates as --assert-* flags, so the
	// swarm's own exit status and report judge the same rule.
	Asserts bool
	// Shard is "I/N" for one shard of N ("" for an unsharded swarm), with
	// StartAt the shards' shared start instant (RFC 3339).
	Shard, StartAt string
	// Progress is the --progress mode ("" for the swarm's default).
	Progress string
	// FiguresFile holds the profile's own figures (--server-figures; ""
	// when it declares none).
	FiguresFile string
}

// Prometheus is a server metrics source scraped from a Prometheus
// endpoint: its URL, the JSON mapping file, and the exposition format
// assumed when the endpoint sends no usable Content-Type ("" for none).
// With PromQL, URL is a Prometheus server queried instead, and Labels
// pick the server's series among all it holds.
type Prometheus struct {
	URL, MapFile, Fallback string
	PromQL                 bool
	Labels                 map[string]string
}

// Args is the swarm's arguments after the `swarm` subcommand: the load,
// where the swarm reads and writes, the load's shape, then how the run is
// judged and placed. The order is the command line's, kept stable.
func Args(p *profile.Profile, leg profile.Leg, o Options) []string {
	args := []string{o.Host, o.Port,
		"--clients", strconv.Itoa(p.ClientsFor(leg)),
		"--duration", fmtFlag(p.DurationS),
		"--rate", fmtFlag(p.RateHz),
		"--transport", p.TransportFor(leg),
		"--ramp-ms", strconv.Itoa(p.RampMs),
	}
	args = append(args, o.fileFlags()...)
	args = append(args, "--rss-sample-interval-s", fmtFlag(p.RSSSampleIntervalS))
	args = append(args, patternFlag(leg, o.Pattern)...)
	args = append(args, shapeFlags(p)...)
	return append(args, o.runFlags(p, leg)...)
}

// fileFlags are what the swarm writes (its report) and where it reads the
// server's figures from (a metrics file or URL, Prometheus, the profile's
// own figures).
func (o Options) fileFlags() []string {
	var args []string
	if o.Report != "" {
		args = append(args, "--json", o.Report)
	}
	if o.ServerMetrics != "" {
		args = append(args, "--server-metrics", o.ServerMetrics)
	}
	if pm := o.Prometheus; pm != nil {
		args = append(args, pm.args()...)
	}
	if o.FiguresFile != "" {
		args = append(args, "--server-figures", o.FiguresFile)
	}
	return args
}

// patternFlag is the leg's flight: its mix, else the pattern the caller
// put in its place (a materialised trace), else the leg's pattern.
func patternFlag(leg profile.Leg, pattern string) []string {
	switch {
	case leg.PatternMix != "":
		return []string{"--pattern-mix", leg.PatternMix}
	case pattern != "":
		return []string{"--pattern", pattern}
	}
	return []string{"--pattern", leg.Pattern}
}

// shapeFlags are the profile's settings of the load that have defaults in
// the swarm (a setting left at zero is not passed) and its delivery policy.
func shapeFlags(p *profile.Profile) []string {
	var args []string
	if p.Threads > 0 {
		args = append(args, "--threads", strconv.Itoa(p.Threads))
	}
	if p.EntityType != "" {
		args = append(args, "--entity-type", p.EntityType)
	}
	if p.Harness.TestBusyUsPerClient > 0 {
		args = append(args, "--test-busy-us", fmtFlag(p.Harness.TestBusyUsPerClient))
	}
	if p.WarmupS > 0 {
		args = append(args, "--warmup-s", fmtFlag(p.WarmupS))
	}
	return append(args, DeliveryFlags(p.Delivery)...)
}

// runFlags are the leg's impairment, the asserts and early aborts that
// judge it from inside the swarm, how the swarm reports progress, and its
// shard of the load.
func (o Options) runFlags(p *profile.Profile, leg profile.Leg) []string {
	var args []string
	if o.ImpairmentFile != "" {
		args = append(args, "--degrade-schedule", o.ImpairmentFile, "--degrade-seed", strconv.FormatUint(p.ImpairmentSeed, 10))
	}
	if o.Asserts {
		args = append(args, AssertFlags(p, leg, o.Strict)...)
		args = append(args, AbortFlags(p, leg, o.Strict)...)
	}
	if o.Progress != "" {
		args = append(args, "--progress", o.Progress)
	}
	if o.Shard != "" {
		args = append(args, "--shard", o.Shard, "--start-at", o.StartAt)
	}
	return args
}

// AssertFlags are the swarm --assert-* flags for the gates the profile
// declares that are hard on this leg, in the gate table's order. Advisory
// gates are not forwarded (the swarm would fail on them), and neither are
// gates without a swarm flag, nor phase-scoped ones (a swarm assert reads
// the whole run).
func AssertFlags(p *profile.Profile, leg profile.Leg, strict bool) []string {
	var out []string
	tier := p.EffectiveTier(strict)
	for _, g := range gatetable.All() {
		spec, declared := p.Gates[g.Name]
		if !declared || g.Flag == "" || spec.Phase != "" {
			continue
		}
		if level, _ := g.LevelIn(spec.Level, tier); level != gatetable.LevelHard {
			continue
		}
		if g.Kind == gatetable.Switch {
			out = append(out, "--"+g.Flag)
			continue
		}
		if thr, ok := p.GateThreshold(g, leg); ok {
			out = append(out, "--"+g.Flag, fmtFlag(thr))
		}
	}
	return out
}

// AbortFlags are the swarm --abort-on-breach flags of the leg's early-abort
// rules (profile.AbortRules), one per gate, as GATE:AFTER_S:MARGIN_PCT.
// Each names a gate AssertFlags forwards, whose threshold the swarm reads
// from that assert.
func AbortFlags(p *profile.Profile, leg profile.Leg, strict bool) []string {
	var out []string
	for _, r := range p.AbortRules(leg, strict) {
		v := r.Gate.Name + ":" + strconv.Itoa(r.AfterS) + ":" + fmtFlag(r.MarginPct)
		if r.Gate.Own {
			// No assert flag carries an own gate's threshold: the value does.
			v += ":" + fmtFlag(r.Threshold)
		}
		out = append(out, "--abort-on-breach", v)
	}
	return out
}

// DeliveryFlags are the swarm flags of a delivery policy that differ from
// the swarm's defaults (gatetable's), so the swarm's report `passed` and
// exit status judge delivery by the profile's policy, as the gate does.
func DeliveryFlags(d gatetable.DeliveryPolicy) []string {
	var out []string
	if d.RateHz > 0 {
		out = append(out, "--delivery-rate-hz", fmtFlag(d.RateHz))
	}
	if d.MinRateFraction != 0 && d.MinRateFraction != gatetable.DefaultMinRateFraction {
		out = append(out, "--delivery-min-rate-fraction", fmtFlag(d.MinRateFraction))
	}
	if d.MaxGapMs != 0 && d.MaxGapMs != gatetable.DefaultMaxGapMs {
		out = append(out, "--delivery-max-gap-ms", fmtFlag(d.MaxGapMs))
	}
	return out
}

func fmtFlag(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// args are the swarm flags of the source.
func (pm *Prometheus) args() []string {
	if pm.PromQL {
		args := []string{"--server-metrics-promql", pm.URL, "--server-metrics-map", pm.MapFile}
		for _, k := range slices.Sorted(maps.Keys(pm.Labels)) {
			args = append(args, "--server-metrics-label", k+"="+pm.Labels[k])
		}
		return args
	}
	args := []string{"--server-metrics-prometheus", pm.URL, "--server-metrics-map", pm.MapFile}
	if pm.Fallback != "" {
		args = append(args, "--server-metrics-fallback-format", pm.Fallback)
	}
	return args
}
