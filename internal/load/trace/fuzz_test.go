package trace

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to Decode. It may not panic; a failure
// is a *FormatError wrapping one of the sentinels; whatever decodes
// re-encodes to exactly the input less its truncated tail (one encoding per
// file), and the record count is (len − 10) / 28.
//
//	go test -run='^$' -fuzz=FuzzDecode -fuzztime=60s ./internal/load/trace
func FuzzDecode(f *testing.F) {
	for _, g := range goldens() {
		f.Add(unhex(f, g.hex))
	}
	f.Add([]byte{})
	f.Add([]byte("FLIT"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := Decode(b)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || !(errors.Is(err, ErrBadMagic) || errors.Is(err, ErrVersion) || errors.Is(err, ErrShortHeader)) {
				t.Fatalf("Decode(%x): error %v is not a *FormatError with a sentinel", b, err)
			}
			return
		}
		if n := (len(b) - HeaderSize) / RecordSize; len(tr.Records) != n || tr.TruncatedBytes != (len(b)-HeaderSize)%RecordSize {
			t.Fatalf("Decode(%d bytes): %d records + %d truncated bytes", len(b), len(tr.Records), tr.TruncatedBytes)
		}
		if enc := Encode(tr.TickRate, tr.Records); !bytes.Equal(enc, b[:len(b)-tr.TruncatedBytes]) {
			t.Fatalf("re-encode %x != input %x", enc, b)
		}
	})
}
