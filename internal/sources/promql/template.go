package promql

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"

	"github.com/scalegate/scalegate/internal/sources/promsource"
)

// Placeholders a label value may hold: the leg's ID and the game
// server's pod as Prometheus labels it.
const (
	VarLeg = "leg"
	VarPod = "pod"
)

var placeholder = regexp.MustCompile(`\{([^{}]*)\}`)

// Expand fills {leg} and {pod} in one label value from vars. An unknown
// placeholder, or one vars has no value for, is an error naming it: a
// label left as "{pod}" would select nothing and leave every figure
// missing.
func Expand(value string, vars map[string]string) (string, error) {
	var errs []error
	out := placeholder.ReplaceAllStringFunc(value, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := vars[name]
		switch {
		case name != VarLeg && name != VarPod:
			errs = append(errs, fmt.Errorf("unknown placeholder %s (a label value may hold {leg} and {pod})", m))
		case !ok || v == "":
			errs = append(errs, fmt.Errorf("%s has no value (set server.metrics.pod)", m))
		}
		return v
	})
	return out, errors.Join(errs...)
}

// Resolve expands the placeholders of a mapping's labels and the source's
// own labels: what the swarm is given. Each error names the label.
func Resolve(m promsource.Map, labels, vars map[string]string) (promsource.Map, map[string]string, error) {
	var errs []error
	expand := func(at string, l map[string]string) map[string]string {
		if l == nil {
			return nil
		}
		out := make(map[string]string, len(l))
		for _, k := range slices.Sorted(maps.Keys(l)) {
			v, err := Expand(l[k], vars)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %w", at, k, err))
			}
			out[k] = v
		}
		return out
	}
	outLabels := expand("labels", labels)
	out := make(promsource.Map, len(m))
	for _, name := range slices.Sorted(maps.Keys(m)) {
		f := m[name]
		f.Labels = expand("queries."+name+".labels", f.Labels)
		out[name] = f
	}
	return out, outLabels, errors.Join(errs...)
}
