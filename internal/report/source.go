package report

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// maxMetricsBytes bounds a metrics document read over HTTP: a real one is
// a few KB; anything near this is not a metrics document.
const maxMetricsBytes = 4 << 20

// metricsHTTPTimeout bounds one HTTP read, so a swarm sampling once a
// second never stalls behind an unreachable server.
const metricsHTTPTimeout = 2 * time.Second

var metricsClient = &http.Client{Timeout: metricsHTTPTimeout}

// IsMetricsURL reports whether src names an HTTP(S) endpoint rather than
// a file.
func IsMetricsURL(src string) bool {
	return strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")
}

// ReadServerMetrics reads the server metrics document from src: an
// http(s) URL (the reference server's [metrics] http_listen, or a team's
// own endpoint) or a file path. Anything but a 200 with a body is an error
// naming src, so an unreachable or not-yet-ready endpoint is missing, never
// a zero document.
func ReadServerMetrics(src string) ([]byte, error) {
	if !IsMetricsURL(src) {
		return os.ReadFile(src)
	}
	resp, err := metricsClient.Get(src)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", src, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxMetricsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the body: %w", src, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %s: %s", src, resp.Status, strings.TrimSpace(string(b[:min(len(b), 200)])))
	}
	if len(b) > maxMetricsBytes {
		return nil, fmt.Errorf("GET %s: body over %d bytes: not a metrics document", src, maxMetricsBytes)
	}
	return b, nil
}
