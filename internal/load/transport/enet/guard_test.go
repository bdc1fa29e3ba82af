//go:build cgo

package enet

import (
	"context"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

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

// guarded is a listening ENet endpoint with opt.
func guarded(t *testing.T, opt transport.Options) (*transporttest.Endpoint, *Host) {
	t.Helper()
	h := listenHost(t, opt)
	return transporttest.NewEndpoint(t, "server", h), h
}

// joinsWithin connects a new client to server and reports whether its
// connect event arrives within limit (the limit is the point of the test,
// so this is not livetest.Wait).
func joinsWithin(t *testing.T, server *transporttest.Endpoint, limit time.Duration) (bool, time.Duration) {
	t.Helper()
	client := transporttest.NewEndpoint(t, "client", dialHost(t, transport.Options{}))
	start := time.Now()
	if _, err := client.Host.Connect(server.Host.Addr(), proto.ConnectData); err != nil {
		t.Fatal(err)
	}
	err := livetest.Poll(context.Background(), limit, transporttest.Pump(server, client), func() (bool, string) {
		_, got := client.Take(transporttest.IsKind(transport.EventConnect))
		return got, "no connect event"
	})
	return err == nil, time.Since(start)
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
			ep, server := guarded(t, transport.Options{MaxPeers: slots, ConnectGuard: tc.guard})
			flood(t, server.Addr(), forged)
			transporttest.WaitUntil(t, "the server to take in the flood", func() bool {
				return server.halfOpen() == slots || server.halfOpen()+int(server.GuardStats().ConnectsDropped) == forged
			}, ep)
			if tc.joined {
				if got := server.GuardStats().ConnectsDropped; got != forged-4 {
					t.Errorf("dropped %d forged CONNECTs, want %d", got, forged-4)
				}
				if n := server.halfOpen(); n != 4 {
					t.Errorf("%d half-open peers, want 4", n)
				}
			}
			joined, took := joinsWithin(t, ep, time.Second)
			if joined != tc.joined {
				t.Fatalf("client connected within 1 s: %v, want %v (%d half-open)", joined, tc.joined, server.halfOpen())
			}
			t.Logf("%s: connected %v after %v; guard %+v", tc.name, joined, took.Round(time.Millisecond), server.GuardStats())
		})
	}
}

// TestHalfOpenPeersReset: handshakes that never complete are reset after
// HalfOpen, however they got a slot, so slots come back in seconds, not
// after ENet's 25-30 s.
func TestHalfOpenPeersReset(t *testing.T) {
	ep, server := guarded(t, transport.Options{MaxPeers: 16,
		ConnectGuard: transport.ConnectGuard{PerSource: 16, Window: time.Second, HalfOpen: 300 * time.Millisecond}})
	flood(t, server.Addr(), 10)
	transporttest.WaitUntil(t, "10 half-open peers", func() bool { return server.halfOpen() == 10 }, ep)
	start := time.Now()
	transporttest.WaitUntil(t, "the half-open peers reset", func() bool { return server.halfOpen() == 0 }, ep)
	if el := time.Since(start); el < 200*time.Millisecond {
		t.Errorf("reset after %v, before HalfOpen", el)
	}
	if got := server.GuardStats().HalfOpenReset; got != 10 {
		t.Errorf("HalfOpenReset %d, want 10", got)
	}
	// The slots are usable again by a real client.
	if joined, _ := joinsWithin(t, ep, livetest.Wait); !joined {
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
			p := connect(t, tc.opt, transport.Options{})
			server := enetHost(p.Server)
			// Unreliable fragments, flushed, then a marker in a later datagram:
			// on loopback the fragments arrive first, so by the time the
			// marker is delivered the big message was either reassembled and
			// delivered (uncapped) or refused (capped).
			if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, make([]byte, big)); err != nil {
				t.Fatal(err)
			}
			if err := p.Client.Host.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, []byte("marker")); err != nil {
				t.Fatal(err)
			}
			// The capped server still sends a message 64 times its cap.
			if err := server.Send(p.SPeer, transport.Unreliable, make([]byte, 64<<10)); err != nil {
				t.Fatalf("send over the receive cap: %v", err)
			}
			gotBig, gotMarker, gotBack, maxWaiting := false, false, false, 0
			transporttest.WaitUntil(t, "the marker and the server's 64 KiB message", func() bool {
				maxWaiting = max(maxWaiting, server.waiting(p.SPeer))
				for _, ev := range p.Server.TakeAll(transporttest.IsKind(transport.EventReceive)) {
					gotBig = gotBig || len(ev.Payload) == big
					gotMarker = gotMarker || string(ev.Payload) == "marker"
				}
				for _, ev := range p.Client.TakeAll(transporttest.IsKind(transport.EventReceive)) {
					gotBack = gotBack || len(ev.Payload) == 64<<10
				}
				return gotMarker && gotBack
			}, p.Both()...)
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
