// Package bodydec is the registry of snapshot body decoders the built-in swarm runs.
//
// Load protocol v1's Welcome names the body_format of the server's
// snapshots; the swarm decodes the bodies of a format registered here, to
// count the ones that fail (a server that sends corrupt snapshots must
// show up in the report). A decoder's package registers it from init, so
// only a binary that imports that package links its codec: the scalegate
// binary links sg-entities (package sgentities, and with it zstd), and a
// team's bot, which never speaks v1, links none.
package bodydec

import (
	"sync"
)

// Decoder decodes snapshot bodies of one documented format. What they
// contain is the server's business; the swarm only counts.
type Decoder interface {
	// Decode decodes one body given the Snapshot flags (bit 0: zstd) and
	// returns the number of entities it carried.
	Decode(flags uint8, body []byte) (entities int, err error)
}

// DeltaDecoder is a Decoder of a format with deltas (sg-entities/3): a
// body may be coded against a snapshot the client decoded before, so each
// client keeps its own Baselines, and acknowledges the snapshots whose
// bodies left one (load protocol v1.1's snapshot_ack). A client whose
// decoder is one asks a server that offers deltas for them.
type DeltaDecoder interface {
	Decoder
	// NewBaselines makes one client's empty baseline store.
	NewBaselines() Baselines
	// DecodeDelta decodes the body of the snapshot of tick against b,
	// which it updates: entities as Decode, delta whether the body was a
	// delta, and kept whether it left a baseline the client should
	// acknowledge. A body that fails leaves b as it was.
	DecodeDelta(flags uint8, body []byte, tick uint32, b Baselines) (entities int, delta, kept bool, err error)
}

// Baselines is one client's baseline store: opaque to the swarm, which
// only hands it back to the DeltaDecoder that made it.
type Baselines any

var (
	mu       sync.RWMutex
	decoders = map[string]func() (Decoder, error){}
)

// Register makes a body format decodable. A decoder instance is made per
// swarm worker goroutine, so implementations need not be thread-safe; one
// that implements Close() is closed when the worker ends.
func Register(format string, mk func() (Decoder, error)) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := decoders[format]; dup {
		panic("bodydec: body decoder registered twice: " + format)
	}
	decoders[format] = mk
}

// Lookup returns what makes format's decoder, and whether one is
// registered.
func Lookup(format string) (func() (Decoder, error), bool) {
	mu.RLock()
	defer mu.RUnlock()
	mk, ok := decoders[format]
	return mk, ok
}
