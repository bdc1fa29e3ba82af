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
// scheduler sees as a blocking system call: the processor may be handed to
// other goroutines while the thread sleeps. The kernel wakes the thread
// itself, with no Go timer and no timer thread in between. Waking, the
// goroutine needs a free processor; without one it waits in the run queue
// like any goroutine. The sleep is not a fresh start to the scheduler: a
// goroutine that only ever sleeps here is still marked for preemption once
// it has run 10 ms since it was last scheduled, and is preempted at its
// first Go code after the mark (a goroutine locked to its thread then comes
// back through another thread), so a paced loop yields (runtime.Gosched)
// where that costs it nothing. A signal may end the sleep early (EINTR);
// the caller loops on the clock.
func Block(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Syscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
}
