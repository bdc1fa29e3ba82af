package report

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const tickDoc = `{"schema_version":6,"transport":"enet","rss_kb":1,"tick_ms":{"min":1,"mean":1,"max":1,"p95":1,"p99":1}}`

// TestReadServerTickFromURL: a URL reads like a file; every other answer
// (not found, not ready, oversized, not a metrics document, nobody
// listening) is an error naming the URL — missing, never zero.
func TestReadServerTickFromURL(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(tickDoc)) })
	mux.HandleFunc("/notyet", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no metrics yet", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte(strings.Repeat(" ", MaxMetricsBytes+1))) })
	mux.HandleFunc("/empty", func(w http.ResponseWriter, _ *http.Request) {})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	st, _, err := ReadServerTick(srv.URL + "/metrics")
	if err != nil || st.Transport != "enet" {
		t.Fatalf("URL read: %+v %v", st, err)
	}
	path := filepath.Join(t.TempDir(), "m.json")
	if err := os.WriteFile(path, []byte(tickDoc), 0o644); err != nil {
		t.Fatal(err)
	}
	if st, _, err := ReadServerTick(path); err != nil || st.Transport != "enet" {
		t.Fatalf("file read: %+v %v", st, err)
	}
	dead := httptest.NewServer(mux)
	deadURL := dead.URL + "/metrics"
	dead.Close()
	for name, u := range map[string]string{
		"not found": srv.URL + "/nope", "not ready": srv.URL + "/notyet", "huge": srv.URL + "/huge",
		"empty": srv.URL + "/empty", "nobody listening": deadURL,
	} {
		if _, _, err := ReadServerTick(u); err == nil || !strings.Contains(err.Error(), u) {
			t.Errorf("%s: %v, want an error naming %s", name, err, u)
		}
	}
	if !IsMetricsURL("https://x/metrics") || IsMetricsURL("/tmp/http://x") {
		t.Error("IsMetricsURL")
	}
}
