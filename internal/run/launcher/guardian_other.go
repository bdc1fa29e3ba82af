//go:build !linux

package launcher

import (
	"fmt"
	"os"
)

// guardianAvailable: without PR_SET_CHILD_SUBREAPER a guardian could not
// adopt descendants that leave its process group, so processes are started
// directly (process group only).
const guardianAvailable = false

// RunGuardian is not available on this platform.
func RunGuardian(args []string) int {
	fmt.Fprintln(os.Stderr, "scalegate guardian: not available on this platform")
	return 2
}
