//go:build !unix

package swarm

import "math"

// processCPU is unavailable on this platform.
func processCPU() float64 { return math.NaN() }

// raiseFileLimit has nothing to raise on this platform.
func raiseFileLimit(int) {}
