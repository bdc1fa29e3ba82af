package server

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// allowedCPUs lists the CPUs this process may run on (its affinity mask:
// a container's cpuset or taskset narrow it), or nil if it cannot be read.
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// pinThread locks the calling goroutine to its OS thread and that thread
// to cpu. restore gives the thread its previous affinity back and unlocks
// it; a goroutine that never calls it ends its thread when it exits.
func pinThread(cpu int) (restore func(), err error) {
	runtime.LockOSThread()
	var old, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &old); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		runtime.UnlockOSThread()
		return nil, err
	}
	return func() {
		_ = unix.SchedSetaffinity(0, &old)
		runtime.UnlockOSThread()
	}, nil
}

// raiseThread puts the calling thread, which the caller has locked to its
// goroutine, under SCHED_FIFO at prio, and returns what puts its previous
// policy back.
func raiseThread(prio int) (restore func(), err error) {
	old, err := unix.SchedGetAttr(0, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the thread's scheduling policy: %w", err)
	}
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: uint32(prio)}
	if err := unix.SchedSetAttr(0, &attr, 0); err != nil {
		return nil, fmt.Errorf("SCHED_FIFO at priority %d: %w", prio, err)
	}
	return func() { _ = unix.SchedSetAttr(0, old, 0) }, nil
}
