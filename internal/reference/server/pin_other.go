//go:build !linux

package server

import (
	"errors"
	"time"
)

// allowedCPUs is nil where thread affinity is not supported: the pool runs
// unpinned, parking its helpers between passes.
func allowedCPUs() []int { return nil }

// pinThread is unsupported here.
func pinThread(int) (func(), error) {
	return nil, errors.New("thread affinity is supported on Linux only")
}

// sleepHeld is time.Sleep here (the pool is never pinned, so it is not called).
func sleepHeld(d time.Duration) { time.Sleep(d) }
