//go:build cgo

package enet

/*
#cgo noescape sg_batch
#cgo nocallback sg_batch
#include <time.h>
#include "enet_glue.h"

static long long sg_monotonic_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// batchEventCap is how many events one sg_batch call can return before it
// hands them to Go and resumes.
const batchEventCap = 4096

// NewBatch returns an empty Batch for hosts of this backend.
func (backend) NewBatch() transport.Batch {
	return &Batch{
		evs: make([]C.sg_event, batchEventCap),
		buf: make([]byte, initialPayloadBuffer*4),
	}
}

// Batch sends to and services many client hosts in one cgo crossing
// (sg_batch), the loop a C client would run. Items, sends and events live in
// Go memory that holds no Go pointers, as cgo requires: a send is an offset
// into one buffer, an event's payload an offset into another.
type Batch struct {
	items []C.sg_batch_item
	hosts []*Host
	sends []byte
	evs   []C.sg_event
	buf   []byte
	// base maps sg_batch's CLOCK_MONOTONIC stamps to time.Time: a wall
	// reading and a C reading taken together.
	base   time.Time
	baseNs int64
	errs   []error // per item: service error
	sendN  []int   // per item: bytes queued for sending (0: none)
}

var _ transport.Batcher = backend{}

// Reset empties the batch.
func (b *Batch) Reset() {
	b.items, b.hosts, b.sends = b.items[:0], b.hosts[:0], b.sends[:0]
	b.errs, b.sendN = b.errs[:0], b.sendN[:0]
}

// Add appends h (an ENet host) with msg to send unreliably first.
func (b *Batch) Add(h transport.Host, peer transport.PeerID, msg []byte) int {
	eh, ok := h.(*Host)
	if !ok {
		panic(fmt.Sprintf("enet: Batch.Add: host of backend %q", h.Backend()))
	}
	it := C.sg_batch_item{host: C.uintptr_t(uintptr(unsafe.Pointer(eh.s))), peer: C.enet_uint32(peer)}
	if len(msg) > 0 {
		it.send_off, it.send_len = C.enet_uint32(len(b.sends)), C.enet_uint32(len(msg))
		b.sends = append(b.sends, msg...)
	}
	b.items = append(b.items, it)
	b.hosts = append(b.hosts, eh)
	b.errs = append(b.errs, nil)
	b.sendN = append(b.sendN, len(msg))
	return len(b.items) - 1
}

// Run sends and services every item, resuming whenever the event array or
// payload buffer fills, and delivers each host's events after its turn.
func (b *Batch) Run(fn func(item int, at time.Time, ev transport.Event)) {
	n := len(b.items)
	if n == 0 {
		return
	}
	for i, h := range b.hosts {
		if h.s == nil { // closed since Add: sg_batch skips a NULL host
			b.items[i].host, b.errs[i] = 0, transport.ErrClosed
		}
	}
	var sends *C.uchar
	if len(b.sends) > 0 {
		sends = (*C.uchar)(unsafe.Pointer(&b.sends[0]))
	}
	b.base, b.baseNs = time.Now(), int64(C.sg_monotonic_ns())
	for from := 0; from < n; {
		next := int(C.sg_batch(&b.items[0], C.int(from), C.int(n), sends,
			&b.evs[0], C.int(len(b.evs)), (*C.uchar)(unsafe.Pointer(&b.buf[0])), C.size_t(len(b.buf))))
		partial := next < n && b.items[next].count > 0
		for i := from; i <= min(next, n-1); i++ {
			b.deliver(i, fn)
		}
		if next < n && !b.grow(next) && next == from && !partial {
			// No progress is possible on this item: report it rather
			// than loop (sg_batch always makes progress otherwise).
			b.errs[next] = fmt.Errorf("enet: service %s: batch made no progress", b.hosts[next].Addr())
			next++
		}
		from = next
	}
	for _, h := range b.hosts {
		if h.s != nil && !h.addrFinal {
			h.refreshAddr()
		}
	}
}

// grow enlarges the payload buffer when item i's next message is larger
// than the whole buffer, and reports whether it did.
func (b *Batch) grow(i int) bool {
	if need := int(b.hosts[i].s.need); need > len(b.buf) {
		b.buf = make([]byte, max(need, 2*len(b.buf)))
		return true
	}
	return false
}

// deliver hands item i's events to fn and records its service error.
func (b *Batch) deliver(i int, fn func(int, time.Time, transport.Event)) {
	it := &b.items[i]
	at := b.at(i)
	if it.status == C.SG_DRAIN_ERROR {
		b.errs[i] = fmt.Errorf("enet: service %s: socket error: %w", b.hosts[i].Addr(), errnoErr(int(it.err)))
	}
	for k := int(it.first); k < int(it.first+it.count); k++ {
		if ev, ok := toEvent(&b.evs[k], b.buf); ok {
			fn(i, at, ev)
		}
	}
	it.count = 0
}

func (b *Batch) at(i int) time.Time {
	return b.base.Add(time.Duration(int64(b.items[i].at_ns) - b.baseNs))
}

// Result reports item i's turn time and errors after Run.
func (b *Batch) Result(i int) (at time.Time, sendErr, serviceErr error) {
	it := &b.items[i]
	if b.sendN[i] > 0 && it.send_rc != C.SG_OK && it.host != 0 {
		sendErr = sendError(int(it.send_rc), transport.PeerID(it.peer), transport.Unreliable, b.sendN[i])
	}
	return b.at(i), sendErr, b.errs[i]
}
