package catalog

import (
	"errors"
	"strconv"
	"sync"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// transports caches Transports: the schema is embedded, so its answer
// never changes within a process.
var transports = sync.OnceValues(func() ([]string, error) {
	sch, err := compileSchema(cuecontext.New())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, q := range schemaStrings(sch.LookupPath(cue.ParsePath("#Transport"))) {
		s, err := strconv.Unquote(q)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, errors.New("schema: #Transport is not a disjunction of names")
	}
	return out, nil
})

// Transports lists the transports a profile may name, in the schema's
// order (#Transport): read from the one place that decides what vet
// accepts, so that a help text listing them (scalegate init --transport)
// cannot drift from it.
func Transports() ([]string, error) {
	out, err := transports()
	return append([]string(nil), out...), err
}
