package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

func TestRewrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gate.md")
	doc := "intro\n" + gatetable.DocBegin + "\nstale row\n" + gatetable.DocEnd + "\noutro\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewrite(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if strings.Contains(string(b), "stale row") || !strings.Contains(string(b), "| `admission` |") || !strings.HasSuffix(string(b), gatetable.DocEnd+"\noutro\n") {
		t.Fatalf("rewritten:\n%s", b)
	}
	if err := os.WriteFile(path, []byte("no markers"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := rewrite(path); err == nil || !strings.Contains(err.Error(), "markers") {
		t.Fatalf("a file without markers: %v", err)
	}
}
