package swarm

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/reports/report"
)

// A sub-second rss_sample_interval_s is honoured from a metrics file (a 6 s
// leg's slope needs its tail's buckets filled; the once-a-second rows gave
// a 3 s tail 4 samples, and a least-squares fit of 4 samples read one
// allocation step of a healthy server as a leak), and a reading the server
// has not rewritten is not sampled twice under two times.
func TestRSSSampledFasterThanTheRows(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		rewrite   bool
		min, max  int
		wantSlope bool
	}{
		// 2 s at 50 ms: up to 40 samples; the rows alone would give 3.
		{"rewritten every 20 ms", true, 12, 41, true},
		// The file written once: one sample, however often it is read.
		{"never rewritten", false, 1, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := startFakeServer(t, BodyFormatOpaque, nil, 0)
			path := filepath.Join(t.TempDir(), "m.json")
			write := func(ticks int64) {
				doc := strings.Replace(metricsFile, `"dropped_ticks":3`, fmt.Sprintf(`"dropped_ticks":3,"ticks_total":%d`, ticks), 1)
				doc = strings.Replace(doc, `"rss_kb":50000`, fmt.Sprintf(`"rss_kb":%d`, 50000+ticks), 1)
				if err := report.WriteFileAtomic(path, []byte(doc)); err != nil {
					t.Error(err)
				}
			}
			write(1)
			ctx, cancel := context.WithCancel(context.Background())
			writer := make(chan struct{})
			go func() { // owned by the test: stopped by cancel, waited for below
				defer close(writer)
				tk := time.NewTicker(20 * time.Millisecond)
				defer tk.Stop()
				for ticks := int64(2); tc.rewrite; ticks++ {
					select {
					case <-ctx.Done():
						return
					case <-tk.C:
						write(ticks)
					}
				}
			}()
			cfg := Config{Addr: srv.addr, Transport: "enet", Clients: 2, Threads: 1, Duration: 2 * time.Second,
				Ramp: 10 * time.Millisecond, ServerMetrics: path, RSSSampleInterval: 50 * time.Millisecond}
			res := runSwarm(t, context.Background(), cfg, 60*time.Second)
			cancel()
			<-writer
			pts := res.Report.RSSSeries
			if len(pts) < tc.min || len(pts) > tc.max {
				t.Fatalf("%d RSS samples, want %d to %d: %+v", len(pts), tc.min, tc.max, pts)
			}
			for i := 1; i < len(pts); i++ {
				if pts[i].RSSKB <= pts[i-1].RSSKB || pts[i].TS <= pts[i-1].TS {
					t.Fatalf("sample %d repeats or goes back: %+v then %+v", i, pts[i-1], pts[i])
				}
			}
			if got := res.Report.RSSSlopeKBPerMin != nil; got != tc.wantSlope {
				t.Fatalf("slope fitted %v, want %v (%d samples)", got, tc.wantSlope, len(pts))
			}
		})
	}
}

// A Prometheus source is read once a second, with the rows: a shorter RSS
// interval for one is refused, not silently stretched.
func TestFastRSSFromPrometheusRefused(t *testing.T) {
	for _, tc := range []struct {
		every time.Duration
		file  bool
		want  string
	}{
		{100 * time.Millisecond, false, "rss sample interval 100ms: a Prometheus source is read once a second"},
		{time.Second, false, ""},
		{100 * time.Millisecond, true, ""},
	} {
		cfg := Config{ServerMetricsPrometheus: "http://127.0.0.1:1/metrics", RSSSampleInterval: tc.every}
		if tc.file {
			cfg.ServerMetrics, cfg.ServerMetricsPrometheus = "m.json", ""
		}
		got := errors.Join(cfg.metricsErrors()...)
		if tc.want == "" && got != nil || tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)) {
			t.Errorf("%s (file %v): %v, want %q", tc.every, tc.file, got, tc.want)
		}
	}
}
