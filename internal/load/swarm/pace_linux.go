package swarm

import (
	"syscall"
	"time"
	"unsafe"
)

// holdSupported: Linux has the held sleep.
const holdSupported = true

// sleepHeld sleeps d in nanosleep(2) through RawSyscall, which does not tell
// the Go scheduler: the goroutine keeps its thread and its P, and no other
// thread is started or woken. A signal may end the sleep early (EINTR); the
// caller loops on the clock.
func sleepHeld(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}
