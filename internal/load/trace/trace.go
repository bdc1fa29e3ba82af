// Package trace is the FLIT v1 input-trace codec.
//
// FLIT v1 is the file format in which the reference server records every
// peer's accepted Input and from which the swarm replays real player
// behaviour at scale. The layout is the one docs/trace-format.md documents
// byte for byte (little-endian, a 10-byte header then 28-byte records back
// to back), kept exactly so that recordings are interchangeable with other
// tools that speak FLIT v1.
package trace

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/scalegate/scalegate/internal/guard/boundedfile"
)

// Format constants of FLIT v1.
const (
	// Magic opens every file.
	Magic = "FLIT"
	// Version is the only version this package reads and writes. A later
	// version extends the format; it is refused rather than misread.
	Version = 1
	// HeaderSize is magic (4) + version u16 + tick rate u32.
	HeaderSize = 10
	// RecordSize is server tick u64 + four f32 controls + buttons u32.
	RecordSize = 28
)

// Header is a file's header after the magic.
type Header struct {
	Version  uint16
	TickRate uint32 // server ticks per second of the recording
}

// Record is one accepted Input: the server tick at which it was accepted
// and the controls as the server applied them.
type Record struct {
	ServerTick uint64
	Throttle   float32
	Elevator   float32
	Aileron    float32
	Rudder     float32
	Buttons    uint32
}

// Trace is a decoded file.
type Trace struct {
	Header
	Records []Record
	// TruncatedBytes is the length (1..27) of a partial last record, 0 when
	// the file ends on a record boundary. A recorder killed mid-write leaves
	// one; the complete records before it are still good, so it is counted
	// and reported, never fatal.
	TruncatedBytes int
}

// Sentinel errors, wrapped in a *FormatError.
var (
	// ErrShortHeader: fewer than HeaderSize bytes.
	ErrShortHeader = errors.New("shorter than the 10-byte FLIT header")
	// ErrBadMagic: the first four bytes are not "FLIT".
	ErrBadMagic = errors.New("bad magic")
	// ErrVersion: a version other than 1.
	ErrVersion = errors.New("unsupported FLIT version")
)

// FormatError is a file this package cannot read, naming the file (when
// known) and what is wrong.
type FormatError struct {
	Path string // "" when decoding bytes
	Err  error  // one of the sentinels
	Msg  string // the detail
}

// Error names the file and the problem.
func (e *FormatError) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("trace: %s", e.Msg)
	}
	return fmt.Sprintf("trace %s: %s", e.Path, e.Msg)
}

// Unwrap returns the sentinel.
func (e *FormatError) Unwrap() error { return e.Err }

// AppendHeader appends a FLIT v1 header.
func AppendHeader(b []byte, tickRate uint32) []byte {
	b = append(b, Magic...)
	b = binary.LittleEndian.AppendUint16(b, Version)
	return binary.LittleEndian.AppendUint32(b, tickRate)
}

// AppendRecord appends one record.
func AppendRecord(b []byte, r *Record) []byte {
	b = binary.LittleEndian.AppendUint64(b, r.ServerTick)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.Throttle))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.Elevator))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.Aileron))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(r.Rudder))
	return binary.LittleEndian.AppendUint32(b, r.Buttons)
}

// Encode is a whole file: the header then every record.
func Encode(tickRate uint32, recs []Record) []byte {
	b := AppendHeader(make([]byte, 0, HeaderSize+RecordSize*len(recs)), tickRate)
	for i := range recs {
		b = AppendRecord(b, &recs[i])
	}
	return b
}

// DecodeHeader checks the magic and version of b's first HeaderSize bytes.
func DecodeHeader(b []byte) (Header, error) {
	if len(b) < HeaderSize {
		return Header{}, &FormatError{Err: ErrShortHeader, Msg: fmt.Sprintf("%d byte(s): %v", len(b), ErrShortHeader)}
	}
	if string(b[:4]) != Magic {
		return Header{}, &FormatError{Err: ErrBadMagic, Msg: fmt.Sprintf("bad magic %q (want %q): not a FLIT trace", b[:4], Magic)}
	}
	h := Header{Version: binary.LittleEndian.Uint16(b[4:]), TickRate: binary.LittleEndian.Uint32(b[6:])}
	if h.Version != Version {
		return h, &FormatError{Err: ErrVersion, Msg: fmt.Sprintf("FLIT version %d: this build reads version %d only", h.Version, Version)}
	}
	return h, nil
}

// decodeRecord reads one record from the first RecordSize bytes of b.
func decodeRecord(b []byte) Record {
	f := func(off int) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b[off:])) }
	return Record{
		ServerTick: binary.LittleEndian.Uint64(b),
		Throttle:   f(8), Elevator: f(12), Aileron: f(16), Rudder: f(20),
		Buttons: binary.LittleEndian.Uint32(b[24:]),
	}
}

// Decode reads a whole file. The record count is (len − 10) / 28; a partial
// last record is counted in TruncatedBytes, not an error.
func Decode(b []byte) (*Trace, error) {
	h, err := DecodeHeader(b)
	if err != nil {
		return nil, err
	}
	body := b[HeaderSize:]
	t := &Trace{Header: h, Records: make([]Record, len(body)/RecordSize), TruncatedBytes: len(body) % RecordSize}
	for i := range t.Records {
		t.Records[i] = decodeRecord(body[i*RecordSize:])
	}
	return t, nil
}

// MaxFileBytes bounds one file ReadFile loads: the recorder's default file
// cap (64 MiB, about 2.4 million records, 11 hours of one peer at 60 Hz),
// so every file a recorder writes with the default cap can be read back.
// Bigger is refused by bytes actually read, never by trusting stat.
const MaxFileBytes = DefaultMaxFileBytes

// MaxSetBytes bounds the files one command loads together (the files of a
// trace directory, every trace pattern of one swarm): 256 MiB of files
// hold about 9.6 million records, 345 MB once decoded with their replay
// times.
const MaxSetBytes = 256 << 20

// NewSetBudget is the budget for the trace files one command loads
// together (MaxSetBytes); what names them in the error ("the trace files
// of this swarm").
func NewSetBudget(what string) *boundedfile.Budget {
	return boundedfile.NewBudget(what, MaxSetBytes)
}

// ReadFile reads and decodes the file at path; errors name it. Only a
// regular file is read (a FIFO, a device or a symlink to one is refused
// without blocking), at most MaxFileBytes of it, and the read is abandoned
// when ctx ends.
func ReadFile(ctx context.Context, path string) (*Trace, error) {
	return ReadFileBudget(ctx, path, nil)
}

// ReadFileBudget is ReadFile charging the bytes read to budget (nil: no
// budget beyond MaxFileBytes), for commands that load several files.
func ReadFileBudget(ctx context.Context, path string, budget *boundedfile.Budget) (*Trace, error) {
	var b []byte
	var err error
	if budget != nil {
		b, err = budget.ReadFile(ctx, path, MaxFileBytes)
	} else {
		b, err = boundedfile.ReadFile(ctx, path, MaxFileBytes)
	}
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	t, err := Decode(b)
	if err != nil {
		var fe *FormatError
		if errors.As(err, &fe) {
			fe.Path = path
		}
		return nil, err
	}
	return t, nil
}

// Validate reports the first reason a replay refuses the trace, nil when
// it can be replayed: no records (header only), tick rate 0 (it cannot be
// paced), a NaN or infinite control (the server would drop the Input as
// malformed, so the replay would send nothing real), or a record whose
// tick is before the previous one's (records must be in tick order).
// trace inspect, the swarm and the gate's vet all use it, so a file one
// of them accepts none refuses.
func (t *Trace) Validate() error {
	switch {
	case len(t.Records) == 0:
		return errors.New("no records (header only): nothing to replay")
	case t.TickRate == 0:
		return errors.New("tick rate 0 in the header: replay cannot be paced")
	}
	for i := range t.Records {
		r := &t.Records[i]
		if err := r.Check(); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		if i > 0 && r.ServerTick < t.Records[i-1].ServerTick {
			return fmt.Errorf("record %d: server tick %d is before the previous record's %d (records must be in tick order)", i, r.ServerTick, t.Records[i-1].ServerTick)
		}
	}
	return nil
}

// Check refuses controls no server accepts: a NaN or infinite float.
func (r *Record) Check() error {
	for _, v := range []struct {
		name string
		v    float32
	}{{"throttle", r.Throttle}, {"elevator", r.Elevator}, {"aileron", r.Aileron}, {"rudder", r.Rudder}} {
		if f := float64(v.v); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s is %v", v.name, f)
		}
	}
	return nil
}

// Duration is the span of the recording in seconds: (last tick − first
// tick) / tick rate. Zero with fewer than two records or no tick rate.
func (t *Trace) Duration() float64 {
	if len(t.Records) < 2 || t.TickRate == 0 {
		return 0
	}
	first, last := t.Records[0].ServerTick, t.Records[len(t.Records)-1].ServerTick
	if last < first {
		return 0
	}
	return float64(last-first) / float64(t.TickRate)
}
