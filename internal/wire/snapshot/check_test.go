package snapshot

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/scalegate/scalegate/internal/wire/proto"
)

// decodeSentinels are the errors every Decode error wraps exactly one of.
var decodeSentinels = []error{ErrFlags, ErrZstd, ErrHeader, ErrLength, ErrRecord, ErrEvent, ErrVersion}

// sentinelOf names the sentinel err wraps (nil for nil), failing when it
// wraps none.
func sentinelOf(t *testing.T, err error) error {
	t.Helper()
	if err == nil {
		return nil
	}
	for _, s := range decodeSentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	t.Fatalf("error wraps no sentinel: %v", err)
	return nil
}

// assertCheckMatchesDecode runs both on (flags, body) and fails unless they
// agree on the entity count, on error-or-not, on the sentinel and on the
// message.
func assertCheckMatchesDecode(t *testing.T, dec *Decoder, flags uint8, body []byte) {
	t.Helper()
	nd, errD := dec.Decode(flags, body)
	nc, errC := dec.Check(flags, body)
	if nd != nc || (errD == nil) != (errC == nil) {
		t.Fatalf("Decode = %d, %v; Check = %d, %v", nd, errD, nc, errC)
	}
	if sd, sc := sentinelOf(t, errD), sentinelOf(t, errC); sd != sc {
		t.Fatalf("Decode error %v wraps %v; Check error %v wraps %v", errD, sd, errC, sc)
	}
	if errD != nil && errD.Error() != errC.Error() {
		t.Fatalf("messages differ: Decode %q, Check %q", errD, errC)
	}
	if len(dec.Records()) != 0 || len(dec.Events()) != 0 {
		t.Fatalf("Check left %d records, %d events", len(dec.Records()), len(dec.Events()))
	}
}

// encodedBody is a body of n random records and ev events, as the Encoder
// writes it (compressed when that is smaller and compress is set).
func encodedBody(rng *rand.Rand, n, ev int, compress bool) (uint8, []byte) {
	enc, err := NewEncoder()
	if err != nil {
		panic(err)
	}
	for i := 0; i < n; i++ {
		r := randomRecord(rng, uint32(i+1))
		enc.Append(&r)
	}
	for i := 0; i < ev; i++ {
		kind := uint8(1 + i%4)
		e := Event{Kind: kind, ID: uint32(i + 1)}
		if kind != EventDespawn {
			e.Other = uint32(i + 2)
		}
		if kind == EventImpact {
			e.Value = uint16(i + 1)
		}
		enc.AppendEvent(&e)
	}
	flags, body := enc.Finish(nil, compress)
	return flags, append([]byte(nil), body...)
}

// v1Of rewrites an uncompressed version-2 body without events as version 1.
func v1Of(b []byte) []byte {
	return append([]byte{1, b[1], b[2], b[5], b[6]}, b[HeaderSize:]...)
}

// formationBody is a body of n records flying in formation and ev shots,
// which compresses (what the reference server's zstd path carries).
func formationBody(n, ev int) (uint8, []byte) {
	enc, err := NewEncoder()
	if err != nil {
		panic(err)
	}
	for i := 0; i < n; i++ {
		a := float64(i) * 0.7
		enc.Append(&Record{ID: uint32(i + 1), Type: 1,
			Pos: [3]float32{float32(1000 * math.Cos(a)), 4000, float32(1000 * math.Sin(a))},
			Rot: [4]float32{0, 0, 0, 1}, Vel: [3]float32{200, 0, 10}})
	}
	for i := 0; i < ev; i++ {
		enc.AppendEvent(&Event{Kind: EventShot, ID: uint32(i + 1), Other: uint32(i + 2)})
	}
	flags, body := enc.Finish(nil, true)
	return flags, append([]byte(nil), body...)
}

func FuzzCheckMatchesDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{0, 1, 3, 48} {
		for _, ev := range []int{0, 5} {
			for _, c := range []bool{false, true} {
				flags, body := encodedBody(rng, n, ev, c)
				f.Add(flags, body)
				if flags == 0 && ev == 0 {
					f.Add(uint8(0), v1Of(body))
				}
			}
		}
	}
	for _, ev := range []int{0, 4} {
		flags, body := formationBody(48, ev)
		if flags != proto.SnapshotFlagZstd {
			f.Fatalf("formation body not compressed (flags 0x%x)", flags)
		}
		f.Add(flags, body)
	}
	for _, g := range bodyGoldens() {
		f.Add(uint8(0), unhexBody(f, g.hex))
	}
	// Mutations of a valid body: one per rule a record or event can break.
	_, good := encodedBody(rng, 2, 2, false)
	mut := func(edit func(b []byte)) []byte { b := append([]byte(nil), good...); edit(b); return b }
	f.Add(uint8(0), mut(func(b []byte) { b[HeaderSize] = 0; b[HeaderSize+1] = 0; b[HeaderSize+2] = 0; b[HeaderSize+3] = 0 }))
	f.Add(uint8(0), mut(func(b []byte) { b[HeaderSize+RecordSize+21] = 0 }))
	f.Add(uint8(0), mut(func(b []byte) { b[HeaderSize+22] |= 0x40 }))
	f.Add(uint8(0), mut(func(b []byte) { b[HeaderSize+13] ^= 0xff; b[HeaderSize+14] ^= 0xff }))
	f.Add(uint8(0), mut(func(b []byte) { b[HeaderSize+2*RecordSize] = 9 }))
	f.Add(uint8(0), mut(func(b []byte) { b[2] = 1 }))
	f.Add(uint8(2), good)
	f.Add(proto.SnapshotFlagZstd, good)
	f.Add(uint8(0), []byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(0), []byte{})

	dec, err := NewDecoder()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, flags uint8, body []byte) {
		assertCheckMatchesDecode(t, dec, flags, body)
	})
}

// TestCheckMatchesDecodeRandomRecords drives every record through both
// paths: random 24-byte records (mostly invalid quaternions), then each
// valid one with single bit flips.
func TestCheckMatchesDecodeRandomRecords(t *testing.T) {
	dec, _ := NewDecoder()
	defer dec.Close()
	rng := rand.New(rand.NewPCG(41, 42))
	body := make([]byte, HeaderSize+RecordSize)
	body[0], body[1] = Version, 1
	accepted := 0
	for i := 0; i < 20000; i++ {
		for j := HeaderSize; j < len(body); j++ {
			body[j] = byte(rng.Uint32())
		}
		if i%2 == 0 { // a valid record with one flipped bit
			r := randomRecord(rng, uint32(1+rng.IntN(1000)))
			var rec [RecordSize]byte
			EncodeRecord(&rec, &r)
			rec[rng.IntN(RecordSize)] ^= 1 << rng.IntN(8)
			copy(body[HeaderSize:], rec[:])
		}
		assertCheckMatchesDecode(t, dec, 0, body)
		if n, _ := dec.Check(0, body); n == 1 {
			accepted++
		}
	}
	if accepted < 1000 {
		t.Fatalf("only %d of 20000 records accepted: the comparison barely covers valid records", accepted)
	}
}

// TestCheckOnDecodeRejectCases: the header, length and flag failures of
// TestDecodeRejects, and a valid body, agree on both paths.
func TestCheckOnDecodeRejectCases(t *testing.T) {
	dec, _ := NewDecoder()
	defer dec.Close()
	good := validBody(t, 2)
	for _, b := range [][]byte{nil, good[:3], good[:len(good)-1], good} {
		for _, fl := range []uint8{0, 2, proto.SnapshotFlagZstd} {
			assertCheckMatchesDecode(t, dec, fl, b)
		}
	}
	if n, err := dec.Check(0, good); n != 2 || err != nil {
		t.Fatalf("Check(valid) = %d, %v", n, err)
	}
}

// quatCodesFloat is unpackQuat's verdict, the reference quatCodesValid
// must reproduce.
func quatCodesFloat(c [3]uint32) bool {
	_, ok := unpackQuat(3, c)
	return ok
}

// TestQuatBoundaryCodes: codes on both sides of each boundary of the
// quaternion rule, and exact ties (where the integer rule defers to
// float64), give the same verdict on both paths. With k = code − 511 the
// exact rule rejects iff max|k| − 4 > sqrt(max(0, 522242 − Σk²)); want is
// worked out from it by hand, except at ties, where it is float64's
// verdict (computed outside Go, IEEE doubles in unpackQuat's order).
func TestQuatBoundaryCodes(t *testing.T) {
	const z = 511
	for _, c := range []struct {
		name  string
		codes [3]uint32
		want  bool
		tie   bool // (max|k| − 4)² == 522242 − Σk²
	}{
		{"identity", [3]uint32{z, z, z}, true, false},
		{"slack only, sum 48", [3]uint32{z + 4, z - 4, z + 4}, true, false},
		{"all codes 0, sum 1.5", [3]uint32{0, 0, 0}, false, false},
		{"all codes 1023", [3]uint32{1023, 1023, 1023}, false, false},
		// k = (363, 363, 0): Σ = 263538, rest 258704, 359² = 128881 < rest.
		{"two equal components", [3]uint32{z + 363, z + 363, z}, true, false},
		// k = (512, 0, 0): 508² = 258064 < 522242 − 262144 = 260098.
		{"one axis at the top code", [3]uint32{1023, z, z}, true, false},
		{"one axis at the bottom code", [3]uint32{0, z, z}, true, false},
		// The nearest non-ties, (m − 4)² − rest = ∓1:
		// k = (380, 359, 328): rest 141377, 376² = 141376: accept;
		// k = (395, −379, 264): rest 152880, 391² = 152881: reject;
		// k = (504, 135, 0): rest 250001, 500² = 250000: accept.
		{"one below the boundary", [3]uint32{z + 380, z + 359, z + 328}, true, false},
		{"one above the boundary", [3]uint32{z + 395, z - 379, z + 264}, false, false},
		{"one below the boundary, two components", [3]uint32{z + 504, z + 135, z}, true, false},
		// k = (300, 300, 300): Σ = 270000, rest 252242, 296² = 87616: accept.
		{"three equal", [3]uint32{z + 300, z + 300, z - 300}, true, false},
		// k = (346, 346, 346): Σ = 359148, rest 163094, 342² = 116964: accept;
		// k = (380, 380, 380): Σ = 433200, rest 89042, 376² = 141376: reject.
		{"three equal, accepted", [3]uint32{z + 346, z + 346, z + 346}, true, false},
		{"three equal, rejected", [3]uint32{z + 380, z + 380, z + 380}, false, false},
		// m = 5 is the first magnitude past the slack: accepted while the
		// reconstructed component is large.
		{"first step past the slack", [3]uint32{z + 5, z, z}, true, false},
		// Exact ties, (m − 4)² == 522242 − Σk²: the exact rule accepts, and
		// float64 rounding goes either way, so the integer rule asks it.
		{"tie that float64 accepts", [3]uint32{z + 378, z + 351, z + 341}, true, true},
		{"tie that float64 rejects", [3]uint32{z + 485, z + 234, z + 30}, false, true},
		{"tie that float64 rejects, signs flipped", [3]uint32{z - 485, z + 234, z - 30}, false, true},
		{"another tie that float64 rejects", [3]uint32{z + 490, z + 195, z + 89}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sum, m int
			for _, v := range c.codes {
				k := int(v) - z
				sum, m = sum+k*k, max(m, k, -k)
			}
			if tie := m > 4 && (m-4)*(m-4) == 522242-sum; tie != c.tie {
				t.Fatalf("row marked tie=%v but is tie=%v", c.tie, tie)
			}
			if got := quatCodesFloat(c.codes); got != c.want {
				t.Fatalf("unpackQuat verdict %v, want %v", got, c.want)
			}
			if got := quatCodesValid(c.codes[0], c.codes[1], c.codes[2]); got != c.want {
				t.Fatalf("quatCodesValid %v, want %v", got, c.want)
			}
		})
	}
}

// TestQuatCodesValidExhaustive compares the integer rule with unpackQuat's
// float64 rule on every triple of component magnitudes. Two symmetries
// keep it to 68 M triples: a component's sign never changes the verdict
// (its float64 value only flips sign), and neither does swapping the first
// two (float64 addition commutes; only the third term's place in the sum
// can matter).
func TestQuatCodesValidExhaustive(t *testing.T) {
	mismatches := 0
	var s [3]float64
	for a := uint32(511); a < 1024; a++ {
		for b := uint32(511); b <= a; b++ {
			for c := uint32(511); c < 1024; c++ {
				codes := [3]uint32{a, b, c}
				_, want := quatFromCodes(codes, &s)
				if quatCodesValid(codes[0], codes[1], codes[2]) == want {
					continue
				}
				if mismatches++; mismatches < 10 {
					t.Errorf("codes %v: integer rule %v, float64 %v", codes, !want, want)
				}
			}
		}
	}
	if mismatches > 0 {
		t.Fatalf("%d mismatches", mismatches)
	}
}

// bodies48 are the two 48-record version-2 bodies the swarm sees: random
// records with a few events, sent raw (they do not compress), and a
// formation, zstd-compressed.
func bodies48(b *testing.B) []struct {
	name  string
	flags uint8
	body  []byte
} {
	rflags, raw := encodedBody(rand.New(rand.NewPCG(51, 52)), 48, 3, false)
	zflags, z := formationBody(48, 0)
	if rflags != 0 || zflags != proto.SnapshotFlagZstd {
		b.Fatalf("flags raw 0x%x zstd 0x%x", rflags, zflags)
	}
	return []struct {
		name  string
		flags uint8
		body  []byte
	}{{"raw", rflags, raw}, {"zstd", zflags, z}}
}

func benchmarkBodies48(b *testing.B, run func(d *Decoder, flags uint8, body []byte) (int, error)) {
	for _, c := range bodies48(b) {
		b.Run(c.name, func(b *testing.B) {
			dec, err := NewDecoder()
			if err != nil {
				b.Fatal(err)
			}
			defer dec.Close()
			b.SetBytes(int64(len(c.body)))
			b.ReportAllocs()
			for b.Loop() {
				if n, err := run(dec, c.flags, c.body); err != nil || n != 48 {
					b.Fatalf("%d, %v", n, err)
				}
			}
		})
	}
}

func BenchmarkDecode48(b *testing.B) { benchmarkBodies48(b, (*Decoder).Decode) }

func BenchmarkCheck48(b *testing.B) { benchmarkBodies48(b, (*Decoder).Check) }

// TestCheckDoesNotAllocate: the swarm checks every snapshot of every
// client; a steady-state allocation would be one per client-tick.
func TestCheckDoesNotAllocate(t *testing.T) {
	dec, _ := NewDecoder()
	defer dec.Close()
	rflags, raw := encodedBody(rand.New(rand.NewPCG(61, 62)), 48, 3, false)
	zflags, z := formationBody(48, 0)
	cases := []struct {
		flags uint8
		body  []byte
	}{{rflags, raw}, {zflags, z}}
	if raceEnabled {
		// zstd's pooled buffers are dropped at random under the race
		// detector: the raw path is checked in every build, both in the
		// plain one (scripts/test.sh runs this test plain as well).
		cases = cases[:1]
	}
	for _, c := range cases {
		dec.Check(c.flags, c.body)
		if a := testing.AllocsPerRun(50, func() { dec.Check(c.flags, c.body) }); a != 0 {
			t.Fatalf("flags 0x%x: Check allocates %.1f times per body", c.flags, a)
		}
	}
}

// TestFirstInvalidAgreesWithCheck: the loop that clears records without
// building errors stops at exactly the first record check rejects, over
// runs of valid records with one bit flipped somewhere (often making an
// invalid one) and runs of random bytes.
func TestFirstInvalidAgreesWithCheck(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n = 16
	recs := make([]byte, n*RecordSize)
	stopped := 0
	for i := 0; i < 20000; i++ {
		for j := 0; j < n; j++ {
			r := randomRecord(rng, uint32(1+rng.IntN(1000)))
			EncodeRecord((*[RecordSize]byte)(recs[j*RecordSize:]), &r)
		}
		if i%4 == 3 {
			for j := range recs[(n/2)*RecordSize:] {
				recs[(n/2)*RecordSize+j] = byte(rng.Uint32())
			}
		} else {
			recs[rng.IntN(len(recs))] ^= 1 << rng.IntN(8)
		}
		want := n
		for j := 0; j < n; j++ {
			w := loadRecord(recs[j*RecordSize:])
			if w.check() != nil {
				want = j
				break
			}
		}
		if got := firstInvalid(recs); got != want {
			t.Fatalf("case %d: firstInvalid = %d, check first rejects record %d", i, got, want)
		}
		if want < n {
			stopped++
		}
	}
	if stopped < 5000 {
		t.Fatalf("only %d of 20000 runs had an invalid record: the comparison barely covers rejection", stopped)
	}
}
