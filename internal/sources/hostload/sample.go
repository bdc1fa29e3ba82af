package hostload

import (
	"errors"
	"fmt"
	"time"
)

// Figures of a sample, indexing Sample.why.
const (
	figOther = iota
	figOwn
	figSteal
	figPressure
	nFigures
)

// figureKeys are the report keys of the figures, by index.
var figureKeys = [nFigures]string{"other_cores", "own_cores", "steal_pct", "cpu_pressure_avg10"}

// Sample is one interval between two snapshots (about a second). A nil figure was not
// measured in it; Missing says why.
type Sample struct {
	// From and At bound the interval (the two snapshots' times).
	From, At time.Time
	// OtherCores is the CPU used outside the run's tree, in cores: the machine's busy time
	// (/proc/stat) less the tree's own CPU, over the interval's wall time. Clock-tick rounding
	// can make the difference slightly negative; it is shown as 0 here, and the hold mean
	// (Series.Host) uses the unrounded sums so the rounding cancels.
	OtherCores *float64
	// OwnCores is the CPU the run's tree used, in cores.
	OwnCores *float64
	// OtherSeenCores is the part of OtherCores that processes outside the tree alive at both
	// ends of the interval account for; the rest is processes that started or exited in
	// between (a compiler's short jobs) and the difference between the kernel's tick-sampled
	// machine totals and its per-process run times. A diagnostic: the report does not carry it.
	OtherSeenCores *float64
	// StealPct is the steal ticks over all ticks of the interval, in percent.
	StealPct *float64
	// CPUPressureAvg10 is "some avg10" read at At.
	CPUPressureAvg10 *float64
	// CPUs is how many CPUs /proc/stat listed at At (0: not read).
	CPUs int

	// Unrounded sums for the hold summary: CPU seconds, wall seconds, ticks.
	otherCPU, ownCPU, wall float64
	stealTicks, totalTicks uint64
	why                    [nFigures]string
}

// Missing returns why figure key (other_cores, own_cores, steal_pct, cpu_pressure_avg10) is nil
// in this sample, "" when it is not.
func (s *Sample) Missing(key string) string {
	for i, k := range figureKeys {
		if k == key {
			return s.why[i]
		}
	}
	return ""
}

// interval computes the sample between two snapshots for the tree of roots (PID → start time:
// a PID that now names another process is not a root). hz is the clock-tick rate of /proc's
// counters; hzErr says why it is unknown.
//
// The tree's CPU over the interval is, for each process in the tree at cur (found by walking
// the ppid links down from the roots), its utime+stime at cur less its value at prev when prev
// holds the same process (PID and start time), or its whole value when prev does not (it
// started during the interval, or during prev's walk). A process of the tree that exits during
// the interval is not in cur, so its CPU since prev is not counted as the tree's: it lands in
// others' CPU, which is the machine's busy time less the tree's. That error is bounded by the
// exiting process's CPU since prev (at most its thread count times the interval) and is zero
// while the tree's processes live, as the server and swarm do for a whole hold. The reaped
// children's times (cutime, cstime) are not used: they jump by a child's whole life when it
// is reaped, and a reap that falls between the reads of the child and of its parent within
// one walk would count that life twice, or not at all, in one second. Processes outside the
// tree need no per-process reading at all: whatever they used, however briefly they lived, is
// in /proc/stat's totals.
func interval(prev, cur *snapshot, roots map[int]uint64, hz float64, hzErr error) Sample {
	s := Sample{From: prev.at, At: cur.at, wall: cur.at.Sub(prev.at).Seconds(), CPUs: cur.cpu.cpus}
	if cur.cpuErr != nil {
		s.CPUs = 0
	}
	if !(s.wall > 0) {
		for i := range s.why {
			s.why[i] = "snapshots not in time order"
		}
		return s
	}
	cpuErr := firstErr(cur.cpuErr, prev.cpuErr)
	if cpuErr == nil && !cur.cpu.atLeast(prev.cpu) {
		cpuErr = errors.New("/proc/stat counters went backwards")
	}
	s.ownFigures(prev, cur, roots, hz, hzErr, cpuErr)
	s.steal(prev, cur, cpuErr)
	if cur.pressureErr != nil {
		s.why[figPressure] = cur.pressureErr.Error()
	} else {
		v := cur.avg10
		s.CPUPressureAvg10 = &v
	}
	return s
}

// ownFigures fills OwnCores, OtherCores and OtherSeenCores.
func (s *Sample) ownFigures(prev, cur *snapshot, roots map[int]uint64, hz float64, hzErr, cpuErr error) {
	ownErr := firstErr(hzErr, cur.procsErr, prev.procsErr)
	if ownErr != nil {
		s.why[figOwn], s.why[figOther] = ownErr.Error(), ownErr.Error()
		return
	}
	tree := treeOf(cur.procs, roots)
	var own, seen uint64
	for pid, p := range cur.procs {
		q, ok := prev.procs[pid]
		same := ok && q.start == p.start
		switch {
		case tree[pid] && same:
			own += sub(p.cpu, q.cpu)
		case tree[pid]:
			own += p.cpu
		case same:
			seen += sub(p.cpu, q.cpu)
		}
	}
	s.ownCPU = float64(own) / hz
	s.OwnCores = ptr(s.ownCPU / s.wall)
	if cpuErr != nil {
		s.why[figOther] = cpuErr.Error()
		return
	}
	s.otherCPU = float64(int64(cur.cpu.busy()-prev.cpu.busy())-int64(own)) / hz
	s.OtherCores = ptr(max(0, s.otherCPU/s.wall))
	s.OtherSeenCores = ptr(float64(seen) / hz / s.wall)
}

// steal fills StealPct.
func (s *Sample) steal(prev, cur *snapshot, cpuErr error) {
	switch {
	case cpuErr != nil:
		s.why[figSteal] = cpuErr.Error()
	case !cur.cpu.hasSteal() || !prev.cpu.hasSteal():
		s.why[figSteal] = reasonNoSteal
	case cur.cpu.total() == prev.cpu.total():
		s.why[figSteal] = "no CPU time passed in /proc/stat"
	default:
		s.stealTicks = cur.cpu.steal - prev.cpu.steal
		s.totalTicks = cur.cpu.total() - prev.cpu.total()
		s.StealPct = ptr(100 * float64(s.stealTicks) / float64(s.totalTicks))
	}
}

// atLeast reports whether every counter of c is at least its value in prev.
func (c cpuTimes) atLeast(prev cpuTimes) bool {
	return c.user >= prev.user && c.nice >= prev.nice && c.system >= prev.system && c.idle >= prev.idle &&
		c.iowait >= prev.iowait && c.irq >= prev.irq && c.softirq >= prev.softirq && c.steal >= prev.steal
}

// treeOf returns the roots alive in procs and all their descendants.
func treeOf(procs map[int]procStat, roots map[int]uint64) map[int]bool {
	children := make(map[int][]int, len(procs))
	for pid, p := range procs {
		children[p.ppid] = append(children[p.ppid], pid)
	}
	tree := make(map[int]bool)
	var queue []int
	for pid, start := range roots {
		if p, ok := procs[pid]; ok && p.start == start && !tree[pid] {
			tree[pid] = true
			queue = append(queue, pid)
		}
	}
	// Each PID enters the queue at most once, so the walk ends after len(procs) steps.
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		for _, c := range children[pid] {
			if !tree[c] {
				tree[c] = true
				queue = append(queue, c)
			}
		}
	}
	return tree
}

// sub is a − b for counters that should not go backwards; 0 when one did.
func sub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func ptr(v float64) *float64 { return &v }

// errClockTicks is why the CPU figures are missing when the clock-tick rate is unknown.
func errClockTicks(err error) error {
	return fmt.Errorf("clock-tick rate of /proc's CPU counters unknown: %w", err)
}
