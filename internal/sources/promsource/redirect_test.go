package promsource

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRedirectRefused: a 302 (or 301, 307, 308) to another endpoint is a
// scrape error naming both URLs, and the other endpoint is never asked.
// Followed, its figures would be recorded under the URL the profile names.
func TestRedirectRefused(t *testing.T) {
	var asked atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("scalegate_peers 8\n"))
	}))
	defer other.Close()
	for _, code := range []int{http.StatusMovedPermanently, http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+"/metrics", code)
		}))
		s := &Scraper{URL: first.URL + "/metrics"}
		_, _, err := s.Fetch(context.Background())
		first.Close()
		if err == nil {
			t.Fatalf("%d: redirect followed", code)
		}
		for _, want := range []string{first.URL + "/metrics", "redirect to " + other.URL + "/metrics refused", http.StatusText(code)} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%d: error %q does not say %q", code, err, want)
			}
		}
	}
	if n := asked.Load(); n != 0 {
		t.Fatalf("the redirect target was asked %d times", n)
	}
}
