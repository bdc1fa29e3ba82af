package gatetable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// Metrics is what a gate reads: the swarm report and the server metrics
// block embedded in it. The server block is kept raw and read by name,
// never through report.ServerTick: a field the server left out must stay
// missing, and the struct would read it as zero (a zero wire rate passes a
// ceiling it never measured).
type Metrics struct {
	Report  *report.Report
	tick    map[string]json.RawMessage
	tickErr error
	// Scope is the phase the figures were narrowed to ("" = the whole run).
	Scope string
	// WindowS is the window a worst-window gate slides (its window_s);
	// 0 for every other gate.
	WindowS float64

	hold     *serverwindow.Info
	holdRead bool
}

// WithWindow is m for a worst-window gate sliding windowS seconds.
func (m *Metrics) WithWindow(windowS float64) *Metrics {
	c := *m
	c.WindowS = windowS
	return &c
}

// Hold is the server block's account of the window it covers
// (server_tick.hold, serverwindow.Info); for a Prometheus block without
// one (a report from before it was written) it is built from the block's
// own window, every figure of which is over it. Nil when the block says
// nothing of its window: a report from before, whose figures are the
// file's own windows.
func (m *Metrics) Hold() *serverwindow.Info {
	if m.holdRead || m.tickErr != nil {
		return m.hold
	}
	m.holdRead = true
	var h serverwindow.Info
	if raw, ok := m.tick[serverwindow.Key]; ok && json.Unmarshal(raw, &h) == nil {
		m.hold = &h
		return m.hold
	}
	var src struct {
		Window *struct {
			FromS float64 `json:"from_s"`
			ToS   float64 `json:"to_s"`
			SpanS float64 `json:"span_s"`
			Hold  bool    `json:"hold"`
		} `json:"window"`
	}
	if raw, ok := m.tick["prometheus"]; ok && json.Unmarshal(raw, &src) == nil && src.Window != nil {
		w := src.Window
		m.hold = &serverwindow.Info{FromS: w.FromS, ToS: w.ToS, SpanS: w.SpanS, Hold: w.Hold, Cumulative: true, Figures: slices.Sorted(maps.Keys(m.tick))}
	}
	return m.hold
}

// OverHold reports whether the server figure at path ("tick_ms", "cpu_pct",
// "ai_ms.mean") was computed over the block's window from the server's
// cumulative state (or a Prometheus source's increases), rather than
// taken from the file's own window.
func (m *Metrics) OverHold(path string) bool {
	h := m.Hold()
	if h == nil || !h.Cumulative {
		return false
	}
	first, _, _ := strings.Cut(path, ".")
	return slices.Contains(h.Figures, path) || slices.Contains(h.Figures, first)
}

// Extreme is a gauge's lowest (low true) or highest reading over the
// hold, and how many readings; ok false when the block has no extremes
// for it (a report from before they were kept).
func (m *Metrics) Extreme(name string, low bool) (v float64, n int, ok bool) {
	h := m.Hold()
	if h == nil {
		return 0, 0, false
	}
	e, found := h.Extremes[name]
	if !found || e.N == 0 {
		return 0, 0, false
	}
	if low {
		return e.Min, e.N, true
	}
	return e.Max, e.N, true
}

// Narrow returns the figures of one stretch of an impaired run ("before",
// a phase's name, "after", "after-NAME"): a report holding only what the
// swarm measured in that stretch, so any gate that reads a per-stretch
// figure evaluates on it unchanged. Figures the stretch does not have are
// missing, never the whole run's: the server's metrics block is one
// run-long file and every gate reading it is unevaluable under a scope.
func (m *Metrics) Narrow(phase string) (*Metrics, error) {
	st := m.Report.Phase(phase)
	if st == nil {
		var names []string
		for _, p := range m.Report.Phases {
			names = append(names, p.Name)
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("report has no phases (the run was not impaired), so nothing can be scoped to phase %q", phase)
		}
		return nil, fmt.Errorf("report has no phase %q (it has %s)", phase, strings.Join(names, ", "))
	}
	r := &report.Report{
		SchemaVersion:          m.Report.SchemaVersion,
		Clients:                m.Report.Clients,
		ObservedServerTickHz:   st.ObservedServerTickHz,
		DownstreamKBsPerClient: st.DownstreamKBsPerClient,
		RTTMs:                  st.RTTMs,
		SnapshotsReceived:      st.SnapshotsReceived,
		MaxSnapshotGapMs:       st.MaxSnapshotGapMs,
		StateIntervalMs:        st.StateIntervalMs,
		InputLatencyMs:         st.InputLatencyMs,
		Phases:                 []report.Stretch{*st},
	}
	return &Metrics{Report: r, Scope: phase,
		tickErr: fmt.Errorf("server_tick is one run-long block: it cannot be scoped to phase %q", phase)}, nil
}

// FromReport wraps a report for evaluation. A report without a readable
// server_tick block still evaluates the report-side gates; every server-side
// gate is then unevaluable with the reason.
func FromReport(r *report.Report) *Metrics {
	m := &Metrics{Report: r}
	m.tick, m.tickErr = serverTick(r)
	return m
}

func serverTick(r *report.Report) (map[string]json.RawMessage, error) {
	if len(r.ServerTick) == 0 || bytes.Equal(bytes.TrimSpace(r.ServerTick), []byte("null")) {
		switch {
		case r.ServerMetricsError != "":
			return nil, fmt.Errorf("report has no server_tick (swarm: %s)", r.ServerMetricsError)
		case r.ServerMetricsPath == "":
			return nil, errors.New("report has no server_tick block (the swarm ran without --server-metrics)")
		}
		return nil, errors.New("report has no server_tick block (server metrics not read)")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r.ServerTick, &m); err != nil {
		return nil, fmt.Errorf("server_tick: %w", err)
	}
	return m, nil
}

// TickErr is why the server block is unreadable, or nil.
func (m *Metrics) TickErr() error { return m.tickErr }

// Tick reads a number of the server block at path ("tick_ms", "p99").
// Missing or null is an error naming the field.
func (m *Metrics) Tick(path ...string) (float64, error) {
	if m.tickErr != nil {
		return 0, m.tickErr
	}
	name := "server_tick." + strings.Join(path, ".")
	cur := m.tick
	for i, k := range path {
		raw, ok := cur[k]
		if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return 0, fmt.Errorf("%s missing%s", name, m.missingWhy(path[:i+1]))
		}
		if i == len(path)-1 {
			var v float64
			if err := json.Unmarshal(raw, &v); err != nil {
				return 0, fmt.Errorf("%s: not a number: %w", name, err)
			}
			return v, nil
		}
		cur = nil
		if err := json.Unmarshal(raw, &cur); err != nil {
			return 0, fmt.Errorf("%s: not an object: %w", name, err)
		}
	}
	return 0, fmt.Errorf("%s: empty path", name)
}

// missingWhy is the metrics source's own account of a field it could not
// produce (a Prometheus source names the metric and selector it did not
// find: server_tick.prometheus.missing, keyed by the field's path or its
// figure's), as " (…)", or "".
func (m *Metrics) missingWhy(path []string) string {
	var src struct {
		Missing map[string]string `json:"missing"`
	}
	for _, key := range []string{"prometheus", serverwindow.Key} {
		src.Missing = nil
		raw, ok := m.tick[key]
		if !ok || json.Unmarshal(raw, &src) != nil {
			continue
		}
		for n := len(path); n > 0; n-- {
			if why, ok := src.Missing[strings.Join(path[:n], ".")]; ok {
				return " (" + why + ")"
			}
		}
	}
	return ""
}

// TickString reads a string field of the server block.
func (m *Metrics) TickString(key string) (string, error) {
	if m.tickErr != nil {
		return "", m.tickErr
	}
	raw, ok := m.tick[key]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", fmt.Errorf("server_tick.%s missing%s", key, m.missingWhy([]string{key}))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("server_tick.%s: not a string: %w", key, err)
	}
	return s, nil
}

// TickBool reads a boolean field of the server block.
func (m *Metrics) TickBool(key string) (bool, error) {
	if m.tickErr != nil {
		return false, m.tickErr
	}
	raw, ok := m.tick[key]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return false, fmt.Errorf("server_tick.%s missing", key)
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, fmt.Errorf("server_tick.%s: not a boolean: %w", key, err)
	}
	return b, nil
}

// FromServerTick wraps a server metrics file alone (its fields by name, as
// report.ParseServerTick returns them), for readers of a leg's
// server_metrics.json; report-side figures are then missing.
func FromServerTick(tick map[string]json.RawMessage) *Metrics {
	return &Metrics{Report: &report.Report{}, tick: tick}
}
