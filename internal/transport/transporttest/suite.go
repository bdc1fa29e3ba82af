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
	"fmt"
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
	p := ConnectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	for _, e := range p.Both() {
		if got := e.Host.Backend(); got != backend {
			t.Errorf("%s: Backend() = %q, want %q", e.Name, got, backend)
		}
	}
	ap, err := netip.ParseAddrPort(p.Server.Host.Addr())
	if err != nil || ap.Addr() != netip.MustParseAddr("127.0.0.1") || ap.Port() == 0 {
		t.Errorf("server Addr() = %q (%v), want 127.0.0.1 with the port the system chose", p.Server.Host.Addr(), err)
	}
	if got := p.Client.Host.PeerAddr(p.CPeer); got != p.Server.Host.Addr() {
		t.Errorf("client PeerAddr(server) = %q, want the server's Addr %q", got, p.Server.Host.Addr())
	}
	cp, err := netip.ParseAddrPort(p.Server.Host.PeerAddr(p.SPeer))
	if err != nil || !cp.Addr().IsLoopback() || cp.Port() == 0 {
		t.Errorf("server PeerAddr(client) = %q (%v), want a loopback address with a port", p.Server.Host.PeerAddr(p.SPeer), err)
	}
	if got := p.Server.Host.PeerAddr(p.SPeer + 1000); got != "" {
		t.Errorf("PeerAddr(unknown peer) = %q, want \"\"", got)
	}
}

func testConnectData(t *testing.T, backend string) {
	sh, err := transport.Listen(backend, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	server := NewEndpoint(t, "server", sh)
	datas := []uint32{proto.ConnectData, 0, 1, 0xFFFFFFFF, 0x80000000}
	eps := []*Endpoint{server}
	for i, d := range datas {
		ch, err := transport.Dial(backend, transport.Options{})
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		eps = append(eps, NewEndpoint(t, "client", ch))
		if _, err := ch.Connect(sh.Addr(), d); err != nil {
			t.Fatalf("client %d: Connect: %v", i, err)
		}
	}
	var got []transport.Event
	WaitUntil(t, "a connect event per client", func() bool {
		got = append(got, server.TakeAll(IsKind(transport.EventConnect))...)
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
	p := ConnectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	const n = 300
	dirs := []struct {
		name     string
		from, to *Endpoint
		peer     transport.PeerID
	}{
		{"client→server", p.Client, p.Server, p.CPeer},
		{"server→client", p.Server, p.Client, p.SPeer},
	}
	for _, d := range dirs {
		for seq := uint32(0); seq < n; seq++ {
			if err := d.from.Host.Send(d.peer, transport.Reliable, seqMsg('R', seq, reliableSize(seq))); err != nil {
				t.Fatalf("%s: Send reliable %d: %v", d.name, seq, err)
			}
		}
	}
	for _, d := range dirs {
		var next uint32
		WaitUntil(t, d.name+" reliable messages", func() bool {
			for _, ev := range d.to.TakeAll(IsKind(transport.EventReceive)) {
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
		}, p.Both()...)
	}
}

// unreliableWindow is how many unreliable messages each direction may have
// in flight: enough that ordering is tested with several on the wire at
// once, few enough that no queue (QUIC's 64-datagram send queue, a socket
// buffer) can overflow and drop one on loopback.
const unreliableWindow = 8

// exchangeUnreliable sends n unreliable messages of size bytes each way,
// never more than unreliableWindow ahead of what the other end received, and
// checks every one arrives intact and in order.
func exchangeUnreliable(t *testing.T, p *Pair, n, size int) {
	t.Helper()
	got := map[*Endpoint]uint32{}
	check := func(to *Endpoint) {
		for _, ev := range to.TakeAll(IsKind(transport.EventReceive)) {
			if ev.Delivery != transport.Unreliable {
				t.Fatalf("%s: Delivery %v, want unreliable", to.Name, ev.Delivery)
			}
			seq, err := checkSeqMsg('U', ev.Payload, size)
			if err != nil {
				t.Fatalf("%s: unreliable message: %v", to.Name, err)
			}
			if seq != got[to] {
				t.Fatalf("%s: unreliable seq %d, want %d (lost or reordered on loopback)", to.Name, seq, got[to])
			}
			got[to]++
		}
	}
	received := func(enough uint32) func() bool {
		return func() bool {
			check(p.Server)
			check(p.Client)
			return got[p.Server] >= enough && got[p.Client] >= enough
		}
	}
	for seq := uint32(0); seq < uint32(n); seq++ {
		if seq >= unreliableWindow {
			WaitUntil(t, fmt.Sprintf("unreliable message %d at both ends", seq-unreliableWindow), received(seq-unreliableWindow+1), p.Both()...)
		}
		if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, seqMsg('U', seq, size)); err != nil {
			t.Fatalf("client Send unreliable: %v", err)
		}
		if err := p.Server.Host.Send(p.SPeer, transport.Unreliable, seqMsg('U', seq, size)); err != nil {
			t.Fatalf("server Send unreliable: %v", err)
		}
	}
	WaitUntil(t, "every unreliable message", received(uint32(n)), p.Both()...)
}

func testUnreliable(t *testing.T, backend string) {
	p := ConnectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	exchangeUnreliable(t, p, 100, 24)
}

func testLargeUnreliable(t *testing.T, backend string) {
	p := ConnectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
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
			p := ConnectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
			closer, remote, peer, rpeer := p.Client, p.Server, p.CPeer, p.SPeer
			if !tc.clientCloses {
				closer, remote, peer, rpeer = p.Server, p.Client, p.SPeer, p.CPeer
			}
			// Data queued before Disconnect is sent first.
			if err := closer.Host.Send(peer, transport.Reliable, seqMsg('R', 1, 64)); err != nil {
				t.Fatalf("Send before disconnect: %v", err)
			}
			closer.Host.Disconnect(peer, tc.reason)
			ev := WaitEvent(t, "disconnect", remote, IsKind(transport.EventDisconnect), p.Both()...)
			if ev.Peer != rpeer || ev.Data != tc.reason {
				t.Errorf("remote disconnect event peer %d data %#x, want peer %d reason %#x", ev.Peer, ev.Data, rpeer, tc.reason)
			}
			if got := remote.TakeAll(IsReceive(transport.Reliable)); len(got) != 1 {
				t.Errorf("remote got %d reliable messages queued before Disconnect, want 1", len(got))
			}
			lev := WaitEvent(t, "own disconnect", closer, IsKind(transport.EventDisconnect), p.Both()...)
			if lev.Peer != peer {
				t.Errorf("closer's disconnect event for peer %d, want %d", lev.Peer, peer)
			}
			err := closer.Host.Send(peer, transport.Reliable, []byte{1})
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
	p := ConnectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	var seq uint32
	ok := func(e *Endpoint, peer transport.PeerID) bool {
		rtt := e.Host.RTT(peer)
		if rtt < 0 {
			t.Fatalf("%s: negative RTT %v", e.Name, rtt)
		}
		return rtt > 0 && rtt <= maxLoopbackRTT
	}
	WaitUntil(t, "RTT estimates in (0, 250ms] on both ends", func() bool {
		// Reliable traffic both ways gives the backend acknowledgements to
		// sample.
		seq++
		for _, s := range []struct {
			e    *Endpoint
			peer transport.PeerID
		}{{p.Client, p.CPeer}, {p.Server, p.SPeer}} {
			if err := s.e.Host.Send(s.peer, transport.Reliable, seqMsg('R', seq, 8)); err != nil {
				t.Fatalf("%s: Send: %v", s.e.Name, err)
			}
		}
		p.Client.TakeAll(Any)
		p.Server.TakeAll(Any)
		return ok(p.Client, p.CPeer) && ok(p.Server, p.SPeer)
	}, p.Both()...)
	t.Logf("RTT client %v server %v after %d reliable round trips", p.Client.Host.RTT(p.CPeer), p.Server.Host.RTT(p.SPeer), seq)
	if got := p.Server.Host.RTT(p.SPeer + 1000); got != 0 {
		t.Errorf("RTT(unknown peer) = %v, want 0", got)
	}
}

func testWireRates(t *testing.T, backend string) {
	p := ConnectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	p.Client.Host.WireRates()
	p.Server.Host.WireRates()
	const n, size = 50, 500
	exchangeUnreliable(t, p, n, size)
	for _, e := range p.Both() {
		r := e.Host.WireRates()
		if r.Interval <= 0 {
			t.Fatalf("%s: WireRates interval %v, want > 0", e.Name, r.Interval)
		}
		sec := r.Interval.Seconds()
		// Framing only adds bytes: the wire carried at least the payloads.
		if out := r.BytesOutPerSec * sec; out < n*size {
			t.Errorf("%s: %.0f bytes out over %v, want ≥ %d payload bytes", e.Name, out, r.Interval, n*size)
		}
		if in := r.BytesInPerSec * sec; in < n*size {
			t.Errorf("%s: %.0f bytes in over %v, want ≥ %d payload bytes", e.Name, in, r.Interval, n*size)
		}
		if r.DatagramsOutPerSec <= 0 || r.DatagramsInPerSec <= 0 {
			t.Errorf("%s: datagram rates out %.1f/s in %.1f/s, want both > 0", e.Name, r.DatagramsOutPerSec, r.DatagramsInPerSec)
		}
		if dg := r.DatagramsInPerSec * sec; dg > 100*n {
			t.Errorf("%s: %.0f datagrams in for %d messages: counters look wrong", e.Name, dg, n)
		}
	}
}

func testSendUnknownPeer(t *testing.T, backend string) {
	p := ConnectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	for _, tc := range []struct {
		e    *Endpoint
		peer transport.PeerID
	}{
		{p.Server, p.SPeer + 1},
		{p.Server, 1 << 30},
		{p.Client, p.CPeer + 1},
	} {
		for _, d := range []transport.Delivery{transport.Reliable, transport.Unreliable} {
			err := tc.e.Host.Send(tc.peer, d, []byte("x"))
			if !errors.Is(err, transport.ErrUnknownPeer) {
				t.Errorf("%s: Send(%s) to unknown peer %d: %v, want ErrUnknownPeer", tc.e.Name, d, tc.peer, err)
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
	client := NewEndpoint(t, "client", ch)
	peer, err := ch.Connect(addr, proto.ConnectData)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	ev := WaitEvent(t, "disconnect of an unanswered connect", client, func(ev transport.Event) bool {
		return ev.Kind != transport.EventReceive
	}, client)
	if ev.Kind != transport.EventDisconnect || ev.Peer != peer || ev.Data != transport.ReasonTimeout {
		t.Errorf("got %v peer %d data %d, want disconnect of peer %d with ReasonTimeout", ev.Kind, ev.Peer, ev.Data, peer)
	}
}

// testPeerTimeout: a peer that goes silent (its host closed without
// notice) is disconnected with ReasonTimeout after about Options.Timeout.
func testPeerTimeout(t *testing.T, backend string) {
	p := ConnectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{Timeout: time.Second})
	if err := p.Server.Host.Close(); err != nil {
		t.Fatalf("server Close: %v", err)
	}
	// Reliable traffic gives the client something unacknowledged to time out on.
	if err := p.Client.Host.Send(p.CPeer, transport.Reliable, []byte{1}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	ev := WaitEvent(t, "timeout of a silent peer", p.Client, IsKind(transport.EventDisconnect), p.Client)
	if ev.Peer != p.CPeer || ev.Data != transport.ReasonTimeout {
		t.Errorf("disconnect peer %d data %d, want peer %d with ReasonTimeout", ev.Peer, ev.Data, p.CPeer)
	}
}

func testClosed(t *testing.T, backend string) {
	p := ConnectPair(t, backend, proto.ConnectData, transport.Options{}, transport.Options{})
	h := p.Client.Host
	if err := h.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	checks := []struct {
		name string
		err  error
	}{
		{"Send", h.Send(p.CPeer, transport.Reliable, []byte{1})},
		{"Flush", h.Flush()},
		{"Close", h.Close()},
	}
	_, err := h.Service(func(transport.Event) { t.Error("event delivered by a closed host") })
	checks = append(checks, struct {
		name string
		err  error
	}{"Service", err})
	_, err = h.Connect(p.Server.Host.Addr(), 1)
	checks = append(checks, struct {
		name string
		err  error
	}{"Connect", err})
	for _, c := range checks {
		if !errors.Is(c.err, transport.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", c.name, c.err)
		}
	}
	if h.RTT(p.CPeer) != 0 || h.PeerAddr(p.CPeer) != "" {
		t.Errorf("closed host reports RTT %v PeerAddr %q, want 0 and \"\"", h.RTT(p.CPeer), h.PeerAddr(p.CPeer))
	}
	h.Disconnect(p.CPeer, 1) // must not crash
	if h.Backend() != backend {
		t.Errorf("Backend() after Close = %q", h.Backend())
	}
}
