package catalog

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
)

// Override is one `--set PATH=VALUE`. VALUE replaces what the profile file
// says at PATH before the profile meets the schema, so a misspelt path or a
// value of the wrong type is reported like any other mistake in the file,
// under the name "--set PATH=VALUE".
type Override struct {
	// Path is a dotted field path: "clients", "world.test_spawn_ai_count".
	Path string
	// Value is the raw text after "=": a CUE/JSON value (4, true,
	// ["weave","idle"], "quoted") or a bare string (quic, weave:80,idle:20).
	Value string
}

// ParseOverride splits "PATH=VALUE". Only the shape is checked here; the
// path and the value are checked against the schema when the profile loads.
func ParseOverride(s string) (Override, error) {
	path, value, ok := strings.Cut(s, "=")
	path = strings.TrimSpace(path)
	if !ok || path == "" || strings.ContainsFunc(path, unicode.IsControl) {
		return Override{}, fmt.Errorf("--set %q: want PATH=VALUE (e.g. clients=256 or world.test_spawn_ai_count=2000)", s)
	}
	return Override{Path: path, Value: value}, nil
}

// String is "PATH=VALUE", as the user typed it.
func (o Override) String() string { return o.Path + "=" + o.Value }

// source names the override where problems are reported, quoted when it
// holds a newline or another control character: a problem is one line.
func (o Override) source() string { return "--set " + printable(o.String()) }

// printable quotes s when printing it raw would break a line.
func printable(s string) string {
	if strings.ContainsFunc(s, unicode.IsControl) {
		return strconv.Quote(s)
	}
	return s
}

// applyOverrides rewrites the profile's syntax tree: every declaration of
// each override's path is removed and the override is appended in its own
// source file, so positions inside it name the flag. Replacing rather than
// unifying is the point: unifying clients: 4 with the file's clients: 8
// would be a conflict, not an override.
func applyOverrides(f *ast.File, sets []Override) []Problem {
	var probs []Problem
	for i, o := range sets {
		decl, err := overrideDecl(o)
		if err != nil {
			probs = append(probs, Problem{File: o.source(), Path: printable(o.Path), Msg: err.Error(), seq: i})
			continue
		}
		labels, _ := overrideLabels(o.Path) // overrideDecl checked it
		f.Decls = append(removeField(f.Decls, labels), decl)
	}
	return probs
}

// overrideDecl builds "PATH: VALUE" as a declaration parsed from a source
// named after the flag.
func overrideDecl(o Override) (ast.Decl, error) {
	labels, err := overrideLabels(o.Path)
	if err != nil {
		return nil, err
	}
	val, err := overrideValue(o.Value)
	if err != nil {
		return nil, err
	}
	for i := len(labels) - 1; i >= 1; i-- {
		val = ast.NewStruct(&ast.Field{Label: ast.NewStringLabel(labels[i]), Value: val})
	}
	text, err := format.Node(&ast.Field{Label: ast.NewStringLabel(labels[0]), Value: val})
	if err != nil {
		return nil, fmt.Errorf("cannot render the override: %w", err)
	}
	file, err := parser.ParseFile(o.source(), text)
	if err != nil || len(file.Decls) != 1 {
		return nil, fmt.Errorf("cannot parse the override back: %v", err)
	}
	return file.Decls[0], nil
}

// overrideLabels splits a field path; list indices, definitions and hidden
// fields are not profile fields.
func overrideLabels(path string) ([]string, error) {
	for _, part := range strings.Split(path, ".") {
		if _, err := strconv.Atoi(part); err == nil {
			return nil, fmt.Errorf("a list element cannot be set alone: set the whole list, e.g. patterns=[\"weave\", \"idle\"]")
		}
	}
	p := cue.ParsePath(path)
	if err := p.Err(); err != nil {
		return nil, fmt.Errorf("not a field path (%v); want e.g. clients or world.test_spawn_ai_count", err)
	}
	var out []string
	for _, sel := range p.Selectors() {
		if sel.LabelType() != cue.StringLabel || sel.ConstraintType() != 0 {
			return nil, fmt.Errorf("%s is not a profile field name (set a whole list as PATH=[a, b])", sel)
		}
		out = append(out, sel.Unquoted())
	}
	if len(out) == 0 {
		return nil, errors.New("empty field path")
	}
	return out, nil
}

// overrideValue parses VALUE as a CUE/JSON value. Text that is not one is
// a bare string ("quic", "weave:80,idle:20"), unless it starts like a list,
// struct or quoted string: then a typo should not silently become a string.
func overrideValue(text string) (ast.Expr, error) {
	trimmed := strings.TrimSpace(text)
	expr, err := parser.ParseExpr("--set", trimmed)
	if err == nil {
		if v, ok := literal(expr); ok {
			return v, nil
		}
	}
	if strings.HasPrefix(trimmed, "[") || strings.HasPrefix(trimmed, "{") || strings.HasPrefix(trimmed, `"`) {
		return nil, fmt.Errorf("%s is not a value: want a number, true/false, a string or a list like [\"weave\", \"idle\"]", printable(text))
	}
	return ast.NewString(text), nil
}

// literal accepts plain data only — numbers, strings, bools, null, lists and
// structs of them — and turns bare identifiers into strings, so
// patterns=[idle, weave] means what it says. Anything else (references,
// arithmetic, constraints) is refused: an override is a value.
func literal(e ast.Expr) (ast.Expr, bool) {
	switch x := e.(type) {
	case *ast.BasicLit:
		return x, true
	case *ast.Ident:
		switch x.Name {
		case "true", "false", "null":
			return x, true
		}
		return ast.NewString(x.Name), true
	case *ast.UnaryExpr:
		n, ok := x.X.(*ast.BasicLit)
		return x, ok && (x.Op == token.SUB || x.Op == token.ADD) && (n.Kind == token.INT || n.Kind == token.FLOAT)
	case *ast.ListLit:
		for i, el := range x.Elts {
			v, ok := literal(el)
			if !ok {
				return nil, false
			}
			x.Elts[i] = v
		}
		return x, true
	case *ast.StructLit:
		for _, d := range x.Elts {
			f, ok := d.(*ast.Field)
			if !ok || f.Constraint != token.ILLEGAL {
				return nil, false
			}
			if f.Value, ok = literal(f.Value); !ok {
				return nil, false
			}
		}
		return x, true
	}
	return nil, false
}

// removeField drops every declaration of the path from decls, descending
// into struct literals (both `world: {a: 1}` and `world: a: 1`). A path
// that runs through a non-struct value is left alone: the override then
// conflicts with it and the conflict is reported.
func removeField(decls []ast.Decl, labels []string) []ast.Decl {
	out := make([]ast.Decl, 0, len(decls))
	for _, d := range decls {
		f, ok := d.(*ast.Field)
		if !ok || fieldName(f) != labels[0] {
			out = append(out, d)
			continue
		}
		if len(labels) == 1 {
			continue
		}
		if s, ok := f.Value.(*ast.StructLit); ok {
			s.Elts = removeField(s.Elts, labels[1:])
		}
		out = append(out, d)
	}
	return out
}

// fieldName is a field's label as a plain string ("" when it has none).
func fieldName(f *ast.Field) string {
	name, _, err := ast.LabelName(f.Label)
	if err != nil {
		return ""
	}
	return name
}
