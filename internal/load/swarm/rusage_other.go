//go:build !unix

package swarm

import "math"

// processCPU is unavailable on this platform.
func processCPU() float64 { return math.NaN() }

// fileLimit: this platform has no descriptor limit to read.
func fileLimit() (soft, hard int64, ok bool) { return 0, 0, false }

// setSoftFileLimit has nothing to set on this platform.
func setSoftFileLimit(int64) error { return nil }
