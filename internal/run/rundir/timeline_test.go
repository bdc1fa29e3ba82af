package rundir

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/reports/report"
)

func TestParseTimelineCSV(t *testing.T) {
	head := "t_s,connected,tick_hz_min,kbs,rtt_p95_ms,tick_ms_p99,rss_kb\n" // runs before the swarm's columns
	head2 := "t_s,connected,tick_hz_min,kbs,rtt_p95_ms,tick_ms_p99,rss_kb,worker_dt_p99_ms,service_interval_mean_ms\n"
	head3 := strings.Join(timelineColumns[:12], ",") + "\n" // runs before the server's diagnostics
	head4 := strings.Join(timelineColumns[:19], ",") + "\n" // runs before input latency
	head5 := strings.Join(timelineColumns, ",") + "\n"
	tests := []struct {
		name, in, err string
		rows          int
	}{
		{"empty cells are missing", head + "1,0,,0,,3.9,27944\n2,8,59.5,70.1,47,8.1,\n", "", 2},
		{"with the swarm's columns", head2 + "1,0,,0,,3.9,27944,,\n2,8,59.5,70.1,47,8.1,,1.8,16.7\n", "", 2},
		{"older row under the new header", head2 + "1,0,,0,,3.9,27944\n", "line 2: wrong number of fields", 0},
		{"bad service interval", head2 + "1,0,,0,,3.9,27944,1.8,x\n", "line 2: service_interval_mean_ms", 0},
		{"with the host's columns", head3 + "1,0,,0,,3.9,27944,,,,,\n2,8,59.5,70.1,47,8.1,,1.8,16.7,0.91,0,12.5\n", "", 2},
		{"with the server's columns", head4 + "1,0,,0,,3.9,27944,,,,,,,,,,,,\n2,8,59.5,70.1,47,8.1,,1.8,16.7,0.91,0,12.5,97.5,70.2,3,,0.4,0,\n", "", 2},
		{"with input latency", head5 + "1,0,,0,,3.9,27944,,,,,,,,,,,,,\n2,8,59.5,70.1,47,8.1,,1.8,16.7,0.91,0,12.5,97.5,70.2,3,,0.4,0,,21.5\n", "", 2},
		{"bad server column", head4 + "1,0,,0,,3.9,27944,,,,,,x,,,,,,\n", "line 2: server_cpu_pct", 0},
		{"header only", head, "", 0},
		{"wrong header", "t,connected\n", "header", 0},
		{"bad number", head + "1,0,x,0,,,\n", "line 2: tick_hz_min", 0},
		{"required empty", head + ",0,,0,,,\n", "line 2: t_s: empty", 0},
		{"short row", head + "1,0\n", "wrong number of fields", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl, err := ParseTimelineCSV(strings.NewReader(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || len(tl) != tc.rows {
				t.Fatalf("%d rows, err %v", len(tl), err)
			}
			if tc.rows == 2 && (tl[0].TickHzMin != nil || tl[1].RSSKB != nil || *tl[1].TickHzMin != 59.5 || *tl[0].RSSKB != 27944) {
				t.Errorf("cells: %+v %+v", tl[0], tl[1])
			}
			if strings.HasPrefix(tc.in, head2) && tc.rows == 2 && (tl[0].WorkerDtP99 != 0 || tl[0].ServiceIntervalMeanMs != nil ||
				tl[1].WorkerDtP99 != 1.8 || *tl[1].ServiceIntervalMeanMs != 16.7) {
				t.Errorf("swarm cells: %+v %+v", tl[0], tl[1])
			}
			if strings.HasPrefix(tc.in, head4) && tc.rows == 2 && (tl[0].Measured() || tl[1].ServerCPUPct == nil || *tl[1].ServerCPUPct != 97.5 ||
				*tl[1].SlowTicks != 3 || tl[1].GCCount != nil || *tl[1].SendQueueMax != 0 || tl[1].SlowSends != nil) {
				t.Errorf("server cells: %+v %+v", tl[0].TimelineServer, tl[1].TimelineServer)
			}
			if strings.HasPrefix(tc.in, head5) && tc.rows == 2 && (tl[0].InputLatencyP95Ms != nil || tl[1].InputLatencyP95Ms == nil || *tl[1].InputLatencyP95Ms != 21.5) {
				t.Errorf("input latency cells: %+v %+v", tl[0].InputLatencyP95Ms, tl[1].InputLatencyP95Ms)
			}
			if (strings.HasPrefix(tc.in, head3) || strings.HasPrefix(tc.in, head4)) && tc.rows == 2 && (tl[0].HostOtherCores != nil || tl[1].HostOtherCores == nil || *tl[1].HostOtherCores != 0.91 ||
				*tl[1].HostStealPct != 0 || *tl[1].HostCPUPressureAvg10 != 12.5) {
				t.Errorf("host cells: %+v %+v", tl[0], tl[1])
			}
		})
	}
}

func FuzzParseTimelineCSV(f *testing.F) {
	f.Add([]byte("t_s,connected,tick_hz_min,kbs,rtt_p95_ms,tick_ms_p99,rss_kb\n1,0,,0,,3.9,27944\n"))
	f.Add([]byte("t_s,connected\n\"x"))
	f.Add([]byte("t_s,connected,tick_hz_min,kbs,rtt_p95_ms,tick_ms_p99,rss_kb,worker_dt_p99_ms,service_interval_mean_ms\n1,0,,0,,3.9,27944,2.5,16.7\n"))
	f.Add([]byte(strings.Join(timelineColumns, ",") + "\n1,0,,0,,3.9,27944,2.5,16.7,0.5,0,1,90,70,1,2,0.5,0,\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tl, err := ParseTimelineCSV(strings.NewReader(string(b)))
		if err != nil && tl != nil {
			t.Fatalf("rows returned with an error: %v", err)
		}
	})
}

// TestTimelineCSVOwnFigures: the profile's own figures are columns
// "own:NAME.STAT" after the fixed ones, written and read back; an empty
// cell is a second without the figure; a foreign column among them is
// refused.
func TestTimelineCSVOwnFigures(t *testing.T) {
	p99, bodies := 4.25, 12.0
	tl := []report.TimelinePoint{
		{TS: 1, Own: map[string]float64{"physics_ms.p99": p99}},
		{TS: 2, Own: map[string]float64{"physics_ms.p99": p99 * 2, "bodies.min": bodies}},
		{TS: 3},
	}
	path := filepath.Join(t.TempDir(), "timeline.csv")
	if err := WriteTimelineCSV(path, tl); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, _, _ := strings.Cut(string(b), "\n")
	if !strings.HasSuffix(head, ",input_latency_p95_ms,own:bodies.min,own:physics_ms.p99") {
		t.Fatalf("header %q", head)
	}
	got, err := ParseTimelineCSV(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Own["physics_ms.p99"] != p99 || len(got[0].Own) != 1 || got[1].Own["bodies.min"] != bodies || got[2].Own != nil {
		t.Fatalf("rows %+v", got)
	}
	bad := strings.Replace(string(b), "own:bodies.min,own:physics_ms.p99", "own:bodies.min,extra", 1)
	if _, err := ParseTimelineCSV(strings.NewReader(bad)); err == nil || !strings.Contains(err.Error(), `column "extra" after the own figures' columns`) {
		t.Fatalf("foreign column: %v", err)
	}
}

// The matrix's note names the profile's own phase columns beside the
// built-in ones.
func TestMatrixNoteNamesOwnPhases(t *testing.T) {
	m := &SweepMatrix{Columns: []MatrixColumn{{Name: "ai_ms_mean", Title: "ai", Unit: "ms"}, {Name: "physics_ms_mean", Title: "physics_ms", Unit: "ms", OwnPhase: true}}}
	if got := phaseNames(m); got != "ai, physics_ms (the profile's own)" {
		t.Errorf("phase names %q", got)
	}
}
