//go:build cgo

package enet

import (
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/proto"
	"github.com/scalegate/scalegate/internal/transport"
)

// guardWait bounds the waits of these tests on loopback events: generous for
// a loaded 2-core machine; the tests wait on events, not on the clock.
const guardWait = 30 * time.Second

// forgedConnect is a 52-byte ENet CONNECT datagram as a flood tool sends
// it: header (peer id 0xFFF with the sent-time flag, sent time) and one
// CONNECT command with its own connect id. Nobody will ever answer the
// VERIFY_CONNECT it provokes.
func forgedConnect(connectID uint32) []byte {
	b := make([]byte, 0, 52)
	b = binary.BigEndian.AppendUint16(b, 0x8000|0x0FFF) // sent-time flag | no peer
	b = binary.BigEndian.AppendUint16(b, 1)             // sent time
	b = append(b, 0x82, 0xFF)                           // CONNECT|ACKNOWLEDGE, channel 0xFF
	b = binary.BigEndian.AppendUint16(b, 1)             // reliable sequence number
	b = binary.BigEndian.AppendUint16(b, 0)             // outgoing peer id
	b = append(b, 0xFF, 0xFF)                           // session ids
	for _, v := range []uint32{1400, 65536, 2, 0, 0, 5000, 2, 2} {
		b = binary.BigEndian.AppendUint32(b, v) // mtu, window, channels, bandwidths, throttle
	}
	b = binary.BigEndian.AppendUint32(b, connectID)
	return binary.BigEndian.AppendUint32(b, proto.ConnectData)
}

// flood sends n forged CONNECTs to addr from one socket.
func flood(t *testing.T, addr string, n int) {
	t.Helper()
	c, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range n {
		if _, err := c.Write(forgedConnect(uint32(0x1000 + i))); err != nil {
			t.Fatalf("forged CONNECT %d: %v", i, err)
		}
	}
}

// serviceUntil services hosts until done or limit, and reports whether
// done became true.
func serviceUntil(t *testing.T, limit time.Duration, hosts []*Host, on func(*Host, transport.Event), done func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !done() {
		if time.Now().After(deadline) {
			return false
		}
		for _, h := range hosts {
			if _, err := h.Service(func(ev transport.Event) { on(h, ev) }); err != nil {
				t.Fatalf("Service: %v", err)
			}
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

func guardHost(t *testing.T, listen bool, opt transport.Options) *Host {
	t.Helper()
	var h transport.Host
	var err error
	if listen {
		h, err = backend{}.Listen("127.0.0.1:0", opt)
	} else {
		h, err = backend{}.Dial(opt)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h.(*Host)
}

// TestConnectFloodFromOneSocket: 400 forged CONNECTs from one socket took
// every peer slot for 25-30 s. With the guard, all but PerSource are
// dropped before they take a slot and a real client connects within 1 s.
// Without it (the control) the same flood locks the client out, which is
// what proves this test can fail.
func TestConnectFloodFromOneSocket(t *testing.T) {
	const slots, forged = 64, 400
	guard := transport.ConnectGuard{PerSource: 4, Window: time.Second}
	for _, tc := range []struct {
		name   string
		guard  transport.ConnectGuard
		joined bool
	}{
		{"guarded", guard, true},
		{"unguarded control", transport.ConnectGuard{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := guardHost(t, true, transport.Options{MaxPeers: slots, ConnectGuard: tc.guard})
			flood(t, server.Addr(), forged)
			// Wait until the server has taken in the whole flood.
			none := func(*Host, transport.Event) {}
			if !serviceUntil(t, guardWait, []*Host{server}, none, func() bool {
				return server.halfOpen() == slots || server.halfOpen()+int(server.GuardStats().ConnectsDropped) == forged
			}) {
				t.Fatalf("flood not taken in: %d half-open, %+v", server.halfOpen(), server.GuardStats())
			}
			if tc.joined {
				if got := server.GuardStats().ConnectsDropped; got != forged-4 {
					t.Errorf("dropped %d forged CONNECTs, want %d", got, forged-4)
				}
				if n := server.halfOpen(); n != 4 {
					t.Errorf("%d half-open peers, want 4", n)
				}
			}
			client := guardHost(t, false, transport.Options{})
			start := time.Now()
			if _, err := client.Connect(server.Addr(), proto.ConnectData); err != nil {
				t.Fatal(err)
			}
			up := false
			joined := serviceUntil(t, time.Second, []*Host{server, client}, func(h *Host, ev transport.Event) {
				if h == client && ev.Kind == transport.EventConnect {
					up = true
				}
			}, func() bool { return up })
			if joined != tc.joined {
				t.Fatalf("client connected within 1 s: %v, want %v (%d half-open)", joined, tc.joined, server.halfOpen())
			}
			t.Logf("%s: connected %v after %v; guard %+v", tc.name, joined, time.Since(start).Round(time.Millisecond), server.GuardStats())
		})
	}
}

// TestHalfOpenPeersReset: handshakes that never complete are reset after
// HalfOpen, however they got a slot, so slots come back in seconds, not
// after ENet's 25-30 s.
func TestHalfOpenPeersReset(t *testing.T) {
	server := guardHost(t, true, transport.Options{MaxPeers: 16,
		ConnectGuard: transport.ConnectGuard{PerSource: 16, Window: time.Second, HalfOpen: 300 * time.Millisecond}})
	flood(t, server.Addr(), 10)
	none := func(*Host, transport.Event) {}
	if !serviceUntil(t, guardWait, []*Host{server}, none, func() bool { return server.halfOpen() == 10 }) {
		t.Fatalf("%d half-open, want 10", server.halfOpen())
	}
	start := time.Now()
	if !serviceUntil(t, guardWait, []*Host{server}, none, func() bool { return server.halfOpen() == 0 }) {
		t.Fatalf("%d still half-open", server.halfOpen())
	}
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Errorf("reset after %v, before HalfOpen", el)
	}
	if got := server.GuardStats().HalfOpenReset; got != 10 {
		t.Errorf("HalfOpenReset %d, want 10", got)
	}
	// The slots are usable again by a real client.
	client := guardHost(t, false, transport.Options{})
	if _, err := client.Connect(server.Addr(), proto.ConnectData); err != nil {
		t.Fatal(err)
	}
	up := false
	if !serviceUntil(t, guardWait, []*Host{server, client}, func(h *Host, ev transport.Event) {
		up = up || (h == client && ev.Kind == transport.EventConnect)
	}, func() bool { return up }) {
		t.Fatal("client did not connect after the reset")
	}
}

// TestIsConnectDatagram pins what the guard counts as a connection attempt.
func TestIsConnectDatagram(t *testing.T) {
	good := forgedConnect(7)
	mod := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := []struct {
		name string
		b    []byte
		want bool
	}{
		{"forged CONNECT", good, true},
		{"no sent time", append([]byte{0x0F, 0xFF}, good[4:]...), true},
		{"session bits set", mod(func(b []byte) []byte { b[0] |= 0x30; return b }), true},
		{"compressed, command unreadable", mod(func(b []byte) []byte { b[0] |= 0x40; return b[:6] }), true},
		{"to a peer", mod(func(b []byte) []byte { b[1] = 0x00; return b }), false},
		{"not CONNECT", mod(func(b []byte) []byte { b[4] = 0x85; return b }), false},
		{"truncated command", good[:51], false},
		{"header only", good[:4], false},
		{"empty", nil, false},
		{"one byte", []byte{0x8F}, false},
	}
	for _, tc := range cases {
		if got := isConnectDatagram(tc.b); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// FuzzIsConnectDatagram: the recogniser reads raw network bytes inside
// ENet's receive path; no input may crash it, and it only ever claims
// datagrams addressed to no peer.
func FuzzIsConnectDatagram(f *testing.F) {
	f.Add(forgedConnect(1))
	f.Add([]byte{0x0F, 0xFF})
	f.Add([]byte{0x4F, 0xFF, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		if isConnectDatagram(b) && (len(b) < 2 || binary.BigEndian.Uint16(b)&0x0FFF != 0x0FFF) {
			t.Fatalf("%x claimed as a CONNECT", b)
		}
	})
}

// TestReassemblyCapped: a peer's oversize message is dropped before ENet
// allocates it (one 33 MB message left a server +35 MB RSS for good), while
// the capped host still sends messages larger than its cap. The uncapped
// control receives the same message, which proves the test can fail.
func TestReassemblyCapped(t *testing.T) {
	const capMsg, capWait, big = 1024, 32 << 10, 256 << 10
	for _, tc := range []struct {
		name      string
		opt       transport.Options
		delivered bool
	}{
		{"capped", transport.Options{MaxRecvMessage: capMsg, MaxRecvWaiting: capWait}, false},
		{"uncapped control", transport.Options{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := guardHost(t, true, tc.opt)
			client := guardHost(t, false, transport.Options{})
			cPeer, err := client.Connect(server.Addr(), proto.ConnectData)
			if err != nil {
				t.Fatal(err)
			}
			var sPeer transport.PeerID
			sUp, cUp := false, false
			var gotBig, gotBack bool
			maxWaiting := 0
			on := func(h *Host, ev transport.Event) {
				switch {
				case ev.Kind == transport.EventConnect && h == server:
					sPeer, sUp = ev.Peer, true
				case ev.Kind == transport.EventConnect:
					cUp = true
				case ev.Kind == transport.EventReceive && h == server && len(ev.Payload) == big:
					gotBig = true
				case ev.Kind == transport.EventReceive && h == client && len(ev.Payload) == 64<<10:
					gotBack = true
				}
			}
			if !serviceUntil(t, guardWait, []*Host{server, client}, on, func() bool { return sUp && cUp }) {
				t.Fatal("no connection")
			}
			// Unreliable fragments, flushed, then a marker in a later datagram:
			// on loopback the fragments arrive first, so by the time the
			// marker is delivered the big message was either reassembled and
			// delivered (uncapped) or refused (capped).
			if err := client.Send(cPeer, transport.Unreliable, make([]byte, big)); err != nil {
				t.Fatal(err)
			}
			if err := client.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := client.Send(cPeer, transport.Unreliable, []byte("marker")); err != nil {
				t.Fatal(err)
			}
			// The capped server still sends a message 64 times its cap.
			if err := server.Send(sPeer, transport.Unreliable, make([]byte, 64<<10)); err != nil {
				t.Fatalf("send over the receive cap: %v", err)
			}
			gotMarker := false
			if !serviceUntil(t, guardWait, []*Host{server, client}, func(h *Host, ev transport.Event) {
				on(h, ev)
				gotMarker = gotMarker || (h == server && ev.Kind == transport.EventReceive && string(ev.Payload) == "marker")
				maxWaiting = max(maxWaiting, server.waiting(sPeer))
			}, func() bool { return gotBack && gotMarker }) {
				t.Fatalf("marker %v, server's message %v", gotMarker, gotBack)
			}
			if gotBig != tc.delivered {
				t.Fatalf("%d-byte message delivered: %v, want %v", big, gotBig, tc.delivered)
			}
			if !tc.delivered && maxWaiting > capWait {
				t.Fatalf("server held %d bytes for the peer, cap %d", maxWaiting, capWait)
			}
			// The receive buffer grows to the largest message delivered and
			// keeps that size: an oversize message must never reach it.
			if grew := len(server.buf) > initialPayloadBuffer; grew != tc.delivered {
				t.Fatalf("server receive buffer %d bytes (initial %d)", len(server.buf), initialPayloadBuffer)
			}
		})
	}
}
