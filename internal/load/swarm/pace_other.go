//go:build !linux

package swarm

import "time"

// holdSupported: the held sleep is written for Linux only; elsewhere
// workers always pace on a timer.
const holdSupported = false

// sleepHeld parks the goroutine instead: pacing never picks a held pacer
// here, but its tests still run the pacer's logic on it.
func sleepHeld(d time.Duration) { time.Sleep(d) }
