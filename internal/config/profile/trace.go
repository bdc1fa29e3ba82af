package profile

import (
	"path"
	"regexp"
	"strings"
)

// TracePrefix marks a replayed-recording pattern, "trace:PATH", PATH
// relative to the profile's directory (the swarm's --pattern trace:PATH).
const TracePrefix = "trace:"

// TraceFile is one recording a trace pattern replays, read from the
// profile's directory when the profile is loaded.
type TraceFile struct {
	Path string // relative to the profile directory
	Name string // base name
	Data []byte
}

// TracePath returns PATH of a "trace:PATH" pattern.
func TracePath(pattern string) (string, bool) {
	return strings.CutPrefix(pattern, TracePrefix)
}

var legIDUnsafe = regexp.MustCompile(`[^a-z0-9_-]+`)

// TraceLegID names a trace leg's artifact directory and baseline key:
// "trace-" and the file (or directory) name without .flit, so
// "trace:traces/sample.flit" is leg "trace-sample".
func TraceLegID(p string) string {
	base := strings.TrimSuffix(path.Base(path.Clean(p)), ".flit")
	return "trace-" + strings.Trim(legIDUnsafe.ReplaceAllString(strings.ToLower(base), "-"), "-")
}
