package quic

import (
	"bytes"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/proto"
	"github.com/scalegate/scalegate/internal/transport"
)

// waitTimeout bounds every wait: generous, because a loaded 2-core machine
// can stall loopback for seconds. Tests wait on events, never on clocks.
const waitTimeout = 30 * time.Second

// end is one host under test and the events it delivered (payloads copied).
type end struct {
	t      testing.TB
	name   string
	h      *Host
	events []transport.Event
}

func newEnd(t testing.TB, name string, h transport.Host) *end {
	t.Helper()
	qh, ok := h.(*Host)
	if !ok {
		t.Fatalf("%s: host is %T, want *quic.Host", name, h)
	}
	t.Cleanup(func() { _ = h.Close() })
	return &end{t: t, name: name, h: qh}
}

func (e *end) service() {
	e.t.Helper()
	if _, err := e.h.Service(func(ev transport.Event) {
		ev.Payload = slices.Clone(ev.Payload)
		e.events = append(e.events, ev)
	}); err != nil {
		e.t.Fatalf("%s: Service: %v", e.name, err)
	}
}

// take removes the first event matching keep.
func (e *end) take(keep func(transport.Event) bool) (transport.Event, bool) {
	for i, ev := range e.events {
		if keep(ev) {
			e.events = slices.Delete(e.events, i, i+1)
			return ev, true
		}
	}
	return transport.Event{}, false
}

// waitFor services ends until cond holds.
func waitFor(t testing.TB, what string, cond func() bool, ends ...*end) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		time.Sleep(time.Millisecond)
		for _, e := range ends {
			e.service()
		}
	}
}

// waitEvent waits until e delivered an event matching keep and removes it.
func waitEvent(t testing.TB, what string, e *end, keep func(transport.Event) bool, ends ...*end) transport.Event {
	t.Helper()
	var got transport.Event
	waitFor(t, e.name+": "+what, func() bool {
		ev, ok := e.take(keep)
		got = ev
		return ok
	}, ends...)
	return got
}

func kind(k transport.EventKind) func(transport.Event) bool {
	return func(ev transport.Event) bool { return ev.Kind == k }
}

func received(d transport.Delivery) func(transport.Event) bool {
	return func(ev transport.Event) bool { return ev.Kind == transport.EventReceive && ev.Delivery == d }
}

// pair is a connected server and client.
type pair struct {
	server, client *end
	sPeer, cPeer   transport.PeerID
}

func (p *pair) both() []*end { return []*end{p.server, p.client} }

func connect(t testing.TB, data uint32, sopt, copt transport.Options) *pair {
	t.Helper()
	sh, err := transport.Listen(Name, "127.0.0.1:0", sopt)
	if err != nil {
		t.Fatalf("Listen: %v", err)
	}
	ch, err := transport.Dial(Name, copt)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	p := &pair{server: newEnd(t, "server", sh), client: newEnd(t, "client", ch)}
	if p.cPeer, err = ch.Connect(sh.Addr(), data); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	ev := waitEvent(t, "connect", p.server, kind(transport.EventConnect), p.both()...)
	if ev.Data != data {
		t.Fatalf("server connect Data = %#x, want %#x", ev.Data, data)
	}
	p.sPeer = ev.Peer
	waitEvent(t, "connect", p.client, kind(transport.EventConnect), p.both()...)
	return p
}

func TestRegistered(t *testing.T) {
	b, err := transport.Lookup("quic")
	if err != nil {
		t.Fatalf("Lookup(quic): %v", err)
	}
	if b.Name() != "quic" {
		t.Fatalf("Name() = %q", b.Name())
	}
}

func TestConnectDataPreamble(t *testing.T) {
	for _, data := range []uint32{proto.ConnectData, 0, 1, 0xFFFFFFFF, 0x80000000, 0x01020304} {
		p := connect(t, data, transport.Options{}, transport.Options{})
		if got := p.server.h.Backend(); got != "quic" {
			t.Errorf("Backend() = %q", got)
		}
		if addr := p.server.h.PeerAddr(p.sPeer); addr == "" || addr != p.client.h.Addr() && !samePort(addr, p.client.h.Addr()) {
			t.Errorf("server PeerAddr = %q, client Addr = %q", addr, p.client.h.Addr())
		}
	}
}

// samePort compares the port of two "host:port" strings (the client binds
// the unspecified address, the server sees 127.0.0.1).
func samePort(a, b string) bool {
	ia, ib := bytes.LastIndexByte([]byte(a), ':'), bytes.LastIndexByte([]byte(b), ':')
	return ia >= 0 && ib >= 0 && a[ia:] == b[ib:]
}

func TestReliableAndUnreliableBothWays(t *testing.T) {
	p := connect(t, proto.ConnectData, transport.Options{}, transport.Options{})
	sizes := []int{0, 1, 100, 1500, 40000, MaxReliableSize}
	for i, n := range sizes {
		msg := pattern(byte(i), n)
		if err := p.client.h.Send(p.cPeer, transport.Reliable, msg); err != nil {
			t.Fatalf("client Send reliable %d B: %v", n, err)
		}
		if err := p.server.h.Send(p.sPeer, transport.Reliable, msg); err != nil {
			t.Fatalf("server Send reliable %d B: %v", n, err)
		}
	}
	for i, n := range sizes {
		want := pattern(byte(i), n)
		for _, e := range p.both() {
			ev := waitEvent(t, "reliable", e, received(transport.Reliable), p.both()...)
			if !bytes.Equal(ev.Payload, want) {
				t.Fatalf("%s: reliable message %d: %d bytes, want %d (order or content wrong)", e.name, i, len(ev.Payload), n)
			}
		}
	}
	if err := p.client.h.Send(p.cPeer, transport.Reliable, make([]byte, MaxReliableSize+1)); err == nil {
		t.Fatal("reliable message over 65535 bytes accepted")
	}
}

func TestLargeUnreliableFragmentsRoundTrip(t *testing.T) {
	p := connect(t, proto.ConnectData, transport.Options{}, transport.Options{})
	// Sizes around one datagram, a few datagrams, and the maximum; plus a
	// message starting with the fragment marker, which must round-trip.
	sizes := []int{1, 1100, 1300, 2000, 5000, 20000, MaxUnreliableSize}
	for i, n := range sizes {
		msg := pattern(byte(i+1), n)
		if err := p.server.h.Send(p.sPeer, transport.Unreliable, msg); err != nil {
			t.Fatalf("Send %d B: %v", n, err)
		}
		got := waitEvent(t, "unreliable", p.client, received(transport.Unreliable), p.both()...)
		if !bytes.Equal(got.Payload, msg) {
			t.Fatalf("%d-byte message came back as %d bytes or corrupted", n, len(got.Payload))
		}
	}
	marker := append([]byte{fragMarker}, pattern(9, 50)...)
	if err := p.client.h.Send(p.cPeer, transport.Unreliable, marker); err != nil {
		t.Fatal(err)
	}
	got := waitEvent(t, "marker message", p.server, received(transport.Unreliable), p.both()...)
	if !bytes.Equal(got.Payload, marker) {
		t.Fatalf("message starting with 0xFF: got % x", got.Payload[:min(8, len(got.Payload))])
	}
	// 2000 B and up exceed any datagram quic-go can send (packets are capped
	// at 1452 B); 1300 B fits once path MTU discovery has raised the limit,
	// which can happen within milliseconds on loopback.
	if st := p.server.h.Stats(); st.FragmentedSent < 4 {
		t.Errorf("FragmentedSent = %d, want ≥ 4 (messages over the largest datagram)", st.FragmentedSent)
	}
	if err := p.server.h.Send(p.sPeer, transport.Unreliable, make([]byte, MaxUnreliableSize+1)); err == nil {
		t.Error("unreliable message over MaxUnreliableSize accepted")
	}
}

func TestDisconnectReasonAfterQueuedData(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fromSv bool
		reason uint32
	}{
		{"server", true, 4},
		{"client", false, 0xDEADBEEF},
		{"zero", true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := connect(t, proto.ConnectData, transport.Options{}, transport.Options{})
			from, to, fpeer := p.client, p.server, p.cPeer
			if tc.fromSv {
				from, to, fpeer = p.server, p.client, p.sPeer
			}
			last := []byte("refuse: server full")
			if err := from.h.Send(fpeer, transport.Reliable, last); err != nil {
				t.Fatal(err)
			}
			from.h.Disconnect(fpeer, tc.reason)
			if err := from.h.Send(fpeer, transport.Reliable, last); err == nil {
				t.Error("Send after Disconnect accepted")
			}
			ev := waitEvent(t, "disconnect", to, kind(transport.EventDisconnect), p.both()...)
			if ev.Data != tc.reason {
				t.Errorf("remote reason = %#x, want %#x", ev.Data, tc.reason)
			}
			msg, ok := to.take(received(transport.Reliable))
			if !ok || !bytes.Equal(msg.Payload, last) {
				t.Errorf("message queued before Disconnect not delivered before the disconnect event")
			}
			lev := waitEvent(t, "local disconnect", from, kind(transport.EventDisconnect), p.both()...)
			if lev.Data != tc.reason {
				t.Errorf("local reason = %#x, want %#x", lev.Data, tc.reason)
			}
		})
	}
}

func TestIdleTimeoutIsReasonTimeout(t *testing.T) {
	p := connect(t, proto.ConnectData, transport.Options{Timeout: time.Second}, transport.Options{Timeout: time.Second})
	// Close drops the client without notice: the server must time out.
	if err := p.client.h.Close(); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, "timeout disconnect", p.server, kind(transport.EventDisconnect), p.server)
	if ev.Peer != p.sPeer || ev.Data != transport.ReasonTimeout {
		t.Fatalf("got peer %d data %d, want peer %d ReasonTimeout", ev.Peer, ev.Data, p.sPeer)
	}
}

func TestRTTAndWireCounters(t *testing.T) {
	p := connect(t, proto.ConnectData, transport.Options{}, transport.Options{})
	p.server.h.WireRates()
	for i := 0; i < 50; i++ {
		_ = p.client.h.Send(p.cPeer, transport.Unreliable, pattern(1, 24))
		_ = p.server.h.Send(p.sPeer, transport.Unreliable, pattern(2, 300))
	}
	n := 0
	waitFor(t, "50 snapshots", func() bool {
		for {
			if _, ok := p.client.take(received(transport.Unreliable)); !ok {
				break
			}
			n++
		}
		return n >= 45 // unreliable: allow a few drops on a loaded box
	}, p.both()...)
	if rtt := p.client.h.RTT(p.cPeer); rtt <= 0 {
		t.Errorf("client RTT = %v, want > 0", rtt)
	}
	r := p.server.h.WireRates()
	if r.BytesOutPerSec <= 0 || r.DatagramsOutPerSec <= 0 || r.BytesInPerSec <= 0 {
		t.Errorf("server wire rates %+v, want traffic both ways", r)
	}
}

// TestWireCountersMatchConnectionStats compares the socket counters with
// quic-go's own per-connection byte counts: with one connection on the
// socket they must agree (both exclude IP/UDP headers), up to packets in
// flight at the moment of reading.
func TestWireCountersMatchConnectionStats(t *testing.T) {
	p := connect(t, proto.ConnectData, transport.Options{}, transport.Options{})
	// Batches below the 64-message send queue, so nothing is dropped
	// locally; datagrams may still be lost, so wait for most of each batch.
	got := 0
	for batch := 1; batch <= 10; batch++ {
		for i := 0; i < 20; i++ {
			_ = p.server.h.Send(p.sPeer, transport.Unreliable, pattern(3, 700))
		}
		waitFor(t, "snapshots", func() bool {
			for {
				if _, ok := p.client.take(received(transport.Unreliable)); !ok {
					break
				}
				got++
			}
			return got >= batch*15
		}, p.both()...)
	}
	// Let the connection go quiet: ACKs settle.
	time.Sleep(300 * time.Millisecond)
	c := p.client.h.peers[p.cPeer].conn.Load()
	cs := c.ConnectionStats()
	pc := p.client.h.sock.pc
	out, in := pc.bytesOut.Load(), pc.bytesIn.Load()
	// A keep-alive or ACK may be in flight between the two reads: allow
	// one small packet each way.
	const slack = 100
	t.Logf("socket out/in %d/%d bytes %d/%d datagrams; ConnectionStats sent/received %d/%d bytes %d/%d packets", out, in, pc.datagramsOut.Load(), pc.datagramsIn.Load(), cs.BytesSent, cs.BytesReceived, cs.PacketsSent, cs.PacketsReceived)
	if diff(out, cs.BytesSent) > slack || diff(in, cs.BytesReceived) > slack {
		t.Errorf("socket out/in %d/%d bytes, ConnectionStats sent/received %d/%d", out, in, cs.BytesSent, cs.BytesReceived)
	}
	if diff(pc.datagramsOut.Load(), cs.PacketsSent) > 2 {
		t.Logf("datagrams out %d, packets sent %d (coalesced handshake packets count once on the socket)", pc.datagramsOut.Load(), cs.PacketsSent)
	}
	if in < 150*700 {
		t.Errorf("client socket read %d bytes, want at least the payload of 150 snapshots", in)
	}
}

func diff(a, b uint64) uint64 {
	if a > b {
		return a - b
	}
	return b - a
}

func TestCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	func() {
		p := connect(t, proto.ConnectData, transport.Options{}, transport.Options{})
		_ = p.server.h.Send(p.sPeer, transport.Unreliable, pattern(1, 3000))
		_ = p.client.h.Send(p.cPeer, transport.Reliable, pattern(1, 30))
		waitEvent(t, "reliable", p.server, received(transport.Reliable), p.both()...)
		if err := p.client.h.Close(); err != nil {
			t.Fatal(err)
		}
		if err := p.server.h.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := p.server.h.Service(func(transport.Event) {}); err == nil {
			t.Error("Service on a closed host returned no error")
		}
	}()
	// quic-go's connection goroutines exit just after Close returns; ours
	// are already gone. Wait (bounded) for the count to come back.
	deadline := time.Now().Add(waitTimeout)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("goroutines %d before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func pattern(tag byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7) ^ tag
	}
	if n > 0 {
		b[0] = tag
	}
	return b
}

// TestDisconnectFlushClose is the swarm's shutdown: Disconnect, Flush and
// Close in one breath. The remote must learn the reason from the close on
// the wire, not from its idle timeout (set beyond the wait here, so a
// silent drop fails the test).
func TestDisconnectFlushClose(t *testing.T) {
	p := connect(t, proto.ConnectData, transport.Options{Timeout: 2 * waitTimeout}, transport.Options{})
	p.client.h.Disconnect(p.cPeer, 7)
	if err := p.client.h.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := p.client.h.Close(); err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, "disconnect", p.server, kind(transport.EventDisconnect), p.server)
	if ev.Peer != p.sPeer || ev.Data != 7 {
		t.Fatalf("server got peer %d reason %d, want peer %d reason 7", ev.Peer, ev.Data, p.sPeer)
	}
}

func TestDialFailureRecorded(t *testing.T) {
	dead, err := transport.Listen(Name, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr()
	_ = dead.Close()
	ch, err := transport.Dial(Name, transport.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c := newEnd(t, "client", ch)
	peer, err := ch.Connect(addr, proto.ConnectData)
	if err != nil {
		t.Fatal(err)
	}
	ev := waitEvent(t, "disconnect", c, kind(transport.EventDisconnect), c)
	st := c.h.Stats()
	if ev.Peer != peer || ev.Data != transport.ReasonTimeout || st.DialFailures != 1 || !strings.Contains(st.LastDialError, addr) {
		t.Fatalf("event %+v, stats %+v: want ReasonTimeout, one dial failure naming %s", ev, st, addr)
	}
}
