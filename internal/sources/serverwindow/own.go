package serverwindow

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/scalegate/scalegate/internal/judge/stats"
)

// A team's own figures read from its metrics file (gatetable.OwnFigure's
// file source): a JSON path into the file, under the kind that says how
// the figure over the hold is computed from two readings, as for the
// built-in figures: a histogram's bucket increases and their quantiles
// (stats.Buckets), a counter's increase or its rate, a gauge's lowest and
// highest reading; a summary is the object as the file wrote it, over
// the file's own window. The result is written into the block under the
// figure's name as an object of its statistics.

// FileFigure is an own figure's place in the metrics file: exactly one
// kind field holds its JSON path (dot-separated keys from the file's top,
// "cumulative.integrate_ms"); Scale multiplies every value (nil is 1).
// JSON and CUE spell it as a Prometheus mapping entry does, a path in
// place of the metric: {histogram: "cumulative.integrate_ms"}.
type FileFigure struct {
	Gauge       string   `json:"gauge,omitempty"`
	CounterRate string   `json:"counter_rate,omitempty"`
	Counter     string   `json:"counter,omitempty"`
	Histogram   string   `json:"histogram,omitempty"`
	Summary     string   `json:"summary,omitempty"`
	Scale       *float64 `json:"scale,omitempty"`
}

// Kind is the entry's kind and JSON path, or why it has not exactly one.
func (f FileFigure) Kind() (kind, path string, err error) {
	var kinds []string
	for _, c := range [][2]string{{"gauge", f.Gauge}, {"counter_rate", f.CounterRate}, {"counter", f.Counter}, {"histogram", f.Histogram}, {"summary", f.Summary}} {
		if c[1] != "" {
			kinds, kind, path = append(kinds, c[0]), c[0], c[1]
		}
	}
	switch len(kinds) {
	case 0:
		return "", "", errors.New("names no kind: give one of gauge, counter_rate, counter, histogram, summary with the JSON path")
	case 1:
		return kind, path, nil
	}
	return "", "", fmt.Errorf("names %d kinds (%s): give exactly one", len(kinds), strings.Join(kinds, ", "))
}

// pathRe is a JSON path of field names.
var pathRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]*(\.[A-Za-z_][A-Za-z0-9_-]*)*$`)

// Check reports what is wrong with the entry: its kind, its path's
// syntax, its scale.
func (f FileFigure) Check() error {
	_, path, err := f.Kind()
	if err != nil {
		return err
	}
	if !pathRe.MatchString(path) {
		return fmt.Errorf("%q is not a JSON path: field names joined by dots (cumulative.physics_ms)", path)
	}
	if f.Scale != nil && !(*f.Scale > 0 && !math.IsInf(*f.Scale, 0)) {
		return fmt.Errorf("scale: must be a positive finite number, got %v", *f.Scale)
	}
	return nil
}

func (f FileFigure) scale() float64 {
	if f.Scale == nil {
		return 1
	}
	return *f.Scale
}

// At is the value at the entry's path in a reading's fields, false when
// the file has nothing there.
func At(raw map[string]json.RawMessage, path string) (json.RawMessage, bool) {
	keys := strings.Split(path, ".")
	cur := raw
	for i, k := range keys {
		v, ok := cur[k]
		if !ok || string(v) == "null" {
			return nil, false
		}
		if i == len(keys)-1 {
			return v, true
		}
		cur = nil
		if json.Unmarshal(v, &cur) != nil {
			return nil, false
		}
	}
	return nil, false
}

// number is the number at path, with why not.
func numberAt(raw map[string]json.RawMessage, path string) (float64, string) {
	v, ok := At(raw, path)
	if !ok {
		return 0, "no value"
	}
	var f float64
	if err := json.Unmarshal(v, &f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, "not a number"
	}
	return f, ""
}

// AddOwn folds one reading's own gauges in, keyed by figure name (a
// gauge the reading lacks is skipped).
func (e *Extremes) AddOwn(raw map[string]json.RawMessage, own map[string]FileFigure) {
	for name, f := range own {
		if f.Gauge == "" {
			continue
		}
		v, why := numberAt(raw, f.Gauge)
		if why != "" {
			continue
		}
		if *e == nil {
			*e = Extremes{}
		}
		v *= f.scale()
		m := (*e)[name]
		if m == nil {
			(*e)[name] = &MinMax{Min: v, Max: v, N: 1}
			continue
		}
		m.Min, m.Max, m.N = min(m.Min, v), max(m.Max, v), m.N+1
	}
}

// own computes every own figure over [Base, End].
func (w *writer) own(h Hold) {
	for _, name := range sortedKeys(h.Own) {
		f := h.Own[name]
		kind, path, err := f.Kind()
		if err != nil {
			w.missing(name, fmt.Sprintf("figure %s: %v", name, err))
			continue
		}
		where := fmt.Sprintf("the metrics file's %s (%s)", path, kind)
		var obj map[string]float64
		var why string
		switch kind {
		case "histogram":
			obj, why = ownHistogram(h, path, f.scale())
		case "counter", "counter_rate":
			obj, why = ownCounter(h, path, kind, f.scale())
		case "gauge":
			obj, why = ownGauge(h, name)
		case "summary":
			obj, why = ownSummary(h, path, f.scale())
		}
		if why != "" {
			w.missing(name, where+": "+why)
			continue
		}
		w.set(name, obj)
		if kind != "summary" {
			w.info.Figures = append(w.info.Figures, name)
		}
	}
}

// ownHistogram is the hold's quantiles of a cumulative histogram at path.
func ownHistogram(h Hold, path string, scale float64) (map[string]float64, string) {
	var b, e stats.Buckets
	for _, r := range []struct {
		at  Reading
		to  *stats.Buckets
		end string
	}{{h.Base, &b, "the hold's start"}, {h.End, &e, "the hold's end"}} {
		v, ok := At(r.at.Raw, path)
		if !ok {
			return nil, fmt.Sprintf("no value at %s (t=%.1f s)", r.end, r.at.At)
		}
		if err := json.Unmarshal(v, r.to); err != nil {
			return nil, fmt.Sprintf("not a cumulative histogram {count, sum, buckets} at %s: %v", r.end, err)
		}
	}
	d, err := e.Sub(&b)
	if err != nil {
		return nil, err.Error()
	}
	if d.Empty() {
		return nil, "no observation in the hold"
	}
	out := map[string]float64{"mean": d.Mean() * scale}
	for name, q := range map[string]float64{"p50": 0.5, "p90": 0.9, "p95": 0.95, "p99": 0.99} {
		if r := d.Quantile(q); r.OK {
			out[name] = r.Value * scale
		}
	}
	if _, hi, above, ok := d.MaxBound(); ok && !above {
		out["max"] = hi * scale
	}
	return out, ""
}

// ownCounter is a since-start count's increase over the hold, or its rate
// per second of the swarm's clock.
func ownCounter(h Hold, path, kind string, scale float64) (map[string]float64, string) {
	b, why := numberAt(h.Base.Raw, path)
	if why != "" {
		return nil, fmt.Sprintf("%s at the hold's start (t=%.1f s)", why, h.Base.At)
	}
	e, why := numberAt(h.End.Raw, path)
	if why != "" {
		return nil, fmt.Sprintf("%s at the hold's end (t=%.1f s)", why, h.End.At)
	}
	if e < b {
		return nil, fmt.Sprintf("went down over the hold (%g → %g): the server restarted within it", b, e)
	}
	if kind == "counter" {
		return map[string]float64{"increase": (e - b) * scale}, ""
	}
	span := h.End.At - h.Base.At
	if !(span > 0) {
		return nil, "the hold has one reading, no length to take a rate over"
	}
	return map[string]float64{"rate": (e - b) / span * scale}, ""
}

// ownGauge is a gauge's lowest and highest reading over the hold.
func ownGauge(h Hold, name string) (map[string]float64, string) {
	m := h.Extremes[name]
	if m == nil || m.N == 0 {
		return nil, "no reading of the hold had a number there"
	}
	return map[string]float64{"min": m.Min, "max": m.Max}, ""
}

// ownSummary is the timing object at path as the file wrote it.
func ownSummary(h Hold, path string, scale float64) (map[string]float64, string) {
	v, ok := At(h.End.Raw, path)
	if !ok {
		return nil, fmt.Sprintf("no value at the hold's end (t=%.1f s)", h.End.At)
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(v, &obj) != nil {
		return nil, "not an object of statistics {mean, p50, p99, ...}"
	}
	out := map[string]float64{}
	for k, raw := range obj {
		var f float64
		if json.Unmarshal(raw, &f) == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
			out[k] = f * scale
		}
	}
	if len(out) == 0 {
		return nil, "an object without a number"
	}
	return out, ""
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// OwnStep is the own figures over the second between two readings (a
// timeline row's), flattened to "NAME.STAT": each computed as over the
// hold, a gauge at cur's reading; nil when none could be.
func OwnStep(prev, cur Reading, own map[string]FileFigure) map[string]float64 {
	if len(own) == 0 {
		return nil
	}
	var ex Extremes
	ex.AddOwn(cur.Raw, own)
	w := &writer{out: map[string]json.RawMessage{}, info: &Info{}}
	w.own(Hold{Base: prev, End: cur, Own: own, Extremes: ex})
	return Flatten(w.out)
}

// Flatten turns objects of statistics by name into "NAME.STAT" → value.
func Flatten(objs map[string]json.RawMessage) map[string]float64 {
	var out map[string]float64
	for name, raw := range objs {
		var obj map[string]float64
		if json.Unmarshal(raw, &obj) != nil {
			continue
		}
		for stat, v := range obj {
			if out == nil {
				out = map[string]float64{}
			}
			out[name+"."+stat] = v
		}
	}
	return out
}
