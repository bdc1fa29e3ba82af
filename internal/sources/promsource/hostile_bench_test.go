package promsource

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
)

// hostileBodies are the worst bodies a scrape may meet: the ones that
// once kept the swarm busy for minutes or past a gigabyte (refused by the
// limits now), and the worst the limits admit (ended by the parse
// deadline if they take too long), beside benign bodies of a size a game
// server exports. scripts/measure-hostile-scrapes.sh
// runs each in a process of its own to read its peak RSS.
var hostileBodies = []struct {
	name, contentType string
	body              func() string
}{
	{"text-benign-300-lines", "text/plain; version=0.0.4", func() string { return "# TYPE x gauge\n" + manyLines(300) }},
	{"text-100k-labels", "text/plain; version=0.0.4", func() string { return "# TYPE x gauge\n" + labelsLine(100_000) }},
	{"text-10k-labels", "text/plain; version=0.0.4", func() string { return "# TYPE x gauge\n" + labelsLine(10_000) }},
	{"text-600k-series", "text/plain; version=0.0.4", func() string { return "# TYPE x gauge\n" + strings.Repeat("x 1\n", 600_000) }},
	{"text-admitted-most-series", "text/plain; version=0.0.4", func() string { return "# TYPE x gauge\n" + mostSeries(TextLimits) }},
	{"text-admitted-most-labels", "text/plain; version=0.0.4", func() string { return "# TYPE x gauge\n" + mostLabels(TextLimits) }},
	{"om-first-use-3-lines", omType, func() string { return "# TYPE x gauge\n" + manyLines(3) + "# EOF\n" }},
	{"om-benign-300-lines", omType, func() string { return "# TYPE x gauge\n" + manyLines(300) + "# EOF\n" }},
	{"om-2000-labels", omType, func() string { return "# TYPE x gauge\n" + labelsLine(2_000) + "# EOF\n" }},
	{"om-3000-labels", omType, func() string { return "# TYPE x gauge\n" + labelsLine(3_000) + "# EOF\n" }},
	{"om-admitted-most-series", omType, func() string { return "# TYPE x gauge\n" + mostSeries(OpenMetricsLimits) + "# EOF\n" }},
	{"om-admitted-most-labels", omType, func() string { return "# TYPE x gauge\n" + mostLabels(OpenMetricsLimits) + "# EOF\n" }},
}

var expfmtOpenMetrics = expfmt.FmtOpenMetrics_1_0_0

// mostSeries is the most sample lines lim admits, with as many labels
// each as its label-pair cap leaves them.
func mostSeries(lim Limits) string {
	return linesWithLabels(lim.MaxSeries, min(lim.MaxLabelsPerSeries, lim.MaxLabelPairs/lim.MaxSeries))
}

// mostLabels is the most labels a series may have, on as many series as
// the label-pair cap admits.
func mostLabels(lim Limits) string {
	return linesWithLabels(min(lim.MaxSeries, lim.MaxLabelPairs/lim.MaxLabelsPerSeries), lim.MaxLabelsPerSeries)
}

// linesWithLabels is n samples of one gauge with k labels each, short
// names and values (as many labels as the line cap allows).
func linesWithLabels(n, k int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("x{")
		for j := range k {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, "l%d=\"%d\"", j, i)
		}
		b.WriteString("} 1\n")
	}
	return b.String()
}

// procKB reads one "Name:   N kB" line of /proc/self/status.
func procKB(name string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, name+":"); ok {
			v, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return v
		}
	}
	return -1
}

// BenchmarkHostileScrape is one whole scrape (request, body, limits,
// parse) of each hostile body through a Source, at the default 2 s
// deadline. It reports whether the scrape was refused, and, as
// hwm-grown-MB, how far the process's peak RSS rose above its RSS once
// the body was built: a figure for one sub-benchmark per process
// (scripts/measure-hostile-scrapes.sh), since the peak never falls.
func BenchmarkHostileScrape(b *testing.B) {
	for _, hb := range hostileBodies {
		b.Run(hb.name, func(b *testing.B) {
			body := []byte(hb.body())
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", hb.contentType)
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			src, err := New(Config{Scraper: Scraper{URL: srv.URL, Client: &http.Client{Timeout: DefaultTimeout}}, Map: Map{"entities": {Gauge: "x"}}, Start: time.Now()})
			if err != nil {
				b.Fatal(err)
			}
			if hb.contentType == omType && hb.name != "om-first-use-3-lines" {
				// The OpenMetrics grammar is built once a process, at its
				// first parse of any body (om-first-use-3-lines measures
				// that): build it first, so the figure is this body's.
				if _, err := Parse(strings.NewReader("# TYPE y gauge\ny 1\n# EOF\n"), expfmtOpenMetrics); err != nil {
					b.Fatal(err)
				}
			}
			before := procKB("VmRSS")
			refused := 0.0
			var lastErr error
			b.ResetTimer()
			for range b.N {
				if err := src.Sample(context.Background(), time.Now(), true); err != nil {
					refused, lastErr = 1, err
				}
			}
			b.StopTimer()
			b.ReportMetric(refused, "refused")
			b.ReportMetric(float64(len(body))/1e6, "body-MB")
			b.ReportMetric((procKB("VmHWM")-before)/1024, "hwm-grown-MB")
			if lastErr != nil {
				b.Log(shortErr(lastErr))
			}
		})
	}
}

// shortErr is the error without the limit's explanation.
func shortErr(err error) string {
	s, _, _ := strings.Cut(err.Error(), " (not parsed")
	return s
}
