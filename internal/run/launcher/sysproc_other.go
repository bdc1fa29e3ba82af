//go:build unix && !linux

package launcher

import "syscall"

// sysProcAttr puts the child in its own process group, so a staged stop
// reaches its descendants.
func sysProcAttr(bool) *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
