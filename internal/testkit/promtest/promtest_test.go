package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/testkit/livetest"
)

func TestConfig(t *testing.T) {
	got := config(Options{Targets: []Target{{Addr: "127.0.0.1:9", Labels: map[string]string{"pod": "g0"}}}, TargetsFile: "/t/targets.json"})
	for _, want := range []string{"scrape_interval: 1s", `- targets: ["127.0.0.1:9"]`, `pod: "g0"`, `files: ["/t/targets.json"]`, "refresh_interval: 1s"} {
		if !strings.Contains(got, want) {
			t.Errorf("config lacks %q:\n%s", want, got)
		}
	}
}

// TestLogTail: the last n bytes, never more, and a reason for a path
// that is not a regular file.
func TestLogTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 5000)+"the end"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := logTail(path, 7); got != "the end" {
		t.Errorf("tail %q", got)
	}
	if got := logTail(path, 1<<20); len(got) != 5007 {
		t.Errorf("a short log read as %d bytes", len(got))
	}
	if got := logTail(filepath.Dir(path), 10); !strings.Contains(got, "not a regular file") && !strings.Contains(got, "directory") {
		t.Errorf("a directory read as %q", got)
	}
}

// TestRunFailsNamingTheLog: a prometheus that exits at once is an error
// quoting its log, after the tries, never a hang.
func TestRunFailsNamingTheLog(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "prometheus")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'err=\"bad config\"' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROMETHEUS", fake)
	_, _, err := Run(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready") || !strings.Contains(err.Error(), `bad config`) {
		t.Fatalf("error %v, want one naming the exit and quoting the log", err)
	}
}

// TestRunDiscoversTargets: the real prometheus finds a target written to
// its file_sd file after it started, and a query sees the target's series
// with the file's labels.
func TestRunDiscoversTargets(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintln(w, "# TYPE game_up gauge\ngame_up 1")
	}))
	defer target.Close()
	dir := t.TempDir()
	targets := filepath.Join(dir, "targets.json")
	s, stop, err := Run(dir, Options{TargetsFile: targets})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	b, _ := json.Marshal([]map[string]any{{"targets": []string{strings.TrimPrefix(target.URL, "http://")}, "labels": map[string]string{"leg": "weave"}}})
	if err := os.WriteFile(targets, b, 0o644); err != nil {
		t.Fatal(err)
	}
	q := s.URL + "/api/v1/query?query=" + url.QueryEscape(`game_up{leg="weave"}`)
	livetest.Eventually(t, 60*time.Second, livetest.Holds("prometheus scraped the discovered target", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, q, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var r struct {
			Data struct{ Result []json.RawMessage } `json:"data"`
		}
		return json.NewDecoder(resp.Body).Decode(&r) == nil && len(r.Data.Result) == 1
	}))
}
