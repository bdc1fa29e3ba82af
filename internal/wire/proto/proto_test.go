package proto

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// The golden vectors below are written by hand from docs/protocol.md's
// message tables, never produced by the encoder: they are the
// contract a C++/C#/Rust server is implemented against. Each span names a
// field and the offset just past it, so a truncation at any byte can be
// checked against the field it cuts.

type span struct {
	field string
	end   int // offset just past the field
}

// snap bundles a decoded Snapshot so every golden compares one value.
type snap struct {
	H    SnapshotHeader
	Body []byte
}

type golden struct {
	name   string
	typ    Type
	hex    string // spaces separate fields for the reader; they are stripped
	spans  []span // every field, type byte included; empty for open-ended bodies
	msg    any    // the decoded value
	encode func(b []byte) ([]byte, error)
	decode func(b []byte) (any, error)
	body   bool // the message ends with an open-ended body (Snapshot)
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatalf("bad golden hex %q: %v", s, err)
	}
	return b
}

func joinCase(name string, m Join, hx string, spans []span) golden {
	return golden{name: name, typ: TypeJoin, hex: hx, spans: spans, msg: m,
		encode: func(b []byte) ([]byte, error) { return AppendJoin(b, &m) },
		decode: func(b []byte) (any, error) { return DecodeJoin(b) }}
}

func welcomeCase(name string, m Welcome, hx string, spans []span) golden {
	return golden{name: name, typ: TypeWelcome, hex: hx, spans: spans, msg: m,
		encode: func(b []byte) ([]byte, error) { return AppendWelcome(b, &m) },
		decode: func(b []byte) (any, error) { return DecodeWelcome(b) }}
}

func refuseCase(name string, m Refuse, hx string, spans []span) golden {
	return golden{name: name, typ: TypeRefuse, hex: hx, spans: spans, msg: m,
		encode: func(b []byte) ([]byte, error) { return AppendRefuse(b, &m) },
		decode: func(b []byte) (any, error) { return DecodeRefuse(b) }}
}

func noticeCase(name string, m Notice, hx string, spans []span) golden {
	return golden{name: name, typ: TypeNotice, hex: hx, spans: spans, msg: m,
		encode: func(b []byte) ([]byte, error) { return AppendNotice(b, &m) },
		decode: func(b []byte) (any, error) { return DecodeNotice(b) }}
}

func inputCase(name string, m Input, hx string) golden {
	return golden{name: name, typ: TypeInput, hex: hx, msg: m,
		spans: []span{{"type", 1}, {"seq", 5}, {"throttle", 9}, {"elevator", 13},
			{"aileron", 17}, {"rudder", 21}, {"buttons", 25}},
		encode: func(b []byte) ([]byte, error) { return AppendInput(b, &m), nil },
		decode: func(b []byte) (any, error) {
			var got Input
			err := DecodeInput(b, &got)
			return got, err
		}}
}

func snapshotCase(name string, h SnapshotHeader, body []byte, hx string) golden {
	return golden{name: name, typ: TypeSnapshot, hex: hx, body: true, msg: snap{h, body},
		spans:  []span{{"type", 1}, {"tick", 5}, {"flags", 6}},
		encode: func(b []byte) ([]byte, error) { return append(AppendSnapshotHeader(b, h), body...), nil },
		decode: func(b []byte) (any, error) {
			h, body, err := DecodeSnapshot(b)
			return snap{h, body}, err
		}}
}

func snapshotAckCase(name string, h SnapshotHeader, body []byte, hx string) golden {
	g := snapshotCase(name, h, body, hx)
	g.spans = []span{{"type", 1}, {"tick", 5}, {"flags", 6}, {"input_seq", 10}, {"input_tick", 14}}
	return g
}

func tokenCase(name string, typ Type, token uint32, hx string) golden {
	enc, dec := AppendPing, DecodePing
	if typ == TypePong {
		enc, dec = AppendPong, DecodePong
	}
	return golden{name: name, typ: typ, hex: hx, msg: token,
		spans:  []span{{"type", 1}, {"token", 5}},
		encode: func(b []byte) ([]byte, error) { return enc(b, token), nil },
		decode: func(b []byte) (any, error) { return dec(b) }}
}

func featuresCase(name string, bits uint8, hx string) golden {
	return golden{name: name, typ: TypeFeatures, hex: hx, msg: bits,
		spans:  []span{{"type", 1}, {"features", 2}},
		encode: func(b []byte) ([]byte, error) { return AppendFeatures(b, bits), nil },
		decode: func(b []byte) (any, error) { return DecodeFeatures(b) }}
}

func peerDelayCase(name string, rtt uint16, hx string) golden {
	return golden{name: name, typ: TypePeerDelay, hex: hx, msg: rtt,
		spans:  []span{{"type", 1}, {"rtt_ms", 3}},
		encode: func(b []byte) ([]byte, error) { return AppendPeerDelay(b, rtt), nil },
		decode: func(b []byte) (any, error) { return DecodePeerDelay(b) }}
}

func goldens() []golden {
	joinSpans := func(et, nm int) []span {
		return []span{{"type", 1}, {"client_index", 5}, {"entity_type", 6 + et}, {"name", 7 + et + nm}}
	}
	welcomeSpans := func(tr, bf int) []span {
		return []span{{"type", 1}, {"entity_id", 5}, {"tick_hz", 7}, {"server_tick", 11},
			{"transport", 12 + tr}, {"body_format", 13 + tr + bf}, {"flags", 14 + tr + bf}}
	}
	msgSpans := func(first string, n int) []span {
		return []span{{"type", 1}, {first, 2}, {"message", 3 + n}}
	}
	return []golden{
		// 01 | client_index 300 = 0x12c LE | "f16" (3 bytes) | "bot-300" (7 bytes)
		joinCase("join", Join{ClientIndex: 300, EntityType: "f16", Name: "bot-300"},
			"01 2c010000 03 663136 07 626f742d333030", joinSpans(3, 7)),
		// empty strings are a zero length byte and nothing else
		joinCase("join-empty", Join{},
			"01 00000000 00 00", joinSpans(0, 0)),
		// 02 | entity_id 4097 = 0x1001 | tick_hz 60 = 0x3c | server_tick 123456 = 0x1e240 |
		// "enet" | "sg-entities/1" (13 = 0x0d bytes) | flags 0
		welcomeCase("welcome", Welcome{EntityID: 4097, TickHz: 60, ServerTick: 123456,
			Transport: "enet", BodyFormat: "sg-entities/1"},
			"02 01100000 3c00 40e20100 04 656e6574 0d 73672d656e7469746965732f31 00", welcomeSpans(4, 13)),
		// an unknown flag bit survives decode and re-encode
		welcomeCase("welcome-opaque", Welcome{EntityID: 1, TickHz: 30, Transport: "quic", BodyFormat: "opaque", Flags: 0x80},
			"02 01000000 1e00 00000000 04 71756963 06 6f7061717565 80", welcomeSpans(4, 6)),
		// 03 | reason 1 server full | "server full" (11 = 0x0b bytes)
		refuseCase("refuse", Refuse{Reason: ReasonServerFull, Message: "server full"},
			"03 01 0b 7365727665722066756c6c", msgSpans("reason", 11)),
		refuseCase("refuse-empty", Refuse{Reason: ReasonProtocolVersion},
			"03 04 00", msgSpans("reason", 0)),
		// 04 | kind 2 kicked | "garbage"
		noticeCase("notice", Notice{Kind: NoticeKicked, Message: "garbage"},
			"04 02 07 67617262616765", msgSpans("kind", 7)),
		// 10 | seq 1000 = 0x3e8 | throttle 1.0 = 0x3f800000 | elevator -0.5 = 0xbf000000 |
		// aileron 0.25 = 0x3e800000 | rudder 0 | buttons gun|afterburner = 5
		inputCase("input", Input{Seq: 1000, Throttle: 1, Elevator: -0.5, Aileron: 0.25, Buttons: ButtonGun | ButtonAfterburner},
			"10 e8030000 0000803f 000000bf 0000803e 00000000 05000000"),
		// negative zero keeps its sign bit (0x80000000); seq wraps at 2^32-1
		inputCase("input-negzero", Input{Seq: math.MaxUint32, Rudder: float32(math.Copysign(0, -1)), Buttons: ButtonStoreRelease},
			"10 ffffffff 00000000 00000000 00000000 00000080 02000000"),
		// 20 | tick 123456 | flags 1 (zstd) | body de ad be ef
		snapshotCase("snapshot", SnapshotHeader{Tick: 123456, Flags: SnapshotFlagZstd}, []byte{0xde, 0xad, 0xbe, 0xef},
			"20 40e20100 01 deadbeef"),
		// a header with an empty body is a valid Snapshot
		snapshotCase("snapshot-empty", SnapshotHeader{Tick: math.MaxUint32}, []byte{},
			"20 ffffffff 00"),
		// 21 | rtt_ms 300 = 0x12c
		peerDelayCase("peerdelay", 300, "21 2c01"),
		peerDelayCase("peerdelay-35", 35, "21 2300"),
		// v1.1: 20 | tick 123456 | flags 3 (zstd, input ack) | input_seq 1000 = 0x3e8 |
		// input_tick 123455 = 0x1e23f | body de ad be ef
		snapshotAckCase("snapshot-ack", SnapshotHeader{Tick: 123456, Flags: SnapshotFlagZstd | SnapshotFlagInputAck, InputSeq: 1000, InputTick: 123455},
			[]byte{0xde, 0xad, 0xbe, 0xef}, "20 40e20100 03 e8030000 3fe20100 deadbeef"),
		// v1.1 Welcome: flags 1 (minor_1)
		welcomeCase("welcome-minor1", Welcome{EntityID: 4097, TickHz: 60, ServerTick: 123456,
			Transport: "enet", BodyFormat: "sg-entities/2", Flags: WelcomeFlagMinor1},
			"02 01100000 3c00 40e20100 04 656e6574 0d 73672d656e7469746965732f32 01", welcomeSpans(4, 13)),
		// v1.1: 05 | features 1 (input acks)
		featuresCase("features", FeatureInputAcks, "05 01"),
		// v1.1: 05 | features 3 (input acks, snapshot deltas)
		featuresCase("features-deltas", FeatureInputAcks|FeatureSnapshotDeltas, "05 03"),
		// v1.1 Welcome: flags 3 (minor_1, deltas)
		welcomeCase("welcome-deltas", Welcome{EntityID: 4097, TickHz: 60, ServerTick: 123456,
			Transport: "enet", BodyFormat: "sg-entities/2", Flags: WelcomeFlagMinor1 | WelcomeFlagDeltas},
			"02 01100000 3c00 40e20100 04 656e6574 0d 73672d656e7469746965732f32 03", welcomeSpans(4, 13)),
		// v1.1: 11 | token 7; 22 | token 7
		tokenCase("ping", TypePing, 7, "11 07000000"),
		tokenCase("pong", TypePong, 0xdeadbeef, "22 efbeadde"),
	}
}

func TestGoldenEncode(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			want := unhex(t, g.hex)
			got, err := g.encode(nil)
			if err != nil {
				t.Fatalf("encode: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("encode:\n got %x\nwant %x", got, want)
			}
			// Appending after existing bytes must leave them alone.
			prefix := []byte{0xaa, 0xbb}
			got, err = g.encode(prefix)
			if err != nil || !bytes.Equal(got, append([]byte{0xaa, 0xbb}, want...)) {
				t.Fatalf("encode after prefix: %x, %v", got, err)
			}
			if !g.body && g.spans[len(g.spans)-1].end != len(want) {
				t.Fatalf("spans end at %d, message is %d bytes", g.spans[len(g.spans)-1].end, len(want))
			}
		})
	}
}

func TestGoldenDecode(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			b := unhex(t, g.hex)
			typ, err := PeekType(b)
			if err != nil || typ != g.typ {
				t.Fatalf("PeekType = %v, %v; want %v", typ, err, g.typ)
			}
			got, err := g.decode(b)
			if err != nil { // also catches a typed-nil *DecodeError
				t.Fatalf("decode: %v", err)
			}
			if !reflect.DeepEqual(got, g.msg) {
				t.Fatalf("decode = %#v, want %#v", got, g.msg)
			}
		})
	}
}

// TestRoundTrip encodes values the goldens do not cover and decodes them back.
func TestRoundTrip(t *testing.T) {
	long := strings.Repeat("é", MaxString/2) + "x" // 255 bytes of valid UTF-8
	joins := []Join{{ClientIndex: 1, EntityType: long, Name: "ünïcødé ✈"}, {ClientIndex: math.MaxUint32}}
	for _, m := range joins {
		b, err := AppendJoin(nil, &m)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := DecodeJoin(b); err != nil || got != m {
			t.Fatalf("Join round trip: %#v, %v", got, err)
		}
	}
	w := Welcome{EntityID: math.MaxUint32, TickHz: math.MaxUint16, ServerTick: 7, Transport: "quic", BodyFormat: long, Flags: 0xff}
	b, err := AppendWelcome(nil, &w)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := DecodeWelcome(b); err != nil || got != w {
		t.Fatalf("Welcome round trip: %#v, %v", got, err)
	}
	for r := Reason(0); r < 8; r++ {
		b, _ := AppendRefuse(nil, &Refuse{Reason: r, Message: r.String()})
		if got, err := DecodeRefuse(b); err != nil || got.Reason != r || got.Message != r.String() {
			t.Fatalf("Refuse %d round trip: %#v, %v", r, got, err)
		}
	}
	for k := NoticeKind(0); k < 5; k++ {
		b, _ := AppendNotice(nil, &Notice{Kind: k, Message: long})
		if got, err := DecodeNotice(b); err != nil || got.Kind != k || got.Message != long {
			t.Fatalf("Notice %d round trip: %v", k, err)
		}
	}
	in := Input{Seq: 9, Throttle: math.MaxFloat32, Elevator: -math.MaxFloat32, Aileron: math.SmallestNonzeroFloat32, Rudder: -1, Buttons: math.MaxUint32}
	var got Input
	if err := DecodeInput(AppendInput(nil, &in), &got); err != nil || got != in {
		t.Fatalf("Input round trip: %#v, %v", got, err)
	}
	for _, rtt := range []uint16{0, 1, math.MaxUint16} {
		if got, err := DecodePeerDelay(AppendPeerDelay(nil, rtt)); err != nil || got != rtt {
			t.Fatalf("PeerDelay %d round trip: %d, %v", rtt, got, err)
		}
	}
}

// wantDecodeError asserts err is a *DecodeError (through errors.As) of the
// given kind, type and field.
func wantDecodeError(t *testing.T, err error, kind ErrKind, typ Type, field string) {
	t.Helper()
	var de *DecodeError
	if !errors.As(err, &de) || de == nil {
		t.Fatalf("error %v (%T) is not a *DecodeError", err, err)
	}
	if de.Kind != kind || de.Type != typ || de.Field != field {
		t.Fatalf("got {%v %v %q}, want {%v %v %q} (%v)", de.Kind, de.Type, de.Field, kind, typ, field, err)
	}
	if de.Error() == "" || !strings.HasPrefix(de.Error(), "proto: ") {
		t.Fatalf("message %q", de.Error())
	}
}

// fieldAt is the field a truncation to k bytes cuts.
func fieldAt(spans []span, k int) string {
	for _, s := range spans {
		if k < s.end {
			return s.field
		}
	}
	return ""
}

// TestTruncated cuts every golden at every byte offset inside its fixed part.
func TestTruncated(t *testing.T) {
	for _, g := range goldens() {
		b := unhex(t, g.hex)
		end := len(b)
		if g.body {
			end = g.spans[len(g.spans)-1].end
		}
		for k := 0; k < end; k++ {
			got, err := g.decode(b[:k:k])
			wantDecodeError(t, err, ErrShort, g.typ, fieldAt(g.spans, k))
			if !reflect.ValueOf(got).IsZero() {
				t.Fatalf("%s[:%d]: decoder returned %#v with its error, want the zero message", g.name, k, got)
			}
		}
	}
}

func TestTrailing(t *testing.T) {
	for _, g := range goldens() {
		if g.body {
			continue // a Snapshot body is the rest of the message
		}
		b := append(unhex(t, g.hex), 0x00)
		_, err := g.decode(b)
		wantDecodeError(t, err, ErrTrailing, g.typ, "")
	}
}

func TestUnknownType(t *testing.T) {
	for _, first := range []byte{0x00, 0x06, 0x0f, 0x12, 0x1f, 0x23, 0x7f, 0xff} {
		b := []byte{first, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25}
		_, err := PeekType(b)
		wantDecodeError(t, err, ErrUnknownType, Type(first), "")
		for _, g := range goldens() {
			_, err := g.decode(b)
			wantDecodeError(t, err, ErrUnknownType, Type(first), "")
		}
	}
	_, err := PeekType(nil)
	wantDecodeError(t, err, ErrShort, 0, "type")
}

// TestWrongType feeds each decoder every other type's golden.
func TestWrongType(t *testing.T) {
	gs := goldens()
	for _, dec := range gs {
		for _, msg := range gs {
			if msg.typ == dec.typ {
				continue
			}
			_, err := dec.decode(unhex(t, msg.hex))
			wantDecodeError(t, err, ErrWrongType, dec.typ, "type")
		}
	}
}

func TestInputNonFinite(t *testing.T) {
	base := unhex(t, "10 e8030000 0000803f 000000bf 0000803e 00000000 05000000")
	fields := []struct {
		name string
		off  int
	}{{"throttle", 5}, {"elevator", 9}, {"aileron", 13}, {"rudder", 17}}
	bad := map[string]string{
		"NaN":      "0000c07f", // 0x7fc00000 quiet NaN
		"-NaN":     "0000c0ff", // 0xffc00000
		"sNaN":     "0100807f", // 0x7f800001 signalling NaN
		"+Inf":     "0000807f", // 0x7f800000
		"-Inf":     "000080ff", // 0xff800000
		"NaN-high": "ffffff7f", // 0x7fffffff
	}
	for _, f := range fields {
		for name, hx := range bad {
			b := bytes.Clone(base)
			copy(b[f.off:], unhex(t, hx))
			m := Input{Seq: 77}
			err := DecodeInput(b, &m)
			wantDecodeError(t, err, ErrNonFinite, TypeInput, f.name)
			if m != (Input{}) {
				t.Fatalf("%s %s: m = %#v after error, want zero", f.name, name, m)
			}
		}
	}
	// The largest finite values are accepted.
	b := bytes.Clone(base)
	copy(b[5:], unhex(t, "ffff7f7f")) // 0x7f7fffff = MaxFloat32
	var m Input
	if err := DecodeInput(b, &m); err != nil || m.Throttle != math.MaxFloat32 {
		t.Fatalf("MaxFloat32: %v %v", m.Throttle, err)
	}
}

func TestStringErrors(t *testing.T) {
	tooLong := strings.Repeat("a", MaxString+1)
	badUTF8 := "ok\xff\xfe"
	cases := []struct {
		name  string
		enc   func(b []byte) ([]byte, error)
		typ   Type
		field string
		kind  ErrKind
	}{
		{"join entity_type long", func(b []byte) ([]byte, error) { return AppendJoin(b, &Join{EntityType: tooLong}) }, TypeJoin, "entity_type", ErrTooLong},
		{"join name long", func(b []byte) ([]byte, error) { return AppendJoin(b, &Join{Name: tooLong}) }, TypeJoin, "name", ErrTooLong},
		{"join name utf8", func(b []byte) ([]byte, error) { return AppendJoin(b, &Join{Name: badUTF8}) }, TypeJoin, "name", ErrBadString},
		{"welcome transport long", func(b []byte) ([]byte, error) { return AppendWelcome(b, &Welcome{Transport: tooLong}) }, TypeWelcome, "transport", ErrTooLong},
		{"welcome body_format long", func(b []byte) ([]byte, error) { return AppendWelcome(b, &Welcome{BodyFormat: tooLong}) }, TypeWelcome, "body_format", ErrTooLong},
		{"welcome body_format utf8", func(b []byte) ([]byte, error) { return AppendWelcome(b, &Welcome{BodyFormat: badUTF8}) }, TypeWelcome, "body_format", ErrBadString},
		{"refuse long", func(b []byte) ([]byte, error) { return AppendRefuse(b, &Refuse{Message: tooLong}) }, TypeRefuse, "message", ErrTooLong},
		{"refuse utf8", func(b []byte) ([]byte, error) { return AppendRefuse(b, &Refuse{Message: badUTF8}) }, TypeRefuse, "message", ErrBadString},
		{"notice long", func(b []byte) ([]byte, error) { return AppendNotice(b, &Notice{Message: tooLong}) }, TypeNotice, "message", ErrTooLong},
		{"notice utf8", func(b []byte) ([]byte, error) { return AppendNotice(b, &Notice{Message: badUTF8}) }, TypeNotice, "message", ErrBadString},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			prefix := []byte{0xaa}
			got, err := c.enc(prefix)
			wantDecodeError(t, err, c.kind, c.typ, c.field)
			if !bytes.Equal(got, []byte{0xaa}) {
				t.Fatalf("failed encode left %x in the buffer, want it untouched", got)
			}
		})
	}
	// Decoding invalid UTF-8, in each string field.
	decodes := []struct {
		hex   string
		dec   func([]byte) error
		typ   Type
		field string
	}{
		{"01 00000000 02 fffe 00", func(b []byte) error { _, err := DecodeJoin(b); return err }, TypeJoin, "entity_type"},
		{"01 00000000 00 03 c328 41", func(b []byte) error { _, err := DecodeJoin(b); return err }, TypeJoin, "name"}, // c3 28: bad continuation
		{"02 00000000 0000 00000000 01 80 00 00", func(b []byte) error { _, err := DecodeWelcome(b); return err }, TypeWelcome, "transport"},
		{"02 00000000 0000 00000000 00 03 eda080 00", func(b []byte) error { _, err := DecodeWelcome(b); return err }, TypeWelcome, "body_format"}, // UTF-16 surrogate
		{"03 01 02 c0af", func(b []byte) error { _, err := DecodeRefuse(b); return err }, TypeRefuse, "message"},                                   // overlong '/'
		{"04 01 01 ff", func(b []byte) error { _, err := DecodeNotice(b); return err }, TypeNotice, "message"},
	}
	for _, d := range decodes {
		wantDecodeError(t, d.dec(unhex(t, d.hex)), ErrBadString, d.typ, d.field)
	}
	// A declared length past the end is short, in that string's field.
	_, err := DecodeNotice(unhex(t, "04 01 05 6869"))
	wantDecodeError(t, err, ErrShort, TypeNotice, "message")
}

func TestNames(t *testing.T) {
	reasons := map[Reason]string{1: "server_full", 2: "rate_limited", 3: "per_ip_cap", 4: "protocol_version", 5: "bad_join", 9: "reason_9"}
	for r, want := range reasons {
		if r.String() != want {
			t.Errorf("Reason(%d) = %q, want %q", r, r.String(), want)
		}
	}
	types := map[Type]string{0x01: "Join", 0x02: "Welcome", 0x03: "Refuse", 0x04: "Notice", 0x05: "Features",
		0x10: "Input", 0x11: "Ping", 0x20: "Snapshot", 0x21: "PeerDelay", 0x22: "Pong", 0x42: "Type(0x42)"}
	for ty, want := range types {
		if ty.String() != want {
			t.Errorf("Type(%d) = %q, want %q", ty, ty.String(), want)
		}
		if wantRel := ty <= TypeFeatures; ty.Reliable() != wantRel {
			t.Errorf("%v.Reliable() = %v", ty, ty.Reliable())
		}
	}
	// "SG" then version 1, as the big-endian reading of the connect word.
	cd := ConnectData
	if cd != 0x53470001 || byte(cd>>24) != 'S' || byte(cd>>16) != 'G' || uint16(cd) != 1 {
		t.Errorf("ConnectData = %#x", ConnectData)
	}
	if ButtonGun != 1 || ButtonStoreRelease != 2 || ButtonAfterburner != 4 || SnapshotFlagZstd != 1 {
		t.Error("button or flag bits moved")
	}
	if NoticeShutdown != 1 || NoticeKicked != 2 || NoticeConfigReloaded != 3 {
		t.Error("notice kinds moved")
	}
	if SnapshotFlagInputAck != 2 || WelcomeFlagMinor1 != 1 || FeatureInputAcks != 1 {
		t.Error("v1.1 flag bits moved")
	}
	if SnapshotAckSize != 8 || PingSize != 5 || PongSize != 5 || FeaturesSize != 2 {
		t.Errorf("v1.1 sizes %d %d %d %d", SnapshotAckSize, PingSize, PongSize, FeaturesSize)
	}
	if InputSize != 25 || SnapshotHeaderSize != 6 || PeerDelaySize != 3 {
		t.Errorf("sizes %d %d %d", InputSize, SnapshotHeaderSize, PeerDelaySize)
	}
	e := &DecodeError{Kind: ErrShort, Type: TypeJoin, Field: "name"}
	if got := e.Error(); got != "proto: Join: short message in field name" {
		t.Errorf("Error() = %q", got)
	}
	e = &DecodeError{Kind: ErrUnknownType, Type: 0x42}
	if got := e.Error(); got != "proto: Type(0x42): unknown type" {
		t.Errorf("Error() = %q", got)
	}
}

// TestZeroAlloc pins the hot paths' structural promise: no allocation per
// message once the caller's buffer has room.
func TestZeroAlloc(t *testing.T) {
	in := Input{Seq: 1, Throttle: 0.5, Buttons: ButtonGun}
	buf := make([]byte, 0, 64)
	msg := AppendInput(nil, &in)
	snapMsg := append(AppendSnapshotHeader(nil, SnapshotHeader{Tick: 9, Flags: 1}), 1, 2, 3)
	var sink Input
	cases := map[string]func(){
		"AppendInput":          func() { buf = AppendInput(buf[:0], &in) },
		"DecodeInput":          func() { _ = DecodeInput(msg, &sink) },
		"AppendSnapshotHeader": func() { buf = AppendSnapshotHeader(buf[:0], SnapshotHeader{Tick: 9, Flags: 1}) },
		"DecodeSnapshot":       func() { _, _, _ = DecodeSnapshot(snapMsg) },
		"AppendPeerDelay":      func() { buf = AppendPeerDelay(buf[:0], 12) },
		"DecodePeerDelay":      func() { _, _ = DecodePeerDelay(peerDelayMsg) },
	}
	for name, f := range cases {
		if n := testing.AllocsPerRun(200, f); n != 0 {
			t.Errorf("%s: %v allocs/op, want 0", name, n)
		}
	}
	if sink != in {
		t.Fatalf("DecodeInput under AllocsPerRun decoded %#v", sink)
	}
}

var peerDelayMsg = []byte{0x21, 0x0c, 0x00}

func BenchmarkAppendInput(b *testing.B) {
	in := Input{Seq: 1, Throttle: 0.5, Elevator: -0.25, Buttons: ButtonGun}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		in.Seq++
		buf = AppendInput(buf[:0], &in)
	}
}

func BenchmarkDecodeInput(b *testing.B) {
	msg := AppendInput(nil, &Input{Seq: 1, Throttle: 0.5, Elevator: -0.25, Buttons: ButtonGun})
	var in Input
	b.ReportAllocs()
	for b.Loop() {
		if err := DecodeInput(msg, &in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendSnapshotHeader(b *testing.B) {
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = AppendSnapshotHeader(buf[:0], SnapshotHeader{Tick: uint32(i), Flags: SnapshotFlagZstd})
	}
}

func BenchmarkDecodeSnapshot(b *testing.B) {
	msg := append(AppendSnapshotHeader(nil, SnapshotHeader{Tick: 5, Flags: 1}), make([]byte, 1200)...)
	b.ReportAllocs()
	for b.Loop() {
		if _, body, err := DecodeSnapshot(msg); err != nil || len(body) != 1200 {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendJoin(b *testing.B) {
	m := Join{ClientIndex: 300, EntityType: "f16", Name: "bot-300"}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendJoin(buf[:0], &m)
	}
}

func BenchmarkDecodeJoin(b *testing.B) {
	msg, _ := AppendJoin(nil, &Join{ClientIndex: 300, EntityType: "f16", Name: "bot-300"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeJoin(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendWelcome(b *testing.B) {
	m := Welcome{EntityID: 4097, TickHz: 60, ServerTick: 123456, Transport: "enet", BodyFormat: "sg-entities/1"}
	buf := make([]byte, 0, 64)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = AppendWelcome(buf[:0], &m)
	}
}

func BenchmarkDecodeWelcome(b *testing.B) {
	msg, _ := AppendWelcome(nil, &Welcome{EntityID: 4097, TickHz: 60, ServerTick: 123456, Transport: "enet", BodyFormat: "sg-entities/1"})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodeWelcome(msg); err != nil {
			b.Fatal(err)
		}
	}
}

// inputAckHex is the Input golden followed by snapshot_ack 123456
// (docs/protocol.md shows it).
const inputAckHex = "10 e8030000 0000803f 000000bf 0000803e 00000000 05000000 40e20100"

// TestInputSnapshotAck: an Input of InputAckSize bytes carries the
// snapshot acknowledgement, encodes and decodes byte for byte, and any
// other length past InputSize is still malformed. (Outside goldens():
// its first InputSize bytes are a valid Input, which TestTruncated's
// every-prefix-fails rule does not allow.)
func TestInputSnapshotAck(t *testing.T) {
	want := Input{Seq: 1000, Throttle: 1, Elevator: -0.5, Aileron: 0.25, Buttons: ButtonGun | ButtonAfterburner,
		HasSnapshotAck: true, SnapshotAck: 123456}
	b := unhex(t, inputAckHex)
	if got := AppendInput(nil, &want); !bytes.Equal(got, b) {
		t.Fatalf("encoded % x, want % x", got, b)
	}
	var m Input
	if err := DecodeInput(b, &m); err != nil || m != want {
		t.Fatalf("decoded %+v (%v), want %+v", m, err, want)
	}
	for _, n := range []int{InputSize + 1, InputSize + 3, InputAckSize + 1} {
		long := append(bytes.Clone(b), 0, 0)[:n]
		if err := DecodeInput(long, &m); err == nil || m != (Input{}) {
			t.Errorf("%d bytes: decoded %+v, err %v", n, m, err)
		}
	}
	// A non-finite float is malformed with the acknowledgement too.
	bad := bytes.Clone(b)
	copy(bad[5:], []byte{0, 0, 0xc0, 0x7f}) // throttle NaN
	if err := DecodeInput(bad, &m); err == nil {
		t.Error("a NaN throttle decoded")
	}
}

// TestDocExamples keeps docs/protocol.md honest: each example it shows is
// one of the golden vectors above, byte for byte (whitespace and backticks
// ignored), and the QUIC control-stream example is the preamble followed by
// the framed Join golden.
func TestDocExamples(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Map(func(r rune) rune {
		if r == '`' || unicode.IsSpace(r) {
			return -1
		}
		return r
	}, string(doc))
	inDoc := map[string]bool{"join": true, "join-empty": true, "welcome": true, "refuse": true, "notice": true,
		"input": true, "snapshot": true, "snapshot-empty": true, "peerdelay": true,
		"snapshot-ack": true, "features": true, "ping": true, "pong": true, "features-deltas": true}
	var join []byte
	for _, g := range goldens() {
		if g.name == "join" {
			join = unhex(t, g.hex)
		}
		if inDoc[g.name] && !strings.Contains(flat, strings.ReplaceAll(g.hex, " ", "")) {
			t.Errorf("docs/protocol.md lacks the %s example %s", g.name, g.hex)
		}
	}
	if !strings.Contains(flat, strings.ReplaceAll(inputAckHex, " ", "")) {
		t.Errorf("docs/protocol.md lacks the Input example with a snapshot_ack %s", inputAckHex)
	}
	// QUIC: preamble (ConnectData, u32 LE), then u16 LE length 17, then Join.
	quic := hex.EncodeToString(binary.LittleEndian.AppendUint32(nil, ConnectData)) + "1100" + hex.EncodeToString(join)
	if !strings.Contains(flat, quic) {
		t.Errorf("docs/protocol.md lacks the QUIC control-stream example %s", quic)
	}
}
