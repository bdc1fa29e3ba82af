package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var mdLink = regexp.MustCompile(`\]\(([a-z0-9-]+\.md)(#[^)]*)?\)`)

// TestDocsReadingOrder keeps docs/README.md, the reading order, in step
// with the pages: every page under docs/ is listed, and every link there
// names a page that exists. A new page left out of the order is a page a
// newcomer never finds.
func TestDocsReadingOrder(t *testing.T) {
	dir := filepath.Join(repoRoot, "docs")
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var linked []string
	for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
		linked = append(linked, m[1])
	}
	pages, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pages {
		name := filepath.Base(p)
		if name != "README.md" && !slices.Contains(linked, name) {
			t.Errorf("docs/%s is not in docs/README.md's reading order", name)
		}
	}
	for _, l := range linked {
		if _, err := os.Stat(filepath.Join(dir, l)); err != nil {
			t.Errorf("docs/README.md links %s: %v", l, err)
		}
	}
}

// TestReadmePointsAtReadingOrder: the README sends a reader to the
// reading order rather than a paragraph of links.
func TestReadmePointsAtReadingOrder(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "(docs/README.md)") {
		t.Error("README.md does not link docs/README.md")
	}
}
