// Package sgentities registers the swarm's decoder of the reference server's snapshot bodies.
//
// It reads the sg-entities formats (internal/wire/snapshot): the current
// one, entity records and events, and its predecessor, which one decoder
// reads; to a client that keeps baselines, also version 3's deltas. Importing it registers both with package bodydec; the scalegate
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

// NewBaselines makes a client's ring of the snapshots it decoded: the
// baselines version-3 deltas are taken against.
func (c checker) NewBaselines() bodydec.Baselines { return &snapshot.Ring{} }

// DecodeDelta validates the body with snapshot.Decoder.CheckRing against
// the client's ring; a version-3 body that decodes leaves its view there
// (kept), which the client acknowledges.
func (c checker) DecodeDelta(flags uint8, body []byte, tick uint32, b bodydec.Baselines) (int, bool, bool, error) {
	ring := b.(*snapshot.Ring)
	n, delta, err := c.d.CheckRing(flags, body, tick, ring)
	return n, delta, err == nil && ring.Has(tick), err
}

// Close releases the snapshot decoder.
func (c checker) Close() { c.d.Close() }
