package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"
)

// dirNames lists dir, so a test can insist nothing but the target is left.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "metrics.json")
	for _, content := range []string{"first\n", "second, longer than the first\n", ""} {
		if err := WriteFileAtomic(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
		if names := dirNames(t, dir); len(names) != 1 || names[0] != "metrics.json" {
			t.Fatalf("directory holds %v, want only metrics.json (a temp file was left)", names)
		}
	}
}

func TestWriteFileAtomicErrors(t *testing.T) {
	dir := t.TempDir()
	// The target is a directory: the rename fails, and the temp file must go.
	target := filepath.Join(dir, "is-a-dir")
	if err := os.Mkdir(target, 0o755); err != nil {
		t.Fatal(err)
	}
	err := WriteFileAtomic(target, []byte("x"))
	if err == nil || !strings.Contains(err.Error(), target) {
		t.Fatalf("writing over a directory: %v", err)
	}
	if names := dirNames(t, dir); len(names) != 1 || names[0] != "is-a-dir" {
		t.Fatalf("directory holds %v after a failed write", names)
	}
	// The directory does not exist.
	missing := filepath.Join(dir, "no", "such", "dir", "m.json")
	if err := WriteFileAtomic(missing, []byte("x")); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing directory: %v", err)
	}
	// WriteJSONAtomic: an unencodable value names the path and writes nothing.
	p := filepath.Join(dir, "r.json")
	if err := WriteJSONAtomic(p, map[string]any{"c": make(chan int)}); err == nil || !strings.Contains(err.Error(), p) {
		t.Fatalf("unencodable: %v", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Fatalf("failed WriteJSONAtomic left %s: %v", p, err)
	}
}

func TestWriteJSONAtomic(t *testing.T) {
	p := filepath.Join(t.TempDir(), "r.json")
	st := ServerTick{SchemaVersion: ServerTickSchemaVersion, Transport: "quic", RSSKB: 1, TickMs: Phase{P99: 2}}
	if err := WriteJSONAtomic(p, &st); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || !bytes.HasSuffix(b, []byte("}\n")) || !bytes.Contains(b, []byte(fmt.Sprintf("\n  \"schema_version\": %d", ServerTickSchemaVersion))) {
		t.Fatalf("file %q, %v", b, err)
	}
	back, _, err := ReadServerTick(p)
	if err != nil || back.Transport != "quic" || back.TickMs.P99 != 2 {
		t.Fatalf("round trip: %+v, %v", back, err)
	}
}

// TestWriteFileAtomicConcurrentReader rewrites a file while a reader loops on
// it: every read must be one complete version, never a mix or a prefix. The
// versions differ in size (40 KB vs 90 KB), so a partial or torn file would
// not match either. Both loops are bounded; the reader stops when the writer
// is done.
func TestWriteFileAtomicConcurrentReader(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.json")
	versions := [][]byte{
		bytes.Repeat([]byte("a"), 40_000),
		bytes.Repeat([]byte("b"), 90_000),
	}
	if err := WriteFileAtomic(path, versions[0]); err != nil {
		t.Fatal(err)
	}
	const writes = 300
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	writerDone := make(chan struct{})
	g.Go(func() error {
		defer close(writerDone)
		for i := range writes {
			if err := WriteFileAtomic(path, versions[i%2]); err != nil {
				return err
			}
		}
		return nil
	})
	reads := 0
	g.Go(func() error {
		for {
			select {
			case <-writerDone:
				return nil
			case <-gctx.Done():
				return nil
			default:
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return fmt.Errorf("read %d: %w", reads, err)
			}
			if !bytes.Equal(b, versions[0]) && !bytes.Equal(b, versions[1]) {
				return fmt.Errorf("read %d saw a partial file of %d bytes", reads, len(b))
			}
			reads++
		}
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	if reads == 0 {
		t.Fatal("the reader never ran; the test proved nothing")
	}
	t.Logf("%d reads during %d rewrites, all complete", reads, writes)
	if names := dirNames(t, filepath.Dir(path)); len(names) != 1 {
		t.Fatalf("directory holds %v after %d rewrites", names, writes)
	}
	// The same reads through the parser: a metrics file being rewritten
	// always parses.
	b, _ := json.Marshal(ServerTick{SchemaVersion: 6, Transport: "enet", RSSKB: 1})
	if err := WriteFileAtomic(path, b); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadServerTick(path); err != nil {
		t.Fatal(err)
	}
}

// TestIndentTo: indenting to a depth is json.MarshalIndent down to it and
// compact below it, and the result decodes to the same value.
func TestIndentTo(t *testing.T) {
	v := map[string]any{"a": 1, "b": map[string]any{"c": []any{1, map[string]any{"d": []int{1, 2}}}, "e": map[string]any{}}, "s": "x,{\"y\":[1]}\\"}
	compact, _ := json.Marshal(v)
	full, _ := json.MarshalIndent(v, "", "  ")
	if got := IndentTo(compact, 100); string(got) != string(full) {
		t.Fatalf("deep IndentTo\n%s\nwant MarshalIndent\n%s", got, full)
	}
	want := "{\n  \"a\": 1,\n  \"b\": {\n    \"c\": [1,{\"d\":[1,2]}],\n    \"e\": {}\n  },\n  \"s\": \"x,{\\\"y\\\":[1]}\\\\\"\n}"
	if got := IndentTo(compact, 2); string(got) != want {
		t.Fatalf("IndentTo 2\n%s\nwant\n%s", got, want)
	}
}

// TestAppendIndentReusesDst: AppendIndent keeps what dst holds and appends
// IndentTo's output, into dst's own array when it is large enough, so a
// writer can render into one buffer over and over.
func TestAppendIndentReusesDst(t *testing.T) {
	compact := []byte(`{"a":[1,{"b":"c,d:[]"}],"e":{}}`)
	want := IndentTo(compact, 2)
	buf := make([]byte, 0, 4*len(want))
	for _, prefix := range []string{"", "x", "long prefix "} {
		buf = append(buf[:0], prefix...)
		got := AppendIndent(buf, compact, 2)
		if string(got) != prefix+string(want) {
			t.Fatalf("AppendIndent after %q:\n%s\nwant\n%s%s", prefix, got, prefix, want)
		}
		if &got[0] != &buf[:1][0] {
			t.Fatalf("AppendIndent after %q allocated a new array with room in dst", prefix)
		}
	}
}

func FuzzIndentTo(f *testing.F) {
	f.Add([]byte(`{"a":[1,{"b":"c,d:[]"}],"e":{}}`), 2)
	f.Fuzz(func(t *testing.T, b []byte, depth int) {
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		compact, _ := json.Marshal(v)
		var back any
		if err := json.Unmarshal(IndentTo(compact, depth%8), &back); err != nil {
			t.Fatalf("IndentTo of %s is not JSON: %v", compact, err)
		}
		again, _ := json.Marshal(back)
		if string(again) != string(compact) {
			t.Fatalf("IndentTo changed %s into %s", compact, again)
		}
	})
}
