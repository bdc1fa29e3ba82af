package quic

import (
	"fmt"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// TestBogusFragmentsReported: fragment datagrams that can never be
// reassembled (20,680 in 30 s from one connection went unnoticed by the
// application) reach the owner as EventMalformed with their count, so the
// server can strike the peer exactly as it strikes bad messages. However
// many arrive between two Service calls, one event per peer waits.
func TestBogusFragmentsReported(t *testing.T) {
	p := transporttest.ConnectPair(t, Name, proto.ConnectData, transport.Options{}, transport.Options{})
	server := p.Server.Host.(*Host)
	conn := p.Client.Host.(*Host).peers[p.CPeer].conn.Load()
	malformed, events := uint32(0), 0
	take := func() {
		for _, ev := range p.Server.TakeAll(transporttest.IsKind(transport.EventMalformed)) {
			if ev.Peer != p.SPeer {
				t.Fatalf("EventMalformed for peer %d, want %d", ev.Peer, p.SPeer)
			}
			malformed += ev.Data
			events++
		}
	}
	bogus := [][]byte{
		{fragMarker, 1, 0, 5, 3}, // index not below count
		{fragMarker, 1, 0, 0, 0}, // count 0
		{fragMarker, 1},          // short header
		{fragMarker, 1, 0, 0, 200},
	}
	// Paced rounds, each waited for: quic-go drops datagrams beyond its
	// 128-deep receive queue, and the count must be exact.
	const rounds = 50
	sent := 0
	for i := range rounds {
		for _, b := range bogus {
			if err := conn.SendDatagram(b); err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			sent++
		}
		transporttest.WaitUntil(t, "the bogus datagrams reported", func() bool { take(); return int(malformed) == sent }, p.Both()...)
	}
	if got := server.Stats().BadFragments; got != uint64(sent) {
		t.Fatalf("Stats().BadFragments %d, want %d", got, sent)
	}
	if n := len(p.Server.TakeAll(transporttest.IsKind(transport.EventReceive))); n != 0 {
		t.Fatalf("%d bogus datagrams delivered as messages", n)
	}
	// Unserviced, a burst is one waiting event carrying the whole count.
	const burst = 100
	for range burst {
		if err := conn.SendDatagram(bogus[0]); err != nil {
			t.Fatal(err)
		}
	}
	livetest.Eventually(t, livetest.Wait, func() (bool, string) {
		got := server.Stats().BadFragments
		return got >= uint64(sent+burst), fmt.Sprintf("server read %d of %d bogus datagrams", got, sent+burst)
	})
	events, malformed = 0, 0
	p.Server.Service()
	take()
	if events != 1 || malformed != burst {
		t.Fatalf("unserviced burst of %d: %d event(s) carrying %d", burst, events, malformed)
	}
}
