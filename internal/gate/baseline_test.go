package gate

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/baseline"
	"github.com/scalegate/scalegate/internal/boundedfile/boundedfiletest"
	"github.com/scalegate/scalegate/internal/profile"
	"github.com/scalegate/scalegate/internal/rundir"
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
func runWith(t *testing.T, p *profile.Profile, b *Baseline, mutate func(map[string]any)) *rundir.RunResult {
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
			b, err := ReadBaseline(path)
			if err != nil {
				t.Fatal(err)
			}
			res := runWith(t, testProfile(), b, tc.mutate)
			res.Interrupted = tc.interrupted
			if tc.interrupted {
				res.Verdict = RunVerdict(res)
			}
			ok, err := UpdateBaseline(b, res, time.Now(), "abc", "host-1")
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
	b, _ := ReadBaseline(path)
	res := runWith(t, testProfile(), b, func(tk map[string]any) { tk["wire_out_kbs_per_client"] = 55.5 })
	if res.Verdict != rundir.VerdictPassed {
		t.Fatalf("run verdict %s", res.Verdict)
	}
	ok, err := UpdateBaseline(b, res, time.Now(), "abc", "host-1")
	if !ok || err != nil {
		t.Fatalf("update: ok=%v err=%v", ok, err)
	}
	nb, err := ReadBaseline(path)
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
	b, err := ReadBaseline(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckBaselineWritable(path); err != nil {
		t.Fatalf("check: %v", err)
	}
	res := runWith(t, testProfile(), b, nil)
	if ok, err := UpdateBaseline(b, res, time.Now(), "abc", "host-1"); !ok || err != nil {
		t.Fatalf("update: ok=%v err=%v", ok, err)
	}
	nb, err := ReadBaseline(path)
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
	if err := CheckBaselineWritable(bad); err == nil {
		t.Error("check passed for a path under a regular file")
	}
	b2 := &Baseline{File: baseline.File{SchemaVersion: 1, Entries: map[string]baseline.Entry{}}, Path: bad}
	if ok, err := UpdateBaseline(b2, res, time.Now(), "abc", "host-1"); ok || err == nil {
		t.Errorf("update under a regular file: ok=%v err=%v", ok, err)
	}
}

func TestUpdateBaselineNotBaselinedNeverTouches(t *testing.T) {
	path := writeBaseline(t)
	before, _ := os.ReadFile(path)
	b, _ := ReadBaseline(path)
	p := testProfile()
	p.Baselined = false
	res := runWith(t, p, b, nil)
	ok, err := UpdateBaseline(b, res, time.Now(), "abc", "host-1")
	if ok || err != nil {
		t.Fatalf("baselined:false: ok=%v err=%v", ok, err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(before, after) {
		t.Fatal("baselined:false touched the file")
	}
}

func TestReadBaseline(t *testing.T) {
	dir := t.TempDir()
	b, err := ReadBaseline(filepath.Join(dir, "absent.json"))
	if err != nil || len(b.Entries) != 0 {
		t.Fatalf("absent file: %v %+v", err, b)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"baselines": [`), 0o644)
	if _, err := ReadBaseline(bad); err == nil {
		t.Fatal("a corrupt baseline must be an error, not an empty one")
	}
}

func TestCleanBaselineTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "scale-gate-baseline.json")
	files := map[string]bool{ // name → removed
		"scale-gate-baseline.json":                false,
		".scale-gate-baseline.json.tmp123456789":  true, // what a killed --update-baseline leaves
		".scale-gate-baseline.json.tmp42":         true,
		".scale-gate-baseline.json.tmp":           false, // CreateTemp always adds digits
		".scale-gate-baseline.json.tmp12x":        false,
		".scale-gate-baseline.json.tmp1.bak":      false,
		".other.json.tmp123":                      false, // another file's temp: not ours
		"scale-gate-baseline.json.tmp123":         false, // no leading dot
		"notes.txt":                               false,
		".scale-gate-baseline.json.tmp987654321x": false,
	}
	for name := range files {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	subdir := filepath.Join(dir, ".scale-gate-baseline.json.tmp7")
	if err := os.Mkdir(subdir, 0o755); err != nil { // a directory is never ours
		t.Fatal(err)
	}

	// A live writer holds the lock: its temp file must survive.
	unlock, err := lockDir(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	removed, err := CleanBaselineTemps(path)
	unlock()
	if err != nil || len(removed) != 0 {
		t.Fatalf("with the lock held: removed %v, err %v; want nothing", removed, err)
	}

	removed, err = CleanBaselineTemps(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 {
		t.Errorf("removed %v, want the two temp files", removed)
	}
	for name, gone := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if exists := err == nil; exists == gone {
			t.Errorf("%s: exists %v, want %v", name, exists, !gone)
		}
	}
	if _, err := os.Stat(subdir); err != nil {
		t.Errorf("directory %s removed", subdir)
	}
	if removed, err := CleanBaselineTemps(filepath.Join(dir, "missing", "b.json")); err != nil || removed != nil {
		t.Errorf("missing directory: %v %v", removed, err)
	}
}

// TestReadBaselineRefusesHostileFiles: a committed baseline a pull request
// turned into a symlink to /dev/zero, a FIFO or a huge file is refused at
// once, naming it (it was read with os.ReadFile: 24 GB, a 531 s hang, 1.57
// GB).
func TestReadBaselineRefusesHostileFiles(t *testing.T) {
	boundedfiletest.Refuses(t, boundedfiletest.Files(t, t.TempDir(), "scale-gate-baseline.json"), func(p string) error {
		_, err := ReadBaseline(p)
		return err
	})
}
