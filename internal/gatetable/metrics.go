package gatetable

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/scalegate/scalegate/internal/report"
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
	raw, ok := m.tick["prometheus"]
	if !ok || json.Unmarshal(raw, &src) != nil {
		return ""
	}
	for n := len(path); n > 0; n-- {
		if why, ok := src.Missing[strings.Join(path[:n], ".")]; ok {
			return " (" + why + ")"
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
