package catalog

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/scalegate/scalegate/internal/load/trace"
)

func TestReadTraceFiles(t *testing.T) {
	good := trace.Encode(60, []trace.Record{{ServerTick: 1}})
	fsys := fstest.MapFS{
		"t/a.flit":      {Data: good},
		"t/dir/x.flit":  {Data: good},
		"t/dir/y.flit":  {Data: good},
		"t/empty/n.txt": {Data: nil},
		"t/zero.flit":   {Data: trace.AppendHeader(nil, 60)},
		"t/magic.flit":  {Data: append([]byte("FLIX"), good[4:]...)},
		"t/nan.flit":    {Data: trace.Encode(60, []trace.Record{{ServerTick: 1, Throttle: float32(math.NaN())}})},
		"t/back.flit":   {Data: trace.Encode(60, []trace.Record{{ServerTick: 5}, {ServerTick: 4}})},
	}
	files, err := readTraceFiles(fsys, "p/", "t/dir", trace.NewSetBudget("t"))
	if err != nil || len(files) != 2 || files[0].Path != "t/dir/x.flit" {
		t.Fatalf("directory: %+v %v", files, err)
	}
	for rel, want := range map[string]string{
		"t/zero.flit":  "no records",
		"t/magic.flit": "bad magic",
		"t/nan.flit":   "NaN",
		"t/back.flit":  "before the previous",
		"t/empty":      "holds no .flit file",
		"t/none.flit":  "p/t/none.flit",
		"/abs.flit":    "must be relative",
		"../up.flit":   "must be relative",
	} {
		if _, err := readTraceFiles(fsys, "p/", rel, trace.NewSetBudget("t")); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", rel, err, want)
		}
	}
}

// TestMoreRecordingsThanClients: a trace directory with more recordings
// than the smallest leg has clients is a profile error at vet, not a
// trace_replay failure after the server started.
func TestMoreRecordingsThanClients(t *testing.T) {
	dir := t.TempDir()
	good := trace.Encode(60, []trace.Record{{ServerTick: 1}, {ServerTick: 2}})
	if err := os.MkdirAll(filepath.Join(dir, "traces"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c"} {
		if err := os.WriteFile(filepath.Join(dir, "traces", n+".flit"), good, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src := "name: \"tr\"\ndescription: \"d\"\ntransport: \"enet\"\nclients: %d\nduration_s: 2\npatterns: [\"trace:traces\"]\nbaselined: false\ngates: admission: {}\n"
	cat, err := NewCatalog(dir)
	if err != nil {
		t.Fatal(err)
	}
	writeProfile(t, dir, "tr", fmt.Sprintf(src, 2))
	_, _, err = cat.Load("tr")
	if err == nil || !strings.Contains(err.Error(), "3 recordings but the leg runs 2 clients") {
		t.Fatalf("3 recordings, 2 clients: %v", err)
	}
	writeProfile(t, dir, "tr", fmt.Sprintf(src, 3))
	if _, _, err := cat.Load("tr"); err != nil {
		t.Fatalf("3 recordings, 3 clients: %v", err)
	}
}
