// Package profiles embeds the scale-gate profiles scalegate ships. With
// them, `scalegate --profile pr` works from the binary alone. A team's own
// directory (`--profiles DIR`) replaces them.
package profiles

import "embed"

// FS holds every *.cue profile of this directory and the recordings under
// traces/ that trace patterns replay (paths are relative to this directory).
//
//go:embed *.cue traces
var FS embed.FS
