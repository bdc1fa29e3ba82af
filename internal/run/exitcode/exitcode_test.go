package exitcode

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"testing"
)

func TestWithOf(t *testing.T) {
	base := fs.ErrNotExist
	cases := []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, OK},
		{"plain error", base, Internal},
		{"With", With(InvalidProfile, base), InvalidProfile},
		{"wrapped With", fmt.Errorf("load profile pr: %w", With(InvalidProfile, base)), InvalidProfile},
		// The innermost code wins: a later With does not relabel a cause
		// that already carries one.
		{"With over With", With(Internal, fmt.Errorf("ctx: %w", With(LaunchFailure, base))), LaunchFailure},
		{"Errorf", Errorf(GateFailed, "gate %s failed", "tick_ms_p99"), GateFailed},
		{"Errorf wrapping", Errorf(Inconclusive, "leg weave: %w", base), Inconclusive},
		{"joined", errors.Join(errors.New("first"), With(Usage, base)), Usage},
		{"interrupted", With(Interrupted, errors.New("signal")), Interrupted},
	}
	for _, c := range cases {
		if got := Of(c.err); got != c.want {
			t.Errorf("%s: Of = %v, want %v", c.name, got, c.want)
		}
	}
	if With(GateFailed, nil) != nil {
		t.Fatal("With(code, nil) must stay nil")
	}
}

func TestChainSurvives(t *testing.T) {
	err := fmt.Errorf("run: %w", With(LaunchFailure, fmt.Errorf("start server: %w", fs.ErrPermission)))
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatal("the cause is lost through With")
	}
	var e *Error
	if !errors.As(err, &e) || e.Code != LaunchFailure {
		t.Fatalf("errors.As: %v", e)
	}
	if err.Error() != "run: start server: permission denied" {
		t.Fatalf("message %q: With must not change the text", err.Error())
	}
	if e.Unwrap() == nil || !errors.Is(e.Unwrap(), fs.ErrPermission) {
		t.Fatal("Unwrap")
	}
	e2 := Errorf(GateFailed, "wrap: %w", fs.ErrClosed)
	if !errors.Is(e2, fs.ErrClosed) || e2.Error() != "wrap: file already closed" {
		t.Fatalf("Errorf chain: %v", e2)
	}
}

func TestCodes(t *testing.T) {
	// The numbers are a contract for CI scripts.
	want := map[Code]struct {
		n    int
		name string
	}{
		OK: {0, "passed"}, GateFailed: {1, "gate failed"}, Usage: {2, "usage"},
		Inconclusive: {3, "inconclusive"}, InvalidProfile: {4, "invalid profile"},
		LaunchFailure: {5, "launch failure"}, Internal: {6, "internal error"}, Interrupted: {130, "interrupted"},
	}
	for c, w := range want {
		if int(c) != w.n || c.String() != w.name {
			t.Errorf("%d %q, want %d %q", int(c), c.String(), w.n, w.name)
		}
	}
	if Code(42).String() != "exit 42" {
		t.Errorf("unknown code: %q", Code(42).String())
	}
}

// TestAllIsEveryConstant: All (the gate's help lists it) holds every Code
// constant declared in exitcode.go, once, in numeric order, each with a
// name and a meaning. A code added to the constants but not to All would
// be missing from the help.
func TestAllIsEveryConstant(t *testing.T) {
	declared := codeConstants(t)
	all := All()
	if len(all) != len(declared) {
		t.Errorf("All has %d codes, exitcode.go declares %d: %v", len(all), len(declared), declared)
	}
	seen := map[Code]bool{}
	for i, c := range all {
		if seen[c] {
			t.Errorf("All lists %d twice", c)
		}
		seen[c] = true
		if i > 0 && all[i-1] >= c {
			t.Errorf("All is not in numeric order at %d", c)
		}
		if c.Meaning() == "" || c.String() == fmt.Sprintf("exit %d", int(c)) {
			t.Errorf("code %d has no name or meaning: %q, %q", c, c.String(), c.Meaning())
		}
	}
	for name, v := range declared {
		if !seen[Code(v)] {
			t.Errorf("constant %s = %d is not in All", name, v)
		}
	}
}

// codeConstants reads exitcode.go's constants of type Code: name → value.
func codeConstants(t *testing.T) map[string]int {
	f, err := parser.ParseFile(token.NewFileSet(), "exitcode.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				continue
			}
			for i, n := range vs.Names {
				lit, ok := vs.Values[i].(*ast.BasicLit)
				if !ok {
					t.Fatalf("constant %s: its value is not a literal", n.Name)
				}
				v, err := strconv.Atoi(lit.Value)
				if err != nil {
					t.Fatalf("constant %s: %v", n.Name, err)
				}
				out[n.Name] = v
			}
		}
	}
	if len(out) < 8 {
		t.Fatalf("found %d Code constants in exitcode.go: %v", len(out), out)
	}
	return out
}
