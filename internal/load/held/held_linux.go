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
