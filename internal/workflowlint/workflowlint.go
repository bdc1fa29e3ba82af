// Package workflowlint checks the repository's GitHub Actions workflows with
// actionlint, linked as a library so the test command needs no actionlint
// binary and a broken workflow fails `go test` before it reaches GitHub.
package workflowlint

import (
	"fmt"
	"io"

	"github.com/rhysd/actionlint"
)

// Finding is one actionlint error, positioned in its file.
type Finding struct {
	File    string
	Line    int
	Column  int
	Kind    string // the actionlint rule, e.g. "runner-label", "expression"
	Message string
}

func (f Finding) String() string {
	return fmt.Sprintf("%s:%d:%d: %s [%s]", f.File, f.Line, f.Column, f.Message, f.Kind)
}

// Lint lints each workflow file with the actionlint config file at config
// (which names the self-hosted runner labels the workflows may use) and
// returns every finding. An error means the lint could not run at all (a
// missing or invalid config, an unreadable file): never a clean result.
// shellcheck and pyflakes are not run, so the result does not depend on
// what happens to be installed.
func Lint(config string, files []string) ([]Finding, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("workflowlint: no workflow files to lint")
	}
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{
		ConfigFile: config,
		Color:      actionlint.ColorOptionKindNever,
	})
	if err != nil {
		return nil, fmt.Errorf("workflowlint: config %s: %w", config, err)
	}
	errs, err := l.LintFiles(files, nil)
	if err != nil {
		return nil, fmt.Errorf("workflowlint: %w", err)
	}
	out := make([]Finding, 0, len(errs))
	for _, e := range errs {
		out = append(out, Finding{File: e.Filepath, Line: e.Line, Column: e.Column, Kind: e.Kind, Message: e.Message})
	}
	return out, nil
}
