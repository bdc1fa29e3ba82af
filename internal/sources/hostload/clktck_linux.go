package hostload

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// atClkTck is AT_CLKTCK (linux/auxvec.h): the kernel passes USER_HZ, the unit of /proc's
// CPU counters, in every process's auxiliary vector; it is what sysconf(_SC_CLK_TCK) returns.
const atClkTck = 17

// clockTicks returns USER_HZ from the auxiliary vector.
func clockTicks() (int, error) {
	auxv, err := unix.Auxv()
	if err != nil {
		return 0, fmt.Errorf("auxiliary vector: %w", err)
	}
	for _, kv := range auxv {
		if kv[0] == atClkTck {
			if kv[1] == 0 {
				return 0, errors.New("AT_CLKTCK is 0")
			}
			return int(kv[1]), nil
		}
	}
	return 0, errors.New("no AT_CLKTCK in the auxiliary vector")
}
