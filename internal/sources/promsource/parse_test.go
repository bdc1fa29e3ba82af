package promsource

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/common/expfmt"
)

func TestChooseFormat(t *testing.T) {
	cases := []struct {
		ct, fallback, want, err string
	}{
		{"text/plain; version=0.0.4; charset=utf-8", "", FormatText, ""},
		{"text/plain", "", FormatText, ""},
		{"application/openmetrics-text; version=1.0.0; charset=utf-8", "", FormatOpenMetrics, ""},
		{"application/openmetrics-text; version=0.0.1", "", FormatOpenMetrics, ""},
		{"application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited", "", FormatProtobuf, ""},
		{"", "", "", "sent no Content-Type and no fallback format given"},
		{"", FormatText, FormatText, ""},
		{"text/html", "", "", `Content-Type "text/html" is not a Prometheus exposition format`},
		{"text/html", FormatOpenMetrics, FormatOpenMetrics, ""},
		{"application/openmetrics-text; version=2.0.0", "", "", `OpenMetrics version "2.0.0" has no parser here`},
		{"invalid/", "", "", "does not parse"},
		{"", "json", "", `fallback format "json"`},
	}
	for _, tc := range cases {
		_, got, err := ChooseFormat(tc.ct, tc.fallback)
		if got != tc.want || (tc.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ChooseFormat(%q, %q) = %q, %v; want %q, %q", tc.ct, tc.fallback, got, err, tc.want, tc.err)
		}
	}
}

// TestMalformed: every malformed exposition is a clear error, never a
// panic and never a half-read scrape.
func TestMalformed(t *testing.T) {
	om, _, _ := ChooseFormat("application/openmetrics-text; version=1.0.0", "")
	cases := []struct {
		name   string
		format expfmt.Format
		body   string
		want   string
	}{
		{"text: unclosed labels", textFormat, "game_players{state=\"joined\" 3\n", "parse:"},
		{"text: value not a number", textFormat, "game_players abc\n", "parse:"},
		{"text: type after samples", textFormat, "x 1\n# TYPE x gauge\n", "parse:"},
		{"text: two TYPE lines", textFormat, "# TYPE x gauge\n# TYPE x counter\nx 1\n", "parse:"},
		{"openmetrics: no # EOF", om, "# TYPE x gauge\nx 1\n", "does not end with # EOF"},
		{"openmetrics: data after # EOF", om, "x 1\n# EOF\ny 2\n", "after # EOF"},
		{"openmetrics: bad line", om, "# TYPE x gauge\nx{ 1\n# EOF\n", "parse:"},
		{"binary", textFormat, "\x00\xff\x01garbage{{{", "parse:"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fams, err := Parse(strings.NewReader(tc.body), tc.format)
			if err == nil || fams != nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, %v; want an error with %q", fams, err, tc.want)
			}
		})
	}
}

// TestScrapeErrors: a non-200, an oversized body, a wrong Content-Type and
// nobody listening are errors naming the URL.
func TestScrapeErrors(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/notyet", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "warming up", http.StatusServiceUnavailable)
	})
	mux.HandleFunc("/huge", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write(bytes.Repeat([]byte("# comment line\n"), 100))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"schema_version":6}`))
	})
	mux.HandleFunc("/empty", func(w http.ResponseWriter, _ *http.Request) { w.Header().Set("Content-Type", "text/plain") })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	dead := httptest.NewServer(mux)
	dead.Close()
	for path, want := range map[string]string{
		srv.URL + "/notyet": "status 503 Service Unavailable: warming up",
		srv.URL + "/huge":   "body over 1000 bytes",
		srv.URL + "/json":   `"application/json" is not a Prometheus exposition format`,
		srv.URL + "/empty":  "empty body",
		dead.URL + "/x":     "connect",
		"file:///etc/x":     "not an http(s) URL",
	} {
		sc := &Scraper{URL: path, MaxBytes: 1000}
		_, _, err := sc.Fetch(context.Background())
		var se *ScrapeError
		if err == nil || !errors.As(err, &se) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error naming it with %q", path, err, want)
		}
	}
}

func TestReady(t *testing.T) {
	for _, format := range []string{FormatText, FormatOpenMetrics} {
		e := newEndpoint(t, format)
		st := windowScrapes[1].st
		e.cur.Store(&st)
		sc := &Scraper{URL: e.srv.URL}
		if err := Ready(context.Background(), sc, gameMap); err != nil {
			t.Fatalf("%s: ready: %v", format, err)
		}
		// The process_* defaults do not hold readiness up.
		if err := Ready(context.Background(), sc, Map{"entities": {Gauge: "game_entities"}, "rss_kb": {Gauge: "nope"}}); err == nil || !strings.Contains(err.Error(), "rss_kb: nope not found") {
			t.Fatalf("%s: a mapped rss_kb that is absent must hold readiness: %v", format, err)
		}
		renamed := st
		renamed.omitTick = true
		e.cur.Store(&renamed)
		err := Ready(context.Background(), sc, gameMap)
		if err == nil || !strings.Contains(err.Error(), "tick_ms: game_tick_duration_seconds not found") || !strings.Contains(err.Error(), e.srv.URL) {
			t.Fatalf("%s: renamed series: %v", format, err)
		}
	}
}

// realistic is what a Go game server with client_golang exports: the Go
// and process collectors and a 100-bucket tick histogram. In OpenMetrics
// the Go collector is left out: it exports go_memstats_alloc_bytes (a
// gauge) beside go_memstats_alloc_bytes_total (a counter), one family name
// in OpenMetrics, which expfmt's OpenMetrics parser refuses ("metadata for
// metric after samples"). Another reason the scraper asks for text first.
func realistic(tb testing.TB, format expfmt.Format) []byte {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if format.FormatType() != expfmt.TypeOpenMetrics {
		reg.MustRegister(collectors.NewGoCollector())
	}
	var bounds []float64
	for i := 1; i <= 100; i++ {
		bounds = append(bounds, float64(i)*0.00025)
	}
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "game_tick_duration_seconds", Help: "tick", Buckets: bounds})
	for i := range 5000 {
		h.Observe(float64(i%90) * 0.0002)
	}
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "game_net_bytes_sent_total", Help: "bytes"})
	c.Add(123456)
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "game_players", Help: "players"}, []string{"state"})
	g.WithLabelValues("joined").Set(128)
	g.WithLabelValues("joining").Set(3)
	e := prometheus.NewGauge(prometheus.GaugeOpts{Name: "game_entities", Help: "entities"})
	e.Set(2128)
	info := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "game_info", Help: "build"}, []string{"transport"})
	info.WithLabelValues("enet").Set(1)
	reg.MustRegister(h, c, g, e, info)
	mfs, err := reg.Gather()
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, format)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			tb.Fatal(err)
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		c.Close()
	}
	return buf.Bytes()
}

// TestClientGolangExposition: what client_golang writes in each format
// parses, and the map reads it.
func TestClientGolangExposition(t *testing.T) {
	for _, f := range []expfmt.Format{expfmt.NewFormat(expfmt.TypeTextPlain), expfmt.FmtOpenMetrics_1_0_0} {
		fams, err := Parse(bytes.NewReader(realistic(t, f)), f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		src, err := New(Config{Map: gameMap})
		if err != nil {
			t.Fatal(err)
		}
		src.Record(src.start, fams, true)
		b := src.Final()
		for _, k := range []string{"tick_ms", "wire_out_kbs", "wire_out_kbs_per_client", "cpu_pct"} {
			delete(b.Missing, k) // one scrape: no window to take a rate over
		}
		if len(b.Missing) > 0 || b.Numbers["peers"] != 128 || b.Numbers["rss_kb"] <= 0 || b.Strings["transport"] != "enet" {
			t.Fatalf("%s: missing %v, numbers %v", f, b.Missing, b.Numbers)
		}
	}
}

// fuzzParse feeds arbitrary bodies to a parser and the series reader.
// Nothing may panic; an accepted body must read without panicking.
func fuzzParse(t *testing.T, body []byte, format expfmt.Format) {
	fams, err := Parse(bytes.NewReader(body), format)
	if err != nil {
		if fams != nil || err.Error() == "" {
			t.Fatalf("error %v with families", err)
		}
		return
	}
	for name := range fams {
		for _, k := range []Kind{Gauge, CounterRate, Histogram, Summary, Info} {
			r := read(fams, k, name, nil, "x")
			if r.err == "" && k == Histogram && len(r.upper) != len(r.cum) {
				t.Fatalf("histogram layout %d bounds %d counts", len(r.upper), len(r.cum))
			}
		}
	}
}

// FuzzParseText fuzzes the text format, the one the scraper asks for.
//
//	go test -run='^$' -fuzz=FuzzParseText -fuzztime=60s ./internal/sources/promsource
func FuzzParseText(f *testing.F) {
	f.Add([]byte(expose(FormatText, windowScrapes[2].st)))
	f.Add([]byte("# TYPE s summary\ns{quantile=\"0.5\"} 1\ns_sum 2\ns_count 3\n"))
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"1\"} 2\nh_count 1\nh_sum 1\n"))
	f.Add([]byte("x{a=\"\\\"\"} NaN\n"))
	f.Fuzz(func(t *testing.T, body []byte) { fuzzParse(t, body, textFormat) })
}

// FuzzParseOpenMetrics fuzzes the OpenMetrics parser. Each input costs
// milliseconds (an ABNF grammar), so give it minutes, not seconds.
//
//	go test -run='^$' -fuzz=FuzzParseOpenMetrics -fuzztime=5m ./internal/sources/promsource
func FuzzParseOpenMetrics(f *testing.F) {
	f.Add([]byte(expose(FormatOpenMetrics, windowScrapes[2].st)))
	f.Add([]byte("# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_bucket{le=\"1\"} 2\nh_count 1\nh_sum 1\n# EOF\n"))
	f.Add([]byte("# TYPE c counter\nc_total 1 # {id=\"x\"} 2 3\nc_created 1\n# EOF\n"))
	om, _, _ := ChooseFormat("application/openmetrics-text; version=1.0.0", "")
	f.Fuzz(func(t *testing.T, body []byte) { fuzzParse(t, body, om) })
}

func benchmarkParseCompute(b *testing.B, f expfmt.Format) {
	body := realistic(b, f)
	src, err := New(Config{Map: gameMap})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(body)))
	i := 0
	for b.Loop() {
		fams, err := Parse(bytes.NewReader(body), f)
		if err != nil {
			b.Fatal(err)
		}
		src.Record(src.start.Add(time.Duration(i)*time.Second), fams, true)
		src.Final()
		i++
	}
	b.ReportMetric(float64(bytes.Count(body, []byte("\n"))), "lines")
}

// BenchmarkParseComputeText is one scrape of a realistic Go server's
// exposition (text format): parse, read every mapped series, fold into the
// windows and compute the final figures.
func BenchmarkParseComputeText(b *testing.B) {
	benchmarkParseCompute(b, expfmt.NewFormat(expfmt.TypeTextPlain))
}

// BenchmarkParseComputeOpenMetrics is the same exposition in OpenMetrics.
func BenchmarkParseComputeOpenMetrics(b *testing.B) {
	benchmarkParseCompute(b, expfmt.FmtOpenMetrics_1_0_0)
}

// TestHistogramNotCumulativeRefused: buckets whose counts fall as the
// bound grows are not a histogram a quantile can be read from; the
// reading says which bucket. (A negative count the text parser refuses
// itself.)
func TestHistogramNotCumulativeRefused(t *testing.T) {
	for _, tc := range []struct{ name, buckets, want string }{
		{"falling", `h_bucket{le="0.01"} 5` + "\n" + `h_bucket{le="0.02"} 3` + "\n" + `h_bucket{le="+Inf"} 5`, "not cumulative: its bucket le=0.02 counts 3, fewer than le=0.01's 5"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := "# TYPE h histogram\n" + tc.buckets + "\nh_sum 1\nh_count 5\n"
			fams, err := Parse(strings.NewReader(body), expfmt.NewFormat(expfmt.TypeTextPlain))
			if err != nil {
				t.Fatal(err)
			}
			r := read(fams, Histogram, "h", nil, "")
			if !strings.Contains(r.err, tc.want) {
				t.Errorf("err %q, want %q", r.err, tc.want)
			}
		})
	}
}
