//go:build !linux

package hostload

import (
	"fmt"
	"runtime"
)

// clockTicks is unknown off Linux: there is no /proc with clock-tick counters to read.
func clockTicks() (int, error) {
	return 0, fmt.Errorf("no /proc CPU counters on %s", runtime.GOOS)
}
