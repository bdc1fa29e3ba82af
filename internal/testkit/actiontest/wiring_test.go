package actiontest

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// actionYAML is what the wiring test reads of action.yml.
type actionYAML struct {
	Inputs  map[string]struct{ Description, Default string }
	Outputs map[string]struct{ Description, Value string }
	Runs    struct {
		Steps []struct {
			ID  string
			Run string
			Env map[string]string
		}
	}
}

// TestActionWiring ties action.yml to scripts/action.sh: every input is
// passed to the script step as INPUT_<NAME> (upper case, - as _) with its
// own value and read by the script, and every output the action declares
// is one the script writes. An input added to one file and not the other
// fails here.
func TestActionWiring(t *testing.T) {
	var a actionYAML
	if err := yaml.Unmarshal([]byte(readFile(t, filepath.Join(repoRoot, "action.yml"))), &a); err != nil {
		t.Fatal(err)
	}
	script := readFile(t, filepath.Join(repoRoot, "scripts", "action.sh"))
	var gate *struct {
		ID  string
		Run string
		Env map[string]string
	}
	for i := range a.Runs.Steps {
		if strings.Contains(a.Runs.Steps[i].Run, "scripts/action.sh") {
			gate = &a.Runs.Steps[i]
		}
	}
	if gate == nil {
		t.Fatal("no step of action.yml runs scripts/action.sh")
	}
	if len(a.Inputs) == 0 {
		t.Fatal("action.yml declares no inputs")
	}
	for name := range a.Inputs {
		env := "INPUT_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if got, want := gate.Env[env], "${{ inputs."+name+" }}"; got != want {
			t.Errorf("input %s: the script step sets %s = %q, want %q", name, env, got, want)
		}
		if !strings.Contains(script, "${"+env+":-") {
			t.Errorf("input %s: scripts/action.sh never reads %s", name, env)
		}
	}
	for env := range gate.Env {
		name := strings.ToLower(strings.ReplaceAll(strings.TrimPrefix(env, "INPUT_"), "_", "-"))
		if _, ok := a.Inputs[name]; !ok {
			t.Errorf("the script step sets %s, but action.yml has no input %s", env, name)
		}
	}
	written := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)\boutput ([a-z][a-z-]*) `).FindAllStringSubmatch(script, -1) {
		written[m[1]] = true
	}
	for name, o := range a.Outputs {
		want := "${{ steps." + gate.ID + ".outputs." + name + " }}"
		if o.Value != want {
			t.Errorf("output %s = %q, want %q", name, o.Value, want)
		}
		if !written[name] {
			t.Errorf("output %s: scripts/action.sh never writes it (it writes %v)", name, written)
		}
	}
	for _, name := range []string{"exit-code", "verdict", "run-dir"} {
		if _, ok := a.Outputs[name]; !ok {
			t.Errorf("action.yml has no output %s", name)
		}
	}
}
