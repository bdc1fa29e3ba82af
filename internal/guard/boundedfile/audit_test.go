package boundedfile

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// unboundedReads are the calls that read a file, or a whole stream, with
// no bound of their own, and why each is safe where it stands. Every other
// such call in the tree fails TestNoUnboundedReads: a path a user, a
// profile or a pull request can name (a baseline, a map, a CA file, a
// trace) goes through this package, and a stream through a LimitReader.
// Keyed "file (relative to the repository): function: call".
var unboundedReads = map[string]string{
	"internal/judge/history/store.go: appendFile: os.OpenFile":                             "the history file opened to append: only its last byte is read (ReadAt), to know whether a killed writer left a line unfinished",
	"internal/run/rundir/rundir.go: Host: os.ReadFile":                                     "/proc/sys/kernel/osrelease and /proc/meminfo: the kernel's, a few lines",
	"internal/reference/server/metrics.go: readRSSKB: os.ReadFile":                         "/proc/self/statm: the kernel's, one line",
	"internal/run/launcher/guardian_linux.go: readStat: os.ReadFile":                       "/proc/PID/stat: the kernel's, one line",
	"internal/reference/admin/admin.go: viaShortPath: os.Open":                             "a directory held open for its /proc/self/fd alias: nothing is read",
	"internal/judge/baseline/committed.go: lockDir: os.Open":                               "the baseline's directory, opened to flock it: nothing is read",
	"internal/sources/hostload/snapshot.go: processes: os.Open":                            "/proc, listed: the kernel's",
	"internal/sources/hostload/snapshot.go: read: os.Open":                                 "a /proc file, read through a fixed-size buffer (readProc)",
	"internal/sources/promsource/scrape.go: parseResponse: io.ReadAll":                     "the scrape's body, already behind a LimitReader of its byte cap",
	"internal/reports/report/source.go: ReadServerMetricsContext: io.ReadAll":              "a metrics document's body, behind a LimitReader of MaxMetricsBytes",
	"internal/testkit/workflowlint/workflowlint.go: LintAction: os.ReadFile":               "the repository's own workflow files, in the lint test",
	"internal/judge/gatetable/gendoc/main.go: rewrite: os.ReadFile":                        "docs/gate.md, by go generate in the repository",
	"internal/guard/boundedfile/boundedfile.go: Open: os.OpenFile":                         "this package's own open: non-blocking, regular files only, read under a byte cap",
	"internal/guard/boundedfile/boundedfiletest/boundedfiletest.go: statusKB: os.ReadFile": "/proc/self/status, in tests",
	"examples/internal/metricsfile/metricsfile.go: rssKB: os.ReadFile":                     "/proc/self/statm in the example servers",
	"examples/internal/gametest/gametest.go: RunBot: os.ReadFile":                          "a report the example's own test just had written, in a temp dir",
}

// readCalls are the calls TestNoUnboundedReads looks for.
var readCalls = []string{"os.ReadFile", "os.Open", "os.OpenFile", "io.ReadAll", "ioutil.ReadFile", "ioutil.ReadAll"}

// TestNoUnboundedReads lists every unbounded read in the tree's non-test
// code and fails on one unbounded and unexplained (a new os.ReadFile of a
// user-supplied path), and on an explanation left for a call that is gone.
func TestNoUnboundedReads(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	found := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "tools" || name == "bin" || name == "results") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		for _, k := range readsIn(t, path, filepath.ToSlash(rel)) {
			found[k] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range found {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		why, ok := unboundedReads[k]
		if !ok {
			t.Errorf("%s: an unbounded read; read a user-supplied path with boundedfile.ReadFile or boundedfile.Open, "+
				"or say in unboundedReads why this one is safe", k)
			continue
		}
		t.Logf("%s: %s", k, why)
	}
	for k := range unboundedReads {
		if !found[k] {
			t.Errorf("unboundedReads explains %s, which is no longer in the tree", k)
		}
	}
}

// readsIn is every read call in the file, as "file: function: call".
func readsIn(t *testing.T, path, rel string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []string
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			if name := pkg.Name + "." + sel.Sel.Name; slices.Contains(readCalls, name) && !writeOnly(call) {
				out = append(out, rel+": "+fn.Name.Name+": "+name)
			}
			return true
		})
	}
	return out
}

// writeOnly is an os.OpenFile whose flags hold O_WRONLY: a log, a trace or
// a summary being written, which reads nothing back.
func writeOnly(call *ast.CallExpr) bool {
	if len(call.Args) < 2 {
		return false
	}
	only := false
	ast.Inspect(call.Args[1], func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "O_WRONLY" {
			only = true
		}
		return !only
	})
	return only
}
