// Package sgentities registers the swarm's decoder of the reference server's snapshot bodies.
//
// It reads the sg-entities formats (internal/wire/snapshot): the current
// one, entity records and events, and its predecessor, which one decoder
// reads. Importing it registers both with package bodydec; the scalegate
// binary does, a team's bot need not.
package sgentities

import (
	"github.com/scalegate/scalegate/internal/load/swarm/bodydec"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

func init() {
	for _, f := range []string{snapshot.BodyFormat, snapshot.BodyFormatV1} {
		bodydec.Register(f, newChecker)
	}
}

// checker is the swarm's decoder of the sg-entities formats. The swarm
// only counts entities and failures, so it runs snapshot's Check: the
// same verdict, count and error as Decode (a fuzz target holds them
// together) without dequantizing records nobody reads.
type checker struct{ d *snapshot.Decoder }

func newChecker() (bodydec.Decoder, error) {
	d, err := snapshot.NewDecoder()
	if err != nil {
		return nil, err
	}
	return checker{d}, nil
}

// Decode validates the body with snapshot.Decoder.Check.
func (c checker) Decode(flags uint8, body []byte) (int, error) { return c.d.Check(flags, body) }

// Close releases the snapshot decoder.
func (c checker) Close() { c.d.Close() }
