package workflowlint

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// repoRoot is the repository root, two levels above this package.
const repoRoot = "../../.."

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

// TestBrokenActionUseFails lints a workflow that passes the repository's
// action a wrong input and leaves out the required one: actionlint must
// find both through action.yml, which proves it reads the metadata (an
// action it cannot find is not reported at all).
func TestBrokenActionUseFails(t *testing.T) {
	broken := filepath.Join("testdata", "broken-action-use.yml")
	findings, err := Lint(repoConfig, []string{broken})
	if err != nil {
		t.Fatal(err)
	}
	lines := brokenLines(t, broken)
	want := []string{`missing input "profile"`, `input "profle" is not defined in action "scalegate"`}
	checkBroken(t, broken, findings, lines, "action", want)
}

// TestRepositoryAction lints action.yml: its metadata and its steps.
func TestRepositoryAction(t *testing.T) {
	findings, err := LintAction(repoConfig, filepath.Join(repoRoot, "action.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Error(f)
	}
}

// TestBrokenActionFails: each defect of testdata/broken-action/action.yml
// is found on its line, by the metadata check or by actionlint on the
// steps.
func TestBrokenActionFails(t *testing.T) {
	broken := filepath.Join("testdata", "broken-action", "action.yml")
	findings, err := LintAction(repoConfig, broken)
	if err != nil {
		t.Fatal(err)
	}
	lines := brokenLines(t, broken)
	want := []struct{ kind, text string }{
		{"action-metadata", `input "strict" has no description`},
		{"action-metadata", `reads step "gat"`},
		{"action-metadata", "needs a shell"},
		{"expression", "profle"},
		{"action", `input "nmae" is not defined`},
	}
	if len(lines) != len(want) {
		t.Fatalf("%s marks %d defects, the test expects %d", broken, len(lines), len(want))
	}
	for i, w := range want {
		if !hasFinding(findings, w.kind, lines[i], w.text) {
			t.Errorf("no %s finding on line %d mentioning %q; got:\n%s", w.kind, lines[i], w.text, list(findings))
		}
	}
	if len(findings) != len(want) {
		t.Errorf("%d findings, want %d:\n%s", len(findings), len(want), list(findings))
	}
}

// TestLintActionRefusesLayout: steps it cannot keep on their lines are an
// error, never a clean result.
func TestLintActionRefusesLayout(t *testing.T) {
	for name, body := range map[string]string{
		"runs not last":  "name: x\ndescription: y\nruns:\n  using: composite\n  steps: []\nbranding:\n  icon: x\n",
		"steps first":    "name: x\ndescription: y\nruns:\n  steps: []\n  using: composite\n",
		"not a mapping":  "- a\n",
		"not even YAML:": "name: [\n",
	} {
		p := filepath.Join(t.TempDir(), "action.yml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if f, err := LintAction(repoConfig, p); err == nil {
			t.Errorf("%s: no error; findings:\n%s", name, list(f))
		}
	}
}

// TestDispatchListsEveryProfile: the manual run of nightly.yml offers
// every profile the repository ships, no more: a profile added to
// profiles/ without its choice (or a choice left for a removed profile)
// fails here.
func TestDispatchListsEveryProfile(t *testing.T) {
	var wf struct {
		On struct {
			WorkflowDispatch struct {
				Inputs struct {
					Profile struct {
						Options []string `yaml:"options"`
					} `yaml:"profile"`
				} `yaml:"inputs"`
			} `yaml:"workflow_dispatch"`
		} `yaml:"on"`
	}
	b, err := os.ReadFile(filepath.Join(repoRoot, ".github", "workflows", "nightly.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &wf); err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(repoRoot, "profiles", "*.cue"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no profiles/*.cue (%v)", err)
	}
	var shipped []string
	for _, f := range files {
		shipped = append(shipped, strings.TrimSuffix(filepath.Base(f), ".cue"))
	}
	offered := append([]string{}, wf.On.WorkflowDispatch.Inputs.Profile.Options...)
	sort.Strings(offered)
	sort.Strings(shipped)
	if strings.Join(offered, " ") != strings.Join(shipped, " ") {
		t.Errorf("nightly.yml workflow_dispatch offers %v; profiles/ ships %v", offered, shipped)
	}
}

// checkBroken requires, for each marked line, a finding of kind on it
// containing the matching text.
func checkBroken(t *testing.T, file string, findings []Finding, lines []int, kind string, want []string) {
	t.Helper()
	if len(lines) != len(want) {
		t.Fatalf("%s marks %d defects, the test expects %d", file, len(lines), len(want))
	}
	for i, w := range want {
		if !hasFinding(findings, kind, lines[i], w) {
			t.Errorf("no %s finding on line %d mentioning %q; got:\n%s", kind, lines[i], w, list(findings))
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
