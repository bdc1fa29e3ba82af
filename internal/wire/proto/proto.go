// Package proto is the load protocol v1: the byte layouts of its messages.
// Every scalegate server and swarm speaks them, independent of the
// transport that carries them.
//
// Minor version 1 (v1.1) adds input acknowledgements and application-level
// round trips. A server announces it with WelcomeFlagMinor1; a client that
// wants acknowledgements answers with Features, and pings only a server
// that announced it. A v1.0 peer on either side never sees a v1.1 message.
//
// All integers are little-endian; a string is a u8 length followed by UTF-8
// bytes; the first byte of every message is its Type. docs/protocol.md is the
// human-readable form of this file and the two must agree (golden tests pin it).
//
// Encoders append to a caller-owned buffer and never allocate when the buffer
// has room. Decoders are strict: short input, an unknown type, a NaN or
// infinite float, an over-long or non-UTF-8 string and trailing bytes all give
// a *DecodeError, never a panic.
package proto

import (
	"encoding/binary"
	"fmt"
	"math"
	"unicode/utf8"
)

// Type is the first byte of every message.
type Type uint8

// Message types of protocol v1.
const (
	TypeJoin      Type = 0x01 // C→S reliable
	TypeWelcome   Type = 0x02 // S→C reliable
	TypeRefuse    Type = 0x03 // S→C reliable, then the server disconnects
	TypeNotice    Type = 0x04 // S→C reliable
	TypeFeatures  Type = 0x05 // C→S reliable (v1.1)
	TypeInput     Type = 0x10 // C→S unreliable
	TypePing      Type = 0x11 // C→S unreliable (v1.1)
	TypeSnapshot  Type = 0x20 // S→C unreliable
	TypePeerDelay Type = 0x21 // S→C unreliable
	TypePong      Type = 0x22 // S→C unreliable (v1.1)
)

// String names the type as docs/protocol.md's message table does.
func (t Type) String() string {
	switch t {
	case TypeJoin:
		return "Join"
	case TypeWelcome:
		return "Welcome"
	case TypeRefuse:
		return "Refuse"
	case TypeNotice:
		return "Notice"
	case TypeFeatures:
		return "Features"
	case TypeInput:
		return "Input"
	case TypePing:
		return "Ping"
	case TypeSnapshot:
		return "Snapshot"
	case TypePeerDelay:
		return "PeerDelay"
	case TypePong:
		return "Pong"
	}
	return fmt.Sprintf("Type(0x%02x)", uint8(t))
}

// Reliable reports whether the type travels on the reliable channel.
func (t Type) Reliable() bool {
	return t == TypeJoin || t == TypeWelcome || t == TypeRefuse || t == TypeNotice || t == TypeFeatures
}

// ConnectData is the transport connect word ("SG", version 1). A server
// answers any other value with Refuse(ReasonProtocolVersion).
const ConnectData uint32 = 0x53470001

// MaxString is the longest string the u8 length prefix can carry.
const MaxString = 255

// MaxClients is the most clients one server is loaded with in this
// project: the profile schema's bound on clients (a test holds
// schema/profile.cue to it), the reference server's max_peers ceiling, the
// gate's max_peers for a leg and an ENet host's default peer slots. It is
// a testing affordance, not a capacity guarantee.
const MaxClients = 1024

// Reason says why a server refused a peer.
type Reason uint8

// Refuse reasons.
const (
	ReasonServerFull      Reason = 1 // max_peers reached
	ReasonRateLimited     Reason = 2 // connect rate limit
	ReasonPerIPCap        Reason = 3 // max_connections_per_ip
	ReasonProtocolVersion Reason = 4 // wrong connect data
	ReasonBadJoin         Reason = 5 // Join malformed or out of order
)

// String is the stable lower-case name used in reports (refused_by_reason).
func (r Reason) String() string {
	switch r {
	case ReasonServerFull:
		return "server_full"
	case ReasonRateLimited:
		return "rate_limited"
	case ReasonPerIPCap:
		return "per_ip_cap"
	case ReasonProtocolVersion:
		return "protocol_version"
	case ReasonBadJoin:
		return "bad_join"
	}
	return fmt.Sprintf("reason_%d", uint8(r))
}

// NoticeKind is the kind of a Notice.
type NoticeKind uint8

// Notice kinds.
const (
	NoticeShutdown       NoticeKind = 1
	NoticeKicked         NoticeKind = 2
	NoticeConfigReloaded NoticeKind = 3
)

// Input buttons.
const (
	ButtonGun          uint32 = 1 << 0
	ButtonStoreRelease uint32 = 1 << 1
	ButtonAfterburner  uint32 = 1 << 2
)

// SnapshotFlagZstd marks a Snapshot body that is one zstd frame.
const SnapshotFlagZstd uint8 = 1 << 0

// SnapshotFlagInputAck (v1.1) marks a Snapshot whose header goes on with the
// input acknowledgement (SnapshotHeader.InputSeq, InputTick). It belongs to
// the envelope, not the body: a body decoder is handed the flags without it
// (BodyFlags). A server sets it only for a peer that asked (Features).
const SnapshotFlagInputAck uint8 = 1 << 1

// WelcomeFlagMinor1 is the Welcome flag by which a server says it speaks
// v1.1: it answers Ping with Pong, and acknowledges inputs in its
// snapshots to a peer that sends Features with FeatureInputAcks.
const WelcomeFlagMinor1 uint8 = 1 << 0

// FeatureInputAcks is the Features bit asking for input acknowledgements
// in every later Snapshot to this peer.
const FeatureInputAcks uint8 = 1 << 0

// WelcomeFlagDeltas (v1.1) is the Welcome flag by which a server says it
// sends delta snapshot bodies (sg-entities/3) to a peer that asks with
// FeatureSnapshotDeltas, and reads the snapshot acknowledgement in its
// Inputs. Set only with WelcomeFlagMinor1.
const WelcomeFlagDeltas uint8 = 1 << 1

// FeatureSnapshotDeltas is the Features bit asking for delta snapshot
// bodies. The server answers in the bodies themselves (their version byte);
// once the client has decoded one, its Inputs carry the snapshot
// acknowledgement (Input.HasSnapshotAck).
const FeatureSnapshotDeltas uint8 = 1 << 1

// Join is the client's first reliable message.
type Join struct {
	ClientIndex uint32
	EntityType  string
	Name        string
}

// Welcome answers an accepted Join.
type Welcome struct {
	EntityID   uint32
	TickHz     uint16
	ServerTick uint32
	Transport  string // the backend the server actually speaks
	BodyFormat string // "opaque" or a documented format such as "sg-entities/1"
	// Flags has no bits defined in v1: a server sends 0 and a client
	// ignores bits it does not know (decoding keeps them, so a re-encode
	// reproduces the message).
	Flags uint8
}

// Refuse tells a peer why it is being disconnected before it joined.
type Refuse struct {
	Reason  Reason
	Message string
}

// Notice is an out-of-band server message.
type Notice struct {
	Kind    NoticeKind
	Message string
}

// Input is one frame of flight controls. Floats are finite; controls are
// nominally in [-1, 1] (throttle [0, 1]) but range is the server's to clamp.
type Input struct {
	Seq      uint32
	Throttle float32
	Elevator float32
	Aileron  float32
	Rudder   float32
	Buttons  uint32
	// HasSnapshotAck: the Input goes on with SnapshotAck, the tick of the
	// newest Snapshot the client decoded (v1.1, only to a server that
	// announced WelcomeFlagDeltas and sent this client a delta body). The
	// server takes deltas against that snapshot.
	HasSnapshotAck bool
	SnapshotAck    uint32
}

// SnapshotHeader is the fixed part of a Snapshot; the body follows it.
type SnapshotHeader struct {
	Tick  uint32
	Flags uint8
	// InputSeq and InputTick are present when Flags has
	// SnapshotFlagInputAck: the seq of the newest Input the server had
	// applied for this peer when it built the snapshot, and the tick it
	// was applied on.
	InputSeq, InputTick uint32
}

// HasInputAck reports whether the header carries an input acknowledgement.
func (h SnapshotHeader) HasInputAck() bool { return h.Flags&SnapshotFlagInputAck != 0 }

// BodyFlags are the flags that describe the body: the envelope's own bit
// (SnapshotFlagInputAck) cleared, so a body format that rejects bits it
// does not know reads a v1.1 snapshot as it reads a v1.0 one.
func (h SnapshotHeader) BodyFlags() uint8 { return h.Flags &^ SnapshotFlagInputAck }

// Sizes of the fixed-size messages, type byte included.
const (
	InputSize = 1 + 4 + 4*4 + 4
	// InputAckSize is an Input carrying the snapshot acknowledgement.
	InputAckSize       = InputSize + 4
	SnapshotHeaderSize = 1 + 4 + 1
	PeerDelaySize      = 1 + 2
	// SnapshotAckSize is what SnapshotFlagInputAck adds to the header.
	SnapshotAckSize = 4 + 4
	PingSize        = 1 + 4
	PongSize        = 1 + 4
	FeaturesSize    = 1 + 1
)

// ErrKind classifies a decode failure.
type ErrKind uint8

// Decode failure kinds.
const (
	ErrShort       ErrKind = iota + 1 // input ended inside a field
	ErrUnknownType                    // first byte is not a v1 type
	ErrWrongType                      // decoder called on another type
	ErrNonFinite                      // NaN or ±Inf float
	ErrBadString                      // string not valid UTF-8 (on decode or encode)
	ErrTrailing                       // bytes after the last field
	ErrTooLong                        // string longer than MaxString on encode
)

// String names the kind for error messages.
func (k ErrKind) String() string {
	switch k {
	case ErrShort:
		return "short message"
	case ErrUnknownType:
		return "unknown type"
	case ErrWrongType:
		return "wrong type"
	case ErrNonFinite:
		return "non-finite float"
	case ErrBadString:
		return "invalid string"
	case ErrTrailing:
		return "trailing bytes"
	case ErrTooLong:
		return "string too long"
	}
	return "decode error"
}

// DecodeError is the typed error every decoder returns, and the one an
// encoder returns for a string it cannot encode (ErrTooLong, ErrBadString).
// Decoders and encoders return a nil error interface on success, never a
// typed nil *DecodeError.
type DecodeError struct {
	Kind  ErrKind
	Type  Type   // the message type being decoded (or the unknown byte)
	Field string // the field that failed, when known
}

// Error describes the failure as "proto: <type>: <kind> in field <field>".
func (e *DecodeError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("proto: %s: %s in field %s", e.Type, e.Kind, e.Field)
	}
	return fmt.Sprintf("proto: %s: %s", e.Type, e.Kind)
}

// PeekType returns the type of a message without decoding it.
func PeekType(b []byte) (Type, error) {
	if len(b) == 0 {
		return 0, &DecodeError{Kind: ErrShort, Field: "type"}
	}
	t := Type(b[0])
	switch t {
	case TypeJoin, TypeWelcome, TypeRefuse, TypeNotice, TypeFeatures, TypeInput, TypePing,
		TypeSnapshot, TypePeerDelay, TypePong:
		return t, nil
	}
	return t, &DecodeError{Kind: ErrUnknownType, Type: t}
}

// ---- encoding ----

func appendU16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
func appendU32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func appendF32(b []byte, v float32) []byte {
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v))
}

// checkStr reports whether s can be encoded as a protocol string: at most
// MaxString bytes of valid UTF-8. Encoders check every string before they
// append anything, so a failed encode leaves the caller's buffer untouched
// (no half-written message) and never emits bytes the decoder would refuse.
func checkStr(t Type, field, s string) error {
	if len(s) > MaxString {
		return &DecodeError{Kind: ErrTooLong, Type: t, Field: field}
	}
	if !utf8.ValidString(s) {
		return &DecodeError{Kind: ErrBadString, Type: t, Field: field}
	}
	return nil
}

// appendStr appends a string already accepted by checkStr.
func appendStr(b []byte, s string) []byte {
	b = append(b, uint8(len(s)))
	return append(b, s...)
}

// AppendJoin appends an encoded Join to b. On error b is returned unchanged.
func AppendJoin(b []byte, m *Join) ([]byte, error) {
	if err := checkStr(TypeJoin, "entity_type", m.EntityType); err != nil {
		return b, err
	}
	if err := checkStr(TypeJoin, "name", m.Name); err != nil {
		return b, err
	}
	b = append(b, byte(TypeJoin))
	b = appendU32(b, m.ClientIndex)
	b = appendStr(b, m.EntityType)
	return appendStr(b, m.Name), nil
}

// AppendWelcome appends an encoded Welcome to b. On error b is returned
// unchanged.
func AppendWelcome(b []byte, m *Welcome) ([]byte, error) {
	if err := checkStr(TypeWelcome, "transport", m.Transport); err != nil {
		return b, err
	}
	if err := checkStr(TypeWelcome, "body_format", m.BodyFormat); err != nil {
		return b, err
	}
	b = append(b, byte(TypeWelcome))
	b = appendU32(b, m.EntityID)
	b = appendU16(b, m.TickHz)
	b = appendU32(b, m.ServerTick)
	b = appendStr(b, m.Transport)
	b = appendStr(b, m.BodyFormat)
	return append(b, m.Flags), nil
}

// AppendRefuse appends an encoded Refuse to b. On error b is returned
// unchanged.
func AppendRefuse(b []byte, m *Refuse) ([]byte, error) {
	if err := checkStr(TypeRefuse, "message", m.Message); err != nil {
		return b, err
	}
	b = append(b, byte(TypeRefuse), byte(m.Reason))
	return appendStr(b, m.Message), nil
}

// AppendNotice appends an encoded Notice to b. On error b is returned
// unchanged.
func AppendNotice(b []byte, m *Notice) ([]byte, error) {
	if err := checkStr(TypeNotice, "message", m.Message); err != nil {
		return b, err
	}
	b = append(b, byte(TypeNotice), byte(m.Kind))
	return appendStr(b, m.Message), nil
}

// AppendInput appends an encoded Input to b. It does not allocate when b has
// InputSize bytes of spare capacity.
func AppendInput(b []byte, m *Input) []byte {
	b = append(b, byte(TypeInput))
	b = appendU32(b, m.Seq)
	b = appendF32(b, m.Throttle)
	b = appendF32(b, m.Elevator)
	b = appendF32(b, m.Aileron)
	b = appendF32(b, m.Rudder)
	b = appendU32(b, m.Buttons)
	if m.HasSnapshotAck {
		b = appendU32(b, m.SnapshotAck)
	}
	return b
}

// AppendSnapshotHeader appends the Snapshot type, tick and flags, and the
// input acknowledgement when the flags say so; the caller appends the body
// after it.
func AppendSnapshotHeader(b []byte, h SnapshotHeader) []byte {
	b = append(b, byte(TypeSnapshot))
	b = appendU32(b, h.Tick)
	b = append(b, h.Flags)
	if h.HasInputAck() {
		b = appendU32(b, h.InputSeq)
		b = appendU32(b, h.InputTick)
	}
	return b
}

// AppendFeatures appends an encoded Features (v1.1) to b.
func AppendFeatures(b []byte, features uint8) []byte {
	return append(b, byte(TypeFeatures), features)
}

// AppendPing appends an encoded Ping (v1.1) carrying token to b.
func AppendPing(b []byte, token uint32) []byte {
	return appendU32(append(b, byte(TypePing)), token)
}

// AppendPong appends an encoded Pong (v1.1) answering the Ping of token.
func AppendPong(b []byte, token uint32) []byte {
	return appendU32(append(b, byte(TypePong)), token)
}

// AppendPeerDelay appends an encoded PeerDelay to b.
func AppendPeerDelay(b []byte, rttMs uint16) []byte {
	b = append(b, byte(TypePeerDelay))
	return appendU16(b, rttMs)
}

// ---- decoding ----
//
// Every decoder returns the zero message on error.

// reader walks a message; the first error sticks and later reads are no-ops,
// so decoders stay linear and cannot index out of range.
type reader struct {
	b   []byte
	t   Type
	err *DecodeError
}

func (r *reader) fail(k ErrKind, field string) {
	if r.err == nil {
		r.err = &DecodeError{Kind: k, Type: r.t, Field: field}
	}
}

func (r *reader) take(n int, field string) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.b) < n {
		r.fail(ErrShort, field)
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8(field string) uint8 {
	if v := r.take(1, field); v != nil {
		return v[0]
	}
	return 0
}

func (r *reader) u16(field string) uint16 {
	if v := r.take(2, field); v != nil {
		return binary.LittleEndian.Uint16(v)
	}
	return 0
}

func (r *reader) u32(field string) uint32 {
	if v := r.take(4, field); v != nil {
		return binary.LittleEndian.Uint32(v)
	}
	return 0
}

func (r *reader) f32(field string) float32 {
	f := math.Float32frombits(r.u32(field))
	if r.err == nil && !finite(f) {
		r.fail(ErrNonFinite, field)
		return 0
	}
	return f
}

// str returns the string's bytes; converting them to a string allocates,
// which is acceptable on the reliable (cold) messages only.
func (r *reader) str(field string) string {
	n := int(r.u8(field))
	v := r.take(n, field)
	if r.err != nil {
		return ""
	}
	if !utf8.Valid(v) {
		r.fail(ErrBadString, field)
		return ""
	}
	return string(v)
}

func (r *reader) end() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail(ErrTrailing, "")
	}
	if r.err != nil {
		return r.err
	}
	return nil
}

// open checks the type byte and returns a reader over the payload.
func open(b []byte, want Type) reader {
	r := reader{t: want}
	if len(b) == 0 {
		r.fail(ErrShort, "type")
		return r
	}
	if got := Type(b[0]); got != want {
		if _, err := PeekType(b); err != nil {
			r.t = got
			r.fail(ErrUnknownType, "")
			return r
		}
		r.fail(ErrWrongType, "type")
		return r
	}
	r.b = b[1:]
	return r
}

// DecodeJoin decodes a Join.
func DecodeJoin(b []byte) (Join, error) {
	r := open(b, TypeJoin)
	m := Join{ClientIndex: r.u32("client_index")}
	m.EntityType = r.str("entity_type")
	m.Name = r.str("name")
	if err := r.end(); err != nil {
		return Join{}, err
	}
	return m, nil
}

// DecodeWelcome decodes a Welcome.
func DecodeWelcome(b []byte) (Welcome, error) {
	r := open(b, TypeWelcome)
	m := Welcome{EntityID: r.u32("entity_id"), TickHz: r.u16("tick_hz"), ServerTick: r.u32("server_tick")}
	m.Transport = r.str("transport")
	m.BodyFormat = r.str("body_format")
	m.Flags = r.u8("flags")
	if err := r.end(); err != nil {
		return Welcome{}, err
	}
	return m, nil
}

// DecodeRefuse decodes a Refuse.
func DecodeRefuse(b []byte) (Refuse, error) {
	r := open(b, TypeRefuse)
	m := Refuse{Reason: Reason(r.u8("reason"))}
	m.Message = r.str("message")
	if err := r.end(); err != nil {
		return Refuse{}, err
	}
	return m, nil
}

// DecodeNotice decodes a Notice.
func DecodeNotice(b []byte) (Notice, error) {
	r := open(b, TypeNotice)
	m := Notice{Kind: NoticeKind(r.u8("kind"))}
	m.Message = r.str("message")
	if err := r.end(); err != nil {
		return Notice{}, err
	}
	return m, nil
}

// DecodeInput decodes an Input into m without allocating: InputSize
// bytes, or InputAckSize with the snapshot acknowledgement (whether this
// peer may send one is the server's to judge). On error m is zeroed.
func DecodeInput(b []byte, m *Input) error {
	// Fast path for the hot, well-formed case; anything else goes through
	// the reader, which names the failing field.
	if (len(b) == InputSize || len(b) == InputAckSize) && Type(b[0]) == TypeInput {
		th, el, ai, ru := f32At(b, 5), f32At(b, 9), f32At(b, 13), f32At(b, 17)
		if finite(th) && finite(el) && finite(ai) && finite(ru) {
			*m = Input{Seq: binary.LittleEndian.Uint32(b[1:]), Throttle: th, Elevator: el,
				Aileron: ai, Rudder: ru, Buttons: binary.LittleEndian.Uint32(b[21:])}
			if len(b) == InputAckSize {
				m.HasSnapshotAck, m.SnapshotAck = true, binary.LittleEndian.Uint32(b[25:])
			}
			return nil
		}
	}
	r := open(b, TypeInput)
	m.Seq = r.u32("seq")
	m.Throttle = r.f32("throttle")
	m.Elevator = r.f32("elevator")
	m.Aileron = r.f32("aileron")
	m.Rudder = r.f32("rudder")
	m.Buttons = r.u32("buttons")
	if r.err == nil && len(r.b) == 4 {
		m.HasSnapshotAck, m.SnapshotAck = true, r.u32("snapshot_ack")
	}
	if err := r.end(); err != nil {
		*m = Input{}
		return err
	}
	return nil
}

func f32At(b []byte, off int) float32 {
	return math.Float32frombits(binary.LittleEndian.Uint32(b[off:]))
}

func finite(f float32) bool {
	return !math.IsNaN(float64(f)) && !math.IsInf(float64(f), 0)
}

// DecodeSnapshot decodes a Snapshot header (with its input
// acknowledgement, when flagged) without allocating and returns the body,
// which aliases b.
func DecodeSnapshot(b []byte) (SnapshotHeader, []byte, error) {
	if len(b) >= SnapshotHeaderSize && Type(b[0]) == TypeSnapshot && b[5]&SnapshotFlagInputAck == 0 {
		return SnapshotHeader{Tick: binary.LittleEndian.Uint32(b[1:]), Flags: b[5]}, b[SnapshotHeaderSize:], nil
	}
	r := open(b, TypeSnapshot)
	h := SnapshotHeader{Tick: r.u32("tick"), Flags: r.u8("flags")}
	if h.HasInputAck() {
		h.InputSeq = r.u32("input_seq")
		h.InputTick = r.u32("input_tick")
	}
	if r.err != nil {
		return SnapshotHeader{}, nil, r.err
	}
	return h, r.b, nil
}

// DecodeFeatures decodes a Features (v1.1) and returns its bits. Bits this
// side does not know are kept: a receiver ignores them.
func DecodeFeatures(b []byte) (uint8, error) {
	r := open(b, TypeFeatures)
	v := r.u8("features")
	if err := r.end(); err != nil {
		return 0, err
	}
	return v, nil
}

// DecodePing decodes a Ping (v1.1) and returns its token.
func DecodePing(b []byte) (uint32, error) { return decodeToken(b, TypePing) }

// DecodePong decodes a Pong (v1.1) and returns its token.
func DecodePong(b []byte) (uint32, error) { return decodeToken(b, TypePong) }

func decodeToken(b []byte, t Type) (uint32, error) {
	r := open(b, t)
	v := r.u32("token")
	if err := r.end(); err != nil {
		return 0, err
	}
	return v, nil
}

// DecodePeerDelay decodes a PeerDelay and returns its rtt_ms.
func DecodePeerDelay(b []byte) (uint16, error) {
	r := open(b, TypePeerDelay)
	v := r.u16("rtt_ms")
	if err := r.end(); err != nil {
		return 0, err
	}
	return v, nil
}
