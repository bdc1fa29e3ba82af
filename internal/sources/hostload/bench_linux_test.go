package hostload

import (
	"os"
	"testing"
	"time"
)

// BenchmarkSnapshot is one sample's reading of the real /proc: /proc/stat, every process's
// stat file (held open from the previous sample, as the sampler's are), the pressure file. The sampler does this once a second in the gate process, and
// its CPU is the run's own; docs/host-contention.md quotes the figure.
func BenchmarkSnapshot(b *testing.B) {
	rd := newReader("/proc")
	defer rd.close()
	procs := 0
	for b.Loop() {
		procs = len(rd.snapshot(time.Now()).procs)
	}
	b.ReportMetric(float64(procs), "procs")
}

// BenchmarkInterval is the arithmetic of one sample over the real /proc's processes.
func BenchmarkInterval(b *testing.B) {
	rd := newReader("/proc")
	prev := rd.snapshot(time.Now())
	cur := rd.snapshot(time.Now().Add(time.Second))
	roots := map[int]uint64{os.Getpid(): cur.procs[os.Getpid()].start}
	for b.Loop() {
		_ = interval(prev, cur, roots, 100, nil)
	}
}
