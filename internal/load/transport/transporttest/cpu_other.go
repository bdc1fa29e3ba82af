//go:build !unix

package transporttest

import "time"

// processCPU is unknown here (-1): the benchmark then reports wall time only.
func processCPU() time.Duration { return -1 }
