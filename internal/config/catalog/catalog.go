// Package catalog finds, loads and vets scale-gate profiles. It reads the
// CUE files of the built-in set or of a team's directory, unifies them with
// the embedded schema, applies --set overrides, reports every mistake at
// once with its file:line:col, and decodes the result into a
// profile.Profile. It also validates JSON documents (a swarm report, a
// metrics file) against the same schema.
package catalog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/ast/astutil"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"

	"github.com/scalegate/scalegate/internal/config/profile"
	"github.com/scalegate/scalegate/internal/guard/boundedfile"
	"github.com/scalegate/scalegate/internal/judge/gatetable"
	"github.com/scalegate/scalegate/profiles"
	"github.com/scalegate/scalegate/schema"
)

// UnknownProfileError names a profile that no file defines.
type UnknownProfileError struct {
	Name      string
	Available []string
}

func (e *UnknownProfileError) Error() string {
	return fmt.Sprintf("unknown profile %q (available: %s)", e.Name, strings.Join(e.Available, ", "))
}

// Catalog is a set of profile sources validated against the schema.
type Catalog struct {
	ctx    *cue.Context
	schema cue.Value
	def    cue.Value
	fsys   fs.FS
	prefix string // shown before file names: "profiles/" or the user's dir
}

// NewCatalog compiles the embedded schema and reads profiles from dir, or
// from the embedded profiles when dir is "".
func NewCatalog(dir string) (*Catalog, error) {
	ctx := cuecontext.New()
	sch, err := compileSchema(ctx)
	if err != nil {
		return nil, err
	}
	c := &Catalog{ctx: ctx, schema: sch, def: sch.LookupPath(cue.ParsePath("#Profile")), fsys: profiles.FS, prefix: "profiles/"}
	if dir != "" {
		st, err := os.Stat(dir)
		if err != nil {
			return nil, fmt.Errorf("--profiles: %w", err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("--profiles %s: not a directory", dir)
		}
		c.fsys, c.prefix = os.DirFS(dir), filepath.Clean(dir)+string(filepath.Separator)
	}
	return c, nil
}

// Schema compiles the embedded schema package; exported for the report and
// metrics-file validators.
func compileSchema(ctx *cue.Context) (cue.Value, error) {
	names, err := fs.Glob(schema.FS, "*.cue")
	if err != nil {
		return cue.Value{}, err
	}
	inst := build.NewContext().NewInstance("schema", nil)
	for _, n := range names {
		src, err := fs.ReadFile(schema.FS, n)
		if err != nil {
			return cue.Value{}, err
		}
		f, err := parser.ParseFile("schema/"+n, src, parser.ParseComments)
		if err != nil {
			return cue.Value{}, syntaxError(err)
		}
		if err := inst.AddSyntax(f); err != nil {
			return cue.Value{}, err
		}
	}
	v := ctx.BuildInstance(inst)
	if err := v.Err(); err != nil {
		return cue.Value{}, syntaxError(err)
	}
	return v, nil
}

// Names lists the profiles of the catalog (file base names), sorted.
func (c *Catalog) Names() ([]string, error) {
	files, err := fs.Glob(c.fsys, "*.cue")
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, strings.TrimSuffix(f, ".cue"))
	}
	sort.Strings(names)
	return names, nil
}

// maxProfileBytes bounds a profile file (a shipped one is a few KB).
const maxProfileBytes = 1 << 20

// Load resolves one profile by name, with sets applied on top of its file
// (in order; a later one for the same path wins).
func (c *Catalog) Load(name string, sets ...Override) (*profile.Profile, cue.Value, error) {
	file := name + ".cue"
	src, err := boundedfile.ReadFS(context.Background(), c.fsys, file, maxProfileBytes)
	if errors.Is(err, fs.ErrNotExist) {
		names, _ := c.Names()
		return nil, cue.Value{}, &UnknownProfileError{Name: name, Available: names}
	}
	if err != nil {
		return nil, cue.Value{}, fmt.Errorf("read profile %s: %w", c.prefix+file, err)
	}
	return c.resolve(name, c.prefix+file, src, sets)
}

// resolve applies the overrides to the file, unifies it with #Profile,
// checks it completely and decodes it. Every problem is collected, not just
// the first: the schema's, the unknown fields', and the rules across fields,
// each whatever the others found.
func (c *Catalog) resolve(name, path string, src []byte, sets []Override) (*profile.Profile, cue.Value, error) {
	f, err := parser.ParseFile(path, src)
	if err != nil {
		return nil, cue.Value{}, syntaxError(err)
	}
	if len(sets) > 0 {
		if probs := applyOverrides(f, sets); len(probs) > 0 {
			return nil, cue.Value{}, &ProfileError{Problems: probs}
		}
		reresolve(f)
	}
	v := c.ctx.BuildFile(f)
	// An error of the file alone (two values for one field, a reference
	// to nothing) is reported with the rest, not instead of it.
	errs := rawErrors(v.Err(), nil)
	ch := &checker{file: path, name: name, schema: c.schema, def: c.def, user: v,
		unified: c.def.Unify(v), fields: map[string]fieldPos{}, flags: map[string]int{}}
	for i, o := range sets {
		ch.flags[o.source()] = i
	}
	ch.index(f.Decls, "")
	ch.unknownFields(f.Decls, "", c.def)
	ch.crossCheck()
	if probs := ch.finish(append(errs, ch.schemaErrors()...)); len(probs) > 0 {
		return nil, ch.unified, &ProfileError{Problems: probs}
	}
	p, err := decodeProfile(ch.unified)
	if err != nil {
		return nil, ch.unified, &ProfileError{Problems: []Problem{{File: path, Msg: err.Error()}}}
	}
	p.Source = path
	for _, o := range sets {
		p.Overrides = append(p.Overrides, o.String())
	}
	if msgs := loadTraces(p, c.fsys, c.prefix); len(msgs) > 0 {
		var probs []Problem
		for _, m := range msgs {
			probs = append(probs, problemAt(ch.posOf("patterns"), "patterns", m))
		}
		return nil, ch.unified, &ProfileError{Problems: probs}
	}
	return p, ch.unified, nil
}

// reresolve binds every identifier again after overrides replaced fields:
// the parser bound `clients` in `test_spawn_ai_count: clients * 10` to the
// declaration the override removed, and must bind it to the override.
func reresolve(f *ast.File) {
	ast.Walk(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			id.Node, id.Scope = nil, nil
		}
		return true
	}, nil)
	f.Unresolved = nil
	astutil.Resolve(f, func(token.Pos, string, ...any) {})
}

// decodeProfile decodes a valid unified profile, keeping the optional
// [world] knobs the struct does not name.
func decodeProfile(u cue.Value) (*profile.Profile, error) {
	var p profile.Profile
	if err := u.Decode(&p); err != nil {
		return nil, fmt.Errorf("decode profile: %w", err)
	}
	var extra struct {
		World map[string]any `json:"world"`
	}
	if err := u.Decode(&extra); err != nil {
		return nil, fmt.Errorf("decode profile world: %w", err)
	}
	p.World.Extra = extra.World
	for name := range gatetable.Budgets() {
		delete(p.Gates, name) // a shorthand: CUE declared its gates
	}
	for _, k := range []string{"overrun_governor", "sim_worker_threads", "test_spawn_ai_count"} {
		delete(p.World.Extra, k)
	}
	if len(p.Impairment) > 0 {
		norm, err := p.Impairment.Normalize()
		if err != nil {
			return nil, fmt.Errorf("impairment: %w", err)
		}
		p.Impairment = norm
	}
	return &p, nil
}

// syntaxError turns a CUE parse or build error into problems at their
// positions.
func syntaxError(err error) *ProfileError {
	var probs []Problem
	for _, e := range cueerrors.Errors(err) {
		format, args := e.Msg()
		probs = append(probs, problemAt(e.Position(), "", fmt.Sprintf(format, args...)))
	}
	if len(probs) == 0 {
		probs = append(probs, Problem{File: "(no position)", Msg: err.Error()})
	}
	return &ProfileError{Problems: probs}
}

func sortedGateNames(g profile.Gates) []string {
	names := make([]string, 0, len(g))
	for n := range g {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
