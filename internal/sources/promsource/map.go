// Package promsource turns Prometheus scrapes of a game server into
// scalegate's server_tick figures.
//
// It scrapes the server's own metrics endpoint (docs/metrics.md, "From
// Prometheus"), so a server that already exports Prometheus metrics is
// gated without writing the JSON metrics file.
//
// A Map says which series gives which figure and how (gauge, counter
// rate, histogram quantile, summary quantile, info label). A Source
// scrapes the endpoint on the swarm's schedule, keeps what each window
// needs (counter increases with resets handled, gauge extremes), and
// renders the figures over the hold as the same name-keyed server_tick
// block the file source yields. A figure that cannot be measured is left
// out and its reason, naming the metric and selector, goes under
// prometheus.missing: missing is never zero.
package promsource

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
)

// Kind is how a figure is computed from its series.
type Kind string

// Kinds a mapping entry can name (exactly one per figure).
const (
	// Gauge: the series' value at the end of the window (min and max over
	// the window's scrapes are recorded beside it). Reads a gauge, a
	// counter (a since-start total) or an untyped series.
	Gauge Kind = "gauge"
	// CounterRate: the counter's increase over the window divided by the
	// window's length (per second), counter resets handled as Prometheus's
	// increase() does.
	CounterRate Kind = "counter_rate"
	// Counter: the counter's increase over the window, as a count (resets
	// handled as for CounterRate): ticks dropped, slow or degraded during
	// the hold, where a gauge of the total would count the ramp and the
	// warm-up too.
	Counter Kind = "counter"
	// Histogram: quantiles from the increase of each bucket over the
	// window, interpolated linearly inside the bucket as PromQL's
	// histogram_quantile does; the mean from _sum and _count.
	Histogram Kind = "histogram"
	// Summary: the quantiles as the summary exports them at the end of the
	// window (over the client library's own window); the mean from the
	// increase of _sum and _count over the window.
	Summary Kind = "summary"
	// Info: a label's value on a series (the info-metric convention,
	// `build_info{version="1.2"} 1`), for a string figure.
	Info Kind = "info"
)

// Figure is one mapping entry: exactly one of the kind fields names the
// metric; Labels select one series of it; Scale multiplies the result
// (seconds to ms: 1000; bytes to KiB: 1/1024). JSON and CUE spell it the
// same: {histogram: "game_tick_duration_seconds", scale: 1000}.
type Figure struct {
	Gauge       string            `json:"gauge,omitempty"`
	CounterRate string            `json:"counter_rate,omitempty"`
	Counter     string            `json:"counter,omitempty"`
	Histogram   string            `json:"histogram,omitempty"`
	Summary     string            `json:"summary,omitempty"`
	Info        string            `json:"info,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	// Scale multiplies every value of the figure; nil is 1.
	Scale *float64 `json:"scale,omitempty"`
	// Quantiles are the fields of a histogram or summary figure to
	// produce: "mean", "p50", "p90", "p95", "p99", "max", "min". Empty: all
	// the kind can produce (histogram: mean, p50, p90, p95, p99, max;
	// summary: mean and the quantiles it exports).
	Quantiles []string `json:"quantiles,omitempty"`
	// Label is the label an info figure reads.
	Label string `json:"label,omitempty"`
}

// Map is a mapping: server_tick figure name → entry.
type Map map[string]Figure

// shape is what a server_tick field holds.
type shape int

const (
	number shape = iota // a float
	count               // an integer (rounded)
	phase               // a timing object {min, mean, max, p95, p99}
	text                // a string
)

// Fields a mapping can name, with their shape in server_tick
// (docs/metrics.md). Derived fields (rss_startup_kb, ticks_sampled,
// ticks_total, window_s, and wire_peers / wire_out_kbs_per_client when not
// mapped) are not in it unless a server may also export them directly.
var fields = map[string]shape{
	"tick_ms": phase, "maintenance_ms": phase, "sensing_ms": phase, "integrate_ms": phase, "ai_ms": phase,
	"collision_ms": phase, "serialize_ms": phase, "other_ms": phase, "serialize_build_ms": phase, "serialize_send_ms": phase,
	"transport": text,
	"tick_hz":   number, "load_factor": number, "interest_scale": number, "load_factor_min": number, "load_factor_mean": number,
	"congestion_min_send_hz": number, "congestion_recovered_send_hz": number, "congestion_max_loss": number,
	"wire_out_kbs": number, "wire_in_kbs": number, "wire_out_pps": number, "wire_out_kbs_per_client": number,
	"cpu_pct": number, "sensor_checks_per_s": number, "snapshot_hz": number, "governor_tick_ewma_ms": number,
	"peers": count, "entities": count, "dropped_ticks": count, "rss_kb": count, "wire_peers": count,
	"contacts": count, "fused_contacts": count, "collision_contacts": count, "projectiles_live": count, "shots_fired_total": count,
	"hits_total": count, "stores_released_total": count, "despawns_total": count, "slow_ticks": count,
	"kicked": count, "malformed_dropped": count, "idle_timeouts": count, "inputs_accepted": count,
	"degraded_ticks": count, "gc_count": count, "send_queue_max": count, "slow_sends": count,
	"connect_attempts_dropped": count, "half_open_reset": count, "ai_stride": count, "kick_logs_suppressed": count,
}

// sinceStart are the figures a check compares with a since-start count of
// the swarm's, so only their total since start, a gauge's reading, is
// right: a counter's increase over the hold or its rate would read low and
// fail the check on a healthy server.
var sinceStart = map[string]string{
	"inputs_accepted": "inputs_accepted_ratio_min divides it by the swarm's inputs sent over the whole run, so the hold's increase or a rate would fail it",
}

// Defaults every scrape gets unless the map names the figure itself: the
// process_* series every Prometheus client library exports.
var defaults = Map{
	"rss_kb":  {Gauge: "process_resident_memory_bytes", Scale: ptr(1.0 / 1024)},
	"cpu_pct": {CounterRate: "process_cpu_seconds_total", Scale: ptr(100.0)},
}

// quantile fields of a timing object and the q each stands for (mean is
// not a quantile: -1).
var quantileQ = map[string]float64{"mean": -1, "min": 0, "p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99, "max": 1}

// histogramFields are what a histogram can produce: min cannot be (a
// bucket bounds the smallest observation only from below by its lower
// bound, which is 0 for the first bucket), so it stays missing.
var histogramFields = []string{"mean", "p50", "p90", "p95", "p99", "max"}

func ptr[T any](v T) *T { return &v }

// kind returns the entry's kind and metric, or an error when it names
// none or more than one.
func (f Figure) kind() (Kind, string, error) {
	var kinds []Kind
	var metric string
	for _, c := range []struct {
		k Kind
		v string
	}{{Gauge, f.Gauge}, {CounterRate, f.CounterRate}, {Counter, f.Counter}, {Histogram, f.Histogram}, {Summary, f.Summary}, {Info, f.Info}} {
		if c.v != "" {
			kinds, metric = append(kinds, c.k), c.v
		}
	}
	switch len(kinds) {
	case 0:
		return "", "", errors.New("names no kind: give one of gauge, counter_rate, counter, histogram, summary, info")
	case 1:
		return kinds[0], metric, nil
	}
	return "", "", fmt.Errorf("names %d kinds (%s): give exactly one", len(kinds), joinKinds(kinds))
}

func joinKinds(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// FieldError is one problem with a mapping, located by figure and the
// entry's field ("" for the entry as a whole), so a caller can point at
// the profile's line.
type FieldError struct {
	Figure string
	Field  string
	Msg    string
}

// Error reads "map.FIGURE.FIELD: MSG".
func (e *FieldError) Error() string {
	p := "map." + e.Figure
	if e.Field != "" {
		p += "." + e.Field
	}
	return p + ": " + e.Msg
}

// metricNameRe is Prometheus's classic metric name syntax; UTF-8 names
// must be quoted in expositions, which a mapping does not need to reach.
var metricNameRe = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
var labelNameRe = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Validate reports every problem with the mapping at once, each a
// *FieldError: an unknown figure, no kind or several, a kind that cannot
// produce the figure's shape (a histogram for a count, a gauge for a
// timing object), a malformed metric or label name, a scale that is not
// a positive finite number, quantiles on a kind without them or unknown
// ones, a label on a kind other than info.
func (m Map) Validate() error {
	var errs []error
	add := func(fig, field, format string, a ...any) {
		errs = append(errs, &FieldError{Figure: fig, Field: field, Msg: fmt.Sprintf(format, a...)})
	}
	for _, name := range sortedKeys(m) {
		f := m[name]
		sh, known := fields[name]
		if !known {
			add(name, "", "unknown figure: server_tick has no field %q a scrape can fill (known: %s)", name, strings.Join(sortedKeys(fields), ", "))
			continue
		}
		k, metric, err := f.kind()
		if err != nil {
			add(name, "", "%v", err)
			continue
		}
		if !metricNameRe.MatchString(metric) {
			add(name, string(k), "%q is not a Prometheus metric name", metric)
		}
		if want := kindsFor(sh); !slices.Contains(want, k) {
			add(name, string(k), "%s is %s; a %s figure takes %s", name, shapeName(sh), k, joinKinds(want))
		} else if why, ok := sinceStart[name]; ok && k != Gauge {
			add(name, string(k), "%s must be the server's total since start, read as a gauge even when the series is a counter ({gauge: %q}): %s", name, metric, why)
		}
		for _, l := range sortedKeys(f.Labels) {
			if !labelNameRe.MatchString(l) || l == "le" || l == "quantile" {
				add(name, "labels", "%q is not a label a selector can match (le and quantile belong to buckets and quantiles)", l)
			}
		}
		if f.Scale != nil && !(*f.Scale > 0 && !math.IsInf(*f.Scale, 0)) {
			add(name, "scale", "must be a positive finite number, got %v", *f.Scale)
		}
		validateQuantiles(name, k, f.Quantiles, add)
		if f.Label != "" && k != Info {
			add(name, "label", "only an info figure reads a label")
		}
		if k == Info && !labelNameRe.MatchString(f.Label) {
			add(name, "label", "an info figure needs the label to read, got %q", f.Label)
		}
	}
	return errors.Join(errs...)
}

// validateQuantiles checks a figure's quantiles against what its kind can
// produce (a histogram and a summary differ: buckets bound no min), adding
// each problem through add, Validate's collector.
func validateQuantiles(name string, k Kind, qs []string, add func(fig, field, format string, a ...any)) {
	switch {
	case len(qs) > 0 && k != Histogram && k != Summary:
		add(name, "quantiles", "only histogram and summary figures have quantiles")
	case k == Histogram:
		for _, q := range qs {
			if !slices.Contains(histogramFields, q) {
				add(name, "quantiles", "%q: a histogram produces %s (min has no bound from buckets)", q, strings.Join(histogramFields, ", "))
			}
		}
	case k == Summary:
		for _, q := range qs {
			if _, ok := quantileQ[q]; !ok {
				add(name, "quantiles", "%q: a summary produces mean, min (quantile 0), p50, p90, p95, p99, max (quantile 1)", q)
			}
		}
	}
}

func kindsFor(sh shape) []Kind {
	switch sh {
	case phase:
		return []Kind{Histogram, Summary}
	case text:
		return []Kind{Info}
	}
	return []Kind{Gauge, CounterRate, Counter}
}

func shapeName(sh shape) string {
	switch sh {
	case phase:
		return "a timing object {mean, p95, p99, max, ...}"
	case text:
		return "a string"
	case count:
		return "an integer"
	}
	return "a number"
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// WithDefaults is the mapping a scrape applies: m plus the process_*
// defaults (rss_kb, cpu_pct) for figures m does not name.
func (m Map) WithDefaults() Map {
	out := make(Map, len(m)+len(defaults))
	for k, v := range defaults {
		out[k] = v
	}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// IsDefault reports whether the figure comes from the defaults rather
// than from m: a default series a server does not export leaves its
// figure missing without holding up readiness.
func (m Map) IsDefault(figure string) bool {
	_, own := m[figure]
	_, def := defaults[figure]
	return def && !own
}

// FromDefault reports whether a figure, or the figure it is derived from
// (rss_startup_kb from rss_kb), comes from the defaults rather than m.
func (m Map) FromDefault(figure string) bool {
	if figure == "rss_startup_kb" {
		figure = "rss_kb"
	}
	return m.IsDefault(figure)
}

// Produces reports whether a scrape under this mapping (defaults
// included) can fill the server_tick field at path ("tick_ms.p99",
// "entities", "rss_startup_kb"), and why not when it cannot. A gate that
// reads a field the mapping cannot produce is unevaluable on every run:
// vet reports it up front. Produces assumes m validated.
func (m Map) Produces(path string) (bool, string) {
	full := m.WithDefaults()
	top, sub, _ := strings.Cut(path, ".")
	if ok, why, derived := full.producesDerived(top); derived {
		return ok, why
	}
	f, ok := full[top]
	if !ok {
		if _, known := fields[top]; known {
			return false, fmt.Sprintf("the mapping names no series for %s", top)
		}
		return false, fmt.Sprintf("server_tick.%s is not a figure a Prometheus scrape can fill", top)
	}
	k, _, err := f.kind()
	if err != nil {
		return false, fmt.Sprintf("map.%s %v", top, err)
	}
	if sub == "" {
		return true, ""
	}
	return producesSub(top, sub, f, k)
}

// producesDerived answers Produces for the fields a scrape fills from
// other mappings or by itself (derived reports that top is one of them).
// m includes the defaults.
func (m Map) producesDerived(top string) (ok bool, why string, derived bool) {
	has := func(name string) bool { _, ok := m[name]; return ok }
	switch top {
	case "schema_version", "source", "prometheus", "window_s":
		return true, "", true
	case "rss_startup_kb":
		ok, why := m.Produces("rss_kb")
		return ok, why, true
	case "degraded_ticks_share":
		if f, ok := m["degraded_ticks"]; ok && f.Counter != "" && has("tick_ms") {
			return true, "", true
		}
		return false, "degraded_ticks_share is degraded_ticks over the window's ticks: map degraded_ticks as a counter (its increase) and tick_ms (a histogram or summary, whose observations are the ticks)", true
	case "ticks_sampled", "ticks_total":
		if has("tick_ms") {
			return true, "", true
		}
		return false, top + " comes from tick_ms's observation count: map tick_ms (histogram or summary)", true
	case "tick_hz":
		if has("tick_hz") || has("tick_ms") {
			return true, "", true
		}
		return false, "tick_hz needs its own mapping or tick_ms (histogram or summary), whose observation rate it is", true
	case "wire_peers":
		if has("wire_peers") || has("peers") {
			return true, "", true
		}
		return false, "wire_peers needs its own mapping or peers (its minimum over the hold)", true
	case "wire_out_kbs_per_client":
		if has(top) {
			return true, "", true
		}
		okKBs, _ := m.Produces("wire_out_kbs")
		okPeers, _ := m.Produces("wire_peers")
		if okKBs && okPeers {
			return true, "", true
		}
		return false, "wire_out_kbs_per_client needs its own mapping, or wire_out_kbs and peers (or wire_peers) to divide", true
	}
	return false, "", false
}

// producesSub answers Produces for a phase figure's field (top.sub) mapped
// to f, a series of kind k.
func producesSub(top, sub string, f Figure, k Kind) (bool, string) {
	if fields[top] != phase {
		return false, fmt.Sprintf("%s is %s, it has no field %q", top, shapeName(fields[top]), sub)
	}
	want := f.Quantiles
	if len(want) == 0 {
		if k == Histogram {
			want = histogramFields
		} else {
			// A summary's quantiles are whatever it exports: only mean is
			// certain before a scrape.
			if sub == "mean" {
				return true, ""
			}
			if _, ok := quantileQ[sub]; ok {
				return true, ""
			}
		}
	}
	if slices.Contains(want, sub) {
		return true, ""
	}
	if k == Histogram && sub == "min" {
		return false, fmt.Sprintf("%s.min: a histogram gives no minimum (its buckets bound observations from above)", top)
	}
	return false, fmt.Sprintf("%s.%s is not among the mapping's quantiles %v", top, sub, want)
}

// ParseMap decodes a mapping from JSON (the swarm's --server-metrics-map
// file): unknown keys in an entry are errors, and so is whatever Validate
// finds.
func ParseMap(b []byte) (Map, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var m Map
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("prometheus map: %w", err)
	}
	if dec.More() {
		return nil, errors.New("prometheus map: trailing data after the JSON object")
	}
	if m == nil {
		return nil, errors.New("prometheus map: not a JSON object")
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("prometheus map: %w", err)
	}
	return m, nil
}

// mapReadTimeout bounds the mapping file's read.
const mapReadTimeout = 10 * time.Second

// MaxMapBytes bounds a mapping file: a mapping names a few dozen figures.
const MaxMapBytes = 1 << 20

// LoadMap reads and parses a mapping file, naming it on error. Only a
// regular file of at most MaxMapBytes is read, within mapReadTimeout.
func LoadMap(path string) (Map, error) {
	ctx, cancel := context.WithTimeout(context.Background(), mapReadTimeout)
	defer cancel()
	b, err := boundedfile.ReadFile(ctx, path, MaxMapBytes)
	if err != nil {
		return nil, fmt.Errorf("prometheus map: %w", err)
	}
	m, err := ParseMap(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// selectorString renders a metric and its label matchers the way PromQL
// writes them: game_players{state="joined"}.
func selectorString(metric string, labels map[string]string) string {
	if len(labels) == 0 {
		return metric
	}
	parts := make([]string, 0, len(labels))
	for _, k := range sortedKeys(labels) {
		parts = append(parts, k+"="+strconv.Quote(labels[k]))
	}
	return metric + "{" + strings.Join(parts, ",") + "}"
}
