package promsource

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// labelsLine is one gauge sample with n labels.
func labelsLine(n int) string {
	var b strings.Builder
	b.WriteString("x{")
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "l%d=\"v\"", i)
	}
	b.WriteString("} 1\n")
	return b.String()
}

// manyLines is n samples of one gauge, two labels each.
func manyLines(n int) string {
	var b strings.Builder
	b.Grow(n * 24)
	for i := range n {
		fmt.Fprintf(&b, "x{a=\"%d\",b=\"y\"} 1\n", i)
	}
	return b.String()
}

const omType = "application/openmetrics-text; version=1.0.0; charset=utf-8"

func TestCheckShape(t *testing.T) {
	lim := Limits{MaxSeries: 3, MaxLabelsPerSeries: 2, MaxLabelPairs: 4, MaxLineBytes: 64}
	for _, tc := range []struct {
		name, body string
		what       string // "" passes
		line       int
	}{
		{"within every bound", "# HELP x y\n# TYPE x gauge\nx{a=\"1\",b=\"2\"} 1\nx{a=\"2\"} 2\n\n", "", 0},
		{"quoted '=', ',' and '}' are not labels", "x{a=\"=,}=\",b=\"\\\"=\"} 1\n", "", 0},
		{"no labels", "x 1\ny 2\nz 3\n", "", 0},
		{"comments are not series", "# a\n# b\n# c\n# d\nx 1\n", "", 0},
		{"too many series", "x 1\ny 2\nz 3\nw 4\n", "series (sample lines)", 4},
		{"too many labels on one series", "# TYPE x gauge\nx{a=\"1\",b=\"2\",c=\"3\"} 1\n", "labels of one series", 2},
		{"too many labels in all", "x{a=\"1\",b=\"2\"} 1\ny{a=\"1\",b=\"2\"} 1\nz{a=\"1\"} 1\n", "labels of all series", 3},
		{"a line too long", "# HELP x " + strings.Repeat("y", 64) + "\nx 1\n", "line length (bytes)", 1},
		{"an unterminated label set counts what it has", "x{a=\"1\",b=\"2\",c=\"3\n", "labels of one series", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckShape([]byte(tc.body), lim)
			var le *LimitError
			switch {
			case tc.what == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.what != "" && (!errors.As(err, &le) || le.What != tc.what || le.Line != tc.line):
				t.Fatalf("err = %v, want %s at line %d", err, tc.what, tc.line)
			}
		})
	}
}

// TestHostileBodiesEndWithinTheDeadline scrapes the bodies that kept the
// swarm at full CPU for minutes, or drove it past a gigabyte, before the
// limits existed: each scrape now fails, names the URL and why, and is
// counted as a failed scrape. The last case passes every shape limit and
// is ended by the parse deadline instead.
func TestHostileBodiesEndWithinTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name, contentType, body string
		timeout                 time.Duration
		want                    string
	}{
		{"text: one series with 100,000 labels", "text/plain; version=0.0.4", "# TYPE x gauge\n" + labelsLine(100_000), 0, "line length (bytes) at line 2: 1088894"},
		{"text: one series with 1,000 labels", "text/plain; version=0.0.4", "# TYPE x gauge\n" + labelsLine(1_000), 0, "labels of one series at line 2: 1000,"},
		{"openmetrics: one series with 2,000 labels", omType, "# TYPE x gauge\n" + labelsLine(2_000) + "# EOF\n", 0, "line length (bytes) at line 2"},
		{"openmetrics: 3,000 labels", omType, "# TYPE x gauge\n" + labelsLine(3_000) + "# EOF\n", 0, "line length (bytes) at line 2"},
		{"text: 600,000 series under the byte cap", "text/plain; version=0.0.4", "# TYPE x gauge\n" + strings.Repeat("x 1\n", 600_000), 0, "series (sample lines) at line 50002"},
		{"openmetrics: many short lines, every limit kept", omType, "# TYPE x gauge\n" + manyLines(OpenMetricsLimits.MaxSeries) + "# EOF\n", 300 * time.Millisecond, ErrParseDeadline.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", tc.contentType)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			sc := Scraper{URL: srv.URL}
			if tc.timeout > 0 {
				sc.Client = &http.Client{Timeout: tc.timeout}
			}
			src, err := New(Config{Scraper: sc, Map: Map{"entities": {Gauge: "x"}}, Start: time.Now()})
			if err != nil {
				t.Fatal(err)
			}
			err = src.Sample(context.Background(), time.Now(), true)
			var se *ScrapeError
			if !errors.As(err, &se) || se.URL != srv.URL || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a scrape error naming %s and %q", err, srv.URL, tc.want)
			}
			if ok, failed, last := src.Scrapes(); ok != 0 || failed != 1 || last == nil {
				t.Errorf("scrapes ok %d failed %d (%v): want the failure counted", ok, failed, last)
			}
		})
	}
}

// TestFetchLeavesStateAlone: a Fetch still waiting on its endpoint does
// not hold the Source; another scrape is fetched and applied meanwhile,
// and the late one, older, is left out. Were the fetch done under the
// caller's lock (as the swarm's sampler once did), the second scrape
// would wait for the first, which waits for the second: the watchdog ends
// that as a failure.
func TestFetchLeavesStateAlone(t *testing.T) {
	release, firstIn := make(chan struct{}), make(chan struct{})
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n++
		if n == 1 {
			close(firstIn)
			<-release
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE x gauge\nx %d\n", n)
	}))
	defer srv.Close()
	defer close(release)
	src, err := New(Config{Scraper: Scraper{URL: srv.URL}, Map: Map{"entities": {Gauge: "x"}}, Start: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	slow := make(chan Scrape, 1)
	go func() { slow <- src.Took(src.Fetch(context.Background())) }()
	<-firstIn
	fast := make(chan error, 1)
	go func() { fast <- src.Took(src.Fetch(context.Background())).Apply(t0.Add(time.Second), true) }()
	select {
	case err := <-fast:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the second scrape waited on the first")
	}
	release <- struct{}{}
	if err := (<-slow).Apply(t0, true); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := src.Scrapes(); ok != 1 {
		t.Errorf("%d scrapes recorded, want 1: the older one, applied last, is left out", ok)
	}
	if v, ok := src.Final().Number("entities"); !ok || v != 2 {
		t.Errorf("entities %v (%v), want 2 from the second scrape", v, ok)
	}
}

// TestNegativeCountsRefused: a counter below zero, or a count figure read
// from a gauge below zero, is not a measurement: the figure is missing,
// with the series named.
func TestNegativeCountsRefused(t *testing.T) {
	body := "# TYPE dropped_total counter\ndropped_total -7\n# TYPE ents gauge\nents -3\n# TYPE lf gauge\nlf -0.5\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(body))
	}))
	defer srv.Close()
	src, err := New(Config{Scraper: Scraper{URL: srv.URL}, Start: time.Now(),
		Map: Map{"dropped_ticks": {Counter: "dropped_total"}, "entities": {Gauge: "ents"}, "interest_scale": {Gauge: "lf"}}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if err := src.Sample(context.Background(), time.Now().Add(time.Duration(i)*time.Second), true); err != nil {
			t.Fatal(err)
		}
	}
	b := src.Final()
	for fig, want := range map[string]string{"dropped_ticks": "dropped_total is -7: a counter is never negative", "entities": "ents is -3: entities counts"} {
		if _, ok := b.Number(fig); ok {
			t.Errorf("%s was read", fig)
		}
		if !strings.Contains(b.Missing[fig], want) {
			t.Errorf("%s missing %q, want %q", fig, b.Missing[fig], want)
		}
	}
	if _, ok := b.Number("interest_scale"); !ok {
		t.Errorf("interest_scale (not a count) was refused: %q", b.Missing["interest_scale"])
	}
}
