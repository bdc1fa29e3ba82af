package schema

import (
	"encoding/json"
	"fmt"
	"io/fs"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/encoding/jsonschema"
)

// Compile builds every schema file of FS into one CUE value in ctx.
func Compile(ctx *cue.Context) (cue.Value, error) {
	names, err := fs.Glob(FS, "*.cue")
	if err != nil {
		return cue.Value{}, err
	}
	inst := build.NewContext().NewInstance("schema", nil)
	for _, n := range names {
		src, err := fs.ReadFile(FS, n)
		if err != nil {
			return cue.Value{}, err
		}
		f, err := parser.ParseFile("schema/"+n, src, parser.ParseComments)
		if err != nil {
			return cue.Value{}, err
		}
		if err := inst.AddSyntax(f); err != nil {
			return cue.Value{}, err
		}
	}
	v := ctx.BuildInstance(inst)
	return v, v.Err()
}

// JSONSchema is the JSON Schema (draft 2020-12) of definition def ("#Report",
// "#ServerTick"), generated from the CUE schema by CUE's own generator, so
// a team that writes a report or a metrics file outside Go validates it
// against the same contract the gate applies.
func JSONSchema(def string) ([]byte, error) {
	ctx := cuecontext.New()
	v, err := Compile(ctx)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	d := v.LookupPath(cue.ParsePath(def))
	if !d.Exists() {
		return nil, fmt.Errorf("schema has no %s", def)
	}
	expr, err := jsonschema.Generate(d, nil)
	if err != nil {
		return nil, fmt.Errorf("schema %s: JSON Schema: %w", def, err)
	}
	js := ctx.BuildExpr(expr)
	if err := js.Err(); err != nil {
		return nil, fmt.Errorf("schema %s: JSON Schema: %w", def, err)
	}
	b, err := js.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("schema %s: JSON Schema: %w", def, err)
	}
	var out json.RawMessage = b
	return json.MarshalIndent(out, "", "  ")
}
