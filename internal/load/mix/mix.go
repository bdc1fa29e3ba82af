// Package mix parses weighted mixes of names and assigns them
// deterministically over n items.
//
// A mix is a weighted mix of names ("loiter:60,pursuit:25,patrol:15"), and
// its assignment over n items is deterministic: the swarm's pattern mix and
// the reference server's AI-controller mix use the same parser and the same
// apportionment, so both honour a mix the same way.
package mix

import (
	"fmt"
	"strconv"
	"strings"
)

// Entry is one weighted name of a mix.
type Entry struct {
	Name   string
	Weight int
}

// MaxWeight bounds one weight, so items × total weight cannot overflow.
const MaxWeight = 1_000_000

// Mix is a weighted mix, in the order given.
type Mix []Entry

// Parse parses "a:80,b:20". The weight follows the last colon, so a name
// may hold colons ("trace:PATH:20"). Weights are integers in 1..MaxWeight;
// names may not repeat, and known (when non-nil) rejects a name with an
// error that is shown after the spec. what names the mix in messages
// ("pattern mix").
func Parse(spec, what string, known func(name string) error) (Mix, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, fmt.Errorf("%s: empty spec", what)
	}
	var m Mix
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		cut := strings.LastIndexByte(part, ':')
		if cut < 0 {
			return nil, fmt.Errorf("%s %q: entry %q is not NAME:WEIGHT", what, spec, part)
		}
		name, w := strings.TrimSpace(part[:cut]), part[cut+1:]
		if known != nil {
			if err := known(name); err != nil {
				return nil, fmt.Errorf("%s %q: %w", what, spec, err)
			}
		}
		if seen[name] {
			return nil, fmt.Errorf("%s %q: %q listed twice", what, spec, name)
		}
		seen[name] = true
		weight, err := strconv.Atoi(strings.TrimSpace(w))
		if err != nil || weight <= 0 || weight > MaxWeight {
			return nil, fmt.Errorf("%s %q: weight of %q must be an integer in 1..%d, got %q", what, spec, name, MaxWeight, w)
		}
		m = append(m, Entry{Name: name, Weight: weight})
	}
	return m, nil
}

// String is the canonical spec: the bare name for a single entry,
// "a:w,b:w" otherwise.
func (m Mix) String() string {
	if len(m) == 1 {
		return m[0].Name
	}
	parts := make([]string, len(m))
	for i, e := range m {
		parts[i] = e.Name + ":" + strconv.Itoa(e.Weight)
	}
	return strings.Join(parts, ",")
}

// Index returns the entry index of item i of n: the cumulative-weight bucket
// containing floor(i·W/n), W the total weight. Deterministic, no RNG: entry k
// gets ceil(C_k·n/W) − ceil(C_{k−1}·n/W) items (C the cumulative weights), so
// every count is its exact share n·w/W rounded up or down, and exactly it
// whenever that share is whole.
func (m Mix) Index(i, n int) int {
	total := 0
	for _, e := range m {
		total += e.Weight
	}
	// int64: items × total weight may exceed 2^31 on 32-bit platforms.
	pos := int(int64(i) * int64(total) / int64(n))
	cum := 0
	for k, e := range m {
		cum += e.Weight
		if pos < cum {
			return k
		}
	}
	return len(m) - 1
}

// Assign returns the name of item i of n (see Index).
func (m Mix) Assign(i, n int) string { return m[m.Index(i, n)].Name }

// Counts returns how many of n items get each name.
func (m Mix) Counts(n int) map[string]int {
	c := make(map[string]int, len(m))
	for i := 0; i < n; i++ {
		c[m.Assign(i, n)]++
	}
	return c
}
