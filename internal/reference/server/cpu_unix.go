//go:build unix

package server

import (
	"syscall"
	"time"
)

// cpuTime is the process's user + system CPU time (getrusage RUSAGE_SELF:
// every thread, the Go runtime's and cgo's included).
func cpuTime() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
