//go:build !race

package snapshot

// raceEnabled: see race_test.go.
const raceEnabled = false
