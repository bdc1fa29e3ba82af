package proto

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to PeekType and every decoder. None may
// panic; every failure must be a non-nil *DecodeError; and whatever decodes
// must re-encode to exactly the input bytes (the codec has one encoding per
// message, so a lenient decoder would show up here as a mismatch).
//
// Run it longer with:
//
//	go test -run='^$' -fuzz=FuzzDecode -fuzztime=60s ./internal/wire/proto
func FuzzDecode(f *testing.F) {
	for _, g := range goldens() {
		f.Add(unhex(f, g.hex))
	}
	f.Add([]byte{})
	f.Add([]byte{0x10, 0, 0, 0, 0, 0, 0, 0xc0, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, perr := PeekType(b)
		checkErr(t, "PeekType", perr)
		decoded := 0
		try := func(name string, err error, reencode func() ([]byte, error)) {
			checkErr(t, name, err)
			if err != nil {
				return
			}
			decoded++
			if perr != nil || Type(b[0]) != typ {
				t.Fatalf("%s decoded %x but PeekType said %v, %v", name, b, typ, perr)
			}
			out, eerr := reencode()
			if eerr != nil {
				t.Fatalf("%s: decoded %x but re-encode failed: %v", name, b, eerr)
			}
			if !bytes.Equal(out, b) {
				t.Fatalf("%s: %x re-encodes to %x", name, b, out)
			}
		}
		j, err := DecodeJoin(b)
		try("Join", err, func() ([]byte, error) { return AppendJoin(nil, &j) })
		w, err := DecodeWelcome(b)
		try("Welcome", err, func() ([]byte, error) { return AppendWelcome(nil, &w) })
		r, err := DecodeRefuse(b)
		try("Refuse", err, func() ([]byte, error) { return AppendRefuse(nil, &r) })
		n, err := DecodeNotice(b)
		try("Notice", err, func() ([]byte, error) { return AppendNotice(nil, &n) })
		var in Input
		err = DecodeInput(b, &in)
		try("Input", err, func() ([]byte, error) { return AppendInput(nil, &in), nil })
		h, body, err := DecodeSnapshot(b)
		try("Snapshot", err, func() ([]byte, error) { return append(AppendSnapshotHeader(nil, h), body...), nil })
		rtt, err := DecodePeerDelay(b)
		try("PeerDelay", err, func() ([]byte, error) { return AppendPeerDelay(nil, rtt), nil })
		feat, err := DecodeFeatures(b)
		try("Features", err, func() ([]byte, error) { return AppendFeatures(nil, feat), nil })
		ping, err := DecodePing(b)
		try("Ping", err, func() ([]byte, error) { return AppendPing(nil, ping), nil })
		pong, err := DecodePong(b)
		try("Pong", err, func() ([]byte, error) { return AppendPong(nil, pong), nil })
		if decoded > 1 {
			t.Fatalf("%x decoded as %d message types", b, decoded)
		}
	})
}

// checkErr insists a non-nil error is a usable *DecodeError.
func checkErr(t *testing.T, name string, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var de *DecodeError
	if !errors.As(err, &de) || de == nil || de.Kind == 0 {
		t.Fatalf("%s: error %v (%T) is not a typed *DecodeError", name, err, err)
	}
	_ = de.Error()
}
