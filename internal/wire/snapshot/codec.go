package snapshot

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/klauspost/compress/zstd"

	"github.com/scalegate/scalegate/internal/wire/proto"
)

// Encoder builds bodies. It is reusable and, once its buffers have grown to
// the largest body seen, allocates nothing per snapshot. Not safe for
// concurrent use: the server keeps one per worker.
type Encoder struct {
	raw  []byte
	out  []byte
	evs  []byte // the event section, appended after the records by Finish
	n    int
	nev  int
	bw   bitWriter
	zenc *zstd.Encoder
	// Version 3: the states of the body being built, the ids its events
	// despawn, and scratch for the view it leaves (swapped with the ring
	// slot it replaces, so rings and encoder trade storage, never allocate).
	states   []State
	despawns []uint32
	view     []State
	// order and sorted are sortStates' scratch: sort keys, and the states
	// permuted into id order.
	order  []uint64
	sorted []State
	// free is view storage released from peers' rings (Release), reused
	// before any new slice is made.
	free [][]State
	// refWrite writes the entity section with writeStates, the reference
	// the faster writeStatesFast is held to (tests).
	refWrite bool
}

// NewEncoder returns an Encoder with its own zstd encoder (fastest level,
// no checksum: the transport already guards integrity, and 4 bytes per
// snapshot matter at 60 Hz).
func NewEncoder() (*Encoder, error) {
	z, err := zstd.NewWriter(nil,
		zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(1),
		zstd.WithEncoderCRC(false),
		zstd.WithLowerEncoderMem(true),
		zstd.WithZeroFrames(true))
	if err != nil {
		return nil, fmt.Errorf("snapshot: zstd encoder: %w", err)
	}
	e := &Encoder{zenc: z}
	e.Reset()
	return e, nil
}

// Reset starts a new body.
func (e *Encoder) Reset() {
	e.raw = append(e.raw[:0], make([]byte, HeaderSize)...)
	e.n, e.nev = 0, 0
	e.evs = e.evs[:0]
	e.states, e.despawns = e.states[:0], e.despawns[:0]
	e.bw.reset(e.raw)
}

// AppendEvent adds one event to the event section (events and records may
// be appended in any order; the body carries all records first).
func (e *Encoder) AppendEvent(ev *Event) {
	e.evs = appendEvent(e.evs, ev)
	e.nev++
	if ev.Kind == EventDespawn {
		e.despawns = append(e.despawns, ev.ID)
	}
}

// Events is the number of events appended since Reset.
func (e *Encoder) Events() int { return e.nev }

// Len is the number of records appended since Reset.
func (e *Encoder) Len() int { return e.n }

// Record byte offsets of the two per-receiver fields: everything before
// them is the same for every peer that receives the entity in a tick, so a
// server may encode each entity once (EncodeRecord) and patch these.
const (
	flagsOffset = RecordSize - 2
	ageOffset   = RecordSize - 1
)

// EncodeRecord writes r's 24 wire bytes to dst, exactly as Append would
// write them. It does not allocate.
func EncodeRecord(dst *[RecordSize]byte, r *Record) {
	var w bitWriter
	w.reset(dst[:0])
	writeRecord(&w, r)
}

// AppendEncoded adds a record encoded by EncodeRecord, with extraFlags
// or-ed into its flags and its age replaced: the per-peer part of a record.
func (e *Encoder) AppendEncoded(rec *[RecordSize]byte, extraFlags, age uint8) {
	// Records are whole bytes, so the writer is byte-aligned here.
	e.bw.buf = append(e.bw.buf, rec[:flagsOffset]...)
	e.bw.buf = append(e.bw.buf, rec[flagsOffset]|extraFlags, age)
	e.n++
}

// Append adds one record. Out-of-range values are clamped to the format's
// ranges; a zero ID or Type is the caller's bug and is written as given (the
// decoder will reject it, which a round-trip test catches).
func (e *Encoder) Append(r *Record) {
	writeRecord(&e.bw, r)
	e.n++
}

func writeRecord(w *bitWriter, r *Record) {
	w.write(r.ID, bitsID)
	w.write(quantize(float64(r.Pos[0]), PosXZMin, PosStep, bitsPosXZ), bitsPosXZ)
	w.write(quantize(float64(r.Pos[1]), PosYMin, PosStep, bitsPosY), bitsPosY)
	w.write(quantize(float64(r.Pos[2]), PosXZMin, PosStep, bitsPosXZ), bitsPosXZ)
	idx, c := packQuat(r.Rot)
	w.write(idx, bitsQIdx)
	for _, v := range c {
		w.write(v, bitsQComp)
	}
	for _, v := range r.Vel {
		w.write(quantize(float64(v), -VelMax, VelStep, bitsVel), bitsVel)
	}
	w.write(uint32(r.Type), bitsType)
	w.write(uint32(r.Flags), bitsFlags)
	w.write(uint32(r.Age), bitsAge)
}

// Finish completes the body: it appends pad (opaque padding, normally nil),
// and, when compress is true, zstd-compresses it — unless the frame would be
// no smaller than the raw body, in which case the raw body is returned and
// flags says so. The body aliases the Encoder's buffers until the next Reset.
func (e *Encoder) Finish(pad []byte, compress bool) (flags uint8, body []byte) {
	e.raw = e.bw.flush()
	if e.n > math.MaxUint16 || e.nev > math.MaxUint16 || len(pad) > math.MaxUint16 {
		panic(fmt.Sprintf("snapshot: body too large (%d records, %d events, %d pad bytes)", e.n, e.nev, len(pad)))
	}
	putHeader(e.raw, e.n, e.nev, len(pad))
	e.raw = append(e.raw, e.evs...)
	e.raw = append(e.raw, pad...)
	e.bw.buf = e.raw
	return e.compress(compress)
}

// compress returns the finished raw body, or its zstd frame when compress
// is set and the frame is smaller.
func (e *Encoder) compress(compress bool) (flags uint8, body []byte) {
	if !compress {
		return 0, e.raw
	}
	e.out = e.zenc.EncodeAll(e.raw, e.out[:0])
	if len(e.out) >= len(e.raw) {
		return 0, e.raw
	}
	return proto.SnapshotFlagZstd, e.out
}

// Decode errors. Every error Decode returns wraps one of these.
var (
	ErrFlags   = errors.New("unknown snapshot flags")
	ErrZstd    = errors.New("bad zstd frame")
	ErrHeader  = errors.New("bad body header")
	ErrLength  = errors.New("body length does not match header")
	ErrRecord  = errors.New("invalid entity record")
	ErrEvent   = errors.New("invalid event")
	ErrVersion = errors.New("unsupported body version")
)

// Decoder validates and decodes bodies. It reuses one zstd decoder and its
// buffers; not safe for concurrent use (the swarm keeps one per worker).
type Decoder struct {
	zdec *zstd.Decoder
	buf  []byte
	recs []Record
	evs  []Event
	// Version 3 scratch: the states decoded, the ids despawned, the view
	// being built (see Encoder).
	states   []State
	despawns []uint32
	view     []State
	// pad is the zero-padded copy of an entity section decodeView reads;
	// slow counts the version-3 bodies it left to the reference path, and
	// refOnly skips it (tests hold the two paths equal).
	pad     []byte
	slow    int
	refOnly bool
}

// NewDecoder returns a Decoder whose zstd frames may not decompress beyond
// MaxBodyBytes.
func NewDecoder() (*Decoder, error) {
	z, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(MaxBodyBytes),
		zstd.WithDecoderMaxWindow(1<<20))
	if err != nil {
		return nil, fmt.Errorf("snapshot: zstd decoder: %w", err)
	}
	return &Decoder{zdec: z}, nil
}

// Close releases the zstd decoder.
func (d *Decoder) Close() { d.zdec.Close() }

// Decode validates a Snapshot body carried with the given message flags and
// returns how many entities it holds. Any flag other than
// proto.SnapshotFlagZstd, a broken frame, a header that disagrees with the
// length, a zero id or type, an unknown record flag, a quaternion that is
// not a unit quaternion or an invalid event is an error. Records and Events
// read the body back.
func (d *Decoder) Decode(flags uint8, body []byte) (entities int, err error) {
	return d.walk(flags, body, true)
}

// Check validates a body exactly as Decode does — the same verdict and the
// same error, wrapping the same Err* sentinel, for every input — and
// returns how many entities it holds, without dequantizing the records or
// keeping them: Records and Events are empty afterwards. It is what a
// client that only counts entities and decode errors needs (the swarm),
// at a fraction of Decode's cost; FuzzCheckMatchesDecode holds the two
// together.
func (d *Decoder) Check(flags uint8, body []byte) (entities int, err error) {
	return d.walk(flags, body, false)
}

// walk is Decode (keep: records and events are materialised) and Check:
// one statement of the body rules for both.
func (d *Decoder) walk(flags uint8, body []byte, keep bool) (int, error) {
	d.recs, d.evs = d.recs[:0], d.evs[:0]
	raw, err := d.plain(flags, body)
	if err != nil {
		return 0, err
	}
	return d.walkRaw(raw, keep)
}

// walkRaw is walk after the zstd frame, for versions 1 and 2.
func (d *Decoder) walkRaw(raw []byte, keep bool) (int, error) {
	n, nev, hdr, err := parseHeader(raw)
	if err != nil {
		return 0, err
	}
	end := hdr + n*RecordSize
	if err := d.records(raw[hdr:], n, keep); err != nil {
		return 0, err
	}
	if err := d.events(raw[end:], nev, keep); err != nil {
		return 0, err
	}
	return n, nil
}

// plain returns the uncompressed body, rejecting unknown flags; a zstd
// body is inflated into d.buf so repeated decodes reuse its storage.
func (d *Decoder) plain(flags uint8, body []byte) ([]byte, error) {
	if flags&^proto.SnapshotFlagZstd != 0 {
		return nil, fmt.Errorf("snapshot: flags 0x%02x: %w", flags, ErrFlags)
	}
	if flags&proto.SnapshotFlagZstd == 0 {
		return body, nil
	}
	var err error
	d.buf, err = d.zdec.DecodeAll(body, d.buf[:0])
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w: %w", ErrZstd, err)
	}
	return d.buf, nil
}

// records checks (keep false) or decodes into d.recs (keep true) the n
// records at the start of recs. Checking first runs the fast whole-block
// scan and only then looks again at the first record it rejects, for the
// error; decoding leaves d.recs holding the records before a bad one.
func (d *Decoder) records(recs []byte, n int, keep bool) error {
	first := 0
	if !keep {
		// The records all pass (the common case) or the first that fails
		// is looked at again below for its error.
		first = firstInvalid(recs[:n*RecordSize])
	}
	var err error
	for i, off := first, first*RecordSize; i < n; i, off = i+1, off+RecordSize {
		w := loadRecord(recs[off:])
		if !keep {
			err = w.check()
		} else {
			d.recs = append(d.recs, Record{})
			if err = w.decodeInto(&d.recs[i]); err != nil {
				d.recs = d.recs[:i]
			}
		}
		if err != nil {
			return fmt.Errorf("snapshot: record %d: %w", i, err)
		}
	}
	return nil
}

// events checks the nev events at the start of evs, appending them to
// d.evs when keep; a bad event voids the whole decode, records included.
func (d *Decoder) events(evs []byte, nev int, keep bool) error {
	for i := 0; i < nev; i++ {
		ev := readEvent(evs[i*EventSize:])
		if err := checkEvent(&ev); err != nil {
			d.recs = d.recs[:0]
			return fmt.Errorf("snapshot: event %d: %w", i, err)
		}
		if keep {
			d.evs = append(d.evs, ev)
		}
	}
	return nil
}

// parseHeader reads a version 1 or 2 header and checks that raw is exactly
// as long as it says; hdr is the header's size.
func parseHeader(raw []byte) (n, nev, hdr int, err error) {
	if len(raw) < 1 {
		return 0, 0, 0, fmt.Errorf("snapshot: empty body: %w", ErrHeader)
	}
	var pad int
	switch raw[0] {
	case Version:
		if len(raw) < HeaderSize {
			return 0, 0, 0, fmt.Errorf("snapshot: %d bytes: %w", len(raw), ErrHeader)
		}
		n, nev, pad, hdr = int(binary.LittleEndian.Uint16(raw[1:])), int(binary.LittleEndian.Uint16(raw[3:])),
			int(binary.LittleEndian.Uint16(raw[5:])), HeaderSize
	case 1:
		if len(raw) < HeaderSizeV1 {
			return 0, 0, 0, fmt.Errorf("snapshot: %d bytes: %w", len(raw), ErrHeader)
		}
		n, pad, hdr = int(binary.LittleEndian.Uint16(raw[1:])), int(binary.LittleEndian.Uint16(raw[3:])), HeaderSizeV1
	case VersionDelta:
		return 0, 0, 0, fmt.Errorf("snapshot: version 3 is a delta body: it needs the snapshot's tick and a baseline ring (DecodeRing): %w", ErrVersion)
	default:
		return 0, 0, 0, fmt.Errorf("snapshot: version %d: %w", raw[0], ErrVersion)
	}
	if want := hdr + n*RecordSize + nev*EventSize + pad; len(raw) != want {
		return 0, 0, 0, fmt.Errorf("snapshot: %d bytes, header says %d records + %d events + %d pad = %d: %w",
			len(raw), n, nev, pad, want, ErrLength)
	}
	return n, nev, hdr, nil
}

// checkEvent rejects an unknown kind, a zero id, and fields a kind does not
// carry.
func checkEvent(ev *Event) error {
	switch {
	case ev.Kind < EventDespawn || ev.Kind > EventDestroyed:
		return fmt.Errorf("unknown kind %d: %w", ev.Kind, ErrEvent)
	case ev.ID == 0:
		return fmt.Errorf("kind %d: zero entity id: %w", ev.Kind, ErrEvent)
	case ev.Kind == EventDespawn && (ev.Other != 0 || ev.Value != 0):
		return fmt.Errorf("despawn of %d carries other %d / value %d: %w", ev.ID, ev.Other, ev.Value, ErrEvent)
	case ev.Kind != EventImpact && ev.Value != 0:
		return fmt.Errorf("kind %d of %d carries value %d: %w", ev.Kind, ev.ID, ev.Value, ErrEvent)
	}
	return nil
}

// Records returns the entities of the last successful Decode, in body
// order. The slice is reused by the next Decode.
func (d *Decoder) Records() []Record { return d.recs }

// Events returns the events of the last successful Decode, in body order
// (none for a version-1 body). The slice is reused by the next Decode.
func (d *Decoder) Events() []Event { return d.evs }
