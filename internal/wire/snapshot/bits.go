package snapshot

import "encoding/binary"

// bitWriter appends values LSB-first into a byte slice. It never allocates
// when the slice has room, so an Encoder reused across snapshots reaches a
// steady state with no per-call allocation. Pending bits are written out 32
// at a time: one append of four bytes instead of a loop of single bytes,
// which is most of what a delta body's encoding costs the server.
type bitWriter struct {
	buf  []byte
	acc  uint64 // pending bits, LSB first
	nacc uint   // number of pending bits (< 32 after each write)
}

func (w *bitWriter) reset(buf []byte) {
	w.buf = buf
	w.acc = 0
	w.nacc = 0
}

// write appends the low n bits of v (n ≤ 32).
func (w *bitWriter) write(v uint32, n uint) {
	w.acc |= uint64(v&(1<<n-1)) << w.nacc
	w.nacc += n
	if w.nacc >= 32 {
		w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(w.acc))
		w.acc >>= 32
		w.nacc -= 32
	}
}

// flush pads the pending bits with zeros to a byte boundary.
func (w *bitWriter) flush() []byte {
	for w.nacc > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.nacc -= min(w.nacc, 8)
	}
	w.acc = 0
	return w.buf
}
