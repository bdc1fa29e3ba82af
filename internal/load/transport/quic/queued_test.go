package quic

import (
	"bytes"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// QueuedSends counts what Send queued and the peer's sender has not handed
// to quic-go: everything until Flush wakes the sender (datagrams capped by
// the drop-oldest queue), nothing once it has, and 0 for an unknown peer.
func TestQueuedSends(t *testing.T) {
	p := transporttest.ConnectPair(t, Name, proto.ConnectData, transport.Options{}, transport.Options{})
	server := p.Server.Host
	if n := server.QueuedSends(p.SPeer + 1000); n != 0 {
		t.Fatalf("unknown peer: QueuedSends = %d", n)
	}
	for i := 0; i < maxQueuedDatagrams+10; i++ {
		if err := server.Send(p.SPeer, transport.Unreliable, bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 5; i++ {
		if err := server.Send(p.SPeer, transport.Reliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if n, want := server.QueuedSends(p.SPeer), maxQueuedDatagrams+5; n != want {
		t.Fatalf("before Flush: QueuedSends = %d, want %d (the datagram queue drops its oldest beyond %d)", n, want, maxQueuedDatagrams)
	}
	if err := server.Flush(); err != nil {
		t.Fatal(err)
	}
	got := 0
	transporttest.WaitUntil(t, "the control messages delivered and the backlog drained", func() bool {
		got += len(p.Client.TakeAll(transporttest.IsReceive(transport.Reliable)))
		return got == 5 && server.QueuedSends(p.SPeer) == 0
	}, p.Both()...)
}

// BenchmarkQueuedSends is the per-peer cost the server pays after every
// tick's flush (send_queue_max samples every joined peer).
func BenchmarkQueuedSends(b *testing.B) {
	p := transporttest.ConnectPair(b, Name, proto.ConnectData, transport.Options{}, transport.Options{})
	for b.Loop() {
		_ = p.Server.Host.QueuedSends(p.SPeer)
	}
}
