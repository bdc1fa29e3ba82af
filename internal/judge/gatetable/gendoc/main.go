// Command gendoc rewrites the gate table of docs/gate.md from the gate
// table (go generate ./internal/judge/gatetable). A test fails when the
// committed file and the table drift apart.
package main

import (
	"fmt"
	"os"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: gendoc docs/gate.md")
		os.Exit(2)
	}
	if err := rewrite(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "gendoc:", err)
		os.Exit(1)
	}
}

func rewrite(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := gatetable.ReplaceDocTable(string(b))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
