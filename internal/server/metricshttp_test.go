package server

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/report"
)

// TestMetricsOverHTTP: with [metrics] http_listen the document the file
// holds is served at /metrics; a reader parses it like the file; other
// paths and methods are refused; the endpoint closes with the server.
func TestMetricsOverHTTP(t *testing.T) {
	ls := startLive(t, func(c *Config) { c.Metrics.HTTPListen = "127.0.0.1:0" })
	url := ls.MetricsURL()
	if !strings.HasPrefix(url, "http://127.0.0.1:") || !strings.HasSuffix(url, "/metrics") {
		t.Fatalf("metrics URL %q", url)
	}
	// Before the first write the endpoint says "not yet" (503), never an
	// empty document; WriteMetrics publishes.
	if err := ls.WriteMetrics(); err != nil {
		t.Fatal(err)
	}
	st, _, err := report.ReadServerTick(url)
	if err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	if st.Transport != "enet" || st.SchemaVersion != report.ServerTickSchemaVersion {
		t.Fatalf("document over HTTP: %+v", st)
	}
	for _, tc := range []struct {
		method, path string
		want         int
	}{{"GET", "/", 404}, {"POST", "/metrics", 405}} {
		req, _ := http.NewRequest(tc.method, strings.TrimSuffix(url, "/metrics")+tc.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, resp.StatusCode, tc.want)
		}
	}
	ls.shutdown(t)
	deadline := time.Now().Add(loopWait)
	for {
		if _, err := report.ReadServerMetrics(url); err != nil {
			break // closed with the server: missing, not zero
		}
		if time.Now().After(deadline) {
			t.Fatal("metrics endpoint still answering after the server stopped")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMetricsHTTPNotYet(t *testing.T) {
	m, err := startMetricsHTTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.stop()
	_, err = report.ReadServerMetrics("http://" + m.addr() + MetricsPath)
	if err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("before the first document: %v, want a 503 error", err)
	}
}

func TestBindAndHTTPListenValidated(t *testing.T) {
	for _, tc := range []struct {
		mut func(*Config)
		key string
	}{
		{func(c *Config) { c.Server.Bind = "localhost" }, "server.bind"},
		{func(c *Config) { c.Server.Bind = "" }, "server.bind"},
		{func(c *Config) { c.Metrics.HTTPListen = "localhost:9100" }, "metrics.http_listen"}, // a name could resolve anywhere
		{func(c *Config) { c.Metrics.HTTPListen = "99999" }, "metrics.http_listen"},
		{func(c *Config) { c.Metrics.HTTPListen = "127.0.0.1:99999" }, "metrics.http_listen"},
	} {
		c := DefaultConfig()
		tc.mut(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%+v / %+v: %v, want an error naming %s", c.Server, c.Metrics, err, tc.key)
		}
	}
	c := DefaultConfig()
	c.Server.Bind, c.Metrics.HTTPListen = "0.0.0.0", ":9100"
	if err := c.Validate(); err != nil {
		t.Errorf("0.0.0.0 and :9100 must be valid: %v", err)
	}
	c.Metrics.HTTPListen = "9100" // a bare port: loopback
	if err := c.Validate(); err != nil {
		t.Errorf("9100 must be valid: %v", err)
	}
}

func TestHTTPListenInUseIsListenError(t *testing.T) {
	m, err := startMetricsHTTP("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer m.stop()
	cfg := DefaultConfig()
	cfg.Server.Port = 0
	cfg.Metrics.HTTPListen = m.addr()
	s, err := New(cfg, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	err = s.Listen()
	var le *ListenError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "http_listen") {
		t.Fatalf("Listen with the HTTP port taken: %v, want a ListenError naming http_listen", err)
	}
}
