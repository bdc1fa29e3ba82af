//go:build !linux

package held

import "time"

// Supported reports whether Sleep is the held sleep on this platform
// (Linux); elsewhere it parks the goroutine like time.Sleep.
const Supported = false

// Sleep is time.Sleep here: callers pick held pacing only where Supported,
// but their tests still run the pacing logic on it.
func Sleep(d time.Duration) { time.Sleep(d) }

// Block is time.Sleep here.
func Block(d time.Duration) { time.Sleep(d) }
