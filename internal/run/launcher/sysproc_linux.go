package launcher

import "syscall"

// sysProcAttr puts the child in its own process group (so a staged stop
// reaches its descendants and a terminal's ^C reaches only scalegate, which
// then stops the group in order). A process started directly also gets
// Pdeathsig=SIGKILL, should scalegate die without stopping it. A guardian
// does not: it must outlive scalegate to kill the tree, and learns of
// scalegate's death from its lifeline.
func sysProcAttr(guarded bool) *syscall.SysProcAttr {
	if guarded {
		return &syscall.SysProcAttr{Setpgid: true}
	}
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
