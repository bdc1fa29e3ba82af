package sgentities

import (
	"errors"
	"testing"

	"github.com/scalegate/scalegate/internal/load/swarm/bodydec"
	"github.com/scalegate/scalegate/internal/wire/snapshot"
)

// TestEntityFormatsCountAndRejectLikeDecode: both sg-entities decoders the
// package registers count a valid body's entities and reject a corrupt one
// with the sentinel snapshot's Decode gives it, and they do so through
// Check (the cheaper path the swarm is meant to run).
func TestEntityFormatsCountAndRejectLikeDecode(t *testing.T) {
	enc, err := snapshot.NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		enc.Append(&snapshot.Record{ID: uint32(i + 1), Type: 1, Rot: [4]float32{0, 0, 0, 1}})
	}
	_, valid := enc.Finish(nil, false)
	valid = append([]byte(nil), valid...)
	zeroType := append([]byte(nil), valid...)
	zeroType[snapshot.HeaderSize+snapshot.RecordSize+21] = 0 // record 1's type byte

	ref, err := snapshot.NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	for _, format := range []string{snapshot.BodyFormat, snapshot.BodyFormatV1} {
		mk, ok := bodydec.Lookup(format)
		if !ok {
			t.Fatalf("%s: no decoder registered", format)
		}
		d, err := mk()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := d.(checker); !ok {
			t.Errorf("%s: decoder is %T, want checker (snapshot's Check)", format, d)
		}
		if n, err := d.Decode(0, valid); n != 3 || err != nil {
			t.Errorf("%s: valid body: %d, %v", format, n, err)
		}
		_, want := ref.Decode(0, zeroType)
		if n, err := d.Decode(0, zeroType); n != 0 || !errors.Is(err, snapshot.ErrRecord) || want == nil || err.Error() != want.Error() {
			t.Errorf("%s: zero type: %d, %v; Decode says %v", format, n, err, want)
		}
		d.(interface{ Close() }).Close()
	}
}
