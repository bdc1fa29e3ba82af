// Package schema embeds scalegate's CUE schemas (profile, swarm report,
// server metrics file) so the binary validates without a checkout.
package schema

import "embed"

// FS holds every *.cue file of this directory.
//
//go:embed *.cue
var FS embed.FS
