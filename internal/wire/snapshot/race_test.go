//go:build race

package snapshot

// raceEnabled: under the race detector sync.Pool drops what is put back at
// random, so the zstd decoder's pooled buffers are reallocated.
const raceEnabled = true
