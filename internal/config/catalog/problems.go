package catalog

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/format"
	"cuelang.org/go/cue/token"
)

// Problem is one mistake in a profile (or in a document checked against the
// schema), placed in the user's own input: a file position, or the
// `--set PATH=VALUE` flag that caused it.
type Problem struct {
	// File is the user's file ("profiles/pr.cue") or "--set PATH=VALUE".
	File string
	// Line and Col are 1-based; 0 when the problem belongs to a flag.
	Line, Col int
	// Path is the field ("gates.wire_kbs_max.threshold"); "" for syntax.
	Path string
	// Msg says what is wrong in the user's terms.
	Msg string

	seq int // keeps flag problems in the order the flags were given
}

// String renders "file:line:col: field: message".
func (p Problem) String() string {
	var b strings.Builder
	b.WriteString(p.File)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// ProfileError is an invalid profile (or schema, or document): every
// problem at once, one line each, in the order of the user's input.
type ProfileError struct {
	Problems []Problem
}

func (e *ProfileError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// FormatError renders a profile error as one line per problem,
// "file:line:col: field: message", so an editor can jump to each; any other
// error as its text.
func FormatError(err error) string {
	if err == nil {
		return ""
	}
	var pe *ProfileError
	if errors.As(err, &pe) {
		return pe.Error()
	}
	return err.Error()
}

// sortProblems orders flag problems first (as given), then by file and
// position, so the output reads like the input.
func sortProblems(ps []Problem) {
	flag := func(p Problem) bool { return strings.HasPrefix(p.File, "--set ") }
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if flag(a) != flag(b) {
			return flag(a)
		}
		if flag(a) {
			return a.seq < b.seq
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		if a.Col != b.Col {
			return a.Col < b.Col
		}
		return a.Path < b.Path
	})
}

// problemAt places a message at a CUE position.
func problemAt(pos token.Pos, path, msg string) Problem {
	p := Problem{Path: path, Msg: msg}
	if pos.IsValid() {
		p.File = pos.Filename()
		if !strings.HasPrefix(p.File, "--set ") {
			p.Line, p.Col = pos.Line(), pos.Column()
		}
	}
	if p.File == "" {
		p.File = "(no position)"
	}
	return p
}

// cueError is one raw CUE error, path cleaned of the schema's definition
// name.
type cueError struct {
	path   string
	format string
	args   []any
	pos    []token.Pos
}

// rawErrors flattens a CUE error list. prefix replaces a leading
// definition name ("#Profile", "#Custom") in the error path.
func rawErrors(err error, prefix []string) []cueError {
	var out []cueError
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		if strings.Contains(format, "errors in empty disjunction") {
			continue // a header; its branches follow as their own errors
		}
		path := e.Path()
		if len(path) > 0 && strings.HasPrefix(path[0], "#") {
			path = path[1:]
		}
		path = append(append([]string{}, prefix...), path...)
		out = append(out, cueError{path: strings.Join(path, "."), format: format, args: args,
			pos: append([]token.Pos{e.Position()}, e.InputPositions()...)})
	}
	return out
}

// userPos is the first position of e outside the embedded schema: the
// user's file or flag.
func (e cueError) userPos() (token.Pos, bool) {
	for _, p := range e.pos {
		if p.IsValid() && !strings.HasPrefix(p.Filename(), "schema/") {
			return p, true
		}
	}
	return token.NoPos, false
}

// schemaPos is the first position of e inside the embedded schema.
func (e cueError) schemaPos() (token.Pos, bool) {
	for _, p := range e.pos {
		if p.IsValid() && strings.HasPrefix(p.Filename(), "schema/") {
			return p, true
		}
	}
	return token.NoPos, false
}

func (e cueError) conflict() bool { return strings.HasPrefix(e.format, "conflicting values %s and %s") }

// translator turns CUE's errors into one problem per mistake, worded for
// the person who wrote the file.
type translator struct {
	file   string    // the user's file, for problems CUE places in the schema
	user   cue.Value // the user's input alone, without the schema
	schema func(path string) cue.Value
	// pos places a field of the user's input: its own position, else its
	// nearest parent's, else the file's first line.
	pos func(path string) token.Pos
}

// translate groups errors by field and words each group as one line:
//   - a range or format error wins over the "conflicting values 60 and
//     1000" that the schema's default branch adds beside it;
//   - only literal alternatives: "X is not one of A, B";
//   - a type among the alternatives: "X is a string, want an int";
//   - an incomplete field the user never wrote: "required field is missing".
func (t *translator) translate(errs []cueError) []Problem {
	var order []string
	groups := map[string][]cueError{}
	for _, e := range errs {
		if strings.HasPrefix(e.format, "incomplete value") {
			e.path = t.firstMissing(e.path)
		}
		key := e.path
		if key == "" {
			key = fmt.Sprint(e.pos)
		}
		if _, ok := groups[key]; !ok {
			order = append(order, key)
		}
		groups[key] = append(groups[key], e)
	}
	var out []Problem
	for _, k := range order {
		out = append(out, t.group(groups[k])...)
	}
	return out
}

func (t *translator) group(es []cueError) []Problem {
	path := es[0].path
	pos, ok := token.NoPos, false
	for _, e := range es {
		if pos, ok = e.userPos(); ok {
			break
		}
	}
	if !ok {
		pos = t.pos(path)
	}
	var msgs []string
	seen := map[string]bool{}
	for _, e := range es {
		if e.conflict() {
			continue
		}
		m := t.message(e)
		if !seen[m] {
			seen[m] = true
			msgs = append(msgs, m)
		}
	}
	if len(msgs) == 0 {
		msgs = []string{t.conflict(path, es)}
	}
	out := make([]Problem, len(msgs))
	for i, m := range msgs {
		out[i] = problemAt(pos, path, m)
	}
	return out
}

// firstMissing shortens path to the first prefix the user never wrote: a
// required list that is absent is reported as the list, not as its
// first element.
func (t *translator) firstMissing(path string) string {
	if path == "" {
		return path
	}
	parts := strings.Split(path, ".")
	for i := 1; i <= len(parts); i++ {
		p := strings.Join(parts[:i], ".")
		if !t.user.LookupPath(fieldPath(p)).Exists() {
			return p
		}
	}
	return path
}

// fieldPath turns a dotted path of labels and list indices into a CUE
// path ("patterns.1" is element 1, which cue.ParsePath would refuse).
func fieldPath(path string) cue.Path {
	if path == "" {
		return cue.MakePath()
	}
	var sels []cue.Selector
	for _, part := range strings.Split(path, ".") {
		if n, err := strconv.Atoi(part); err == nil && n >= 0 {
			sels = append(sels, cue.Index(n))
			continue
		}
		if u, err := strconv.Unquote(part); err == nil {
			part = u
		}
		sels = append(sels, cue.Str(part))
	}
	return cue.MakePath(sels...)
}

// message words a non-conflict error.
func (t *translator) message(e cueError) string {
	if strings.HasPrefix(e.format, "incomplete value") && e.path != "" && !t.user.LookupPath(fieldPath(e.path)).Exists() {
		if k := kindName(t.schema(e.path).IncompleteKind()); k != "" {
			return "required field is missing (want " + k + ")"
		}
		return "required field is missing"
	}
	msg := fmt.Sprintf(e.format, e.args...)
	if strings.HasPrefix(msg, "incompatible list lengths (0 and ") {
		// The schema's [X, ...X] (at least one element) met an empty list.
		return "is empty: list at least one"
	}
	return msg
}

// conflict words a group made only of "conflicting values" errors. Each
// error pairs the user's value with one alternative of the schema, in
// either order; the user's value is recognised by its text.
func (t *translator) conflict(path string, es []cueError) string {
	for _, e := range es {
		if _, schema := e.schemaPos(); !schema && len(e.args) >= 2 {
			// Both sides are the user's: one field, two values.
			return fmt.Sprintf("conflicting values %v and %v (the field is given two different values)", e.args[0], e.args[1])
		}
	}
	got := t.userText(path)
	var alts, kinds []string
	gotKind := ""
	for _, e := range es {
		if len(e.args) < 2 {
			continue
		}
		a := [2]string{fmt.Sprint(e.args[0]), fmt.Sprint(e.args[1])}
		u := 1 // which side is the user's
		if got != "" && a[0] == got {
			u = 0
		}
		if got == "" {
			got = a[u]
		}
		alts = appendNew(alts, a[1-u])
		if len(e.args) == 4 { // "(mismatched types %s and %s)"
			kinds = appendNew(kinds, fmt.Sprint(e.args[3-u]))
			gotKind = fmt.Sprint(e.args[2+u])
		}
	}
	if allLiteral(alts) {
		if len(alts) == 1 {
			return fmt.Sprintf("must be %s, not %s", alts[0], got)
		}
		return fmt.Sprintf("%s is not one of %s", got, strings.Join(alts, ", "))
	}
	want := t.wanted(path, alts, kinds)
	if k := kindName(kindOf(gotKind)); k != "" {
		return fmt.Sprintf("%s is %s, want %s", got, k, want)
	}
	return fmt.Sprintf("%s conflicts with %s", got, want)
}

// wanted names the expected type, with the schema's constraint when it is
// short enough to read ("an int (int & >=1 & <=1024)"). The type comes
// from the alternatives that are types, not from a default's literal.
func (t *translator) wanted(path string, alts, kinds []string) string {
	var names []string
	for _, a := range alts {
		if k := kindName(kindOf(a)); k != "" && !allLiteral([]string{a}) {
			names = appendNew(names, k)
		}
	}
	if len(names) == 0 {
		for _, k := range kinds {
			if n := kindName(kindOf(k)); n != "" {
				names = appendNew(names, n)
			}
		}
	}
	want := strings.Join(names, " or ")
	if c := t.constraint(path); c != "" && !strings.Contains(want, c) {
		if want == "" {
			return c
		}
		want += " (" + c + ")"
	}
	if want == "" {
		return strings.Join(alts, " or ")
	}
	return want
}

// constraint is the schema's constraint at path as one short line, or "".
func (t *translator) constraint(path string) string {
	v := t.schema(path)
	if !v.Exists() {
		return ""
	}
	b, err := format.Node(v.Syntax(cue.Raw()))
	s := string(b)
	if err != nil || len(s) > 60 || strings.ContainsAny(s, "\n#{|") {
		return ""
	}
	return s
}

// userText is the user's value at path as CUE prints it, "" when absent
// or not a plain value.
func (t *translator) userText(path string) string {
	if path == "" {
		return ""
	}
	v := t.user.LookupPath(fieldPath(path))
	if !v.Exists() || v.Err() != nil {
		return ""
	}
	b, err := format.Node(v.Syntax(cue.Final(), cue.Concrete(true)))
	if err != nil || strings.Contains(string(b), "\n") {
		return ""
	}
	return string(b)
}

// allLiteral: every alternative is a concrete scalar ("pr", 60, true), so
// the field is an enumeration rather than a type.
func allLiteral(alts []string) bool {
	for _, a := range alts {
		switch {
		case strings.HasPrefix(a, `"`), a == "true", a == "false", a == "null":
		case a != "" && strings.Trim(a, "-+0123456789.eE") == "":
		default:
			return false
		}
	}
	return len(alts) > 0
}

// kindOf maps a CUE type or value text to its kind.
func kindOf(s string) cue.Kind {
	switch {
	case strings.HasPrefix(s, "int"), s == "uint":
		return cue.IntKind
	case strings.HasPrefix(s, "number"), strings.HasPrefix(s, "float"):
		return cue.NumberKind
	case strings.HasPrefix(s, "string"), strings.HasPrefix(s, `"`):
		return cue.StringKind
	case strings.HasPrefix(s, "bool"), s == "true", s == "false":
		return cue.BoolKind
	case strings.HasPrefix(s, "["), strings.HasPrefix(s, "list"):
		return cue.ListKind
	case strings.HasPrefix(s, "{"), strings.HasPrefix(s, "struct"):
		return cue.StructKind
	case s == "null":
		return cue.NullKind
	}
	return cue.BottomKind
}

// kindName is "an int", "a number"…; "" for an unknown kind.
func kindName(k cue.Kind) string {
	switch k {
	case cue.IntKind:
		return "an int"
	case cue.NumberKind, cue.FloatKind:
		return "a number"
	case cue.StringKind:
		return "a string"
	case cue.BoolKind:
		return "a bool"
	case cue.ListKind:
		return "a list"
	case cue.StructKind:
		return "a struct"
	case cue.NullKind:
		return "null"
	}
	return ""
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}
