package launcher

import "syscall"

// sysProcAttr puts the child in its own process group (so a staged stop
// reaches its descendants and a terminal's ^C reaches only scalegate, which
// then stops the group in order) and asks the kernel to SIGKILL it should
// scalegate itself die without stopping it (SIGKILL, OOM).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
