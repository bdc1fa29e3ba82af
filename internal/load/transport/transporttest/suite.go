// Package transporttest is the one conformance suite every transport
// backend must pass. It is run by backend name, so ENet, QUIC, raw UDP and
// WebSocket are held to the same contract (package transport's doc
// comments) by the same code:
//
//	func TestConformance(t *testing.T) { transporttest.Run(t, "enet") }
//
// Where a backend cannot honour a property (raw UDP has no handshake, no
// reliability and no disconnect message; WebSocket runs over TCP), its
// transport.Capabilities say so, and the suite checks the behaviour the
// capability documents for that case instead: a property that does not
// apply is tested as its replacement, never skipped.
//
// Everything runs on 127.0.0.1. Waits are on events with generous deadlines,
// never on wall-clock speed, so the suite passes on a loaded 2-core machine.
package transporttest

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/relay"
	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// Config is what a backend's test gives the suite beyond its name.
type Config struct {
	// Server and Client are the options every host the suite creates
	// starts from (a test may then set Timeout or MaxPeers): a wss test
	// gives the server a certificate and the client a CAFile trusting it.
	Server, Client transport.Options
}

// Run runs the conformance suite against the named backend, which the test
// binary must have registered (by importing its package).
func Run(t *testing.T, backend string) { RunWith(t, backend, Config{}) }

// RunWith is Run with options for every host.
func RunWith(t *testing.T, backend string, cfg Config) {
	caps, err := transport.CapabilitiesOf(backend)
	if err != nil {
		t.Fatalf("backend under test: %v", err)
	}
	s := &suite{backend: backend, caps: caps, cfg: cfg}
	t.Logf("%s capabilities: %+v", backend, caps)
	tests := []struct {
		name string
		run  func(*testing.T)
	}{
		{"BackendAndAddr", s.testBackendAndAddr},
		{"ConnectData", s.testConnectData},
		{"ReliableInOrder", s.testReliableInOrder},
		{"Unreliable", s.testUnreliable},
		{"LargeUnreliable", s.testLargeUnreliable},
		{"SendFromStructWithPointers", s.testSendFromStructWithPointers},
		{"ArrivalStamps", s.testArrivalStamps},
		{"Text", s.testText},
		{"DisconnectReason", s.testDisconnectReason},
		{"RTT", s.testRTT},
		{"WireRates", s.testWireRates},
		{"SendUnknownPeer", s.testSendUnknownPeer},
		{"ListenPortInUse", s.testListenPortInUse},
		{"BadAddress", s.testBadAddress},
		{"ConnectTimeout", s.testConnectTimeout},
		{"PeerTimeout", s.testPeerTimeout},
		{"Closed", s.testClosed},
		{"Impairable", s.testImpairable},
		{"ManyClients", func(t *testing.T) {
			Many(t, backend, ManyConfig{Clients: 16, Duration: time.Second,
				ServerOptions: cfg.Server, ClientOptions: cfg.Client})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

// suite is one backend under test.
type suite struct {
	backend string
	caps    transport.Capabilities
	cfg     Config
}

// server and client return the configured options with Timeout set
// (0: the backend's default).
func (s *suite) server(timeout time.Duration) transport.Options {
	o := s.cfg.Server
	o.Timeout = timeout
	return o
}

func (s *suite) client(timeout time.Duration) transport.Options {
	o := s.cfg.Client
	o.Timeout = timeout
	return o
}

// pair connects a client to a server with default timeouts.
func (s *suite) pair(t *testing.T) *Pair {
	t.Helper()
	return ConnectPair(t, s.backend, proto.ConnectData, s.server(0), s.client(0))
}

func (s *suite) testBackendAndAddr(t *testing.T) {
	p := s.pair(t)
	for _, e := range p.Both() {
		if got := e.Host.Backend(); got != s.backend {
			t.Errorf("%s: Backend() = %q, want %q", e.Name, got, s.backend)
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

// testConnectData: every client's connect data reaches the server once
// (Capabilities.ConnectData), or every server connect carries 0; either way
// each live connection has its own peer id.
func (s *suite) testConnectData(t *testing.T) {
	sh, err := transport.Listen(s.backend, "127.0.0.1:0", s.server(0))
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	server := NewEndpoint(t, "server", sh)
	datas := []uint32{proto.ConnectData, 0, 1, 0xFFFFFFFF, 0x80000000}
	eps := append([]*Endpoint{server}, s.dialEach(t, sh.Addr(), datas)...)
	var got []transport.Event
	WaitUntil(t, "a connect event per client", func() bool {
		got = append(got, server.TakeAll(IsKind(transport.EventConnect))...)
		return len(got) >= len(datas)
	}, eps...)
	s.checkConnectData(t, got, datas)
}

// dialEach connects one client per connect data in datas to addr; on a
// backend without a handshake each also sends the opening message the
// server needs to see it.
func (s *suite) dialEach(t *testing.T, addr string, datas []uint32) []*Endpoint {
	var eps []*Endpoint
	for i, d := range datas {
		ch, err := transport.Dial(s.backend, s.client(0))
		if err != nil {
			t.Fatalf("Dial: %v", err)
		}
		c := NewEndpoint(t, "client", ch)
		eps = append(eps, c)
		peer, err := ch.Connect(addr, d)
		if err != nil {
			t.Fatalf("client %d: Connect: %v", i, err)
		}
		if !s.caps.Handshake {
			WaitEvent(t, "connect", c, IsKind(transport.EventConnect), c)
			if err := ch.Send(peer, transport.Unreliable, openingMessage); err != nil {
				t.Fatalf("client %d: opening message: %v", i, err)
			}
		}
	}
	return eps
}

// checkConnectData holds the server's connect events got to distinct peers
// and, where the backend carries connect data, to each of datas once
// (otherwise to Data 0 each).
func (s *suite) checkConnectData(t *testing.T, got []transport.Event, datas []uint32) {
	seen := map[uint32]int{}
	peers := map[transport.PeerID]bool{}
	for _, ev := range got {
		seen[ev.Data]++
		if peers[ev.Peer] {
			t.Errorf("peer id %d given to two live connections", ev.Peer)
		}
		peers[ev.Peer] = true
	}
	if !s.caps.ConnectData {
		if seen[0] != len(datas) {
			t.Errorf("backend does not carry connect data, yet server connect events carried %v, want Data 0 each", seen)
		}
		return
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

// testReliableInOrder: Reliable messages arrive, all of them, in order,
// when 300 are sent at once each way. A backend that does not honour
// Reliable (raw UDP) would lose some of a burst that size to a socket
// buffer; for it the test pins what Reliable is instead: one plain datagram
// per message and nothing else on the wire (no acknowledgement, no
// retransmission), delivered as Capabilities.Arrives says.
func (s *suite) testReliableInOrder(t *testing.T) {
	p := s.pair(t)
	if !s.caps.Reliable {
		s.reliableIsPlain(t, p)
		return
	}
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
	want := s.caps.Arrives(transport.Reliable)
	for _, d := range dirs {
		var next uint32
		WaitUntil(t, d.name+" reliable messages", func() bool {
			for _, ev := range d.to.TakeAll(IsKind(transport.EventReceive)) {
				if ev.Delivery != want {
					t.Fatalf("%s: received Delivery %v, want %v", d.name, ev.Delivery, want)
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

// reliableIsPlain sends Reliable messages at the unreliable window and
// checks the wire carried exactly one datagram per message each way.
func (s *suite) reliableIsPlain(t *testing.T, p *Pair) {
	p.Client.Host.WireRates()
	p.Server.Host.WireRates()
	const n = 60
	exchange(t, p, transport.Reliable, n, func(seq uint32) int { return reliableSize(seq) })
	for _, e := range p.Both() {
		r := e.Host.WireRates()
		out := math.Round(r.DatagramsOutPerSec * r.Interval.Seconds())
		in := math.Round(r.DatagramsInPerSec * r.Interval.Seconds())
		if out != n || in != n {
			t.Errorf("%s: %v datagrams out, %v in for %d Reliable messages each way, want exactly %d: a backend without reliability must add nothing", e.Name, out, in, n, n)
		}
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
	exchange(t, p, transport.Unreliable, n, func(uint32) int { return size })
}

// exchange sends n messages with delivery d each way, message seq being
// size(seq) bytes, windowed as exchangeUnreliable, and checks each arrives
// intact, in order, as p.Caps.Arrives(d).
func exchange(t *testing.T, p *Pair, d transport.Delivery, n int, size func(uint32) int) {
	t.Helper()
	want := p.Caps.Arrives(d)
	got := map[*Endpoint]uint32{}
	check := func(to *Endpoint) {
		for _, ev := range to.TakeAll(IsKind(transport.EventReceive)) {
			if ev.Delivery != want {
				t.Fatalf("%s: Delivery %v for a message sent %v, want %v", to.Name, ev.Delivery, d, want)
			}
			seq, err := checkSeqMsg('U', ev.Payload, size(got[to]))
			if err != nil {
				t.Fatalf("%s: %v message: %v", to.Name, d, err)
			}
			if seq != got[to] {
				t.Fatalf("%s: %v seq %d, want %d (lost or reordered on loopback)", to.Name, d, seq, got[to])
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
			WaitUntil(t, fmt.Sprintf("%v message %d at both ends", d, seq-unreliableWindow), received(seq-unreliableWindow+1), p.Both()...)
		}
		if err := p.Client.Host.Send(p.CPeer, d, seqMsg('U', seq, size(seq))); err != nil {
			t.Fatalf("client Send %v: %v", d, err)
		}
		if err := p.Server.Host.Send(p.SPeer, d, seqMsg('U', seq, size(seq))); err != nil {
			t.Fatalf("server Send %v: %v", d, err)
		}
	}
	WaitUntil(t, fmt.Sprintf("every %v message", d), received(uint32(n)), p.Both()...)
}

func (s *suite) testUnreliable(t *testing.T) {
	p := s.pair(t)
	exchangeUnreliable(t, p, 100, 24)
}

func (s *suite) testLargeUnreliable(t *testing.T) {
	p := s.pair(t)
	exchangeUnreliable(t, p, 20, 3000)
}

// pointerfulBuffer is a bot's reused send buffer as a bot writes one: an
// array in a struct that also holds Go pointers.
type pointerfulBuffer struct {
	name *string
	next *pointerfulBuffer
	buf  [16]byte
	tail []byte
}

// arrivalGap is how far apart testArrivalStamps sends its two messages, and
// arrivalMin the least the client's stamps may put between them: the
// margin absorbs a reader goroutine (QUIC, WebSocket) that took the first
// one off late on a loaded machine.
const (
	arrivalGap = 60 * time.Millisecond
	arrivalMin = 30 * time.Millisecond
)

// testArrivalStamps: two messages that reach a dialling client arrivalGap
// apart, and wait in its socket until one Service call, each carry their
// own arrival (Event.At), not the moment of the call nor the later one's
// arrival. The swarm times input latency and pings by At: a client that
// was late for its turn would otherwise date a snapshot a tick late. ENet
// reads every waiting datagram before it delivers any, so a stamp read
// once per service gave both messages the second one's arrival.
func (s *suite) testArrivalStamps(t *testing.T) {
	p := s.pair(t)
	for i := range 2 {
		if i == 1 {
			time.Sleep(arrivalGap) // the gap being measured, not a wait for an event
		}
		if err := p.Server.Host.Send(p.SPeer, transport.Unreliable, seqMsg('A', uint32(i), 8)); err != nil {
			t.Fatalf("server Send %d: %v", i, err)
		}
		if err := p.Server.Host.Flush(); err != nil {
			t.Fatalf("server Flush: %v", err)
		}
	}
	var got []transport.Event
	WaitUntil(t, "client: both messages", func() bool {
		got = append(got, p.Client.TakeAll(IsKind(transport.EventReceive))...)
		return len(got) >= 2
	}, p.Client, p.Server)
	done := time.Now()
	for i, ev := range got[:2] {
		if ev.At.IsZero() || ev.At.After(done) {
			t.Fatalf("message %d: At = %v, want its arrival (before %v)", i, ev.At, done)
		}
	}
	if gap := got[1].At.Sub(got[0].At); gap < arrivalMin {
		t.Errorf("the two messages' At are %v apart, want at least %v (sent %v apart): a message is dated by another's arrival", gap, arrivalMin, arrivalGap)
	}
}

// testSendFromStructWithPointers: Send takes a message that is a slice of
// an array inside a struct holding Go pointers. A cgo backend that hands
// the message's address to C as a bare unsafe.Pointer makes cgo check the
// whole struct, and the program panics ("Go pointer to unpinned Go
// pointer"); the swarm's reused ping buffer once did exactly that.
func (s *suite) testSendFromStructWithPointers(t *testing.T) {
	p := s.pair(t)
	name := "bot-1"
	b := &pointerfulBuffer{name: &name, tail: make([]byte, 4)}
	b.next = b
	msg := append(b.buf[:0], 'P', 1, 2, 3, 4)
	want := string(msg)
	if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, msg); err != nil {
		t.Fatalf("client Send of a buffer in a struct with pointers: %v", err)
	}
	got := WaitEvent(t, "the message", p.Server, IsKind(transport.EventReceive), p.Both()...)
	if string(got.Payload) != want {
		t.Errorf("got %x, want %x", got.Payload, want)
	}
}

// testText: Text messages (UTF-8 payloads) arrive as Text on a backend with
// Capabilities.Text; on the others Send refuses them with ErrDelivery.
func (s *suite) testText(t *testing.T) {
	p := s.pair(t)
	if !s.caps.Text {
		for _, e := range []struct {
			e    *Endpoint
			peer transport.PeerID
		}{{p.Client, p.CPeer}, {p.Server, p.SPeer}} {
			if err := e.e.Host.Send(e.peer, transport.Text, []byte(`{"hello":1}`)); !errors.Is(err, transport.ErrDelivery) {
				t.Errorf("%s: Send(Text) on a backend without text: %v, want ErrDelivery", e.e.Name, err)
			}
		}
		return
	}
	msgs := []string{`{"op":"join","name":"bot-1"}`, "", "ünïcödé ✓", strings.Repeat("x", 5000)}
	for _, m := range msgs {
		if err := p.Client.Host.Send(p.CPeer, transport.Text, []byte(m)); err != nil {
			t.Fatalf("client Send(Text): %v", err)
		}
		if err := p.Server.Host.Send(p.SPeer, transport.Text, []byte(m)); err != nil {
			t.Fatalf("server Send(Text): %v", err)
		}
	}
	for _, to := range p.Both() {
		var got []transport.Event
		WaitUntil(t, to.Name+": every text message", func() bool {
			got = append(got, to.TakeAll(IsKind(transport.EventReceive))...)
			return len(got) >= len(msgs)
		}, p.Both()...)
		for i, ev := range got {
			if ev.Delivery != transport.Text || string(ev.Payload) != msgs[i] {
				t.Errorf("%s: text message %d arrived as %v %q, want text %q", to.Name, i, ev.Delivery, ev.Payload, msgs[i])
			}
		}
	}
}

// testDisconnectReason: a Disconnect sends queued data first and reaches
// the remote with its reason (Capabilities.DisconnectNotice). Without a
// disconnect message (raw UDP) the closer still reports its own disconnect
// with the reason and the queued data still arrives, but the remote hears
// nothing until its idle timeout, which then reports ReasonTimeout.
func (s *suite) testDisconnectReason(t *testing.T) {
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
		t.Run(tc.name, func(t *testing.T) { s.disconnectCase(t, tc.clientCloses, tc.reason) })
	}
}

// disconnectCase is one case of testDisconnectReason: one end queues a
// message, then disconnects with reason, and both ends are checked.
func (s *suite) disconnectCase(t *testing.T, clientCloses bool, reason uint32) {
	timeout := time.Duration(0)
	if !s.caps.DisconnectNotice {
		// The remote learns by its idle timeout, counted from the last
		// datagram it read: 2 s leaves room for a stalled test goroutine.
		timeout = 2 * time.Second
	}
	p := ConnectPair(t, s.backend, proto.ConnectData, s.server(timeout), s.client(timeout))
	closer, remote, peer, rpeer := p.Client, p.Server, p.CPeer, p.SPeer
	if !clientCloses {
		closer, remote, peer, rpeer = p.Server, p.Client, p.SPeer, p.CPeer
	}
	// Data queued before Disconnect is sent first.
	if err := closer.Host.Send(peer, transport.Reliable, seqMsg('R', 1, 64)); err != nil {
		t.Fatalf("Send before disconnect: %v", err)
	}
	t0 := time.Now()
	closer.Host.Disconnect(peer, reason)
	s.checkRemoteDisconnect(t, p, remote, rpeer, reason, t0, timeout)
	s.checkCloserDisconnect(t, p, closer, peer, reason)
}

// checkRemoteDisconnect holds the remote end to the disconnect it must see:
// the reason where the backend sends a notice, otherwise an idle timeout no
// sooner than timeout after Disconnect (at t0); and the message queued
// before Disconnect delivered.
func (s *suite) checkRemoteDisconnect(t *testing.T, p *Pair, remote *Endpoint, rpeer transport.PeerID,
	reason uint32, t0 time.Time, timeout time.Duration) {
	want := reason
	if !s.caps.DisconnectNotice {
		want = transport.ReasonTimeout
	}
	ev := WaitEvent(t, "disconnect", remote, IsKind(transport.EventDisconnect), p.Both()...)
	if ev.Peer != rpeer || ev.Data != want {
		t.Errorf("remote disconnect event peer %d data %#x, want peer %d reason %#x", ev.Peer, ev.Data, rpeer, want)
	}
	if waited := time.Since(t0); !s.caps.DisconnectNotice && waited < timeout*9/10 {
		t.Errorf("remote disconnected %v after Disconnect, before its %v idle timeout: something told it", waited, timeout)
	}
	if got := remote.TakeAll(IsKind(transport.EventReceive)); len(got) != 1 {
		t.Errorf("remote got %d messages queued before Disconnect, want 1", len(got))
	}
}

// checkCloserDisconnect holds the closing end to its own disconnect event
// and to forgetting the peer.
func (s *suite) checkCloserDisconnect(t *testing.T, p *Pair, closer *Endpoint, peer transport.PeerID, reason uint32) {
	lev := WaitEvent(t, "own disconnect", closer, IsKind(transport.EventDisconnect), p.Both()...)
	if lev.Peer != peer {
		t.Errorf("closer's disconnect event for peer %d, want %d", lev.Peer, peer)
	}
	if !s.caps.DisconnectNotice && lev.Data != reason {
		t.Errorf("closer's disconnect event data %#x, want its reason %#x", lev.Data, reason)
	}
	err := closer.Host.Send(peer, transport.Reliable, []byte{1})
	if !errors.Is(err, transport.ErrUnknownPeer) {
		t.Errorf("Send after disconnect: %v, want ErrUnknownPeer", err)
	}
}

// maxLoopbackRTT is far above any loopback RTT yet below ENet's 500 ms seed,
// so passing it means the backend measured, not guessed.
const maxLoopbackRTT = 250 * time.Millisecond

// testRTT: a backend that measures RTT reports one in (0, 250 ms] on both
// ends once reliable traffic flowed; one that cannot (Capabilities.RTT
// false) reports 0 after the same traffic, never a guess.
func (s *suite) testRTT(t *testing.T) {
	p := s.pair(t)
	var seq uint32
	ok := func(e *Endpoint, peer transport.PeerID) bool {
		rtt := e.Host.RTT(peer)
		if rtt < 0 {
			t.Fatalf("%s: negative RTT %v", e.Name, rtt)
		}
		return rtt > 0 && rtt <= maxLoopbackRTT
	}
	if !s.caps.RTT {
		exchange(t, p, transport.Reliable, 50, func(uint32) int { return 16 })
		for _, e := range []struct {
			e    *Endpoint
			peer transport.PeerID
		}{{p.Client, p.CPeer}, {p.Server, p.SPeer}} {
			if rtt := e.e.Host.RTT(e.peer); rtt != 0 {
				t.Errorf("%s: RTT %v from a backend that measures none, want 0", e.e.Name, rtt)
			}
		}
		return
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

func (s *suite) testWireRates(t *testing.T) {
	p := s.pair(t)
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
		// Rates × interval is floating point: round, since a backend
		// without framing (raw UDP) carries exactly the payload bytes.
		if out := math.Round(r.BytesOutPerSec * sec); out < n*size {
			t.Errorf("%s: %.0f bytes out over %v, want ≥ %d payload bytes", e.Name, out, r.Interval, n*size)
		}
		if in := math.Round(r.BytesInPerSec * sec); in < n*size {
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

func (s *suite) testSendUnknownPeer(t *testing.T) {
	p := s.pair(t)
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

func (s *suite) testListenPortInUse(t *testing.T) {
	first, err := transport.Listen(s.backend, "127.0.0.1:0", s.server(0))
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	defer first.Close()
	second, err := transport.Listen(s.backend, first.Addr(), s.server(0))
	if err == nil {
		second.Close()
		t.Fatalf("second Listen on %s succeeded, want an error", first.Addr())
	}
	if !errors.Is(err, syscall.EADDRINUSE) || !strings.Contains(err.Error(), first.Addr()) {
		t.Errorf("second Listen: %q, want EADDRINUSE naming %s", err, first.Addr())
	}
	t.Logf("port in use: %v", err)
}

func (s *suite) testBadAddress(t *testing.T) {
	for _, addr := range []string{"127.0.0.1", "127.0.0.1:notaport", "127.0.0.1:70000"} {
		if h, err := transport.Listen(s.backend, addr, s.server(0)); err == nil {
			h.Close()
			t.Errorf("Listen(%q) succeeded, want an error", addr)
		} else if !strings.Contains(err.Error(), addr) {
			t.Errorf("Listen(%q): %q does not name the address", addr, err)
		}
	}
	ch, err := transport.Dial(s.backend, s.client(0))
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

// testConnectTimeout: a Connect nobody answers ends in
// EventDisconnect(ReasonTimeout). Without a handshake EventConnect comes
// first (nothing was waited for), and the disconnect is the idle timeout,
// no sooner than Options.Timeout.
func (s *suite) testConnectTimeout(t *testing.T) {
	// A port that was just free: nobody answers there.
	dead, err := transport.Listen(s.backend, "127.0.0.1:0", s.server(0))
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	addr := dead.Addr()
	dead.Close()
	ch, err := transport.Dial(s.backend, s.client(time.Second))
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	client := NewEndpoint(t, "client", ch)
	t0 := time.Now()
	peer, err := ch.Connect(addr, proto.ConnectData)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	notReceive := func(ev transport.Event) bool { return ev.Kind != transport.EventReceive }
	if !s.caps.Handshake {
		ev := WaitEvent(t, "connect without a handshake", client, notReceive, client)
		if ev.Kind != transport.EventConnect || ev.Peer != peer {
			t.Fatalf("got %v peer %d, want connect of peer %d at once (no handshake)", ev.Kind, ev.Peer, peer)
		}
	}
	ev := WaitEvent(t, "disconnect of an unanswered connect", client, notReceive, client)
	if ev.Kind != transport.EventDisconnect || ev.Peer != peer || ev.Data != transport.ReasonTimeout {
		t.Errorf("got %v peer %d data %d, want disconnect of peer %d with ReasonTimeout", ev.Kind, ev.Peer, ev.Data, peer)
	}
	if waited := time.Since(t0); !s.caps.Handshake && waited < 900*time.Millisecond {
		t.Errorf("idle timeout after %v, before the 1s Options.Timeout", waited)
	}
}

// testPeerTimeout: a peer that goes silent (its host closed without
// notice) is disconnected with ReasonTimeout after about Options.Timeout.
func (s *suite) testPeerTimeout(t *testing.T) {
	p := ConnectPair(t, s.backend, proto.ConnectData, s.server(0), s.client(time.Second))
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

func (s *suite) testClosed(t *testing.T) {
	p := s.pair(t)
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
	if h.Backend() != s.backend {
		t.Errorf("Backend() after Close = %q", h.Backend())
	}
}

// testImpairable: a datagram backend's pair works through the impairment
// relay (every message arrives by way of the relay's sockets); a backend that is not (TCP) is refused by
// transport.CheckImpairable with an error naming it.
func (s *suite) testImpairable(t *testing.T) {
	err := transport.CheckImpairable(s.backend)
	if !s.caps.Datagram {
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", s.backend)) {
			t.Errorf("CheckImpairable(%q) = %v, want an error naming the backend", s.backend, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("CheckImpairable(%q) = %v for a datagram backend", s.backend, err)
	}
	sh, err := transport.Listen(s.backend, "127.0.0.1:0", s.server(0))
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	server := NewEndpoint(t, "server", sh)
	r, err := relay.New(relay.Config{Server: sh.Addr(), Links: 1})
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	// The relay relays only the client socket it is told of, so it learns
	// it before the client sends (as the swarm does).
	p := ConnectVia(t, s.backend, server, r.Addr(0), proto.ConnectData, s.client(0), func(h transport.Host) {
		if err := r.Expect(0, h.Addr()); err != nil {
			t.Fatalf("relay: %v", err)
		}
	})
	const n = 40
	exchangeUnreliable(t, p, n, 300)
	// Every message arrived through the relay's socket (ENet and QUIC pack
	// several into one datagram, so counts need not match messages).
	st := r.Stats()
	if st.DatagramsUp == 0 || st.DatagramsDown == 0 || st.Stray != 0 || st.Overflow != 0 {
		t.Errorf("relay stats %+v after %d messages each way, want datagrams both ways, no stray, no overflow", st, n)
	}
}
