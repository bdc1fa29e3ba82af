// Package workflowlint checks the repository's GitHub Actions workflows and
// composite action with actionlint.
//
// The composite action is action.yml. The checks link actionlint as a
// library, so the test command needs no actionlint binary and a broken
// workflow or action fails `go test` before it reaches GitHub.
package workflowlint

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"
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

// LintAction checks a composite action's metadata file (action.yml), which
// actionlint does not lint by itself: it reads an action's metadata only to
// check the inputs a workflow passes to it. Two passes:
//
//   - the metadata's structure, with the rules GitHub applies to a composite
//     action and a workflow does not have (known top-level keys; a name and
//     a description; a description for every input and output; every output
//     a `${{ steps.ID.outputs.NAME }}` of a step that exists; `shell` on
//     every run step; no `secrets`, which an action cannot read), reported
//     with Kind "action-metadata";
//   - the steps themselves, linted by actionlint as the steps of a workflow
//     job whose `on: workflow_call` declares the action's inputs: expressions
//     and their contexts, the inputs of the actions it uses, step ids. The
//     stand-in workflow keeps every step on its line and column, so each
//     finding points into the action file.
//
// The stand-in needs `runs:` to be the file's last top-level key, laid out
// as `runs:`, `using: composite`, `steps:` on consecutive lines; another
// layout is an error, as is anything that stops the lint from running.
func LintAction(config, path string) ([]Finding, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("workflowlint: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, fmt.Errorf("workflowlint: %s: %w", path, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("workflowlint: %s: not a YAML mapping", path)
	}
	root := doc.Content[0]
	findings, inputs, err := checkActionMetadata(path, root)
	if err != nil {
		return nil, err
	}
	workflow, err := standInWorkflow(path, src, root, inputs)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "workflowlint-action")
	if err != nil {
		return nil, fmt.Errorf("workflowlint: %w", err)
	}
	defer os.RemoveAll(tmp)
	stand := filepath.Join(tmp, "action-steps.yml")
	if err := os.WriteFile(stand, workflow, 0o644); err != nil {
		return nil, fmt.Errorf("workflowlint: %w", err)
	}
	steps, err := Lint(config, []string{stand})
	if err != nil {
		return nil, err
	}
	for _, f := range steps {
		f.File = path
		findings = append(findings, f)
	}
	return findings, nil
}

// actionTopKeys are the top-level keys of an action's metadata.
var actionTopKeys = map[string]bool{"name": true, "author": true, "description": true,
	"inputs": true, "outputs": true, "runs": true, "branding": true}

// outputValue is the only form a composite action's output value takes here.
var outputValue = regexp.MustCompile(`^\$\{\{\s*steps\.([A-Za-z_][A-Za-z0-9_-]*)\.outputs\.([A-Za-z_][A-Za-z0-9_-]*)\s*\}\}$`)

// checkActionMetadata applies the composite-action rules to the metadata
// and returns the findings and the input names.
func checkActionMetadata(path string, root *yaml.Node) ([]Finding, []string, error) {
	c := &metaChecker{path: path}
	top := c.topLevel(root)
	inputs := c.inputs(top["inputs"])
	runs := top["runs"]
	if runs == nil || field(runs, "using") == nil || field(runs, "using").Value != "composite" {
		at := root
		if runs != nil {
			at = runs
		}
		c.add(at, "runs.using must be \"composite\"")
		return c.out, inputs, nil
	}
	ids := c.steps(field(runs, "steps"))
	c.outputs(top["outputs"], ids)
	walk(root, func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode && strings.Contains(n.Value, "secrets.") {
			c.add(n, "an action cannot read secrets; take the value as an input")
		}
	})
	return c.out, inputs, nil
}

// metaChecker gathers the findings of one action metadata file, in the
// order the rules run.
type metaChecker struct {
	path string
	out  []Finding
}

// add records a finding at n.
func (c *metaChecker) add(n *yaml.Node, format string, args ...any) {
	c.out = append(c.out, Finding{File: c.path, Line: n.Line, Column: n.Column, Kind: "action-metadata", Message: fmt.Sprintf(format, args...)})
}

// topLevel indexes the top-level keys, flagging unknown ones and a
// missing name or description.
func (c *metaChecker) topLevel(root *yaml.Node) map[string]*yaml.Node {
	top := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		if !actionTopKeys[k.Value] {
			c.add(k, "unexpected key %q in action metadata", k.Value)
		}
		top[k.Value] = v
	}
	for _, k := range []string{"name", "description"} {
		if v := top[k]; v == nil || strings.TrimSpace(v.Value) == "" {
			c.add(root, "action metadata needs a %q", k)
		}
	}
	return top
}

// inputs returns the input names (the stand-in workflow declares them),
// flagging inputs without a description.
func (c *metaChecker) inputs(in *yaml.Node) []string {
	if in == nil {
		return nil
	}
	var inputs []string
	for i := 0; i+1 < len(in.Content); i += 2 {
		k, v := in.Content[i], in.Content[i+1]
		inputs = append(inputs, k.Value)
		if field(v, "description") == nil {
			c.add(k, "input %q has no description", k.Value)
		}
	}
	return inputs
}

// steps returns the step ids, which outputs may read, flagging run steps
// without a shell (a composite action has no default).
func (c *metaChecker) steps(steps *yaml.Node) map[string]bool {
	ids := map[string]bool{}
	if steps == nil {
		return ids
	}
	for _, s := range steps.Content {
		if id := field(s, "id"); id != nil {
			ids[id.Value] = true
		}
		if run := keyOf(s, "run"); run != nil && field(s, "shell") == nil {
			c.add(run, "a run step of a composite action needs a shell")
		}
	}
	return ids
}

// outputs flags outputs without a description or whose value is not a
// read of an existing step's output.
func (c *metaChecker) outputs(outs *yaml.Node, ids map[string]bool) {
	if outs == nil {
		return
	}
	for i := 0; i+1 < len(outs.Content); i += 2 {
		k, v := outs.Content[i], outs.Content[i+1]
		if field(v, "description") == nil {
			c.add(k, "output %q has no description", k.Value)
		}
		val := field(v, "value")
		if val == nil {
			c.add(k, "output %q has no value", k.Value)
			continue
		}
		m := outputValue.FindStringSubmatch(val.Value)
		if m == nil {
			c.add(val, "output %q: value %q is not ${{ steps.ID.outputs.NAME }}", k.Value, val.Value)
		} else if !ids[m[1]] {
			c.add(val, "output %q reads step %q, which no step has as its id", k.Value, m[1])
		}
	}
}

// standInWorkflow rewrites the action file as a workflow with the same
// line numbers: `runs:` becomes `jobs:`, `using: composite` becomes the
// job's key, every other top-level block but name becomes comment lines,
// and runs-on plus an `on: workflow_call` declaring the inputs are
// appended after the steps.
func standInWorkflow(path string, src []byte, root *yaml.Node, inputs []string) ([]byte, error) {
	n := len(root.Content)
	if n < 2 || root.Content[n-2].Value != "runs" {
		return nil, fmt.Errorf("workflowlint: %s: runs must be the last top-level key to lint the steps", path)
	}
	runsKey, runs := root.Content[n-2], root.Content[n-1]
	using, steps := field(runs, "using"), field(runs, "steps")
	if using == nil || steps == nil || len(runs.Content) != 4 || runs.Content[0].Value != "using" ||
		runs.Content[0].Line != runsKey.Line+1 || runs.Content[2].Line != runsKey.Line+2 {
		return nil, fmt.Errorf("workflowlint: %s:%d: lay runs out as `runs:`, `using: composite`, `steps:` on consecutive lines to lint the steps", path, runsKey.Line)
	}
	lines := strings.Split(string(src), "\n")
	// Comment out every top-level block but name and runs: from its key's
	// line to the line before the next key.
	for i := 0; i+1 < n-2; i += 2 {
		k := root.Content[i]
		if k.Value == "name" {
			continue
		}
		end := root.Content[i+2].Line - 1
		for l := k.Line; l <= end; l++ {
			lines[l-1] = "#"
		}
	}
	lines[runsKey.Line-1] = "jobs:"
	lines[runsKey.Line] = " action:" // indented less than steps:, more than jobs:
	indent := strings.Repeat(" ", runs.Content[2].Column-1)
	var b strings.Builder
	b.WriteString(strings.Join(lines, "\n"))
	fmt.Fprintf(&b, "\n%sruns-on: ubuntu-latest\non:\n  workflow_call:\n", indent)
	if len(inputs) > 0 {
		b.WriteString("    inputs:\n")
		for _, in := range inputs {
			fmt.Fprintf(&b, "      %s:\n        type: string\n", in)
		}
	}
	return []byte(b.String()), nil
}

// keyOf returns the key node of key in a mapping node, or nil.
func keyOf(m *yaml.Node, key string) *yaml.Node {
	k, _ := lookup(m, key)
	return k
}

// field returns the value of key in a mapping node, or nil.
func field(m *yaml.Node, key string) *yaml.Node {
	_, v := lookup(m, key)
	return v
}

// lookup finds key in a mapping node: its key and value nodes, or nils.
func lookup(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i], m.Content[i+1]
		}
	}
	return nil, nil
}

// walk calls fn on n and every node under it.
func walk(n *yaml.Node, fn func(*yaml.Node)) {
	fn(n)
	for _, c := range n.Content {
		walk(c, fn)
	}
}
