package swarm

import (
	"sort"
	"sync"

	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// The reference server's documented body formats: the current one (entity
// records and events) and its predecessor, which one decoder reads.
func init() {
	for _, f := range []string{snapshot.BodyFormat, snapshot.BodyFormatV1} {
		RegisterBodyDecoder(f, func() (BodyDecoder, error) {
			d, err := snapshot.NewDecoder()
			if err != nil {
				return nil, err
			}
			return entityChecker{d}, nil
		})
	}
}

// entityChecker is the swarm's decoder of the sg-entities formats. The
// swarm only counts entities and failures, so it runs snapshot's Check:
// the same verdict, count and error as Decode (a fuzz target holds them
// together) without dequantizing records nobody reads.
type entityChecker struct{ d *snapshot.Decoder }

// Decode validates the body with snapshot.Decoder.Check.
func (c entityChecker) Decode(flags uint8, body []byte) (int, error) { return c.d.Check(flags, body) }

// Close releases the snapshot decoder.
func (c entityChecker) Close() { c.d.Close() }

// BodyDecoder decodes snapshot bodies of one documented format. The swarm
// decodes bodies only to count failures (a server that sends corrupt
// snapshots must show up in the report); what they contain is the server's.
type BodyDecoder interface {
	// Decode decodes one body given the Snapshot flags (bit 0: zstd) and
	// returns the number of entities it carried.
	Decode(flags uint8, body []byte) (entities int, err error)
}

// BodyFormatOpaque is the body_format a client must not decode.
const BodyFormatOpaque = "opaque"

var (
	decMu        sync.RWMutex
	bodyDecoders = map[string]func() (BodyDecoder, error){}
)

// RegisterBodyDecoder makes a body format decodable. A decoder instance is
// made per worker goroutine, so implementations need not be thread-safe; one
// that implements Close() is closed when the worker ends.
func RegisterBodyDecoder(format string, mk func() (BodyDecoder, error)) {
	decMu.Lock()
	defer decMu.Unlock()
	if _, dup := bodyDecoders[format]; dup {
		panic("swarm: body decoder registered twice: " + format)
	}
	bodyDecoders[format] = mk
}

// BodyFormats lists the decodable formats, sorted.
func BodyFormats() []string {
	decMu.RLock()
	defer decMu.RUnlock()
	names := make([]string, 0, len(bodyDecoders))
	for n := range bodyDecoders {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func lookupBodyDecoder(format string) (func() (BodyDecoder, error), bool) {
	decMu.RLock()
	defer decMu.RUnlock()
	mk, ok := bodyDecoders[format]
	return mk, ok
}
