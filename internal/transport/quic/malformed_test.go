package quic

import (
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/proto"
	"github.com/scalegate/scalegate/internal/transport"
)

// malformedWait bounds the waits below on loopback events; they wait on
// events, never on the clock.
const malformedWait = 30 * time.Second

// serviceHosts services hosts, handing events to on, until done.
func serviceHosts(t *testing.T, hosts []*Host, on func(*Host, transport.Event), done func() bool) {
	t.Helper()
	deadline := time.Now().Add(malformedWait)
	for !done() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out; server stats %+v", hosts[0].Stats())
		}
		for _, h := range hosts {
			if _, err := h.Service(func(ev transport.Event) { on(h, ev) }); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// TestBogusFragmentsReported: fragment datagrams that can never be
// reassembled (20,680 in 30 s from one connection went unnoticed by the
// application) reach the owner as EventMalformed with their count, so the
// server can strike the peer exactly as it strikes bad messages. However
// many arrive between two Service calls, at most one event per peer waits.
func TestBogusFragmentsReported(t *testing.T) {
	ls, err := backend{}.Listen("127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	server := ls.(*Host)
	t.Cleanup(func() { _ = server.Close() })
	dl, err := backend{}.Dial(transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	client := dl.(*Host)
	t.Cleanup(func() { _ = client.Close() })
	cPeer, err := client.Connect(server.Addr(), proto.ConnectData)
	if err != nil {
		t.Fatal(err)
	}
	var sPeer transport.PeerID
	sUp, cUp := false, false
	malformed, events, good := uint32(0), 0, 0
	on := func(h *Host, ev transport.Event) {
		switch {
		case ev.Kind == transport.EventConnect && h == server:
			sPeer, sUp = ev.Peer, true
		case ev.Kind == transport.EventConnect:
			cUp = true
		case ev.Kind == transport.EventMalformed && h == server:
			if ev.Peer != sPeer {
				t.Fatalf("EventMalformed for peer %d, want %d", ev.Peer, sPeer)
			}
			malformed += ev.Data
			events++
		case ev.Kind == transport.EventReceive && h == server:
			good++
		}
	}
	serviceHosts(t, []*Host{server, client}, on, func() bool { return sUp && cUp })
	conn := client.peers[cPeer].conn.Load()
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
		serviceHosts(t, []*Host{server, client}, on, func() bool { return int(malformed) == sent })
	}
	if got := server.Stats().BadFragments; got != uint64(sent) {
		t.Fatalf("Stats().BadFragments %d, want %d", got, sent)
	}
	// Unserviced, a burst is one waiting event carrying the whole count.
	const burst = 100
	for range burst {
		if err := conn.SendDatagram(bogus[0]); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(malformedWait)
	for server.Stats().BadFragments < uint64(sent+burst) {
		if time.Now().After(deadline) {
			t.Fatalf("server read %d of %d bogus datagrams", server.Stats().BadFragments, sent+burst)
		}
		time.Sleep(time.Millisecond)
	}
	events, malformed = 0, 0
	if _, err := server.Service(func(ev transport.Event) { on(server, ev) }); err != nil {
		t.Fatal(err)
	}
	if events != 1 || malformed != burst {
		t.Fatalf("unserviced burst of %d: %d event(s) carrying %d", burst, events, malformed)
	}
	if good != 0 {
		t.Fatalf("%d bogus datagrams delivered as messages", good)
	}
}
