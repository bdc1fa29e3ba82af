//go:build cgo

package enet

import (
	"bytes"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
)

// QueuedSends counts what Send queued and ENet has not written: every
// message before a Flush (a fragmented one once), nothing after the flush of
// unreliable traffic, and the reliable messages held back by the window
// while the receiver does not acknowledge — until it does.
func TestQueuedSends(t *testing.T) {
	p := connect(t, transport.Options{}, transport.Options{})
	server := p.Server.Host
	if n := server.QueuedSends(p.SPeer + 1000); n != 0 {
		t.Fatalf("unknown peer: QueuedSends = %d", n)
	}
	for i := 0; i < 10; i++ {
		if err := server.Send(p.SPeer, transport.Unreliable, bytes.Repeat([]byte{byte(i)}, 3000)); err != nil {
			t.Fatal(err)
		}
	}
	if n := server.QueuedSends(p.SPeer); n != 10 {
		t.Fatalf("10 fragmented messages queued before Flush: QueuedSends = %d", n)
	}
	if err := server.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := server.QueuedSends(p.SPeer); n != 0 {
		t.Fatalf("unreliable messages after Flush: QueuedSends = %d, want 0", n)
	}
	// The client does not service, so nothing is acknowledged: the
	// reliable window (64 KB in transit) holds the rest back.
	const msgs = 200
	for i := 0; i < msgs; i++ {
		if err := server.Send(p.SPeer, transport.Reliable, bytes.Repeat([]byte{byte(i)}, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	if err := server.Flush(); err != nil {
		t.Fatal(err)
	}
	held := server.QueuedSends(p.SPeer)
	if held <= 0 || held >= msgs {
		t.Fatalf("200 KB reliable to a silent peer: QueuedSends = %d, want some held back by the window", held)
	}
	got := 0
	transporttest.WaitUntil(t, "every reliable message delivered and the backlog drained", func() bool {
		got += len(p.Client.TakeAll(transporttest.IsReceive(transport.Reliable)))
		return got == msgs && server.QueuedSends(p.SPeer) == 0
	}, p.Both()...)
}

// BenchmarkQueuedSends is the per-peer cost the server pays after every
// tick's flush (send_queue_max samples every joined peer).
func BenchmarkQueuedSends(b *testing.B) {
	p := transporttest.ConnectPair(b, Name, 0x53470001, transport.Options{}, transport.Options{})
	for b.Loop() {
		_ = p.Server.Host.QueuedSends(p.SPeer)
	}
}
