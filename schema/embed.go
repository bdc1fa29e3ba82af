// Package schema embeds scalegate's CUE schemas so the binary validates
// without a checkout. The schemas cover the profile, the swarm report and
// the server metrics file.
package schema

import "embed"

// FS holds every *.cue file of this directory.
//
//go:embed *.cue
var FS embed.FS
