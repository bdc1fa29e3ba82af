// Package transporttest is the one conformance suite every transport backend
// must pass, run by backend name so ENet and QUIC are held to the same
// contract (package transport's doc comments) by the same code:
//
//	func TestConformance(t *testing.T) { transporttest.Run(t, "enet") }
//
// Everything runs on 127.0.0.1. Waits are on events with generous deadlines,
// never on wall-clock speed, so the suite passes on a loaded 2-core machine.
package transporttest

import (
	"errors"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/proto"
	"github.com/scalegate/scalegate/internal/transport"
)

// Run runs the conformance suite against the named backend, which the test
// binary must have registered (by importing its package).
func Run(t *testing.T, backend string) {
	if _, err := transport.Lookup(backend); err != nil {
		t.Fatalf("backend under test: %v", err)
	}
	tests := []struct {
		name string
		run  func(*testing.T, string)
	}{
		{"BackendAndAddr", testBackendAndAddr},
		{"ConnectData", testConnectData},
		{"ReliableInOrder", testReliableInOrder},
		{"Unreliable", testUnreliable},
		{"LargeUnreliable", testLargeUnreliable},
		{"DisconnectReason", testDisconnectReason},
		{"RTT", testRTT},
		{"WireRates", testWireRates},
		{"SendUnknownPeer", testSendUnknownPeer},
		{"ListenPortInUse", testListenPortInUse},
		{"BadAddress", testBadAddress},
		{"ConnectTimeout", testConnectTimeout},
		{"PeerTimeout", testPeerTimeout},
		{"Closed", testClosed},
		{"ManyClients", func(t *testing.T, b string) {
			Many(t, b, ManyConfig{Clients: 16, Duration: time.Second})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, backend) })
	}
}

func testBackendAndAddr(t *testing.T, backend string) {
	p := connectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	for _, e := range p.both() {
		if got := e.h.Backend(); got != backend {
			t.Errorf("%s: Backend() = %q, want %q", e.name, got, backend)
		}
	}
	ap, err := netip.ParseAddrPort(p.server.h.Addr())
	if err != nil || ap.Addr() != netip.MustParseAddr("127.0.0.1") || ap.Port() == 0 {
		t.Errorf("server Addr() = %q (%v), want 127.0.0.1 with the port the system chose", p.server.h.Addr(), err)
	}
	if got := p.client.h.PeerAddr(p.cPeer); got != p.server.h.Addr() {
		t.Errorf("client PeerAddr(server) = %q, want the server's Addr %q", got, p.server.h.Addr())
	}
	cp, err := netip.ParseAddrPort(p.server.h.PeerAddr(p.sPeer))
	if err != nil || !cp.Addr().IsLoopback() || cp.Port() == 0 {
		t.Errorf("server PeerAddr(client) = %q (%v), want a loopback address with a port", p.server.h.PeerAddr(p.sPeer), err)
	}
	if got := p.server.h.PeerAddr(p.sPeer + 1000); got != "" {
		t.Errorf("PeerAddr(unknown peer) = %q, want \"\"", got)
	}
}

func testConnectData(t *testing.T, backend string) {
	sh, err := transport.Listen(backend, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	server := newEndpoint(t, "server", sh)
	datas := []uint32{proto.ConnectData, 0, 1, 0xFFFFFFFF, 0x80000000}
	eps := []*endpoint{server}
	for i, d := range datas {
		ch, err := transport.Dial(backend, transport.Options{})
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		eps = append(eps, newEndpoint(t, "client", ch))
		if _, err := ch.Connect(sh.Addr(), d); err != nil {
			t.Fatalf("client %d: Connect: %v", i, err)
		}
	}
	var got []transport.Event
	waitUntil(t, "a connect event per client", func() bool {
		got = append(got, server.takeAll(isKind(transport.EventConnect))...)
		return len(got) >= len(datas)
	}, eps...)
	seen := map[uint32]int{}
	peers := map[transport.PeerID]bool{}
	for _, ev := range got {
		seen[ev.Data]++
		if peers[ev.Peer] {
			t.Errorf("peer id %d given to two live connections", ev.Peer)
		}
		peers[ev.Peer] = true
	}
	for _, d := range datas {
		if seen[d] != 1 {
			t.Errorf("connect data %#x arrived %d times, want once (all: %v)", d, seen[d], seen)
		}
	}
}

// reliableSize varies message sizes, including ones that need fragments.
func reliableSize(seq uint32) int {
	sizes := []int{5, 24, 200, 1000, 1500, 4000}
	return sizes[seq%uint32(len(sizes))]
}

func testReliableInOrder(t *testing.T, backend string) {
	p := connectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	const n = 300
	dirs := []struct {
		name     string
		from, to *endpoint
		peer     transport.PeerID
	}{
		{"client→server", p.client, p.server, p.cPeer},
		{"server→client", p.server, p.client, p.sPeer},
	}
	for _, d := range dirs {
		for seq := uint32(0); seq < n; seq++ {
			if err := d.from.h.Send(d.peer, transport.Reliable, seqMsg('R', seq, reliableSize(seq))); err != nil {
				t.Fatalf("%s: Send reliable %d: %v", d.name, seq, err)
			}
		}
	}
	for _, d := range dirs {
		var next uint32
		waitUntil(t, d.name+" reliable messages", func() bool {
			for _, ev := range d.to.takeAll(isKind(transport.EventReceive)) {
				if ev.Delivery != transport.Reliable {
					t.Fatalf("%s: received Delivery %v, want reliable", d.name, ev.Delivery)
				}
				seq, err := checkSeqMsg('R', ev.Payload, reliableSize(next))
				if err != nil || seq != next {
					t.Fatalf("%s: message %d: got seq %d (%v)", d.name, next, seq, err)
				}
				next++
			}
			return next >= n
		}, p.both()...)
	}
}

// exchangeUnreliable sends n unreliable messages of size bytes each way, one
// per service round, and checks every one arrives intact and in order.
func exchangeUnreliable(t *testing.T, p *pair, n, size int) {
	t.Helper()
	got := map[*endpoint]uint32{}
	check := func(to *endpoint) {
		for _, ev := range to.takeAll(isKind(transport.EventReceive)) {
			if ev.Delivery != transport.Unreliable {
				t.Fatalf("%s: Delivery %v, want unreliable", to.name, ev.Delivery)
			}
			seq, err := checkSeqMsg('U', ev.Payload, size)
			if err != nil {
				t.Fatalf("%s: unreliable message: %v", to.name, err)
			}
			if seq != got[to] {
				t.Fatalf("%s: unreliable seq %d, want %d (lost or reordered on loopback)", to.name, seq, got[to])
			}
			got[to]++
		}
	}
	for seq := uint32(0); seq < uint32(n); seq++ {
		if err := p.client.h.Send(p.cPeer, transport.Unreliable, seqMsg('U', seq, size)); err != nil {
			t.Fatalf("client Send unreliable: %v", err)
		}
		if err := p.server.h.Send(p.sPeer, transport.Unreliable, seqMsg('U', seq, size)); err != nil {
			t.Fatalf("server Send unreliable: %v", err)
		}
		p.client.service()
		p.server.service()
		check(p.server)
		check(p.client)
		time.Sleep(pollPause)
	}
	waitUntil(t, "every unreliable message", func() bool {
		check(p.server)
		check(p.client)
		return got[p.server] == uint32(n) && got[p.client] == uint32(n)
	}, p.both()...)
}

func testUnreliable(t *testing.T, backend string) {
	p := connectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	exchangeUnreliable(t, p, 100, 24)
}

func testLargeUnreliable(t *testing.T, backend string) {
	p := connectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	exchangeUnreliable(t, p, 20, 3000)
}

func testDisconnectReason(t *testing.T, backend string) {
	tests := []struct {
		name         string
		clientCloses bool
		reason       uint32
	}{
		{"client disconnects", true, 42},
		{"server disconnects", false, 7},
		{"large reason", true, 0xDEADBEEF},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := connectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
			closer, remote, peer, rpeer := p.client, p.server, p.cPeer, p.sPeer
			if !tc.clientCloses {
				closer, remote, peer, rpeer = p.server, p.client, p.sPeer, p.cPeer
			}
			// Data queued before Disconnect is sent first.
			if err := closer.h.Send(peer, transport.Reliable, seqMsg('R', 1, 64)); err != nil {
				t.Fatalf("Send before disconnect: %v", err)
			}
			closer.h.Disconnect(peer, tc.reason)
			ev := waitEvent(t, "disconnect", remote, isKind(transport.EventDisconnect), p.both()...)
			if ev.Peer != rpeer || ev.Data != tc.reason {
				t.Errorf("remote disconnect event peer %d data %#x, want peer %d reason %#x", ev.Peer, ev.Data, rpeer, tc.reason)
			}
			if got := remote.takeAll(isReceive(transport.Reliable)); len(got) != 1 {
				t.Errorf("remote got %d reliable messages queued before Disconnect, want 1", len(got))
			}
			lev := waitEvent(t, "own disconnect", closer, isKind(transport.EventDisconnect), p.both()...)
			if lev.Peer != peer {
				t.Errorf("closer's disconnect event for peer %d, want %d", lev.Peer, peer)
			}
			err := closer.h.Send(peer, transport.Reliable, []byte{1})
			if !errors.Is(err, transport.ErrUnknownPeer) {
				t.Errorf("Send after disconnect: %v, want ErrUnknownPeer", err)
			}
		})
	}
}

// maxLoopbackRTT is far above any loopback RTT yet below ENet's 500 ms seed,
// so passing it means the backend measured, not guessed.
const maxLoopbackRTT = 250 * time.Millisecond

func testRTT(t *testing.T, backend string) {
	p := connectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	var seq uint32
	ok := func(e *endpoint, peer transport.PeerID) bool {
		rtt := e.h.RTT(peer)
		if rtt < 0 {
			t.Fatalf("%s: negative RTT %v", e.name, rtt)
		}
		return rtt > 0 && rtt <= maxLoopbackRTT
	}
	waitUntil(t, "RTT estimates in (0, 250ms] on both ends", func() bool {
		// Reliable traffic both ways gives the backend acknowledgements to
		// sample.
		seq++
		for _, s := range []struct {
			e    *endpoint
			peer transport.PeerID
		}{{p.client, p.cPeer}, {p.server, p.sPeer}} {
			if err := s.e.h.Send(s.peer, transport.Reliable, seqMsg('R', seq, 8)); err != nil {
				t.Fatalf("%s: Send: %v", s.e.name, err)
			}
		}
		p.client.events, p.server.events = nil, nil
		return ok(p.client, p.cPeer) && ok(p.server, p.sPeer)
	}, p.both()...)
	t.Logf("RTT client %v server %v after %d reliable round trips", p.client.h.RTT(p.cPeer), p.server.h.RTT(p.sPeer), seq)
	if got := p.server.h.RTT(p.sPeer + 1000); got != 0 {
		t.Errorf("RTT(unknown peer) = %v, want 0", got)
	}
}

func testWireRates(t *testing.T, backend string) {
	p := connectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	p.client.h.WireRates()
	p.server.h.WireRates()
	const n, size = 50, 500
	exchangeUnreliable(t, p, n, size)
	time.Sleep(10 * time.Millisecond) // a non-zero interval even on a coarse clock
	for _, e := range p.both() {
		r := e.h.WireRates()
		if r.Interval <= 0 {
			t.Fatalf("%s: WireRates interval %v, want > 0", e.name, r.Interval)
		}
		sec := r.Interval.Seconds()
		// Framing only adds bytes: the wire carried at least the payloads.
		if out := r.BytesOutPerSec * sec; out < n*size {
			t.Errorf("%s: %.0f bytes out over %v, want ≥ %d payload bytes", e.name, out, r.Interval, n*size)
		}
		if in := r.BytesInPerSec * sec; in < n*size {
			t.Errorf("%s: %.0f bytes in over %v, want ≥ %d payload bytes", e.name, in, r.Interval, n*size)
		}
		if r.DatagramsOutPerSec <= 0 || r.DatagramsInPerSec <= 0 {
			t.Errorf("%s: datagram rates out %.1f/s in %.1f/s, want both > 0", e.name, r.DatagramsOutPerSec, r.DatagramsInPerSec)
		}
		if dg := r.DatagramsInPerSec * sec; dg > 100*n {
			t.Errorf("%s: %.0f datagrams in for %d messages: counters look wrong", e.name, dg, n)
		}
	}
}

func testSendUnknownPeer(t *testing.T, backend string) {
	p := connectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	for _, tc := range []struct {
		e    *endpoint
		peer transport.PeerID
	}{
		{p.server, p.sPeer + 1},
		{p.server, 1 << 30},
		{p.client, p.cPeer + 1},
	} {
		for _, d := range []transport.Delivery{transport.Reliable, transport.Unreliable} {
			err := tc.e.h.Send(tc.peer, d, []byte("x"))
			if !errors.Is(err, transport.ErrUnknownPeer) {
				t.Errorf("%s: Send(%s) to unknown peer %d: %v, want ErrUnknownPeer", tc.e.name, d, tc.peer, err)
			}
		}
	}
}

func testListenPortInUse(t *testing.T, backend string) {
	first, err := transport.Listen(backend, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer first.Close()
	second, err := transport.Listen(backend, first.Addr(), transport.Options{})
	if err == nil {
		second.Close()
		t.Fatalf("second Listen on %s succeeded, want an error", first.Addr())
	}
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), first.Addr()) {
		t.Errorf("second Listen: %q, want EADDRINUSE naming %s", err, first.Addr())
	}
	t.Logf("port in use: %v", err)
}

func testBadAddress(t *testing.T, backend string) {
	for _, addr := range []string{"127.0.0.1", "127.0.0.1:notaport", "127.0.0.1:70000"} {
		if h, err := transport.Listen(backend, addr, transport.Options{}); err == nil {
			h.Close()
			t.Errorf("Listen(%q) succeeded, want an error", addr)
		} else if !strings.Contains(err.Error(), addr) {
			t.Errorf("Listen(%q): %q does not name the address", addr, err)
		}
	}
	ch, err := transport.Dial(backend, transport.Options{})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	defer ch.Close()
	for _, addr := range []string{"", "127.0.0.1", "127.0.0.1:x"} {
		if _, err := ch.Connect(addr, 1); err == nil {
			t.Errorf("Connect(%q) succeeded, want an error", addr)
		}
	}
}

func testConnectTimeout(t *testing.T, backend string) {
	// A port that was just free: nobody answers there.
	dead, err := transport.Listen(backend, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	addr := dead.Addr()
	dead.Close()
	ch, err := transport.Dial(backend, transport.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	client := newEndpoint(t, "client", ch)
	peer, err := ch.Connect(addr, proto.ConnectData)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	ev := waitEvent(t, "disconnect of an unanswered connect", client, func(ev transport.Event) bool {
		return ev.Kind != transport.EventReceive
	}, client)
	if ev.Kind != transport.EventDisconnect || ev.Peer != peer || ev.Data != transport.ReasonTimeout {
		t.Errorf("got %v peer %d data %d, want disconnect of peer %d with ReasonTimeout", ev.Kind, ev.Peer, ev.Data, peer)
	}
}

// testPeerTimeout: a peer that goes silent (its host closed without
// notice) is disconnected with ReasonTimeout after about Options.Timeout.
func testPeerTimeout(t *testing.T, backend string) {
	p := connectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{Timeout: time.Second})
	if err := p.server.h.Close(); err != nil {
		t.Fatalf("server Close: %v", err)
	}
	// Reliable traffic gives the client something unacknowledged to time out on.
	if err := p.client.h.Send(p.cPeer, transport.Reliable, []byte{1}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	ev := waitEvent(t, "timeout of a silent peer", p.client, isKind(transport.EventDisconnect), p.client)
	if ev.Peer != p.cPeer || ev.Data != transport.ReasonTimeout {
		t.Errorf("disconnect peer %d data %d, want peer %d with ReasonTimeout", ev.Peer, ev.Data, p.cPeer)
	}
}

func testClosed(t *testing.T, backend string) {
	p := connectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	h := p.client.h
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	checks := []struct {
		name string
		err  error
	}{
		{"Send", h.Send(p.cPeer, transport.Reliable, []byte{1})},
		{"Flush", h.Flush()},
		{"Close", h.Close()},
	}
	_, err := h.Service(func(transport.Event) { t.Error("event delivered by a closed host") })
	checks = append(checks, struct {
		name string
		err  error
	}{"Service", err})
	_, err = h.Connect(p.server.h.Addr(), 1)
	checks = append(checks, struct {
		name string
		err  error
	}{"Connect", err})
	for _, c := range checks {
		if !errors.Is(c.err, transport.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", c.name, c.err)
		}
	}
	if h.RTT(p.cPeer) != 0 || h.PeerAddr(p.cPeer) != "" {
		t.Errorf("closed host reports RTT %v PeerAddr %q, want 0 and \"\"", h.RTT(p.cPeer), h.PeerAddr(p.cPeer))
	}
	h.Disconnect(p.cPeer, 1) // must not crash
	if h.Backend() != backend {
		t.Errorf("Backend() after Close = %q", h.Backend())
	}
}
