package baseline

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/internal/reports/report"
	"github.com/scalegate/scalegate/internal/run/rundir"
	"github.com/scalegate/scalegate/internal/sources/serverwindow"
)

// TestDecodeOwnNames: an own value is keyed by a figure's NAME.STAT; a key
// no gate could name (a hand-edited "physics_ms_p99", a built-in figure's
// name under own) is refused naming it, where it would otherwise never be
// read and the check on the figure would call it never recorded.
func TestDecodeOwnNames(t *testing.T) {
	cases := []struct {
		name, own, err string // err: substring of Decode's error ("" = loads)
	}{
		{"NAME.STAT", `{"physics_ms.p99": 4.2, "bodies.min": 500, "net_sends.rate": 1200}`, ""},
		{"underscore for the dot", `{"physics_ms_p99": 4.2}`, `own["physics_ms_p99"]: not a figure's NAME.STAT`},
		{"a built-in name", `{"kbs": 4}`, `own["kbs"]`},
		{"two dots", `{"physics.step_ms.p99": 4}`, `own["physics.step_ms.p99"]`},
		{"upper case", `{"Physics_ms.p99": 4}`, `own["Physics_ms.p99"]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			raw := `{"schema_version": 2, "baselines": {"pr/weave": {"kbs": 10, "wire_kbs": 11, "own": ` + tc.own + `}}}`
			_, err := Decode([]byte(raw))
			if (tc.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err %v, want one containing %q", err, tc.err)
			}
			if err != nil && !strings.Contains(err.Error(), `baselines["pr/weave"]`) {
				t.Errorf("err %v does not name the key", err)
			}
		})
	}
}

// ownProfile is a baselined profile that declares physics_ms (a histogram,
// better lower), bodies (a gauge, better higher), frame_ms (a timing
// summary) and idle_ms (declared, not gated), and gates the first three.
func ownProfile() *profile.Profile {
	return &profile.Profile{
		Name: "p", Transport: "enet", Clients: 8, Patterns: []string{"weave"}, Baselined: true,
		Figures: gatetable.OwnFigures{
			"physics_ms": {Unit: "ms", Better: "lower", File: &serverwindow.FileFigure{Histogram: "physics.step_ms"}},
			"bodies":     {Better: "higher", File: &serverwindow.FileFigure{Gauge: "world.bodies"}},
			"frame_ms":   {Unit: "ms", Better: "lower", Timing: true, File: &serverwindow.FileFigure{Summary: "frame_ms"}},
			"idle_ms":    {Unit: "ms", Better: "lower", File: &serverwindow.FileFigure{Summary: "idle_ms"}},
		},
		Gates: profile.Gates{
			"physics_ms_p99_max": {Threshold: ptr(100.0)},
			"bodies_min_min":     {Threshold: ptr(1.0)},
			"frame_ms_p99_max":   {Threshold: ptr(100.0)},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// ownLeg is one passing leg whose server_tick has the own figures given
// (a negative value: the figure is missing from the run).
func ownLeg(t *testing.T, id string, physicsP99, bodiesMin, frameP99 float64) rundir.LegResult {
	t.Helper()
	tick := map[string]any{"wire_out_kbs_per_client": 11.0, "wire_peers": 8, "idle_ms": map[string]any{"p99": 0.5}}
	if physicsP99 >= 0 {
		tick["physics_ms"] = map[string]any{"p50": physicsP99 / 2, "p99": physicsP99, "max": physicsP99 + 1}
	}
	if bodiesMin >= 0 {
		tick["bodies"] = map[string]any{"min": bodiesMin, "max": bodiesMin + 10}
	}
	if frameP99 >= 0 {
		tick["frame_ms"] = map[string]any{"p99": frameP99}
	}
	raw, err := json.Marshal(tick)
	if err != nil {
		t.Fatal(err)
	}
	r := &report.Report{DownstreamKBsPerClient: &report.MeanMax{Mean: 10, Max: 10}, ServerTick: raw}
	return rundir.LegResult{Leg: profile.Leg{ID: id, BaselineKey: "p/weave"}, Verdict: rundir.VerdictPassed, Report: r}
}

// TestUpdateRecordsOwnFigures: --update-baseline records each own
// statistic a gate reads, as the built-in figures are recorded: one run
// its value, N ≥ 3 runs the median and the spread; a timing figure only
// from N ≥ 3; a declared figure no gate reads is not recorded; a run
// missing a gated figure refuses the update and leaves the file alone.
func TestUpdateRecordsOwnFigures(t *testing.T) {
	cases := []struct {
		name string
		legs []rundir.LegResult
		err  string             // substring of Update's error ("" = updated)
		own  map[string]float64 // the entry's own values
		// spread: the figures recorded with a spread; absent: not recorded
		spread, absent []string
	}{
		{"one run", []rundir.LegResult{ownLeg(t, "weave", 4.2, 500, 9)}, "",
			map[string]float64{"physics_ms.p99": 4.2, "bodies.min": 500}, nil, []string{"frame_ms.p99", "idle_ms.p99", "physics_ms.p50", "bodies.max"}},
		{"three runs", []rundir.LegResult{ownLeg(t, "run-1/weave", 4.0004, 500, 9), ownLeg(t, "run-2/weave", 4.4, 480, 8), ownLeg(t, "run-3/weave", 3.9, 510, 10)}, "",
			map[string]float64{"physics_ms.p99": 4, "bodies.min": 500, "frame_ms.p99": 9}, []string{"physics_ms.p99", "bodies.min", "frame_ms.p99"}, []string{"idle_ms.p99"}},
		{"a run without a gated figure", []rundir.LegResult{ownLeg(t, "run-1/weave", 4, 500, 9), ownLeg(t, "run-2/weave", -1, 480, 8), ownLeg(t, "run-3/weave", 3.9, 510, 10)},
			"leg run-2/weave: server_tick.physics_ms.p99 missing", nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "b.json")
			if err := os.WriteFile(path, []byte(v1), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			run := &rundir.RunResult{Profile: ownProfile(), Verdict: rundir.VerdictPassed, Legs: tc.legs}
			ok, err := Update(b, run, time.Now(), "abc", "host-1")
			if tc.err != "" {
				if ok || err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ok=%v err=%v, want an error containing %q", ok, err, tc.err)
				}
				if raw, _ := os.ReadFile(path); string(raw) != v1 {
					t.Errorf("the file changed:\n%s", raw)
				}
				return
			}
			if !ok || err != nil {
				t.Fatalf("ok=%v err=%v", ok, err)
			}
			nb, err := Read(path)
			if err != nil {
				t.Fatalf("the written file does not load: %v\n%s", err, nb.Raw)
			}
			e := nb.Entries["p/weave"]
			for _, fig := range tc.absent {
				if ref, ok := e.Reference(fig); ok {
					t.Errorf("%s recorded (%+v): no gate reads it, or one run cannot record it", fig, ref)
				}
			}
			for fig, want := range tc.own {
				if ref, ok := e.Reference(fig); !ok || ref.Value != want {
					t.Errorf("%s: %+v (recorded %v), want %v", fig, ref, ok, want)
				}
			}
			for _, fig := range tc.spread {
				if s, ok := e.Spread[fig]; !ok || s.N != len(tc.legs) {
					t.Errorf("%s: spread %+v (recorded %v), want %d samples", fig, s, ok, len(tc.legs))
				}
			}
			if _, ok := nb.Entries["pr/weave"]; !ok {
				t.Error("the other key was dropped")
			}
		})
	}
}
