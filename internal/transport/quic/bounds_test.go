package quic

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/proto"
	"github.com/scalegate/scalegate/internal/transport"
)

// TestReliableBackpressureLosesNothing: an owner that does not service
// while its peer sends more reliable messages than the pending bound
// (maxPendingControl) still gets every one, in order, once it services:
// the control reader waits instead of dropping.
func TestReliableBackpressureLosesNothing(t *testing.T) {
	p := connect(t, proto.ConnectData, transport.Options{}, transport.Options{})
	const n = maxPendingControl*2 + 100
	for i := 0; i < n; i++ {
		if err := p.client.h.Send(p.cPeer, transport.Reliable, binary.LittleEndian.AppendUint32(nil, uint32(i))); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	if err := p.client.h.Flush(); err != nil {
		t.Fatal(err)
	}
	// Let the server's reader fill its bound without servicing.
	deadline := time.Now().Add(waitTimeout)
	for len(p.server.h.peers[p.sPeer].ctrlSlots) < maxPendingControl {
		if time.Now().After(deadline) {
			t.Fatalf("server reader holds %d pending, never reached the bound %d", len(p.server.h.peers[p.sPeer].ctrlSlots), maxPendingControl)
		}
		time.Sleep(time.Millisecond)
	}
	next := uint32(0)
	waitFor(t, "all reliable messages", func() bool {
		for {
			ev, ok := p.server.take(received(transport.Reliable))
			if !ok {
				return next == n
			}
			if got := binary.LittleEndian.Uint32(ev.Payload); got != next {
				t.Fatalf("reliable message %d arrived as number %d", next, got)
			}
			next++
		}
	}, p.both()...)
}

// TestUnreliableReceiveBound: an owner that does not service accumulates at
// most maxPendingDatagrams unreliable messages per peer; the rest are
// dropped and counted.
func TestUnreliableReceiveBound(t *testing.T) {
	p := connect(t, proto.ConnectData, transport.Options{}, transport.Options{})
	deadline := time.Now().Add(waitTimeout)
	for p.server.h.Stats().RecvQueueDrops == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no receive-queue drop after sending for the whole wait")
		}
		for i := 0; i < 32; i++ {
			_ = p.client.h.Send(p.cPeer, transport.Unreliable, pattern(1, 100))
		}
		_ = p.client.h.Flush()
		time.Sleep(2 * time.Millisecond)
	}
	n, err := p.server.h.Service(func(ev transport.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	// The queue never holds more than the bound for one peer: a push
	// happens only below it, and only delivery lowers the count.
	if n > maxPendingDatagrams {
		t.Fatalf("one Service delivered %d events, want at most %d", n, maxPendingDatagrams)
	}
}
