package gate

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/judge/baseline"
	"github.com/scalegate/scalegate/internal/run/rundir"
)

const committed = `{
  "schema_version": 1,
  "baselines": {
    "other/weave": {"kbs": 11, "wire_kbs": 12},
    "t/weave": {"kbs": 60, "wire_kbs": 50}
  }
}
`

func writeBaseline(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "scale-gate-baseline.json")
	if err := os.WriteFile(path, []byte(committed), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// runWith evaluates one synthetic leg and folds it into a run, as Run does.
func runWith(t *testing.T, p *profile.Profile, b *baseline.Committed, mutate func(map[string]any)) *rundir.RunResult {
	t.Helper()
	tick := healthyTick()
	if mutate != nil {
		mutate(tick)
	}
	r := healthyReport(tick)
	leg := p.Legs()[0]
	checks := Evaluate(Input{SchemaValidated: true, Profile: p, Leg: leg, Report: r, Baseline: b, UpdateBaseline: true})
	res := &rundir.RunResult{Profile: p, Legs: []rundir.LegResult{{Leg: leg, Checks: checks, Verdict: LegVerdict(checks, Facts{}), Report: r}}}
	res.Verdict = RunVerdict(res)
	return res
}

func TestUpdateBaselineFailedRunLeavesFileByteIdentical(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mutate      func(map[string]any)
		interrupted bool
	}{
		{"hard gate failed", func(tk map[string]any) { tk["wire_out_kbs_per_client"] = 400.0 }, false},
		{"metric missing", func(tk map[string]any) { delete(tk, "rss_startup_kb") }, false},
		{"interrupted", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeBaseline(t)
			before, _ := os.ReadFile(path)
			st, _ := os.Stat(path)
			b, err := baseline.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			res := runWith(t, testProfile(), b, tc.mutate)
			res.Interrupted = tc.interrupted
			if tc.interrupted {
				res.Verdict = RunVerdict(res)
			}
			ok, err := baseline.Update(b, res, time.Now(), "abc", "host-1")
			if ok || err == nil {
				t.Fatalf("update after a %s run: ok=%v err=%v", tc.name, ok, err)
			}
			after, _ := os.ReadFile(path)
			st2, _ := os.Stat(path)
			if !bytes.Equal(before, after) || !st.ModTime().Equal(st2.ModTime()) {
				t.Fatalf("baseline changed after a failed run:\n%s", after)
			}
			if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
				t.Fatalf("stray files next to the baseline: %v", ents)
			}
		})
	}
}

func TestUpdateBaselinePassingRunKeepsOtherKeys(t *testing.T) {
	path := writeBaseline(t)
	b, _ := baseline.Read(path)
	res := runWith(t, testProfile(), b, func(tk map[string]any) { tk["wire_out_kbs_per_client"] = 55.5 })
	if res.Verdict != rundir.VerdictPassed {
		t.Fatalf("run verdict %s", res.Verdict)
	}
	ok, err := baseline.Update(b, res, time.Now(), "abc", "host-1")
	if !ok || err != nil {
		t.Fatalf("update: ok=%v err=%v", ok, err)
	}
	nb, err := baseline.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if e := nb.Entries["t/weave"]; e.WireKBs != 55.5 || e.KBs != 60 || e.GitHead != "abc" {
		t.Errorf("t/weave = %+v", e)
	}
	if e := nb.Entries["other/weave"]; e.KBs != 11 || e.WireKBs != 12 {
		t.Errorf("other key lost or changed: %+v", e)
	}
}

// TestUpdateBaselineCreatesDirectory: a repository without baselines/ gets
// the directory with its first baseline; a path that cannot be created is
// an error, never a silent no-op.
func TestUpdateBaselineCreatesDirectory(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "baselines", "scale-gate-baseline.json")
	b, err := baseline.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := baseline.CheckWritable(path); err != nil {
		t.Fatalf("check: %v", err)
	}
	res := runWith(t, testProfile(), b, nil)
	if ok, err := baseline.Update(b, res, time.Now(), "abc", "host-1"); !ok || err != nil {
		t.Fatalf("update: ok=%v err=%v", ok, err)
	}
	nb, err := baseline.Read(path)
	if err != nil || len(nb.Entries) != 1 {
		t.Fatalf("written baseline: %v %+v", err, nb)
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("stray files next to the baseline: %v", ents)
	}

	// A directory that would have to live inside a regular file.
	file := filepath.Join(root, "afile")
	os.WriteFile(file, nil, 0o644)
	bad := filepath.Join(file, "scale-gate-baseline.json")
	if err := baseline.CheckWritable(bad); err == nil {
		t.Error("check passed for a path under a regular file")
	}
	b2 := &baseline.Committed{File: baseline.File{SchemaVersion: 1, Entries: map[string]baseline.Entry{}}, Path: bad}
	if ok, err := baseline.Update(b2, res, time.Now(), "abc", "host-1"); ok || err == nil {
		t.Errorf("update under a regular file: ok=%v err=%v", ok, err)
	}
}

func TestUpdateBaselineNotBaselinedNeverTouches(t *testing.T) {
	path := writeBaseline(t)
	before, _ := os.ReadFile(path)
	b, _ := baseline.Read(path)
	p := testProfile()
	p.Baselined = false
	res := runWith(t, p, b, nil)
	ok, err := baseline.Update(b, res, time.Now(), "abc", "host-1")
	if ok || err != nil {
		t.Fatalf("baselined:false: ok=%v err=%v", ok, err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("baselined:false touched the file")
	}
}
