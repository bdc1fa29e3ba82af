package hostload

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// t0 is an arbitrary wall time for fixture snapshots.
var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// fixture reads a testdata case's two snapshots, wall seconds apart.
func fixture(t *testing.T, name string, wall float64) (prev, cur *snapshot) {
	t.Helper()
	prev = newReader(filepath.Join("testdata", name, "t0")).snapshot(t0)
	cur = newReader(filepath.Join("testdata", name, "t1")).snapshot(t0.Add(time.Duration(wall * float64(time.Second))))
	return prev, cur
}

// want is a figure: nil for missing (with the reason's prefix in why).
type want struct {
	v   *float64
	why string
}

func v(f float64) want        { return want{v: &f} }
func missing(why string) want { return want{why: why} }
func (w want) String() string {
	if w.v == nil {
		return "missing (" + w.why + ")"
	}
	return fmt.Sprint(*w.v)
}

func checkFigure(t *testing.T, name string, got *float64, why string, w want) {
	t.Helper()
	switch {
	case w.v == nil && got != nil:
		t.Errorf("%s = %v, want %s", name, *got, w)
	case w.v == nil && !strings.HasPrefix(why, w.why):
		t.Errorf("%s missing because %q, want %q", name, why, w.why)
	case w.v != nil && got == nil:
		t.Errorf("%s missing (%s), want %v", name, why, *w.v)
	case w.v != nil && math.Abs(*got-*w.v) > 1e-9:
		t.Errorf("%s = %.12g, want %v", name, *got, *w.v)
	case w.v != nil && why != "":
		t.Errorf("%s = %v with a missing reason %q", name, *got, why)
	}
}

// TestInterval checks the arithmetic on the fixtures exactly (testdata/README.md derives each
// figure).
func TestInterval(t *testing.T) {
	cases := []struct {
		name     string
		fixture  string
		wall     float64
		roots    map[int]uint64
		hzErr    error
		cpus     int
		other    want
		own      want
		seen     want
		steal    want
		pressure want
	}{
		{name: "tree from the gate", fixture: "busy", wall: 1, roots: map[int]uint64{100: 500}, cpus: 2,
			other: v(0.76), own: v(0.77), seen: v(0.70), steal: v(2.5), pressure: v(12.5)},
		{name: "wall time divides", fixture: "busy", wall: 2, roots: map[int]uint64{100: 500}, cpus: 2,
			other: v(0.38), own: v(0.385), seen: v(0.35), steal: v(2.5), pressure: v(12.5)},
		{name: "tree from the server", fixture: "busy", wall: 1, roots: map[int]uint64{102: 601}, cpus: 2,
			other: v(0.86), own: v(0.67), seen: v(0.80), steal: v(2.5), pressure: v(12.5)},
		{name: "two roots, one inside the other", fixture: "busy", wall: 1, roots: map[int]uint64{100: 500, 102: 601}, cpus: 2,
			other: v(0.76), own: v(0.77), seen: v(0.70), steal: v(2.5), pressure: v(12.5)},
		// PID 100 now names a process that started at 500, not 499: not the root.
		{name: "reused root PID", fixture: "busy", wall: 1, roots: map[int]uint64{100: 499}, cpus: 2,
			other: v(1.53), own: v(0), seen: v(1.40), steal: v(2.5), pressure: v(12.5)},
		{name: "no steal column, no PSI", fixture: "oldkernel", wall: 1, roots: map[int]uint64{100: 50}, cpus: 1,
			other: v(0.5), own: v(0.1), seen: v(0.5), steal: missing(reasonNoSteal), pressure: missing(reasonNoPSI)},
		{name: "clock ticks unknown", fixture: "busy", wall: 1, roots: map[int]uint64{100: 500}, cpus: 2,
			hzErr: errClockTicks(errors.New("no AT_CLKTCK")),
			other: missing("clock-tick rate"), own: missing("clock-tick rate"), seen: missing(""),
			steal: v(2.5), pressure: v(12.5)},
		{name: "no proc at all", fixture: "absent", wall: 1, roots: map[int]uint64{100: 500},
			other: missing(reasonNoProcStat), own: missing(reasonNoProcStat), seen: missing(""),
			steal: missing(reasonNoProcStat), pressure: missing(reasonNoPSI)},
		{name: "snapshots out of order", fixture: "busy", wall: -1, roots: map[int]uint64{100: 500},
			other: missing("snapshots not in time order"), own: missing("snapshots not in time order"), seen: missing(""),
			steal: missing("snapshots not in time order"), pressure: missing("snapshots not in time order")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prev, cur := fixture(t, c.fixture, c.wall)
			s := interval(prev, cur, c.roots, 100, c.hzErr)
			checkFigure(t, "other_cores", s.OtherCores, s.Missing("other_cores"), c.other)
			checkFigure(t, "own_cores", s.OwnCores, s.Missing("own_cores"), c.own)
			checkFigure(t, "other seen", s.OtherSeenCores, "", c.seen)
			checkFigure(t, "steal_pct", s.StealPct, s.Missing("steal_pct"), c.steal)
			checkFigure(t, "cpu_pressure_avg10", s.CPUPressureAvg10, s.Missing("cpu_pressure_avg10"), c.pressure)
			if s.CPUs != c.cpus && c.wall > 0 {
				t.Errorf("cpus %d, want %d", s.CPUs, c.cpus)
			}
		})
	}
}

// TestIntervalRawSums: the unrounded sums the hold summary adds up.
func TestIntervalRawSums(t *testing.T) {
	prev, cur := fixture(t, "busy", 2)
	s := interval(prev, cur, map[int]uint64{100: 500}, 100, nil)
	if math.Abs(s.otherCPU-0.76) > 1e-12 || math.Abs(s.ownCPU-0.77) > 1e-12 || s.wall != 2 {
		t.Errorf("raw: other %v own %v wall %v, want 0.76 0.77 2", s.otherCPU, s.ownCPU, s.wall)
	}
	if s.stealTicks != 5 || s.totalTicks != 200 {
		t.Errorf("steal %d of %d ticks, want 5 of 200", s.stealTicks, s.totalTicks)
	}
}

// TestIntervalNegativeOthers: tick rounding can make the machine's busy time less than the
// tree's own; the second shows 0, the raw sum keeps the sign.
func TestIntervalNegativeOthers(t *testing.T) {
	cpu := func(user uint64) cpuTimes {
		return cpuTimes{user: user, idle: 100, steal: 0, columns: 8, cpus: 1}
	}
	prev := &snapshot{at: t0, cpu: cpu(100), procs: map[int]procStat{7: {ppid: 1, start: 5, cpu: 10}}}
	cur := &snapshot{at: t0.Add(time.Second), cpu: cpu(150), procs: map[int]procStat{7: {ppid: 1, start: 5, cpu: 62}}}
	s := interval(prev, cur, map[int]uint64{7: 5}, 100, nil)
	if s.OtherCores == nil || *s.OtherCores != 0 {
		t.Fatalf("other_cores %v, want 0 (clamped)", s.OtherCores)
	}
	if math.Abs(s.otherCPU+0.02) > 1e-12 {
		t.Errorf("raw other CPU %v, want -0.02", s.otherCPU)
	}
}

// TestIntervalCountersBackwards: a /proc/stat that went backwards (a different machine's file,
// a wrapped counter) is not read as a huge figure.
func TestIntervalCountersBackwards(t *testing.T) {
	prev, cur := fixture(t, "busy", 1)
	prev, cur = cur, prev
	cur.at, prev.at = t0.Add(time.Second), t0
	s := interval(prev, cur, map[int]uint64{100: 500}, 100, nil)
	if s.OtherCores != nil || s.StealPct != nil {
		t.Fatalf("other %v steal %v from backwards counters, want missing", s.OtherCores, s.StealPct)
	}
	if got := s.Missing("other_cores"); !strings.Contains(got, "backwards") {
		t.Errorf("reason %q", got)
	}
	if s.OwnCores == nil {
		t.Errorf("own_cores missing: the process counters are still readable")
	}
}

func TestTreeOf(t *testing.T) {
	procs := map[int]procStat{
		1: {ppid: 0, start: 1}, 10: {ppid: 1, start: 10}, 11: {ppid: 10, start: 11}, 12: {ppid: 11, start: 12},
		13: {ppid: 11, start: 13}, 20: {ppid: 1, start: 20}, 21: {ppid: 20, start: 21},
		// A ppid loop can only come from a torn read; the walk must still end.
		30: {ppid: 31, start: 30}, 31: {ppid: 30, start: 31},
	}
	cases := []struct {
		roots map[int]uint64
		want  []int
	}{
		{map[int]uint64{10: 10}, []int{10, 11, 12, 13}},
		{map[int]uint64{11: 11, 21: 21}, []int{11, 12, 13, 21}},
		{map[int]uint64{10: 9}, nil},
		{map[int]uint64{99: 99}, nil},
		{map[int]uint64{30: 30}, []int{30, 31}},
	}
	for _, c := range cases {
		got := treeOf(procs, c.roots)
		if len(got) != len(c.want) {
			t.Errorf("roots %v: tree %v, want %v", c.roots, got, c.want)
			continue
		}
		for _, pid := range c.want {
			if !got[pid] {
				t.Errorf("roots %v: tree %v lacks %d", c.roots, got, pid)
			}
		}
	}
}

func TestFileError(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{syscall.ENOENT, reasonNoPSI},
		{syscall.EOPNOTSUPP, reasonPSIOff},
		{syscall.EACCES, "read /x/pressure/cpu: permission denied"},
	}
	for _, c := range cases {
		if got := fileError("/x/pressure/cpu", c.err, reasonNoPSI, reasonPSIOff).Error(); got != c.want {
			t.Errorf("%v: %q, want %q", c.err, got, c.want)
		}
	}
}
