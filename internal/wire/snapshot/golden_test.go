package snapshot

import (
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
	"unicode"
)

// bodyGolden is one hand-checked body of docs/snapshot-format.md: its bytes
// (uncompressed) and what they decode to.
type bodyGolden struct {
	name string
	hex  string
	recs []Record
	evs  []Event
}

// bodyGoldens are written from the tables of docs/snapshot-format.md, not
// from the encoder: a change of the encoder that moves a byte fails here.
//
// "one-entity": entity 7 at the origin (x, z code 0x200000 = 131072·16, its
// top bit landing on stream bits 53 and 93; y code 2048·16 = 0x8000, bit
// 69), identity orientation (q_index 3 on bits 94–95; three codes 511 =
// nine set bits each from bits 96, 106, 116), zero velocity (code 8192 =
// bit 13 of each: stream bits 139, 153, 167), type 2, flags own, age 0;
// then one despawn of entity 9.
func bodyGoldens() []bodyGolden {
	ident := [4]float32{0, 0, 0, 1}
	return []bodyGolden{
		{name: "empty", hex: "02 0000 0000 0000"},
		{name: "despawn-only", hex: "02 0000 0100 0000 01 09000000 00000000 0000",
			evs: []Event{{Kind: EventDespawn, ID: 9}}},
		{name: "one-entity",
			hex: "02 0100 0100 0000" +
				" 07000000 00002000 200000e0 fffdf71f 00080002 80020100" +
				" 01 09000000 00000000 0000",
			recs: []Record{{ID: 7, Rot: ident, Type: 2, Flags: FlagOwn}},
			evs:  []Event{{Kind: EventDespawn, ID: 9}}},
		{name: "effects", hex: "02 0000 0300 0000" +
			" 02 05000000 06000000 0000" +
			" 03 06000000 05000000 0800" +
			" 04 06000000 05000000 0000",
			evs: []Event{{Kind: EventShot, ID: 5, Other: 6}, {Kind: EventImpact, ID: 6, Other: 5, Value: 8},
				{Kind: EventDestroyed, ID: 6, Other: 5}}},
	}
}

func unhexBody(tb testing.TB, s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		tb.Fatalf("bad golden hex %q: %v", s, err)
	}
	return b
}

func TestGoldenBodies(t *testing.T) {
	enc, _ := NewEncoder()
	dec, _ := NewDecoder()
	defer dec.Close()
	for _, g := range bodyGoldens() {
		t.Run(g.name, func(t *testing.T) {
			want := unhexBody(t, g.hex)
			enc.Reset()
			for i := range g.recs {
				enc.Append(&g.recs[i])
			}
			for i := range g.evs {
				enc.AppendEvent(&g.evs[i])
			}
			_, got := enc.Finish(nil, false)
			if string(got) != string(want) {
				t.Fatalf("encode:\n got %x\nwant %x", got, want)
			}
			n, err := dec.Decode(0, want)
			if err != nil || n != len(g.recs) {
				t.Fatalf("decode: %d, %v", n, err)
			}
			for i, r := range dec.Records() {
				if r != g.recs[i] {
					t.Errorf("record %d: %+v, want %+v", i, r, g.recs[i])
				}
			}
			if evs := dec.Events(); len(evs) != len(g.evs) {
				t.Fatalf("events %+v, want %+v", evs, g.evs)
			}
			for i, ev := range dec.Events() {
				if ev != g.evs[i] {
					t.Errorf("event %d: %+v, want %+v", i, ev, g.evs[i])
				}
			}
		})
	}
}

// TestDocShowsGoldens keeps docs/snapshot-format.md honest: every golden
// body is shown there byte for byte (whitespace and backticks ignored).
func TestDocShowsGoldens(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/snapshot-format.md")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Map(func(r rune) rune {
		if r == '`' || unicode.IsSpace(r) {
			return -1
		}
		return r
	}, string(doc))
	for _, g := range bodyGoldens() {
		if !strings.Contains(flat, strings.ReplaceAll(g.hex, " ", "")) {
			t.Errorf("docs/snapshot-format.md lacks the %s example %s", g.name, g.hex)
		}
	}
}

// TestVersion1StillDecodes: a server still sending sg-entities/1 (5-byte
// header, no events) decodes.
func TestVersion1StillDecodes(t *testing.T) {
	dec, _ := NewDecoder()
	defer dec.Close()
	v1 := unhexBody(t, "01 0100 0000"+
		" 07000000 00002000 200000e0 fffdf71f 00080002 80020100")
	n, err := dec.Decode(0, v1)
	if err != nil || n != 1 || dec.Records()[0].ID != 7 || len(dec.Events()) != 0 {
		t.Fatalf("v1 decode: %d, %v, %+v", n, err, dec.Records())
	}
}

func TestEventRejects(t *testing.T) {
	dec, _ := NewDecoder()
	defer dec.Close()
	for _, c := range []struct{ name, hex string }{
		{"kind 0", "02 0000 0100 0000 00 09000000 00000000 0000"},
		{"kind 5", "02 0000 0100 0000 05 09000000 00000000 0000"},
		{"zero id", "02 0000 0100 0000 02 00000000 00000000 0000"},
		{"despawn with other", "02 0000 0100 0000 01 09000000 01000000 0000"},
		{"shot with value", "02 0000 0100 0000 02 09000000 01000000 0100"},
	} {
		if n, err := dec.Decode(0, unhexBody(t, c.hex)); !errors.Is(err, ErrEvent) || n != 0 {
			t.Errorf("%s: Decode = %d, %v; want ErrEvent", c.name, n, err)
		}
	}
	if _, err := dec.Decode(0, unhexBody(t, "02 0000 0100 0000 01 09000000 00000000")); !errors.Is(err, ErrLength) {
		t.Errorf("truncated event: %v, want ErrLength", err)
	}
}
