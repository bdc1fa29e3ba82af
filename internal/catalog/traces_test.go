package catalog

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/scalegate/scalegate/internal/trace"
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
	}
	files, err := readTraceFiles(fsys, "p/", "t/dir")
	if err != nil || len(files) != 2 || files[0].Path != "t/dir/x.flit" {
		t.Fatalf("directory: %+v %v", files, err)
	}
	for rel, want := range map[string]string{
		"t/zero.flit":  "no records",
		"t/magic.flit": "bad magic",
		"t/empty":      "holds no .flit file",
		"t/none.flit":  "p/t/none.flit",
		"/abs.flit":    "must be relative",
		"../up.flit":   "must be relative",
	} {
		if _, err := readTraceFiles(fsys, "p/", rel); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", rel, err, want)
		}
	}
}
