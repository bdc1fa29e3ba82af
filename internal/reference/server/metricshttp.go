package server

import (
	"net/http"
	"sync/atomic"

	"github.com/scalegate/scalegate/internal/guard/boundedhttp"
)

// metricsHTTP serves the latest metrics document over HTTP ([metrics]
// http_listen), so a swarm on another machine can sample the same
// document the metrics file holds (`scalegate swarm --server-metrics
// http://HOST:PORT/metrics`). The server owns it: started by Listen,
// stopped by Run's shutdown. It is a boundedhttp server: loopback unless
// the address says otherwise, every connection timed out, at most
// boundedhttp.DefaultMaxConns held.
type metricsHTTP struct {
	srv *boundedhttp.Server
	doc atomic.Pointer[[]byte] // nil until the first document is built
}

// MetricsPath is the URL path the document is served on.
const MetricsPath = "/metrics"

func startMetricsHTTP(addr string) (*metricsHTTP, error) {
	m := &metricsHTTP{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+MetricsPath, m.serve)
	srv, err := boundedhttp.Listen(addr, mux, boundedhttp.Options{})
	if err != nil {
		return nil, &ListenError{Addr: addr + " ([metrics] http_listen)", Err: err}
	}
	m.srv = srv
	return m, nil
}

// serve answers with the newest document, or 503 before the first one:
// a reader must see "not yet", not an empty or zero document.
func (m *metricsHTTP) serve(w http.ResponseWriter, _ *http.Request) {
	doc := m.doc.Load()
	if doc == nil {
		http.Error(w, "no metrics document yet", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(*doc)
}

func (m *metricsHTTP) publish(b []byte) { m.doc.Store(&b) }

// addr is the bound address (the port resolved when http_listen gave 0).
func (m *metricsHTTP) addr() string { return m.srv.Addr() }

// stop closes the endpoint, letting an answer in flight finish (bounded).
func (m *metricsHTTP) stop() { m.srv.Close() }
