//go:build cgo

package enet

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
)

// TestGarbageDatagrams: anyone can send a server's socket anything. Random
// datagrams, including ones larger than ENet's 4096 B receive buffer, must
// neither fail Service nor disturb a connected client.
func TestGarbageDatagrams(t *testing.T) {
	p := connect(t, transport.Options{}, transport.Options{})
	server, client := enetHost(p.Server), enetHost(p.Client)
	conn, err := net.Dial("udp", server.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	got := 0
	// service services both hosts with a callback that checks every event;
	// after names the last garbage datagram in a failure.
	service := func(after string) {
		for _, h := range []*Host{server, client} {
			if _, err := h.Service(func(ev transport.Event) {
				if h == server && ev.Kind == transport.EventReceive {
					if len(ev.Payload) != 1 || ev.Payload[0] != byte(got) {
						t.Fatalf("message %d: payload %v", got, ev.Payload)
					}
					got++
				}
				if ev.Kind == transport.EventDisconnect || (h == server && ev.Kind == transport.EventConnect) {
					t.Fatalf("garbage caused %v on peer %d", ev.Kind, ev.Peer)
				}
			}); err != nil {
				t.Fatalf("Service after %s: %v", after, err)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{1, 2, 4, 12, 100, 1400, 4096, 4097, 9000, 60000}
	for i := range 200 {
		b := make([]byte, sizes[i%len(sizes)])
		for j := range b {
			b[j] = byte(rng.Uint32())
		}
		if _, err := conn.Write(b); err != nil {
			t.Fatalf("writing garbage: %v", err)
		}
		if err := client.Send(p.CPeer, transport.Reliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		service(fmt.Sprintf("garbage datagram %d (%d B)", i, len(b)))
	}
	transporttest.WaitUntil(t, "the client's messages", func() bool {
		service("all the garbage")
		return got == 200
	})
	// 3 of every 10 sizes exceed 4096 B (4097, 9000, 60000): 60 datagrams.
	if n := server.oversizeDropped(); n != 60 {
		t.Errorf("server dropped %d oversized datagrams, want 60", n)
	}
}
