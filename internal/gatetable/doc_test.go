package gatetable

import (
	"os"
	"strings"
	"testing"
)

// TestDocTableInStep: docs/gate.md's gate table is the one MarkdownTable
// makes from All; run `go generate ./internal/gatetable` after changing a
// gate.
func TestDocTableInStep(t *testing.T) {
	b, err := os.ReadFile("../../docs/gate.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := ReplaceDocTable(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if want != string(b) {
		t.Errorf("docs/gate.md's gate table differs from the gate table: run go generate ./internal/gatetable\nwant:\n%s", MarkdownTable())
	}
	for _, g := range All {
		if !strings.Contains(string(b), "| `"+g.Name+"` |") {
			t.Errorf("docs/gate.md has no row for %s", g.Name)
		}
	}
}
