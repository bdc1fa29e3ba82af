package workflowlint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is the repository root, two levels above this package.
const repoRoot = "../.."

func repoWorkflows(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, pat := range []string{"*.yml", "*.yaml"} {
		m, err := filepath.Glob(filepath.Join(repoRoot, ".github", "workflows", pat))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatal("no workflow files under .github/workflows: nothing was linted")
	}
	return files
}

var repoConfig = filepath.Join(repoRoot, ".github", "actionlint.yaml")

// TestRepositoryWorkflows lints every workflow of the repository with its
// actionlint config: any finding fails the test command.
func TestRepositoryWorkflows(t *testing.T) {
	files := repoWorkflows(t)
	findings, err := Lint(repoConfig, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f)
	}
	t.Logf("linted %d workflow file(s): %d finding(s)", len(files), len(findings))
}

// TestBrokenWorkflowFails lints a copy of the workflow with three
// deliberate defects: each must be found, on its line, by its rule.
func TestBrokenWorkflowFails(t *testing.T) {
	broken := filepath.Join("testdata", "broken-scale-gate.yml")
	findings, err := Lint(repoConfig, []string{broken})
	if err != nil {
		t.Fatal(err)
	}
	lines := brokenLines(t, broken)
	want := []struct {
		kind, text string
	}{
		{"syntax-check", "timeout-minute"},
		{"runner-label", "scalegate-referenc"},
		{"expression", "profle"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%s marks %d defects, the test expects %d", broken, len(lines), len(want))
	}
	for i, w := range want {
		if !hasFinding(findings, w.kind, lines[i], w.text) {
			t.Errorf("no %s finding on line %d mentioning %q; got:\n%s", w.kind, lines[i], w.text, list(findings))
		}
	}
}

// TestConfigNamesRunnerLabel: the repository config is what admits the
// self-hosted label. Without it the real workflow fails on that label, so
// the config is read and a label dropped from it would be caught.
func TestConfigNamesRunnerLabel(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "actionlint.yaml")
	if err := os.WriteFile(empty, []byte("self-hosted-runner:\n  labels: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	findings, err := Lint(empty, repoWorkflows(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Kind == "runner-label" && strings.Contains(f.Message, "scalegate-reference") {
			return
		}
	}
	t.Fatalf("the self-hosted label passed without the config naming it; findings:\n%s", list(findings))
}

// TestLintRefusesNothingToLint: no files, or a config that is not there,
// is an error, never an empty (clean-looking) result.
func TestLintRefusesNothingToLint(t *testing.T) {
	if _, err := Lint(repoConfig, nil); err == nil {
		t.Error("no files: no error")
	}
	if _, err := Lint(filepath.Join(t.TempDir(), "none.yaml"), repoWorkflows(t)); err == nil {
		t.Error("missing config: no error")
	}
}

// brokenLines returns the line numbers that follow each "# BROKEN" marker.
func brokenLines(t *testing.T, path string) []int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for i, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "# BROKEN:") {
			out = append(out, i+2) // 1-based number of the next line
		}
	}
	return out
}

func hasFinding(fs []Finding, kind string, line int, text string) bool {
	for _, f := range fs {
		if f.Kind == kind && f.Line == line && strings.Contains(f.Message, text) {
			return true
		}
	}
	return false
}

func list(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString("  " + f.String() + "\n")
	}
	return b.String()
}
