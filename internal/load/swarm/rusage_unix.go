//go:build unix

package swarm

import (
	"math"
	"syscall"
)

// processCPU is this process's user+system CPU time in seconds (getrusage),
// NaN when unavailable.
func processCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return math.NaN()
	}
	return tvSeconds(ru.Utime) + tvSeconds(ru.Stime)
}

func tvSeconds(tv syscall.Timeval) float64 {
	return float64(tv.Sec) + float64(tv.Usec)/1e6
}

// fileLimit is RLIMIT_NOFILE (soft, hard), false when unreadable.
func fileLimit() (soft, hard int64, ok bool) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, false
	}
	return clampLimit(rl.Cur), clampLimit(rl.Max), true
}

// clampLimit turns RLIM_INFINITY (and anything past int64) into MaxInt64.
func clampLimit(v uint64) int64 {
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(v)
}

// setSoftFileLimit sets the soft RLIMIT_NOFILE, keeping the hard one.
func setSoftFileLimit(n int64) error {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return err
	}
	rl.Cur = uint64(n)
	return syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
}
