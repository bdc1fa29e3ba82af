package report

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
)

// MaxMetricsBytes bounds a metrics document, from a file or over HTTP: a
// real one is a few KB; anything near this is not a metrics document.
const MaxMetricsBytes = 4 << 20

// metricsReadTimeout bounds one read of the metrics document when the
// caller gives no context of its own, so a swarm sampling once a second
// never stalls behind an unreachable server or a hung file system.
const metricsReadTimeout = 2 * time.Second

var metricsClient = &http.Client{Timeout: metricsReadTimeout}

// IsMetricsURL reports whether src names an HTTP(S) endpoint rather than
// a file.
func IsMetricsURL(src string) bool {
	return strings.HasPrefix(src, "http://") || strings.HasPrefix(src, "https://")
}

// ReadServerMetrics reads the server metrics document from src: an
// http(s) URL (the reference server's [metrics] http_listen, or a team's
// own endpoint) or a file path. Anything but a 200 with a body is an error
// naming src, so an unreachable or not-yet-ready endpoint is missing, never
// a zero document. A file must be a regular file (a FIFO or device is
// refused without blocking); either is capped at MaxMetricsBytes, and the
// read gives up after metricsReadTimeout.
func ReadServerMetrics(src string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), metricsReadTimeout)
	defer cancel()
	return ReadServerMetricsContext(ctx, src)
}

// ReadServerMetricsContext is ReadServerMetrics under ctx (and still at
// most metricsReadTimeout for a URL).
func ReadServerMetricsContext(ctx context.Context, src string) ([]byte, error) {
	if !IsMetricsURL(src) {
		return boundedfile.ReadFile(ctx, src, MaxMetricsBytes)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src, nil)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", src, err)
	}
	resp, err := metricsClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", src, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, MaxMetricsBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: reading the body: %w", src, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: status %s: %s", src, resp.Status, strings.TrimSpace(string(b[:min(len(b), 200)])))
	}
	if len(b) > MaxMetricsBytes {
		return nil, fmt.Errorf("GET %s: body over %d bytes: not a metrics document", src, MaxMetricsBytes)
	}
	return b, nil
}
