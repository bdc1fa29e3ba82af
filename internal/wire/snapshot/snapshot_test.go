package snapshot

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/scalegate/scalegate/internal/wire/proto"
)

func randomRecord(rng *rand.Rand, id uint32) Record {
	q := [4]float32{float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64()), float32(rng.NormFloat64())}
	return Record{
		ID:    id,
		Pos:   [3]float32{float32(rng.Float64()*200000 - 100000), float32(rng.Float64()*15000 - 1000), float32(rng.Float64()*200000 - 100000)},
		Rot:   q,
		Vel:   [3]float32{float32(rng.Float64()*2000 - 1000), float32(rng.Float64()*600 - 300), float32(rng.Float64()*2000 - 1000)},
		Type:  uint8(1 + rng.IntN(255)),
		Flags: uint8(rng.IntN(int(FlagsKnown) + 1)),
		Age:   uint8(rng.IntN(256)),
	}
}

func normalize(q [4]float32) [4]float64 {
	var n float64
	for _, v := range q {
		n += float64(v) * float64(v)
	}
	n = math.Sqrt(n)
	return [4]float64{float64(q[0]) / n, float64(q[1]) / n, float64(q[2]) / n, float64(q[3]) / n}
}

// quatClose reports whether a and b are the same rotation (q and -q are)
// within tol per component.
func quatClose(a [4]float64, b [4]float32, tol float64) bool {
	same, flipped := true, true
	for i := range a {
		if math.Abs(a[i]-float64(b[i])) > tol {
			same = false
		}
		if math.Abs(a[i]+float64(b[i])) > tol {
			flipped = false
		}
	}
	return same || flipped
}

func TestRoundTripWithinQuantization(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	enc, err := NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, compress := range []bool{false, true} {
		in := make([]Record, 500)
		enc.Reset()
		for i := range in {
			in[i] = randomRecord(rng, uint32(i+1))
			enc.Append(&in[i])
		}
		flags, body := enc.Finish(nil, compress)
		if !compress && flags != 0 {
			t.Fatalf("uncompressed body flagged 0x%x", flags)
		}
		if len(body) != BodySize(len(in), 0, 0) && flags == 0 {
			t.Fatalf("raw body %d bytes, want %d", len(body), BodySize(len(in), 0, 0))
		}
		n, err := dec.Decode(flags, body)
		if err != nil || n != len(in) {
			t.Fatalf("compress=%v: Decode = %d, %v", compress, n, err)
		}
		for i, got := range dec.Records() {
			want := in[i]
			if got.ID != want.ID || got.Type != want.Type || got.Flags != want.Flags || got.Age != want.Age {
				t.Fatalf("record %d: exact fields differ: got %+v want %+v", i, got, want)
			}
			for k := 0; k < 3; k++ {
				if d := math.Abs(float64(got.Pos[k] - want.Pos[k])); d > PosStep/2+1e-3 {
					t.Fatalf("record %d pos[%d]: error %.4f m > %.4f", i, k, d, PosStep/2)
				}
				if d := math.Abs(float64(got.Vel[k] - want.Vel[k])); d > VelStep/2+1e-3 {
					t.Fatalf("record %d vel[%d]: error %.4f > %.4f", i, k, d, VelStep/2)
				}
			}
			// The three sent components move by ≤ QuatStep/2 each; the
			// reconstructed one by a little more.
			if !quatClose(normalize(want.Rot), got.Rot, 3*QuatStep) {
				t.Fatalf("record %d rot: got %v want %v", i, got.Rot, normalize(want.Rot))
			}
		}
	}
}

func TestClampsOutOfRange(t *testing.T) {
	enc, _ := NewEncoder()
	dec, _ := NewDecoder()
	defer dec.Close()
	nan := float32(math.NaN())
	r := Record{ID: 7, Type: 1, Pos: [3]float32{1e9, -1e9, nan}, Vel: [3]float32{5000, -5000, 0}, Rot: [4]float32{0, 0, 0, 0}}
	enc.Reset()
	enc.Append(&r)
	flags, body := enc.Finish(nil, false)
	if _, err := dec.Decode(flags, body); err != nil {
		t.Fatal(err)
	}
	got := dec.Records()[0]
	if got.Pos[0] < -PosXZMin-1 || got.Pos[1] != PosYMin || got.Vel[0] < VelMax-1 || got.Vel[1] != -VelMax {
		t.Fatalf("not clamped: %+v", got)
	}
	if got.Rot != [4]float32{0, 0, 0, 1} {
		t.Fatalf("degenerate quaternion should encode identity, got %v", got.Rot)
	}
}

func TestRecordIs24Bytes(t *testing.T) {
	if bitsID+2*bitsPosXZ+bitsPosY+bitsQIdx+3*bitsQComp+3*bitsVel+bitsType+bitsFlags+bitsAge != RecordSize*8 {
		t.Fatal("record bit widths do not add up to RecordSize")
	}
}

func validBody(t *testing.T, n int) []byte {
	t.Helper()
	enc, _ := NewEncoder()
	enc.Reset()
	for i := 0; i < n; i++ {
		enc.Append(&Record{ID: uint32(i + 1), Type: 2, Rot: [4]float32{0, 0, 0, 1}})
	}
	_, b := enc.Finish(nil, false)
	return append([]byte(nil), b...)
}

func TestDecodeRejects(t *testing.T) {
	dec, _ := NewDecoder()
	defer dec.Close()
	good := validBody(t, 2)
	mut := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name  string
		flags uint8
		body  []byte
		want  error
	}{
		{"empty", 0, nil, ErrHeader},
		{"short header", 0, good[:3], ErrHeader},
		{"version", 0, mut(func(b []byte) []byte { b[0] = 3; return b }), ErrVersion},
		{"truncated record", 0, good[:len(good)-1], ErrLength},
		{"trailing byte", 0, append(mut(func(b []byte) []byte { return b }), 0), ErrLength},
		{"count too big", 0, mut(func(b []byte) []byte { b[1] = 3; return b }), ErrLength},
		{"unknown msg flag", 0x02, good, ErrFlags},
		{"zstd flag on raw", proto.SnapshotFlagZstd, good, ErrZstd},
		{"zero id", 0, mut(func(b []byte) []byte { b[7], b[8], b[9], b[10] = 0, 0, 0, 0; return b }), ErrRecord},
		{"zero type", 0, mut(func(b []byte) []byte { b[HeaderSize+21] = 0; return b }), ErrRecord},
		{"unknown record flag", 0, mut(func(b []byte) []byte { b[HeaderSize+22] = 0x80; return b }), ErrRecord},
		// all three smallest components at +max: sum of squares 1.5
		{"not unit quaternion", 0, mut(func(b []byte) []byte {
			for bit := 94 + 2; bit < 94+32; bit++ {
				b[HeaderSize+bit/8] |= 1 << (bit % 8)
			}
			return b
		}), ErrRecord},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n, err := dec.Decode(c.flags, c.body)
			if !errors.Is(err, c.want) || n != 0 {
				t.Fatalf("Decode = %d, %v; want error %v", n, err, c.want)
			}
		})
	}
}

func TestPaddingIsCarriedAndChecked(t *testing.T) {
	enc, _ := NewEncoder()
	dec, _ := NewDecoder()
	defer dec.Close()
	enc.Reset()
	enc.Append(&Record{ID: 1, Type: 1, Rot: [4]float32{0, 0, 0, 1}})
	pad := make([]byte, 300)
	for i := range pad {
		pad[i] = byte(i * 151)
	}
	flags, body := enc.Finish(pad, true)
	n, err := dec.Decode(flags, body)
	if err != nil || n != 1 {
		t.Fatalf("Decode = %d, %v", n, err)
	}
}

func TestCompressedSmallerAndFlagged(t *testing.T) {
	enc, _ := NewEncoder()
	enc.Reset()
	for i := 0; i < 50; i++ {
		enc.Append(&Record{ID: uint32(i + 1), Type: 2, Pos: [3]float32{100, 4000, 100}, Rot: [4]float32{0, 0, 0, 1}})
	}
	flags, body := enc.Finish(nil, true)
	if flags != proto.SnapshotFlagZstd || len(body) >= BodySize(50, 0, 0) {
		t.Fatalf("flags 0x%x, %d bytes (raw %d)", flags, len(body), BodySize(50, 0, 0))
	}
	// A body that cannot shrink is sent raw.
	enc.Reset()
	flags, body = enc.Finish(nil, true)
	if flags != 0 || len(body) != HeaderSize {
		t.Fatalf("empty body: flags 0x%x len %d", flags, len(body))
	}
}

func TestZstdBombRejected(t *testing.T) {
	enc, _ := NewEncoder()
	big := make([]byte, MaxBodyBytes+1000)
	frame := enc.zenc.EncodeAll(big, nil)
	dec, _ := NewDecoder()
	defer dec.Close()
	if _, err := dec.Decode(proto.SnapshotFlagZstd, frame); !errors.Is(err, ErrZstd) {
		t.Fatalf("oversized frame: %v", err)
	}
}

func TestEncoderSteadyStateDoesNotAllocate(t *testing.T) {
	enc, _ := NewEncoder()
	rng := rand.New(rand.NewPCG(3, 4))
	recs := make([]Record, 200)
	for i := range recs {
		recs[i] = randomRecord(rng, uint32(i+1))
	}
	build := func() {
		enc.Reset()
		for i := range recs {
			enc.Append(&recs[i])
		}
		enc.Finish(nil, true)
	}
	build()
	if a := testing.AllocsPerRun(50, build); a != 0 {
		t.Fatalf("Encoder allocates %.1f times per snapshot in steady state", a)
	}
	dec, _ := NewDecoder()
	defer dec.Close()
	flags, body := enc.Finish(nil, true)
	body = append([]byte(nil), body...)
	dec.Decode(flags, body)
	if a := testing.AllocsPerRun(50, func() { dec.Decode(flags, body) }); a != 0 {
		t.Fatalf("Decoder allocates %.1f times per snapshot in steady state", a)
	}
}

func FuzzDecode(f *testing.F) {
	enc, _ := NewEncoder()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, 3} {
		for _, c := range []bool{false, true} {
			enc.Reset()
			for i := 0; i < n; i++ {
				r := randomRecord(rng, uint32(i+1))
				enc.Append(&r)
				enc.AppendEvent(&Event{Kind: uint8(1 + i%4), ID: uint32(i + 1)})
			}
			flags, body := enc.Finish([]byte{1, 2, 3}, c)
			f.Add(flags, append([]byte(nil), body...))
		}
	}
	f.Add(uint8(0), []byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(0), []byte{2, 0xff, 0xff, 0xff, 0xff, 0, 0})
	for _, g := range bodyGoldens() {
		f.Add(uint8(0), unhexBody(f, g.hex))
	}
	dec, err := NewDecoder()
	if err != nil {
		f.Fatal(err)
	}
	re, _ := NewEncoder()
	f.Fuzz(func(t *testing.T, flags uint8, body []byte) {
		n, err := dec.Decode(flags, body)
		if err != nil {
			if n != 0 {
				t.Fatalf("error with %d entities", n)
			}
			return
		}
		recs := dec.Records()
		if len(recs) != n {
			t.Fatalf("Records %d != %d", len(recs), n)
		}
		// Whatever decodes must re-encode to a body that decodes to the
		// same exact fields.
		re.Reset()
		for i := range recs {
			re.Append(&recs[i])
		}
		evs := append([]Event(nil), dec.Events()...)
		for i := range evs {
			re.AppendEvent(&evs[i])
		}
		want := append([]Record(nil), recs...)
		fl, b := re.Finish(nil, false)
		if m, err := dec.Decode(fl, b); err != nil || m != n {
			t.Fatalf("re-encode: %d, %v", m, err)
		}
		if got := dec.Events(); len(got) != len(evs) || (len(evs) > 0 && !slices.Equal(got, evs)) {
			t.Fatalf("re-encode events: %+v != %+v", got, evs)
		}
		for i, r := range dec.Records() {
			if r.ID != want[i].ID || r.Type != want[i].Type || r.Flags != want[i].Flags || r.Pos != want[i].Pos || r.Vel != want[i].Vel {
				t.Fatalf("re-encode record %d: %+v != %+v", i, r, want[i])
			}
		}
	})
}

func BenchmarkEncode100(b *testing.B) {
	enc, _ := NewEncoder()
	rng := rand.New(rand.NewPCG(7, 8))
	recs := make([]Record, 100)
	for i := range recs {
		recs[i] = randomRecord(rng, uint32(i+1))
	}
	b.ReportAllocs()
	for b.Loop() {
		enc.Reset()
		for i := range recs {
			enc.Append(&recs[i])
		}
		enc.Finish(nil, true)
	}
}

func BenchmarkDecode100(b *testing.B) {
	enc, _ := NewEncoder()
	rng := rand.New(rand.NewPCG(7, 8))
	enc.Reset()
	for i := 0; i < 100; i++ {
		r := randomRecord(rng, uint32(i+1))
		enc.Append(&r)
	}
	flags, body := enc.Finish(nil, true)
	dec, _ := NewDecoder()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := dec.Decode(flags, body); err != nil {
			b.Fatal(err)
		}
	}
}

func TestEncodeRecordMatchesAppend(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	a, _ := NewEncoder()
	b, _ := NewEncoder()
	a.Reset()
	b.Reset()
	for i := 0; i < 100; i++ {
		r := randomRecord(rng, uint32(i+1))
		r.Flags &^= FlagOwn
		var pre [RecordSize]byte
		EncodeRecord(&pre, &r)
		r.Flags |= FlagOwn * uint8(i%2)
		a.Append(&r)
		b.AppendEncoded(&pre, FlagOwn*uint8(i%2), r.Age)
	}
	_, ba := a.Finish(nil, false)
	_, bb := b.Finish(nil, false)
	if string(ba) != string(bb) {
		t.Fatal("AppendEncoded bytes differ from Append")
	}
}
