package held

import (
	"syscall"
	"time"
	"unsafe"
)

// Supported reports whether Sleep is the held sleep on this platform
// (Linux); elsewhere it parks the goroutine like time.Sleep.
const Supported = true

// Sleep sleeps d in nanosleep(2) through RawSyscall, which does not tell
// the Go scheduler: the goroutine keeps its thread and its processor, and
// no other thread is started or woken. A signal may end the sleep early
// (EINTR); the caller loops on the clock.
func Sleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}

// Block sleeps d in nanosleep(2) through syscall.Syscall, which the Go
// scheduler sees as a blocking system call: the processor is handed to
// other goroutines while the thread sleeps, and the goroutine is never
// marked for preemption (one that holds its processor past 10 ms is, and
// a goroutine locked to its thread that yields to that mark comes back
// through another thread). The kernel wakes the thread itself, with no Go
// timer and no timer thread in between. Waking, the goroutine needs a free
// processor, which a paced server between ticks has; without one it waits
// in the run queue like any goroutine. A signal may end the sleep early
// (EINTR); the caller loops on the clock.
func Block(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Syscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}
