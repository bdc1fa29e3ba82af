package catalog

import (
	"strings"
	"testing"
)

// FuzzProfile: any bytes as a profile file give a profile or an error,
// never a panic; every problem is one line at the user's file (never inside
// the schema); a profile that loads has legs.
func FuzzProfile(f *testing.F) {
	for _, s := range []string{goodSrc, "", "name: 1", "{", `name: "good", sweep: {entity_counts: [1], sim_worker_threads: [0]}`} {
		f.Add(s)
	}
	c, err := NewCatalog("")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, _, err := c.resolve("good", "good.cue", []byte(src), nil)
		if err != nil {
			for _, line := range strings.Split(FormatError(err), "\n") {
				if !strings.HasPrefix(line, "good.cue:") {
					t.Fatalf("problem not at the user's file: %q", line)
				}
			}
			return
		}
		if len(p.Legs()) == 0 {
			t.Fatalf("valid profile without legs: %s", src)
		}
	})
}
