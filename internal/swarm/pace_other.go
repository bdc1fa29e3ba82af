//go:build !linux

package swarm

import "time"

// holdSupported: the held sleep is written for Linux only; elsewhere
// workers always pace on a ticker.
const holdSupported = false

// sleepHeld is never called where holdSupported is false.
func sleepHeld(d time.Duration) { time.Sleep(d) }
