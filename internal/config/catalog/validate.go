package catalog

import (
	"fmt"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/token"
)

// ValidateJSON checks a JSON document against a definition of the embedded
// schema ("#Report", "#ServerTick"), returning every violation with its
// field path. name labels the document in errors.
func ValidateJSON(def, name string, b []byte) error {
	ctx := cuecontext.New()
	sch, err := compileSchema(ctx)
	if err != nil {
		return err
	}
	d := sch.LookupPath(cue.ParsePath(def))
	if !d.Exists() {
		return fmt.Errorf("schema has no %s", def)
	}
	v := ctx.CompileBytes(b, cue.Filename(name))
	if err := v.Err(); err != nil {
		return fmt.Errorf("%s: not valid JSON: %w", name, err)
	}
	if err := d.Unify(v).Validate(cue.Concrete(true), cue.All()); err != nil {
		t := &translator{file: name, user: v,
			schema: func(path string) cue.Value { return d.LookupPath(fieldPath(path)) },
			pos: func(path string) token.Pos {
				for p := path; p != ""; p = parentPath(p) {
					if pos := v.LookupPath(fieldPath(p)).Pos(); pos.IsValid() {
						return pos
					}
				}
				return v.Pos()
			}}
		probs := t.translate(rawErrors(err, nil))
		sortProblems(probs)
		return fmt.Errorf("%s does not match schema %s: %w", name, def, &ProfileError{Problems: probs})
	}
	return nil
}
