package quic

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Control stream layout (client-opened bidirectional stream 0, both
// directions):
//
//	client → server:  preamble     frame  frame  ...
//	server → client:  accept word  frame  frame  ...
//	preamble    = u32 connect data word, little-endian (proto.ConnectData)
//	accept word = the same u32, echoed by the server host when it takes the
//	              connection (the client reports EventConnect only then)
//	frame       = u16 length, little-endian  +  length bytes of one message
//
// Little-endian because every integer of wire protocol v1 is. The preamble
// and the accept word are not frames: they are exactly the first four bytes
// each side writes, because QUIC has no connect-data word of its own (ENet
// carries it in the CONNECT command) and a completed QUIC handshake does not
// mean the server host accepted the connection. A zero-length frame is a
// valid, empty message.

// preambleLen is the size of the connect-data preamble.
const preambleLen = 4

// frameHeaderLen is the size of a control frame's length prefix.
const frameHeaderLen = 2

// MaxReliableSize is the largest message Send accepts with
// transport.Reliable: the u16 length prefix bounds it.
const MaxReliableSize = 1<<16 - 1

// errFrameTooLarge is returned for a reliable message over MaxReliableSize.
var errFrameTooLarge = fmt.Errorf("quic: reliable message larger than %d bytes (u16 length prefix)", MaxReliableSize)

// appendPreamble appends the connect-data preamble.
func appendPreamble(dst []byte, data uint32) []byte {
	return binary.LittleEndian.AppendUint32(dst, data)
}

// parsePreamble reads the connect data word from the first four bytes.
func parsePreamble(b []byte) (uint32, error) {
	if len(b) < preambleLen {
		return 0, errors.New("quic: connect-data preamble shorter than 4 bytes")
	}
	return binary.LittleEndian.Uint32(b), nil
}

// appendFrame appends msg with its u16 length prefix.
func appendFrame(dst, msg []byte) ([]byte, error) {
	if len(msg) > MaxReliableSize {
		return dst, errFrameTooLarge
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(len(msg)))
	return append(dst, msg...), nil
}

// frameDecoder splits a control stream into messages. Bytes arrive in
// arbitrary pieces (QUIC stream reads do not keep frame boundaries); the
// decoder buffers at most one partial frame (≤ 65537 bytes).
type frameDecoder struct {
	buf []byte
	off int // start of undecoded bytes in buf
}

// write appends stream bytes.
func (d *frameDecoder) write(p []byte) {
	if d.off > 0 && d.off == len(d.buf) {
		d.buf, d.off = d.buf[:0], 0
	} else if d.off > 0 && d.off > cap(d.buf)/2 {
		// Compact so a long-lived stream does not grow the buffer forever.
		n := copy(d.buf, d.buf[d.off:])
		d.buf, d.off = d.buf[:n], 0
	}
	d.buf = append(d.buf, p...)
}

// next returns the next complete message, or ok=false when more bytes are
// needed. The returned slice aliases the decoder's buffer and is valid only
// until the next write.
func (d *frameDecoder) next() (msg []byte, ok bool) {
	rest := d.buf[d.off:]
	if len(rest) < frameHeaderLen {
		return nil, false
	}
	n := int(binary.LittleEndian.Uint16(rest))
	if len(rest) < frameHeaderLen+n {
		return nil, false
	}
	d.off += frameHeaderLen + n
	return rest[frameHeaderLen : frameHeaderLen+n], true
}

// buffered is the number of undecoded bytes held.
func (d *frameDecoder) buffered() int { return len(d.buf) - d.off }
