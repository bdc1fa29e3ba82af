package trace

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// golden is one hand-written vector of docs/trace-format.md. The hex is
// written from the documented layout, never produced by the encoder, so an
// encoder and a decoder that agree on a wrong layout still fail here.
type golden struct {
	name string
	hex  string
	want *Trace // nil: decoding fails with err
	err  error
}

// recordA is the record of the goldens: tick 1234 = 0x4d2, throttle 0.75 =
// 0x3f400000, elevator −0.5 = 0xbf000000, aileron 1 = 0x3f800000, rudder 0,
// buttons 5 (gun | afterburner).
var recordA = Record{ServerTick: 1234, Throttle: 0.75, Elevator: -0.5, Aileron: 1, Rudder: 0, Buttons: 5}

const (
	hexHeader60 = "464c4954 0100 3c000000"
	hexRecordA  = "d204000000000000 0000403f 000000bf 0000803f 00000000 05000000"
	// recordB: tick 2^32 + 1 (the u64 matters), throttle 1, rudder −1,
	// buttons 2 (store release).
	hexRecordB = "0100000001000000 0000803f 00000000 00000000 000080bf 02000000"
)

var recordB = Record{ServerTick: 1<<32 + 1, Throttle: 1, Rudder: -1, Buttons: 2}

func goldens() []golden {
	return []golden{
		{name: "header-only", hex: hexHeader60, want: &Trace{Header: Header{Version: 1, TickRate: 60}, Records: []Record{}}},
		{name: "one-record", hex: hexHeader60 + hexRecordA, want: &Trace{Header: Header{Version: 1, TickRate: 60}, Records: []Record{recordA}}},
		{name: "two-records-30hz", hex: "464c4954 0100 1e000000" + hexRecordA + hexRecordB,
			want: &Trace{Header: Header{Version: 1, TickRate: 30}, Records: []Record{recordA, recordB}}},
		{name: "truncated-last-record", hex: hexHeader60 + hexRecordA + "d2040000 0000",
			want: &Trace{Header: Header{Version: 1, TickRate: 60}, Records: []Record{recordA}, TruncatedBytes: 6}},
		{name: "bad-magic", hex: "464c4958 0100 3c000000" + hexRecordA, err: ErrBadMagic},
		{name: "version-2", hex: "464c4954 0200 3c000000" + hexRecordA, err: ErrVersion},
		{name: "short-header", hex: "464c4954 0100 3c", err: ErrShortHeader},
	}
}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad golden hex %q: %v", s, err)
	}
	return b
}

func TestGoldens(t *testing.T) {
	for _, g := range goldens() {
		t.Run(g.name, func(t *testing.T) {
			b := unhex(t, g.hex)
			got, err := Decode(b)
			if g.err != nil {
				var fe *FormatError
				if !errors.Is(err, g.err) || !errors.As(err, &fe) {
					t.Fatalf("Decode: err %v, want a *FormatError wrapping %v", err, g.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, g.want) {
				t.Fatalf("Decode = %+v, want %+v", got, g.want)
			}
			// The encoder writes exactly the vector (less a truncated tail).
			enc := Encode(g.want.TickRate, g.want.Records)
			if want := b[:len(b)-g.want.TruncatedBytes]; string(enc) != string(want) {
				t.Fatalf("Encode = %x, want %x", enc, want)
			}
		})
	}
}

// TestErrorMessages: a bad file's error says what is wrong in words a user
// can act on, and names the file.
func TestErrorMessages(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, hex, want string }{
		{"bad-magic", "464c4958 0100 3c000000", `bad magic "FLIX" (want "FLIT"): not a FLIT trace`},
		{"version-2", "464c4954 0200 3c000000", "FLIT version 2: this build reads version 1 only"},
		{"short", "464c", "2 byte(s): shorter than the 10-byte FLIT header"},
	}
	for _, c := range cases {
		path := dir + "/" + c.name + ".flit"
		if err := os.WriteFile(path, unhex(t, c.hex), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := ReadFile(context.Background(), path)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err %v, want it to name %s and say %q", c.name, err, path, c.want)
		}
	}
	if _, err := ReadFile(context.Background(), dir); err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("ReadFile(dir): %v, want \"is a directory\"", err)
	}
}

// docGolden matches a ```flit NAME fenced block of docs/trace-format.md.
var docGolden = regexp.MustCompile("(?s)```flit ([a-z0-9-]+)\n(.*?)```")

// TestDocGoldens fails when docs/trace-format.md and the goldens drift: the
// page shows every golden, under its name, byte for byte, and nothing else.
func TestDocGoldens(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/trace-format.md")
	if err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]string{}
	for _, m := range docGolden.FindAllStringSubmatch(string(doc), -1) {
		var lines []string
		for _, l := range strings.Split(m[2], "\n") {
			if i := strings.Index(l, "#"); i >= 0 { // annotations
				l = l[:i]
			}
			lines = append(lines, l)
		}
		inDoc[m[1]] = strings.Join(strings.Fields(strings.Join(lines, " ")), "")
	}
	var missing []string
	for _, g := range goldens() {
		d, ok := inDoc[g.name]
		if !ok {
			missing = append(missing, g.name)
			continue
		}
		if want := strings.Join(strings.Fields(g.hex), ""); d != want {
			t.Errorf("docs/trace-format.md golden %s is %s, the test's is %s", g.name, d, want)
		}
		delete(inDoc, g.name)
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/trace-format.md lacks goldens %v", missing)
	}
	for name := range inDoc {
		t.Errorf("docs/trace-format.md shows golden %s that the test does not check", name)
	}
}

func TestDuration(t *testing.T) {
	tr := &Trace{Header: Header{TickRate: 60}, Records: []Record{{ServerTick: 100}, {ServerTick: 130}, {ServerTick: 220}}}
	if d := tr.Duration(); d != 2 {
		t.Fatalf("Duration = %v, want 2", d)
	}
	if d := (&Trace{Header: Header{TickRate: 60}, Records: []Record{{ServerTick: 5}}}).Duration(); d != 0 {
		t.Fatalf("one record: Duration = %v, want 0", d)
	}
}

func BenchmarkAppendRecord(b *testing.B) {
	buf := make([]byte, 0, RecordSize)
	for b.Loop() {
		buf = AppendRecord(buf[:0], &recordA)
	}
}
