//go:build !linux

package server

import "errors"

// allowedCPUs is nil where thread affinity is not supported: the pool runs
// unpinned, parking its helpers between passes.
func allowedCPUs() []int { return nil }

// pinThread is unsupported here.
func pinThread(int) (func(), error) {
	return nil, errors.New("thread affinity is supported on Linux only")
}

// raiseThread is unsupported here.
func raiseThread(int) (func(), error) {
	return nil, errors.New("real-time scheduling is supported on Linux only")
}
