// Package trace is the FLIT v1 input-trace codec: the file format in which
// the reference server records every peer's accepted Input and from which
// the swarm replays real player behaviour at scale. The layout is the one
// docs/trace-format.md documents byte for byte (little-endian, a 10-byte
// header then 28-byte records back to back), kept exactly so that
// recordings are interchangeable with other tools that speak FLIT v1.
package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
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

// MaxFileBytes bounds what ReadFile loads (about 38 million records, a week
// of one peer at 60 Hz): a bigger file is refused rather than exhausting
// memory.
const MaxFileBytes = 1 << 30

// ReadFile reads and decodes the file at path; errors name it.
func ReadFile(path string) (*Trace, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	if st.IsDir() {
		return nil, fmt.Errorf("trace %s: is a directory", path)
	}
	if st.Size() > MaxFileBytes {
		return nil, fmt.Errorf("trace %s: %d bytes is over the %d-byte limit", path, st.Size(), MaxFileBytes)
	}
	b, err := os.ReadFile(path)
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
