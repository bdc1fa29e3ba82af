package gate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/scalegate/scalegate/internal/report"
)

// tickMetrics is the server_tick block as raw, name-keyed JSON. The gate
// reads it by name rather than through report.ServerTick because a metric
// the server left out must stay missing: the struct would read it as zero,
// and a zero wire rate passes a ceiling it never measured.
type tickMetrics map[string]json.RawMessage

// serverTickRaw returns the report's embedded server_tick block.
func serverTickRaw(r *report.Report) (tickMetrics, error) {
	if len(r.ServerTick) == 0 || bytes.Equal(bytes.TrimSpace(r.ServerTick), []byte("null")) {
		if r.ServerMetricsError != "" {
			return nil, fmt.Errorf("report has no server_tick (swarm: %s)", r.ServerMetricsError)
		}
		return nil, errors.New("report has no server_tick block (server metrics not read)")
	}
	var m tickMetrics
	if err := json.Unmarshal(r.ServerTick, &m); err != nil {
		return nil, fmt.Errorf("server_tick: %w", err)
	}
	return m, nil
}

// num reads a number at path ("tick_ms", "p99"). Missing or null is an
// error naming the field.
func (m tickMetrics) num(path ...string) (float64, error) {
	name := "server_tick." + strings.Join(path, ".")
	var cur map[string]json.RawMessage = m
	for i, k := range path {
		raw, ok := cur[k]
		if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			return 0, fmt.Errorf("%s missing", name)
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

// str reads a string field.
func (m tickMetrics) str(key string) (string, error) {
	raw, ok := m[key]
	if !ok {
		return "", fmt.Errorf("server_tick.%s missing", key)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("server_tick.%s: not a string: %w", key, err)
	}
	return s, nil
}
