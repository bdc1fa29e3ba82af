package snapshot

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// flight is a small deterministic world for the delta tests: n entities
// flying steady turns at reference-world speeds, as the server's loiterers.
type flight struct {
	recs []Record
	head []float64
}

func newFlight(n int, seed uint64) *flight {
	rng := rand.New(rand.NewPCG(seed, 7))
	f := &flight{}
	for i := 0; i < n; i++ {
		f.recs = append(f.recs, Record{ID: uint32(3 + 2*i), Type: 16, Flags: FlagAI,
			Pos: [3]float32{float32(rng.Float64()*20000 - 10000), float32(1000 + rng.Float64()*3000), float32(rng.Float64()*20000 - 10000)}})
		f.head = append(f.head, rng.Float64()*2*math.Pi)
	}
	return f
}

// step advances every entity one 60 Hz tick along a 0.2 rad/s turn at 136 m/s.
func (f *flight) step() {
	for i := range f.recs {
		f.head[i] += 0.2 / 60
		r := &f.recs[i]
		s, c := math.Sincos(f.head[i])
		r.Vel = [3]float32{float32(136 * s), 0, float32(136 * c)}
		for k := range r.Pos {
			r.Pos[k] += r.Vel[k] / 60
		}
		sy, cy := math.Sincos(f.head[i] / 2)
		r.Rot = [4]float32{0, float32(sy), 0, float32(cy)}
	}
}

// link is one server→client path: the server's encoder and ring, the
// client's decoder and ring.
type link struct {
	enc  *Encoder
	dec  *Decoder
	sent Ring
	got  Ring
}

func newLink(t testing.TB) *link {
	enc, err := NewEncoder()
	if err != nil {
		t.Fatal(err)
	}
	dec, err := NewDecoder()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dec.Close)
	return &link{enc: enc, dec: dec}
}

// send encodes recs (every third skipped on odd ticks, as a budget would)
// as the snapshot of tick against ack.
func (l *link) send(recs []Record, tick, ack uint32, hasAck, corrupt bool) (uint8, []byte, Delta) {
	l.enc.Reset()
	for i := range recs {
		if tick%2 == 1 && i%3 == 0 {
			continue
		}
		s := Quantize(&recs[i])
		l.enc.AppendState(&s)
	}
	return l.enc.FinishDelta(tick, &l.sent, ack, hasAck, nil, true, corrupt)
}

func TestDeltaRoundTripWithinQuantisation(t *testing.T) {
	for _, lag := range []uint32{1, 2, 5} {
		l := newLink(t)
		f := newFlight(40, uint64(lag))
		var acked []uint32 // ticks the client decoded, newest last
		deltas := 0
		for tick := uint32(1000); tick < 1200; tick++ {
			f.step()
			ack, has := uint32(0), false
			if len(acked) >= int(lag) {
				ack, has = acked[len(acked)-int(lag)], true
			}
			flags, body, d := l.send(f.recs, tick, ack, has, false)
			n, isDelta, err := l.dec.DecodeRing(flags, body, tick, &l.got)
			if err != nil {
				t.Fatalf("lag %d tick %d: %v", lag, tick, err)
			}
			if isDelta != d.IsDelta || isDelta != has {
				t.Fatalf("lag %d tick %d: decoder says delta %v, encoder %v, ack %v", lag, tick, isDelta, d.IsDelta, has)
			}
			if isDelta {
				deltas++
			}
			acked = append(acked, tick)
			checkWithinError(t, f.recs, l.dec.Records(), n)
		}
		if deltas < 190 {
			t.Errorf("lag %d: %d deltas of 200 snapshots", lag, deltas)
		}
	}
}

// checkWithinError holds each decoded record to the version-3 error bounds
// of the record it came from: position 1/16 m, velocity 1/16 m/s, each
// quaternion component QuatStep/2 (plus float32 slack).
func checkWithinError(t *testing.T, want []Record, got []Record, n int) {
	t.Helper()
	if len(got) != n {
		t.Fatalf("%d records for %d entities", len(got), n)
	}
	byID := map[uint32]*Record{}
	for i := range want {
		byID[want[i].ID] = &want[i]
	}
	for _, g := range got {
		w := byID[g.ID]
		if w == nil {
			t.Fatalf("decoded unknown id %d", g.ID)
		}
		for k := range g.Pos {
			if d := math.Abs(float64(g.Pos[k] - w.Pos[k])); d > PosStepV3/2+0.01 {
				t.Fatalf("id %d pos[%d] off by %g m", g.ID, k, d)
			}
			if d := math.Abs(float64(g.Vel[k] - w.Vel[k])); d > VelStep/2+1e-4 {
				t.Fatalf("id %d vel[%d] off by %g m/s", g.ID, k, d)
			}
		}
		if !quatClose(normalize(w.Rot), g.Rot, QuatStep) {
			t.Fatalf("id %d rot %v, want %v", g.ID, g.Rot, w.Rot)
		}
		if g.Type != w.Type || g.Flags != w.Flags {
			t.Fatalf("id %d type/flags %d/%d, want %d/%d", g.ID, g.Type, g.Flags, w.Type, w.Flags)
		}
	}
}

func TestDeltaFallsBackToFull(t *testing.T) {
	cases := []struct {
		name     string
		ack      uint32
		hasAck   bool
		wantBase bool
	}{
		{"no ack", 0, false, false},
		{"acked snapshot held", 1005, true, true},
		{"acked snapshot left the ring", 1000, true, false},
		{"ack of a snapshot never sent", 5, true, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := newLink(t)
			f := newFlight(10, 3)
			for tick := uint32(1000); tick < 1000+RingSize+1; tick++ {
				f.step()
				l.send(f.recs, tick, 0, false, false)
			}
			_, _, d := l.send(f.recs, 1000+RingSize+1, c.ack, c.hasAck, false)
			if d.IsDelta != c.wantBase {
				t.Errorf("delta %v, want %v", d.IsDelta, c.wantBase)
			}
		})
	}
}

func TestDeltaRejects(t *testing.T) {
	l := newLink(t)
	f := newFlight(20, 4)
	f.step()
	flags, body, _ := l.send(f.recs, 10, 0, false, false)
	if _, _, err := l.dec.CheckRing(flags, body, 10, &l.got); err != nil {
		t.Fatal(err)
	}
	f.step()
	flags, body, _ = l.send(f.recs, 11, 10, true, false)
	raw := plainBody(t, l.dec, flags, body)
	cases := []struct {
		name string
		tick uint32
		ring *Ring
		body []byte
		want error
	}{
		{"baseline not held", 11, &Ring{}, raw, ErrBaseline},
		{"decoded at another tick", 12, nil, raw, ErrBaseline},
		{"short header", 11, nil, raw[:HeaderSizeV3-1], ErrHeader},
		{"truncated entities", 11, nil, raw[:len(raw)-1], ErrDelta},
		{"trailing byte", 11, nil, append(bytes.Clone(raw), 0), ErrDelta},
		{"wrong hash", 11, nil, withByte(raw, 3, raw[3]^1), ErrDelta},
		{"bit flipped", 11, nil, withByte(raw, HeaderSizeV3+5, raw[HeaderSizeV3+5]^4), ErrDelta},
		{"events past the end", 11, nil, withByte(raw, 9, 200), ErrLength},
		{"without a ring", 11, nil, nil, ErrVersion},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ring := c.ring
			if ring == nil {
				ring = cloneRing(&l.got)
			}
			var err error
			if c.body == nil {
				_, err = l.dec.Check(0, raw)
			} else {
				_, _, err = l.dec.CheckRing(0, c.body, c.tick, ring)
			}
			if !errors.Is(err, c.want) {
				t.Errorf("err %v, want %v", err, c.want)
			}
		})
	}
}

func withByte(b []byte, i int, v byte) []byte {
	c := bytes.Clone(b)
	c[i] = v
	return c
}

func cloneRing(r *Ring) *Ring {
	c := *r
	for i := range c.views {
		c.views[i].states = append([]State(nil), r.views[i].states...)
	}
	return &c
}

func plainBody(t testing.TB, d *Decoder, flags uint8, body []byte) []byte {
	raw, err := d.plain(flags, body)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(raw)
}

// TestCorruptDeltaIsAnError: the corrupt_delta_every_nth fault's flipped
// bit never decodes; the client keeps its ring, and the next delta against
// its last good snapshot decodes again.
func TestCorruptDeltaIsAnError(t *testing.T) {
	l := newLink(t)
	f := newFlight(30, 5)
	good := uint32(0)
	has := false
	for tick := uint32(1); tick < 200; tick++ {
		f.step()
		corrupt := tick%7 == 0
		flags, body, d := l.send(f.recs, tick, good, has, corrupt)
		_, _, err := l.dec.CheckRing(flags, body, tick, &l.got)
		if d.Corrupted != (corrupt && has) {
			t.Fatalf("tick %d: corrupted %v", tick, d.Corrupted)
		}
		if d.Corrupted {
			if err == nil {
				t.Fatalf("tick %d: a corrupted delta decoded", tick)
			}
			continue
		}
		if err != nil {
			t.Fatalf("tick %d: %v", tick, err)
		}
		good, has = tick, true
	}
}

func TestDeltaSmallerThanFull(t *testing.T) {
	l := newLink(t)
	f := newFlight(48, 6)
	var full, delta int
	for tick := uint32(1); tick < 100; tick++ {
		f.step()
		_, body, d := l.send(f.recs, tick, tick-1, tick > 1, false)
		if d.IsDelta {
			delta = len(body)
		} else {
			full = len(body)
		}
	}
	// 48 entities (32 on odd ticks): a full version-3 record is about 20
	// bytes, a steady turn's delta under 6.
	if full == 0 || delta == 0 || delta*3 > full || delta > 48*6 {
		t.Errorf("full %d bytes, delta %d", full, delta)
	}
	t.Logf("full %d B, delta %d B for 48 or 32 entities", full, delta)
}

func TestDeltaSteadyStateDoesNotAllocate(t *testing.T) {
	l := newLink(t)
	f := newFlight(48, 8)
	tick := uint32(1)
	run := func() {
		f.step()
		flags, body, _ := l.send(f.recs, tick, tick-1, tick > 1, false)
		if _, _, err := l.dec.CheckRing(flags, body, tick, &l.got); err != nil {
			t.Fatal(err)
		}
		tick++
	}
	for i := 0; i < 3*RingSize; i++ {
		run()
	}
	if n := testing.AllocsPerRun(200, run); n != 0 {
		t.Errorf("%.1f allocations per encode+decode", n)
	}
}

func TestExpGolombRoundTrip(t *testing.T) {
	for _, k := range []uint{0, 1, 2, 3} {
		vals := []uint64{0, 1, 2, 3, 7, 8, 100, 1 << 20, math.MaxUint32, math.MaxUint32 + 1}
		var w bitWriter
		w.reset(nil)
		for _, v := range vals {
			w.writeEG(v, k)
		}
		r := bitReader{b: w.flush()}
		for _, v := range vals {
			if got := r.readEG(k); got != v || r.bad {
				t.Fatalf("k %d: read %d, want %d (bad %v)", k, got, v, r.bad)
			}
		}
		if !r.rest() {
			t.Errorf("k %d: bits left over", k)
		}
	}
}

// deltaSeed is a baseline (tick 100) and a delta against it (tick 102) of
// a flight of 12 with events: FuzzDecodeDelta's starting point.
func deltaSeed(t testing.TB) (base []byte, delta []byte) {
	l := newLink(t)
	f := newFlight(12, 9)
	f.step()
	_, b, _ := l.send(f.recs, 100, 0, false, false)
	base = plainBody(t, l.dec, 0, b)
	f.step()
	f.step()
	l.enc.Reset()
	for i := range f.recs {
		s := Quantize(&f.recs[i])
		s.Age = uint8(i)
		l.enc.AppendState(&s)
	}
	l.enc.AppendEvent(&Event{Kind: EventDespawn, ID: 5})
	l.enc.AppendEvent(&Event{Kind: EventImpact, ID: 7, Other: 9, Value: 3})
	_, _, _ = l.enc.FinishDelta(102, &l.sent, 100, true, []byte{1, 2}, false, false)
	return base, bytes.Clone(l.enc.raw)
}

// FuzzDecodeDelta: whatever the bytes, a delta body decodes only to states
// that encode back to exactly those bytes (one form per content), never
// panics, and a decode that fails leaves the client's ring untouched.
func FuzzDecodeDelta(f *testing.F) {
	base, delta := deltaSeed(f)
	f.Add(uint8(0), delta)
	f.Add(uint8(0), base)
	f.Add(uint8(0), withByte(delta, HeaderSizeV3+3, delta[HeaderSizeV3+3]^1))
	f.Fuzz(func(t *testing.T, flags uint8, body []byte) {
		l := newLink(t)
		if _, _, err := l.dec.CheckRing(0, base, 100, &l.got); err != nil {
			t.Fatal(err)
		}
		before := cloneRing(&l.got)
		n, isDelta, err := l.dec.DecodeRing(flags, body, 102, &l.got)
		if err != nil {
			if !ringsEqual(before, &l.got) {
				t.Fatalf("a failed decode changed the ring: %v", err)
			}
			return
		}
		raw := plainBody(t, l.dec, flags, body)
		if len(raw) == 0 || raw[0] != VersionDelta {
			return // versions 1 and 2: FuzzDecode's
		}
		// Re-encode what decoded against the same baseline.
		srv := newLink(t)
		srv.enc.Reset()
		for _, s := range l.dec.states {
			srv.enc.AppendState(&s)
		}
		for _, ev := range l.dec.Events() {
			srv.enc.AppendEvent(&ev)
		}
		mkBase := newLink(t)
		mkBase.dec.CheckRing(0, base, 100, &srv.sent)
		pad := raw[len(raw)-int(binary.LittleEndian.Uint16(raw[11:])):]
		srv.enc.FinishDelta(102, &srv.sent, 100, isDelta, pad, false, false)
		if !bytes.Equal(srv.enc.raw, raw) || n != len(l.dec.states) {
			t.Fatalf("decoded %d states that re-encode differently:\n got %x\nwant %x", n, srv.enc.raw, raw)
		}
	})
}

func ringsEqual(a, b *Ring) bool {
	for i := range a.views {
		va, vb := &a.views[i], &b.views[i]
		if va.valid != vb.valid || va.tick != vb.tick || !equalStates(va.states, vb.states) {
			return false
		}
	}
	return a.next == b.next
}

func equalStates(a, b []State) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func BenchmarkDeltaEncode48(b *testing.B) {
	l := newLink(b)
	f := newFlight(48, 10)
	tick := uint32(1)
	b.ReportAllocs()
	for b.Loop() {
		f.step()
		l.send(f.recs, tick, tick-1, tick > 1, false)
		tick++
	}
}

func BenchmarkDeltaCheck48(b *testing.B) {
	l := newLink(b)
	f := newFlight(48, 11)
	type snap struct {
		flags uint8
		body  []byte
	}
	var snaps []snap
	for tick := uint32(1); tick <= 2*RingSize; tick++ {
		f.step()
		flags, body, _ := l.send(f.recs, tick, tick-1, tick > 1, false)
		snaps = append(snaps, snap{flags, bytes.Clone(body)})
	}
	b.ReportAllocs()
	var ring Ring
	for b.Loop() {
		ring.Reset() // storage kept: the steady state of a client's ring
		for i, s := range snaps {
			if _, _, err := l.dec.CheckRing(s.flags, s.body, uint32(i+1), &ring); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(snaps)), "ns/snapshot")
}

// BenchmarkDeltaCheckPR is a client in pr's shape: 512 entities in view, 48
// of them carried per snapshot (round robin, as a binding budget spreads
// them), acknowledged two snapshots late; per snapshot, the decode and the
// view it leaves.
func BenchmarkDeltaCheckPR(b *testing.B) {
	l := newLink(b)
	f := newFlight(512, 12)
	type snap struct {
		flags uint8
		body  []byte
	}
	var snaps []snap
	for tick := uint32(1); tick <= 4*RingSize; tick++ {
		f.step()
		l.enc.Reset()
		for i := 0; i < 48; i++ {
			s := Quantize(&f.recs[(int(tick)*48+i)%len(f.recs)])
			l.enc.AppendState(&s)
		}
		flags, body, _ := l.enc.FinishDelta(tick, &l.sent, tick-2, tick > 2, nil, true, false)
		snaps = append(snaps, snap{flags, bytes.Clone(body)})
	}
	b.ReportAllocs()
	var ring Ring
	for b.Loop() {
		ring.Reset()
		for i, s := range snaps {
			if _, _, err := l.dec.CheckRing(s.flags, s.body, uint32(i+1), &ring); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(snaps)), "ns/snapshot")
}

// TestReleaseHoldsOneRoundTrip: once a peer acknowledged a snapshot, the
// views before it are no baseline any more; Release drops them, the server
// ring then holds the views of one round trip, deltas still decode, and
// the storage circulates without allocating.
func TestReleaseHoldsOneRoundTrip(t *testing.T) {
	l := newLink(t)
	f := newFlight(48, 13)
	const lag = 3
	run := func(tick uint32) {
		f.step()
		ack, has := tick-lag, tick > lag
		if has {
			l.enc.Release(&l.sent, ack)
		}
		flags, body, d := l.send(f.recs, tick, ack, has, false)
		if d.IsDelta != has {
			t.Fatalf("tick %d: delta %v, want %v", tick, d.IsDelta, has)
		}
		if _, _, err := l.dec.CheckRing(flags, body, tick, &l.got); err != nil {
			t.Fatalf("tick %d: %v", tick, err)
		}
	}
	tick := uint32(1)
	for ; tick < 3*RingSize; tick++ {
		run(tick)
	}
	held := 0
	for i := range l.sent.views {
		if l.sent.views[i].states != nil {
			held++
		}
	}
	if held != lag+1 || l.sent.Has(tick-lag-2) || !l.sent.Has(tick-lag-1) {
		t.Errorf("the server ring holds %d views, want %d (the acknowledged one and after)", held, lag+1)
	}
	if n := testing.AllocsPerRun(200, func() { run(tick); tick++ }); n != 0 {
		t.Errorf("%.1f allocations per snapshot with releases", n)
	}
}

// TestDeltaRejectsNonCanonical: a delta entity that flags a field changed
// but leaves it equal decodes to the same states as the canonical body,
// with a matching hash; the decoder still refuses it, so one content has
// one encoding (what FuzzDecodeDelta's re-encode check relies on).
func TestDeltaRejectsNonCanonical(t *testing.T) {
	l := newLink(t)
	f := newFlight(1, 14)
	f.step()
	flags, body, _ := l.send(f.recs, 10, 0, false, false)
	if _, _, err := l.dec.CheckRing(flags, body, 10, &l.got); err != nil {
		t.Fatal(err)
	}
	base := l.got.find(10).states[0]
	want := base // what each body below decodes to: the prediction, unchanged
	for k := range want.Pos {
		want.Pos[k] = uint32(predict(&base, k, 1))
	}
	cases := []struct {
		name  string
		write func(w *bitWriter)
	}{
		{"position flagged, zero residuals", func(w *bitWriter) {
			w.write(maskPos, bitsMask)
			for range 3 {
				w.writeEG(0, kPos)
			}
		}},
		{"velocity flagged, unchanged", func(w *bitWriter) {
			w.write(maskVel, bitsMask)
			for range 3 {
				w.writeEG(0, kVel)
			}
		}},
		{"orientation flagged, unchanged", func(w *bitWriter) {
			w.write(maskQuat, bitsMask)
			w.write(1, 1)
			for range 3 {
				w.writeEG(0, kQuat)
			}
		}},
		{"orientation whole, same q_index", func(w *bitWriter) {
			w.write(maskQuat, bitsMask)
			w.write(0, 1)
			w.write(base.Quat, 32)
		}},
		{"type and flags flagged, unchanged", func(w *bitWriter) {
			w.write(maskMeta, bitsMask)
			w.write(uint32(base.Type), bitsType)
			w.write(uint32(base.Flags), bitsFlags3)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var w bitWriter
			w.reset(append([]byte(nil), zeroHeaderV3[:]...))
			w.writeEG(uint64(want.ID-1), kGap)
			w.writeEG(0, kAge)
			c.write(&w)
			raw := w.flush()
			putHeaderV3(raw, 1, hashFinal(stateHash(hashSeed(11, 1), &want)), 1, 0, 0)
			_, _, err := l.dec.CheckRing(0, raw, 11, cloneRing(&l.got))
			if !errors.Is(err, ErrDelta) || !strings.Contains(err.Error(), "equal") && !strings.Contains(err.Error(), "zero") && !strings.Contains(err.Error(), "unchanged") {
				t.Errorf("err %v, want a non-canonical ErrDelta", err)
			}
		})
	}
	// The canonical form of the same content (mask 0) decodes.
	var w bitWriter
	w.reset(append([]byte(nil), zeroHeaderV3[:]...))
	w.writeEG(uint64(want.ID-1), kGap)
	w.writeEG(0, kAge)
	w.write(0, bitsMask)
	raw := w.flush()
	putHeaderV3(raw, 1, hashFinal(stateHash(hashSeed(11, 1), &want)), 1, 0, 0)
	if _, delta, err := l.dec.CheckRing(0, raw, 11, cloneRing(&l.got)); err != nil || !delta {
		t.Errorf("the canonical body: delta %v, %v", delta, err)
	}
}

// floorDiv is floor division written out, the reference floorDiv120 is
// held to.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// TestFloorDiv120MatchesFloorDiv: predict's division gives floor division's
// quotient over its whole domain (2·v·dt + 60 for every velocity code and
// every dt), at the edges and at random points, so the encoder and the
// decoder predict the same position whichever they ran.
func TestFloorDiv120MatchesFloorDiv(t *testing.T) {
	check := func(a int64) {
		if got, want := floorDiv120(a), floorDiv(a, 120); got != want {
			t.Fatalf("floorDiv120(%d) = %d, want %d", a, got, want)
		}
	}
	for _, v := range []int64{-velZero, -velZero + 1, -1, 0, 1, velZero - 2, velZero - 1} {
		for _, dt := range []int64{0, 1, 2, 59, 60, 61, 119, 120, 121, 240, 65535, 1 << 31, 1<<32 - 1} {
			for d := int64(-2); d <= 2; d++ {
				check(2*v*dt + 60 + d)
			}
		}
	}
	for a := int64(-1000); a <= 1000; a++ {
		check(a)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1_000_000 {
		v, dt := rng.Int64N(2*velZero)-velZero, rng.Int64N(1<<32)
		check(2*v*dt + 60)
		check(2*v*int64(dt%256) + 60)
	}
}
