package baseline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/scalegate/scalegate/internal/guard/boundedfile/boundedfiletest"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	b, err := Read(filepath.Join(dir, "absent.json"))
	if err != nil || len(b.Entries) != 0 {
		t.Fatalf("absent file: %v %+v", err, b)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"baselines": [`), 0o644)
	if _, err := Read(bad); err == nil {
		t.Fatal("a corrupt baseline must be an error, not an empty one")
	}
}

func TestCleanTemps(t *testing.T) {
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
	removed, err := CleanTemps(path)
	unlock()
	if err != nil || len(removed) != 0 {
		t.Fatalf("with the lock held: removed %v, err %v; want nothing", removed, err)
	}

	removed, err = CleanTemps(path)
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
	if removed, err := CleanTemps(filepath.Join(dir, "missing", "b.json")); err != nil || removed != nil {
		t.Errorf("missing directory: %v %v", removed, err)
	}
}

// TestReadRefusesHostileFiles: a committed baseline a pull request
// turned into a symlink to /dev/zero, a FIFO or a huge file is refused at
// once, naming it (it was read with os.ReadFile: 24 GB, a 531 s hang, 1.57
// GB).
func TestReadRefusesHostileFiles(t *testing.T) {
	boundedfiletest.Refuses(t, boundedfiletest.Files(t, t.TempDir(), "scale-gate-baseline.json"), func(p string) error {
		_, err := Read(p)
		return err
	})
}
