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

// raiseFileLimit lifts the soft RLIMIT_NOFILE toward want (capped by the
// hard limit): every client holds its own socket. Failure is harmless: a
// dial that runs out of descriptors is reported per client.
func raiseFileLimit(want int) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return
	}
	if rl.Cur >= uint64(want) {
		return
	}
	rl.Cur = min(uint64(want), rl.Max)
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
}
