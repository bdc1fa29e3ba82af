//go:build !unix

package server

import "time"

// cpuTime is unavailable without getrusage: cpu_pct is then left out of
// the metrics file (missing, never a zero that would pass a CPU ceiling).
func cpuTime() (time.Duration, bool) { return 0, false }
