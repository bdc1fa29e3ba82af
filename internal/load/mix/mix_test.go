package mix

import (
	"errors"
	"strings"
	"testing"
)

// TestCountsMatchWeights: whenever n·w/W is whole the count is exactly it,
// and otherwise it is that share rounded one way or the other, summing to n.
func TestCountsMatchWeights(t *testing.T) {
	cases := []struct {
		spec string
		n    int
		want map[string]int
	}{
		{"loiter:60,pursuit:25,patrol:15", 2000, map[string]int{"loiter": 1200, "pursuit": 500, "patrol": 300}},
		{"loiter:60,pursuit:25,patrol:15", 100, map[string]int{"loiter": 60, "pursuit": 25, "patrol": 15}},
		{"loiter:60,pursuit:25,patrol:15", 5000, map[string]int{"loiter": 3000, "pursuit": 1250, "patrol": 750}},
		{"a:1,b:1,c:1", 9, map[string]int{"a": 3, "b": 3, "c": 3}},
		{"weave:80,aggressive:20", 128, nil}, // 102.4 / 25.6: rounded
	}
	for _, c := range cases {
		m, err := Parse(c.spec, "mix", nil)
		if err != nil {
			t.Fatal(err)
		}
		got := m.Counts(c.n)
		total, sumW := 0, 0
		for _, e := range m {
			sumW += e.Weight
		}
		for _, e := range m {
			total += got[e.Name]
			share := float64(c.n) * float64(e.Weight) / float64(sumW)
			if d := float64(got[e.Name]) - share; d <= -1 || d >= 1 {
				t.Errorf("%s over %d: %s got %d, share %.2f", c.spec, c.n, e.Name, got[e.Name], share)
			}
			if c.want != nil && got[e.Name] != c.want[e.Name] {
				t.Errorf("%s over %d: %s got %d, want exactly %d", c.spec, c.n, e.Name, got[e.Name], c.want[e.Name])
			}
		}
		if total != c.n {
			t.Errorf("%s over %d: counts sum to %d", c.spec, c.n, total)
		}
	}
}

func TestParseRejects(t *testing.T) {
	known := func(n string) error {
		if n == "bogus" {
			return errors.New(`unknown name "bogus"`)
		}
		return nil
	}
	for _, c := range []struct{ spec, msg string }{
		{"", "empty spec"},
		{"a", "not NAME:WEIGHT"},
		{"a:0", "weight of"},
		{"a:x", "weight of"},
		{"a:1,a:2", "listed twice"},
		{"bogus:1", `unknown name "bogus"`},
	} {
		_, err := Parse(c.spec, "ai mix", known)
		if err == nil || !strings.Contains(err.Error(), c.msg) || !strings.HasPrefix(err.Error(), "ai mix") {
			t.Errorf("Parse(%q) = %v, want an error containing %q", c.spec, err, c.msg)
		}
	}
}

func TestStringRoundTrips(t *testing.T) {
	for _, s := range []string{"a:1,b:2", "loiter:60,pursuit:25,patrol:15"} {
		m, err := Parse(s, "mix", nil)
		if err != nil || m.String() != s {
			t.Errorf("Parse(%q).String() = %q, %v", s, m.String(), err)
		}
	}
}

// The weight follows the last colon, so a name may carry colons.
func TestNameWithColons(t *testing.T) {
	m, err := Parse("trace:/tmp/a:b.flit:20, weave:80", "pattern mix", nil)
	if err != nil || len(m) != 2 || m[0].Name != "trace:/tmp/a:b.flit" || m[0].Weight != 20 || m[1].Name != "weave" {
		t.Fatalf("Parse = %+v, %v", m, err)
	}
}
