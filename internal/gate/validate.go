package gate

import (
	"fmt"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
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
		return fmt.Errorf("%s does not match schema %s: %s", name, def, FormatError(&ProfileError{Err: cueerrors.Promote(err, name)}))
	}
	return nil
}
