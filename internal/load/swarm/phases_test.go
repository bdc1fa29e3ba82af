package swarm

import (
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/relay/impairment"
)

func TestRecoverS(t *testing.T) {
	sched, _ := impairment.Schedule{{StartS: 5, DurationS: 5, Settings: impairment.Settings{Loss: 0.1}}}.Normalize()
	cfg := &Config{Clients: 4, Ramp: 20 * time.Millisecond, Impairment: sched}
	flat := func(n int, v int64) []int64 {
		s := make([]int64, n)
		for i := range s {
			s[i] = v
		}
		return s
	}
	for _, c := range []struct {
		name   string
		perSec []int64
		runS   float64
		want   float64 // < 0: null
		note   string
	}{
		{"at once", flat(20, 240), 20, 0, ""},
		{"after 3 s", append(append(flat(10, 240), 120, 150, 200), flat(7, 240)...), 20, 3, ""},
		{"within 5 %", append(append(flat(10, 240), 120), flat(9, 229)...), 20, 1, ""},
		{"one good second is not recovery", append(append(flat(10, 240), 240, 100, 100, 100), flat(6, 100)...), 20, -1, "never held"},
		{"never", append(flat(10, 240), flat(10, 60)...), 20, -1, "never held"},
		{"the partial last second does not count", append(flat(10, 240), 100, 100, 100, 100, 100, 100, 100, 100, 240, 240), 19.5, -1, "never held"},
		{"no reference", append(flat(1, 240), flat(19, 0)...)[:1], 20, -1, "no reference"},
	} {
		got, note := recoverS(c.perSec, cfg, c.runS)
		switch {
		case c.want < 0 && (got != nil || !strings.Contains(note, c.note)):
			t.Errorf("%s: recover %v (%q), want null with %q", c.name, got, note, c.note)
		case c.want >= 0 && (got == nil || *got != c.want):
			t.Errorf("%s: recover %v (%q), want %g", c.name, got, note, c.want)
		}
	}
}
