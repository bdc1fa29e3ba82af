package gatetable

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/promsource"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// A team's own figures (docs/metrics.md, "Your own figures"): a profile
// declares, under figures:, a figure its server measures and where it is
// (a JSON path of the metrics file, a Prometheus selector), its unit, its
// direction and the statistics it offers. Each statistic is then a gate
// named as every gate is, the figure, the statistic and the bound
// (physics_ms_p99_max), built here from the declaration so that it has
// what a table entry has: a title, a unit, a direction, a tier rule, a
// window, the server field it reads. The swarm computes the figure over
// the hold into server_tick.NAME, an object of its statistics, by the same
// code as the built-in figures (serverwindow, promsource), and the gate
// reads it like any other server field: missing is unevaluable.

// OwnFigure is one figure a profile declares (figures.NAME). File and
// Prometheus are its sources, one per metrics source of the profile: the
// leg reads the one its server.metrics.source names. A new source (PromQL)
// is one more optional field beside them.
type OwnFigure struct {
	// Unit of the figure's values ("ms"; "" for counts).
	Unit string `json:"unit"`
	// Better is "lower" (a gate on it is a ceiling, NAME_STAT_max) or
	// "higher" (a floor, NAME_STAT_min).
	Better string `json:"better"`
	// Stats are the statistics the figure offers (empty: every one its
	// kind can give, OwnStats).
	Stats []string `json:"stats,omitempty"`
	// Timing: the figure is a time the server's CPU decides, which the
	// swarm shares: its gates follow the tier rule of the tick budgets
	// (advisory in the pr tier unless a level is declared) and a failure
	// on a harness-bound leg is inconclusive.
	Timing bool `json:"timing,omitempty"`
	// Phase: the figure is one of the tick's phases, under the team's own
	// name: its mean per tick is drawn beside the built-in phases in
	// report.html and is a column of a sweep's matrix (OwnPhases).
	Phase bool `json:"phase,omitempty"`
	// File is where the metrics file holds it: a JSON path under its kind.
	File *serverwindow.FileFigure `json:"file,omitempty"`
	// Prometheus is the series it is scraped from: a selector under its
	// kind, as a mapping entry (promsource.Figure).
	Prometheus *promsource.Figure `json:"prometheus,omitempty"`
}

// OwnFigures are a profile's own figures by name.
type OwnFigures map[string]OwnFigure

// Metrics sources a figure can be read from (profile server.metrics.source).
const (
	SourceFile       = "file"
	SourcePrometheus = "prometheus"
)

// ownStats is what each kind can give over a window: a histogram its
// bucket quantiles (no min: buckets bound observations from above only),
// a summary what it exports, a gauge its lowest and highest reading, a
// counter its increase and a counter rate its increase per second.
var ownStats = map[string][]string{
	"histogram":    {"mean", "p50", "p90", "p95", "p99", "max"},
	"summary":      {"mean", "min", "p50", "p90", "p95", "p99", "max"},
	"gauge":        {"min", "max"},
	"counter":      {"increase"},
	"counter_rate": {"rate"},
}

// OwnStats is what a kind of own figure offers, in order; nil for a kind
// an own figure cannot have.
func OwnStats(kind string) []string { return slices.Clone(ownStats[kind]) }

// ownNameRe is a figure's name: it becomes a server_tick field and the
// front of its gates' names.
var ownNameRe = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// Source is the figure's source for a metrics source: its kind and where
// it is read (a JSON path or a selector), ok false when it declares none.
func (d OwnFigure) Source(source string) (kind, where string, ok bool) {
	switch source {
	case SourcePrometheus:
		if d.Prometheus == nil {
			return "", "", false
		}
		k, sel, err := d.Prometheus.KindSelector()
		if err != nil {
			return "", "", false
		}
		return string(k), sel, true
	case SourceFile:
		if d.File == nil {
			return "", "", false
		}
		k, path, err := d.File.Kind()
		if err != nil {
			return "", "", false
		}
		return k, path, true
	}
	return "", "", false
}

// Offered is what the figure offers read from source: its declared stats
// (or all its kind gives) in the kind's order.
func (d OwnFigure) Offered(source string) []string {
	kind, _, ok := d.Source(source)
	if !ok {
		return nil
	}
	all := ownStats[kind]
	if len(d.Stats) == 0 {
		return slices.Clone(all)
	}
	var out []string
	for _, s := range all {
		if slices.Contains(d.Stats, s) {
			out = append(out, s)
		}
	}
	return out
}

// bound is the gate-name suffix of the figure's direction.
func (d OwnFigure) bound() string {
	if d.Better == "higher" {
		return "min"
	}
	return "max"
}

// OwnGateName is the gate on stat of the figure name.
func (d OwnFigure) OwnGateName(name, stat string) string {
	return name + "_" + stat + "_" + d.bound()
}

// OwnGate is the gate on one statistic of a declared figure read from
// source (it need not be offered: ParseOwnGate checks that).
func (d OwnFigure) OwnGate(name, stat, source string) Gate {
	kind, where, _ := d.Source(source)
	g := Gate{Name: d.OwnGateName(name, stat), Title: name + " " + stat, Unit: d.Unit, Window: WindowServerHold,
		Metric:       fmt.Sprintf("server_tick.%s.%s (%s: %s %s)", name, stat, source, kind, where),
		ServerFields: []string{name + "." + stat}, Own: true,
		Doc: "a figure the profile declares (docs/metrics.md, \"Your own figures\")"}
	if d.Better == "higher" {
		g.Dir = AtLeast
	}
	if d.Timing {
		g.Tier, g.Timing = StrictOnly, true
	}
	g.Measure = func(m *Metrics) (float64, error) { return m.Tick(name, stat) }
	// The second's own figure (timeline[].own): what early abort watches.
	key := name + "." + stat
	g.PerSecond = func(p report.TimelinePoint) (float64, bool) {
		v, ok := p.Own[key]
		return v, ok
	}
	return g
}

// OwnGates are the gates of every statistic each figure offers read from
// source, by figure name, then in the kind's order of statistics.
func (ds OwnFigures) OwnGates(source string) []Gate {
	var out []Gate
	for _, name := range sortedNames(ds) {
		d := ds[name]
		for _, stat := range d.Offered(source) {
			out = append(out, d.OwnGate(name, stat, source))
		}
	}
	return out
}

// OwnPhases are the figures declared tick phases read from source, by
// name: each one's mean, read like the built-in phases (TickPhases).
func (ds OwnFigures) OwnPhases(source string) []Figure {
	var out []Figure
	for _, name := range sortedNames(ds) {
		d := ds[name]
		kind, where, ok := d.Source(source)
		if !d.Phase || !ok || !slices.Contains(ownStats[kind], "mean") {
			continue
		}
		out = append(out, Figure{Name: name + "_mean", Title: name, Path: fmt.Sprintf("server_tick.%s.mean (%s: %s %s)", name, source, kind, where), Unit: d.Unit,
			Read: func(m *Metrics) (float64, error) { return m.Tick(name, "mean") }})
	}
	return out
}

// AllWith is All followed by the gates of the declared figures read from
// source: every gate a profile with these figures can name.
func AllWith(ds OwnFigures, source string) []Gate {
	return append(All(), ds.OwnGates(source)...)
}

// LookupWith finds a gate by name among AllWith.
func LookupWith(name string, ds OwnFigures, source string) (Gate, bool) {
	if g, ok := Lookup(name); ok {
		return g, true
	}
	for _, g := range ds.OwnGates(source) {
		if g.Name == name {
			return g, true
		}
	}
	return Gate{}, false
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// ParseOwnGate reads a gate name that is not a built-in gate as a gate on
// a declared figure (NAME_STAT_max or NAME_STAT_min) read from source, and
// says in words what is wrong when it is not one: no such figure (with
// the nearest declared name), a statistic the figure's kind cannot give or
// its declaration does not offer, or a bound against its direction.
func ParseOwnGate(gate string, ds OwnFigures, source string) (Gate, error) {
	// The longest name first: with physics and physics_ms declared,
	// physics_ms_p99_max is a gate on physics_ms.
	names := sortedNames(ds)
	slices.SortStableFunc(names, func(a, b string) int { return len(b) - len(a) })
	for _, name := range names {
		rest, ok := strings.CutPrefix(gate, name+"_")
		if !ok {
			continue
		}
		stat, bound, ok := cutLast(rest)
		if !ok {
			continue
		}
		return ds[name].parse(name, stat, bound, source)
	}
	return Gate{}, unknownOwnGate(gate, ds)
}

// cutLast splits "p99_max" into "p99" and "max".
func cutLast(s string) (stat, bound string, ok bool) {
	i := strings.LastIndex(s, "_")
	if i <= 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

// parse checks a gate on stat of figure name with the given bound.
func (d OwnFigure) parse(name, stat, bound, source string) (Gate, error) {
	kind, where, ok := d.Source(source)
	if !ok {
		return Gate{}, fmt.Errorf("figure %s declares no %s source, and the profile reads its server's metrics from %s", name, source, source)
	}
	all := ownStats[kind]
	switch {
	case !slices.Contains(all, stat):
		return Gate{}, fmt.Errorf("%s has no statistic %q: it is a %s (%s: %s), which offers %s%s", name, stat, kind, source, where, strings.Join(all, ", "), kindHint(stat, kind))
	case !slices.Contains(d.Offered(source), stat):
		return Gate{}, fmt.Errorf("figure %s does not offer %s: its stats are %s (add %q to figures.%s.stats)", name, stat, strings.Join(d.Offered(source), ", "), stat, name)
	case bound != d.bound():
		return Gate{}, fmt.Errorf("figure %s is better %s, so a gate on it is a %s: %s, not %s", name, orLower(d.Better), boundWord(d.bound()), d.OwnGateName(name, stat), name+"_"+stat+"_"+bound)
	}
	return d.OwnGate(name, stat, source), nil
}

func orLower(b string) string {
	if b == "" {
		return "lower"
	}
	return b
}

func boundWord(b string) string {
	if b == "min" {
		return "floor"
	}
	return "ceiling"
}

// kindHint says which kinds give a statistic a kind does not.
func kindHint(stat, kind string) string {
	var have []string
	for _, k := range []string{"histogram", "summary", "gauge", "counter", "counter_rate"} {
		if slices.Contains(ownStats[k], stat) {
			have = append(have, k)
		}
	}
	if len(have) == 0 {
		return ""
	}
	return fmt.Sprintf("; %s needs a %s", stat, strings.Join(have, " or a "))
}

// unknownOwnGate says that gate is neither built in nor on a declared
// figure, naming the nearest gate it could have meant.
func unknownOwnGate(gate string, ds OwnFigures) error {
	names := []string{}
	for _, g := range All() {
		names = append(names, g.Name)
	}
	for _, name := range sortedNames(ds) {
		d := ds[name]
		for _, k := range []string{SourceFile, SourcePrometheus} {
			for _, s := range d.Offered(k) {
				names = append(names, d.OwnGateName(name, s))
			}
		}
	}
	best := Nearest(gate, names)
	declared := "no figures are declared"
	if len(ds) > 0 {
		declared = "declared figures: " + strings.Join(sortedNames(ds), ", ")
	}
	msg := fmt.Sprintf("no gate %s: not a built-in gate, and no declared figure it is a gate on (%s; a gate on one is NAME_STAT_max or NAME_STAT_min)", gate, declared)
	if best != "" {
		msg += "; did you mean " + best + "?"
	}
	return fmt.Errorf("%s", msg)
}

// Nearest is the candidate closest to name by edit distance, for a "did
// you mean": "" when none is within a third of name's length (plus 2).
// vet's field suggestions and the own-gate names share it.
func Nearest(name string, candidates []string) string {
	best, bestD := "", len(name)/3+2
	for _, n := range candidates {
		if d := editDistance(name, n); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance, for "did you mean".
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
