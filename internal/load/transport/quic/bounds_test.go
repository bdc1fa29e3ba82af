package quic

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// TestReliableBackpressureLosesNothing: an owner that does not service
// while its peer sends more reliable messages than the pending bound
// (maxPendingControl) still gets every one, in order, once it services:
// the control reader waits instead of dropping.
func TestReliableBackpressureLosesNothing(t *testing.T) {
	p := transporttest.ConnectPair(t, Name, proto.ConnectData, transport.Options{}, transport.Options{})
	const n = maxPendingControl*2 + 100
	for i := 0; i < n; i++ {
		if err := p.Client.Host.Send(p.CPeer, transport.Reliable, binary.LittleEndian.AppendUint32(nil, uint32(i))); err != nil {
			t.Fatalf("Send %d: %v", i, err)
		}
	}
	if err := p.Client.Host.Flush(); err != nil {
		t.Fatal(err)
	}
	// Let the server's reader fill its bound without servicing.
	pending := func() int { return len(quicHost(p.Server).peers[p.SPeer].ctrlSlots) }
	livetest.Eventually(t, livetest.Wait, func() (bool, string) {
		n := pending()
		return n >= maxPendingControl, fmt.Sprintf("server reader holds %d pending, not yet the bound %d", n, maxPendingControl)
	})
	next := uint32(0)
	transporttest.WaitUntil(t, "all reliable messages", func() bool {
		for {
			ev, ok := p.Server.Take(transporttest.IsReceive(transport.Reliable))
			if !ok {
				return next == n
			}
			if got := binary.LittleEndian.Uint32(ev.Payload); got != next {
				t.Fatalf("reliable message %d arrived as number %d", next, got)
			}
			next++
		}
	}, p.Both()...)
}

// TestUnreliableReceiveBound: an owner that does not service accumulates at
// most maxPendingDatagrams unreliable messages per peer; the rest are
// dropped and counted.
func TestUnreliableReceiveBound(t *testing.T) {
	p := transporttest.ConnectPair(t, Name, proto.ConnectData, transport.Options{}, transport.Options{})
	// Nobody services: the server must not drain its queue.
	dropped := func() bool {
		if quicHost(p.Server).Stats().RecvQueueDrops > 0 {
			return true
		}
		for i := 0; i < 32; i++ {
			_ = p.Client.Host.Send(p.CPeer, transport.Unreliable, pattern(1, 100))
		}
		_ = p.Client.Host.Flush()
		return false
	}
	livetest.Eventually(t, livetest.Wait, livetest.Holds("a receive-queue drop while sending unserviced", dropped))
	n, err := p.Server.Host.Service(func(ev transport.Event) {})
	if err != nil {
		t.Fatal(err)
	}
	// The queue never holds more than the bound for one peer: a push
	// happens only below it, and only delivery lowers the count.
	if n > maxPendingDatagrams {
		t.Fatalf("one Service delivered %d events, want at most %d", n, maxPendingDatagrams)
	}
}
