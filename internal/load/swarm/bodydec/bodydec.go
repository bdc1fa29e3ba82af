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
