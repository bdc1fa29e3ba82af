package bot_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// block is one fenced code block of a Markdown file and the HTML comment
// on the line before it ("compiled: …", "excerpt: PATH").
type block struct {
	marker, code string
}

// markedBlocks returns every fenced block preceded by a marker comment.
func markedBlocks(t *testing.T, path string) []block {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []block
	for i := 0; i+1 < len(lines); i++ {
		marker, ok := strings.CutPrefix(lines[i], "<!-- ")
		if !ok || !strings.HasPrefix(lines[i+1], "```") {
			continue
		}
		end := i + 2
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		out = append(out, block{strings.TrimSuffix(marker, " -->"), strings.Join(lines[i+2:end], "\n")})
		i = end
	}
	return out
}

// TestOwnProtocolSnippetCompiles builds every block docs/own-protocol.md
// (and README.md) marks "compiled" as a program of this module (a build overlay puts it in
// a package directory that exists nowhere on disk), and checks it is the
// package documentation's example, so neither can rot.
func TestOwnProtocolSnippetCompiles(t *testing.T) {
	var compiled, readme []block
	for _, b := range markedBlocks(t, "../docs/own-protocol.md") {
		if strings.HasPrefix(b.marker, "compiled:") {
			compiled = append(compiled, b)
		}
	}
	if len(compiled) == 0 {
		t.Fatal("docs/own-protocol.md marks no compiled snippet")
	}
	// The README's "Gate your own server" shows the same kind of snippet:
	// any block it marks the same way is compiled too.
	for _, b := range markedBlocks(t, "../README.md") {
		if strings.HasPrefix(b.marker, "compiled:") {
			readme = append(readme, b)
		}
	}
	if len(readme) == 0 {
		t.Fatal("README.md's \"Gate your own server\" marks no compiled bot snippet")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for i, b := range append(append([]block(nil), compiled...), readme...) {
		src := filepath.Join(dir, "main.go")
		if err := os.WriteFile(src, []byte(b.code+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {filepath.Join(root, "bot", "snippet", "main.go"): src}})
		ov := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o644); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command("go", "build", "-overlay", ov, "-o", filepath.Join(dir, "snippet"), "./bot/snippet")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("snippet %d does not compile: %v\n%s\n%s", i, err, out, b.code)
		}
	}
	if doc := packageExample(t); compiled[0].code != doc {
		t.Errorf("the snippet in docs/own-protocol.md is not the package documentation's example:\n--- doc.go\n%s\n--- own-protocol.md\n%s", doc, compiled[0].code)
	}
	// The runnable Example plays the same bot: its codec is the snippet's.
	code := compiled[0].code
	codec := code[strings.Index(code, "type tiny"):strings.Index(code, "func main()")]
	ex, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(ex), codec) {
		t.Errorf("example_test.go does not run the snippet's codec:\n%s", codec)
	}
}

// packageExample is the program in doc.go's package comment.
func packageExample(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var code []string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case l == "//\tpackage main":
			in = true
			code = append(code, "package main")
		case in && strings.HasPrefix(l, "//\t"):
			code = append(code, l[3:])
		case in && l == "//":
			code = append(code, "")
		case in:
			return strings.TrimRight(strings.Join(code, "\n"), "\n")
		}
	}
	t.Fatal("doc.go has no package main example")
	return ""
}

// TestOwnProtocolExcerptsMatch: every block docs/own-protocol.md marks as
// an excerpt of a file is in that file, word for word.
func TestOwnProtocolExcerptsMatch(t *testing.T) {
	n := 0
	for _, b := range markedBlocks(t, "../docs/own-protocol.md") {
		path, ok := strings.CutPrefix(b.marker, "excerpt: ")
		if !ok {
			continue
		}
		n++
		src, err := os.ReadFile(filepath.Join("..", path))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(src), b.code) {
			t.Errorf("docs/own-protocol.md's excerpt of %s is not in it:\n%s", path, b.code)
		}
	}
	if n == 0 {
		t.Fatal("docs/own-protocol.md marks no excerpt")
	}
}

// TestGoVersionDocumented: the Go version a team needs, as the package
// doc, docs/own-protocol.md and docs/compatibility.md state it, is the
// one go.mod names (major.minor), and the docs give the go get line.
func TestGoVersionDocumented(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var ver string
	for _, l := range strings.Split(string(mod), "\n") {
		if v, ok := strings.CutPrefix(l, "go "); ok {
			parts := strings.Split(strings.TrimSpace(v), ".")
			ver = strings.Join(parts[:min(2, len(parts))], ".")
		}
	}
	if ver == "" {
		t.Fatal("go.mod names no go version")
	}
	for _, tc := range []struct{ path, version string }{
		{"doc.go", "Go " + ver + " or later"},
		{"../docs/own-protocol.md", "Go " + ver + " or later"},
		{"../docs/compatibility.md", "`go.mod` names (" + ver + ")"},
	} {
		b, err := os.ReadFile(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{tc.version, "go get github.com/scalegate/scalegate/bot@latest"} {
			if !strings.Contains(string(b), want) {
				t.Errorf("%s does not say %q", tc.path, want)
			}
		}
	}
}
