package baseline

import (
	"testing"

	"github.com/scalegate/scalegate/internal/judge/gatetable"
)

// TestLimitStale: stale is the mirror of the bound, in either direction.
func TestLimitStale(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dir   gatetable.Direction
		v     float64
		stale bool
	}{
		{"at most: better by more than the margin", gatetable.AtMost, 7.9, true},
		{"at most: at the mirror", gatetable.AtMost, 8, false},
		{"at most: worse", gatetable.AtMost, 11, false},
		{"at least: better by more than the margin", gatetable.AtLeast, 12.1, true},
		{"at least: within it", gatetable.AtLeast, 11.9, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := Limit{Dir: tc.dir, Base: 10, Margin: 2}
			if got := l.Stale(tc.v); got != tc.stale {
				t.Errorf("Stale(%g) = %v, want %v", tc.v, got, tc.stale)
			}
		})
	}
}
