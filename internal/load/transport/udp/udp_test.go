//go:build linux

package udp

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
)

// pair is a connected server and client with default options.
func pair(t *testing.T, sopt, copt transport.Options) *transporttest.Pair {
	t.Helper()
	return transporttest.ConnectPair(t, Name, 1, sopt, copt)
}

// rawSocket is a plain UDP socket: a foreign peer that speaks whatever it likes.
func rawSocket(t *testing.T) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func udpAddr(t *testing.T, s string) *net.UDPAddr {
	t.Helper()
	a, err := net.ResolveUDPAddr("udp", s)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Wire bytes are the payloads exactly: no framing, one datagram a message,
// nothing else sent (no keep-alive, no acknowledgement).
func TestWireBytesArePayload(t *testing.T) {
	p := pair(t, transport.Options{}, transport.Options{})
	p.Client.Host.WireRates()
	p.Server.Host.WireRates()
	sizes := []int{0, 1, 25, 200, 1400, 9000}
	total := 0
	for _, n := range sizes {
		total += n
		if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, bytes.Repeat([]byte{7}, n)); err != nil {
			t.Fatal(err)
		}
	}
	var got []int
	transporttest.WaitUntil(t, "every datagram", func() bool {
		for _, ev := range p.Server.TakeAll(transporttest.IsKind(transport.EventReceive)) {
			got = append(got, len(ev.Payload))
		}
		return len(got) == len(sizes)
	}, p.Both()...)
	for i := range sizes {
		if got[i] != sizes[i] {
			t.Errorf("message %d arrived with %d bytes, want %d", i, got[i], sizes[i])
		}
	}
	for _, c := range []struct {
		e        *transporttest.Endpoint
		bytes    float64
		dgrams   float64
		outbound bool
	}{{p.Client, float64(total), float64(len(sizes)), true}, {p.Server, float64(total), float64(len(sizes)), false}} {
		r := c.e.Host.WireRates()
		sec := r.Interval.Seconds()
		b, d := r.BytesInPerSec*sec, r.DatagramsInPerSec*sec
		if c.outbound {
			b, d = r.BytesOutPerSec*sec, r.DatagramsOutPerSec*sec
		}
		if int(b+0.5) != int(c.bytes) || int(d+0.5) != int(c.dgrams) {
			t.Errorf("%s: wire %.1f bytes in %.1f datagrams, want exactly %v in %v", c.e.Name, b, d, c.bytes, c.dgrams)
		}
	}
}

// Any datagram is a message: random bytes and empty datagrams from a
// foreign socket reach the owner verbatim; the protocol decides.
func TestGarbageIsDelivered(t *testing.T) {
	h, err := transport.Listen(Name, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	server := transporttest.NewEndpoint(t, "server", h)
	raw := rawSocket(t)
	rng := rand.New(rand.NewPCG(1, 2))
	var sent [][]byte
	for i := range 50 {
		b := make([]byte, rng.IntN(1500))
		for j := range b {
			b[j] = byte(rng.UintN(256))
		}
		if i == 7 {
			b = nil
		}
		sent = append(sent, b)
		if _, err := raw.WriteToUDP(b, udpAddr(t, h.Addr())); err != nil {
			t.Fatal(err)
		}
	}
	var got []transport.Event
	transporttest.WaitUntil(t, "every datagram", func() bool {
		got = append(got, server.TakeAll(transporttest.IsKind(transport.EventReceive))...)
		return len(got) >= len(sent)
	}, server)
	for i := range sent {
		if !bytes.Equal(got[i].Payload, sent[i]) || got[i].Delivery != transport.Unreliable {
			t.Fatalf("datagram %d: got %v %d bytes, want the %d bytes sent, unreliable", i, got[i].Delivery, len(got[i].Payload), len(sent[i]))
		}
	}
	if n := len(server.TakeAll(transporttest.IsKind(transport.EventConnect))); n != 1 {
		t.Errorf("%d connect events for one source address, want 1", n)
	}
}

// A datagram over MaxRecvMessage is dropped, counted and reported as
// EventMalformed; the next one that fits is delivered.
func TestOversizedDatagram(t *testing.T) {
	p := pair(t, transport.Options{MaxRecvMessage: 100}, transport.Options{})
	for _, n := range []int{101, 5000, 100} {
		if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, make([]byte, n)); err != nil {
			t.Fatal(err)
		}
	}
	ev := transporttest.WaitEvent(t, "the 100-byte message", p.Server, transporttest.IsKind(transport.EventReceive), p.Both()...)
	if len(ev.Payload) != 100 {
		t.Errorf("delivered %d bytes, want the 100-byte message", len(ev.Payload))
	}
	bad := p.Server.TakeAll(transporttest.IsKind(transport.EventMalformed))
	if len(bad) != 2 || bad[0].Peer != p.SPeer || bad[0].Data != 1 {
		t.Errorf("malformed events %+v, want 2 for peer %d with Data 1", bad, p.SPeer)
	}
	if st := p.Server.Host.(*Host).Stats(); st.Oversized != 2 {
		t.Errorf("Stats.Oversized = %d, want 2", st.Oversized)
	}
}

// Send refuses a message over MaxDatagram with ErrTooLarge and sends the
// largest one that fits.
func TestSendLimit(t *testing.T) {
	p := pair(t, transport.Options{}, transport.Options{})
	err := p.Client.Host.Send(p.CPeer, transport.Unreliable, make([]byte, MaxDatagram+1))
	if !errors.Is(err, transport.ErrTooLarge) {
		t.Errorf("Send(%d bytes) = %v, want ErrTooLarge", MaxDatagram+1, err)
	}
	if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, make([]byte, MaxDatagram)); err != nil {
		t.Fatalf("Send(%d bytes): %v", MaxDatagram, err)
	}
	ev := transporttest.WaitEvent(t, "the largest datagram", p.Server, transporttest.IsKind(transport.EventReceive), p.Both()...)
	if len(ev.Payload) != MaxDatagram {
		t.Errorf("received %d bytes, want %d", len(ev.Payload), MaxDatagram)
	}
}

// A listening host at MaxPeers drops datagrams from new addresses (counted)
// and keeps serving its peers; a dialling host drops datagrams from
// addresses that are not its peer (counted as stray).
func TestFullAndStray(t *testing.T) {
	p := pair(t, transport.Options{MaxPeers: 1}, transport.Options{})
	raw := rawSocket(t)
	for range 3 {
		if _, err := raw.WriteToUDP([]byte("knock"), udpAddr(t, p.Server.Host.Addr())); err != nil {
			t.Fatal(err)
		}
	}
	client := p.Client.Host.(*Host)
	if _, err := raw.WriteToUDP([]byte("stray"), udpAddr(t, "127.0.0.1:"+portOf(t, client.Addr()))); err != nil {
		t.Fatal(err)
	}
	if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, []byte("peer")); err != nil {
		t.Fatal(err)
	}
	ev := transporttest.WaitEvent(t, "the peer's message", p.Server, transporttest.IsKind(transport.EventReceive), p.Both()...)
	if string(ev.Payload) != "peer" {
		t.Errorf("server received %q, want the peer's message", ev.Payload)
	}
	transporttest.WaitUntil(t, "the refused and stray datagrams counted", func() bool {
		return p.Server.Host.(*Host).Stats().RefusedFull == 3 && client.Stats().Stray == 1
	}, p.Both()...)
	if n := len(p.Server.TakeAll(transporttest.IsKind(transport.EventConnect))); n != 0 {
		t.Errorf("%d connect events beyond MaxPeers, want 0", n)
	}
	if n := len(p.Client.TakeAll(transporttest.Any)); n != 0 {
		t.Errorf("client delivered %d events for a stray datagram, want 0", n)
	}
}

func portOf(t *testing.T, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// After the server disconnects a client, the client's next datagram is a
// new peer with a new id: a peer is an address heard from, nothing more.
func TestReappearAfterDisconnect(t *testing.T) {
	p := pair(t, transport.Options{}, transport.Options{})
	p.Server.Host.Disconnect(p.SPeer, 9)
	ev := transporttest.WaitEvent(t, "own disconnect", p.Server, transporttest.IsKind(transport.EventDisconnect), p.Both()...)
	if ev.Peer != p.SPeer || ev.Data != 9 {
		t.Fatalf("disconnect %+v, want peer %d reason 9", ev, p.SPeer)
	}
	if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, []byte("again")); err != nil {
		t.Fatal(err)
	}
	c := transporttest.WaitEvent(t, "a new connect", p.Server, transporttest.IsKind(transport.EventConnect), p.Both()...)
	if c.Peer == p.SPeer {
		t.Errorf("the returning address got the old peer id %d", c.Peer)
	}
	m := transporttest.WaitEvent(t, "its message", p.Server, transporttest.IsKind(transport.EventReceive), p.Both()...)
	if m.Peer != c.Peer || string(m.Payload) != "again" {
		t.Errorf("message %+v, want \"again\" from peer %d", m, c.Peer)
	}
}

// IPv6 loopback: a listening host on [::1] and a dual-stack client.
func TestIPv6(t *testing.T) {
	h, err := transport.Listen(Name, "[::1]:0", transport.Options{})
	if err != nil {
		t.Fatalf("Listen [::1]: %v", err)
	}
	server := transporttest.NewEndpoint(t, "server", h)
	p := transporttest.ConnectTo(t, Name, server, h.Addr(), 1, transport.Options{})
	if err := p.Server.Host.Send(p.SPeer, transport.Unreliable, []byte("v6")); err != nil {
		t.Fatal(err)
	}
	ev := transporttest.WaitEvent(t, "reply over IPv6", p.Client, transporttest.IsKind(transport.EventReceive), p.Both()...)
	if string(ev.Payload) != "v6" || p.Client.Host.PeerAddr(p.CPeer) != h.Addr() {
		t.Errorf("got %q from %s, want \"v6\" from %s", ev.Payload, p.Client.Host.PeerAddr(p.CPeer), h.Addr())
	}
	// An IPv4-only socket cannot reach an IPv6 address: Connect says so.
	v4, err := transport.Listen(Name, "127.0.0.1:0", transport.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer v4.Close()
	if _, err := v4.Connect(h.Addr(), 0); err == nil {
		t.Error("Connect from an IPv4 socket to [::1] succeeded")
	}
}

// Options out of range are refused, naming the field.
func TestBadOptions(t *testing.T) {
	for _, opt := range []transport.Options{{MaxPeers: -1}, {Timeout: -1}, {RecvBufferBytes: -1}, {MaxRecvMessage: 70000}} {
		if h, err := transport.Dial(Name, opt); err == nil {
			h.Close()
			t.Errorf("Dial(%+v) succeeded", opt)
		}
	}
}

// The send and receive paths allocate nothing: a Send, and a Service that
// delivers the message, on an established pair.
func TestNoAllocs(t *testing.T) {
	p := pair(t, transport.Options{}, transport.Options{})
	msg := make([]byte, 200)
	got := 0
	count := func(ev transport.Event) {
		if ev.Kind == transport.EventReceive {
			got++
		}
	}
	sent := 0
	allocs := testing.AllocsPerRun(200, func() {
		if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, msg); err != nil {
			t.Fatal(err)
		}
		sent++
		for i := 0; got < sent && i < 1_000_000; i++ {
			if _, err := p.Server.Host.Service(count); err != nil {
				t.Fatal(err)
			}
		}
	})
	if got != sent {
		t.Fatalf("%d of %d messages arrived", got, sent)
	}
	if allocs != 0 {
		t.Errorf("%.2f allocations per message sent and received, want 0", allocs)
	}
}
