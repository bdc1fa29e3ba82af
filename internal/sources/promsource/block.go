package promsource

import (
	"encoding/json"
	"math"
	"sort"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// SourceName is the value of the block's "source" field.
const SourceName = "prometheus"

// Block is the figures of one window, rendered by MarshalJSON as a
// server_tick object: the same name-keyed fields the metrics file has
// (a figure that could not be measured is absent, never 0), plus
// "source": "prometheus" and a "prometheus" object saying where each
// figure came from, over which window, with which error bound, and why
// each missing one is missing.
type Block struct {
	URL    string
	Format string
	// Numbers are the number fields; those in Counts render as integers.
	Numbers map[string]float64
	Counts  map[string]bool
	// Phases are the timing objects: field name → {mean, p95, p99, max}.
	Phases map[string]map[string]float64
	// Strings are the string fields (transport).
	Strings map[string]string
	// Missing: a server_tick path ("peers", "tick_ms.p99") → why it is
	// absent. The selector of the series is named in every reason.
	Missing map[string]string
	// Details: figure name → how it was computed.
	Details map[string]*Detail
	Window  WindowInfo
}

// WindowInfo is the stretch of the run the figures cover, in seconds from
// the run's start.
type WindowInfo struct {
	FromS float64 `json:"from_s"`
	ToS   float64 `json:"to_s"`
	SpanS float64 `json:"span_s"`
	// Hold: the window starts at the first scrape after every client's
	// connect slot. False: no such scrape came before the last one, and the
	// window starts at the run's first scrape instead.
	Hold bool `json:"hold"`
}

// Detail says how one figure was computed.
type Detail struct {
	Kind    Kind    `json:"kind"`
	Series  string  `json:"series"`
	Scale   float64 `json:"scale"`
	Default bool    `json:"default,omitempty"`
	// Gauge: the smallest and largest value over the window's scrapes
	// (scaled).
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
	// Scrapes is how many scrapes Min and Max are over.
	Scrapes int `json:"scrapes,omitempty"`
	// Counter rate: the increase over the window (unscaled) and the
	// counter resets crossed since the first scrape.
	Increase *float64 `json:"increase,omitempty"`
	Resets   int      `json:"resets,omitempty"`
	// Histogram, summary: observations in the window.
	Observations *float64 `json:"observations,omitempty"`
	// Bounds: for each histogram field, the bucket [lo, hi] (scaled) it
	// lies in; Error its width, the most the figure can be off by.
	Bounds map[string][2]float64 `json:"bounds,omitempty"`
	Error  map[string]float64    `json:"error,omitempty"`

	totalObservations float64
}

func (d *Detail) bound(field string, lo, hi float64) {
	if d.Bounds == nil {
		d.Bounds, d.Error = map[string][2]float64{}, map[string]float64{}
	}
	d.Bounds[field] = [2]float64{lo, hi}
	d.Error[field] = hi - lo
}

func (b *Block) setNumber(name string, v float64) {
	if fields[name] == count {
		b.setCount(name, v)
		return
	}
	b.Numbers[name] = v
}

func (b *Block) setCount(name string, v float64) {
	b.Numbers[name] = math.Round(v)
	b.Counts[name] = true
}

// Number is a number field, false when absent.
func (b *Block) Number(name string) (float64, bool) {
	v, ok := b.Numbers[name]
	return v, ok
}

// Phase is one field of a timing object ("tick_ms", "p99"), false when
// absent.
func (b *Block) Phase(name, field string) (float64, bool) {
	v, ok := b.Phases[name][field]
	return v, ok
}

// MarshalJSON renders the block as a server_tick object.
func (b *Block) MarshalJSON() ([]byte, error) {
	out := map[string]any{
		"schema_version": report.ServerTickSchemaVersion,
		"source":         SourceName,
	}
	for k, v := range b.Numbers {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if b.Counts[k] {
			out[k] = int64(v)
		} else {
			out[k] = v
		}
	}
	for k, ph := range b.Phases {
		if len(ph) > 0 {
			out[k] = ph
		}
	}
	for k, v := range b.Strings {
		out[k] = v
	}
	missing := b.Missing
	if missing == nil {
		missing = map[string]string{}
	}
	out[SourceName] = struct {
		URL     string             `json:"url"`
		Format  string             `json:"format"`
		Window  WindowInfo         `json:"window"`
		Figures map[string]*Detail `json:"figures"`
		Missing map[string]string  `json:"missing"`
	}{b.URL, b.Format, b.Window, b.Details, missing}
	return json.Marshal(out)
}

// MissingPaths lists the missing paths in order.
func (b *Block) MissingPaths() []string {
	ks := make([]string, 0, len(b.Missing))
	for k := range b.Missing {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
