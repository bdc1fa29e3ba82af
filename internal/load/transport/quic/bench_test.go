package quic

import (
	"fmt"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// BenchmarkClientServiceStep is one swarm client tick on the owner
// goroutine: queue a 25-byte Input datagram and service the host (draining
// whatever snapshots arrived). The QUIC work itself happens on quic-go's
// goroutines; this measures what the worker loop pays.
func BenchmarkClientServiceStep(b *testing.B) {
	p := transporttest.ConnectPair(b, Name, proto.ConnectData, transport.Options{}, transport.Options{})
	input := proto.AppendInput(nil, &proto.Input{Seq: 1, Throttle: 0.5})
	drain := func(transport.Event) {}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, input); err != nil {
			b.Fatal(err)
		}
		if _, err := p.Client.Host.Service(drain); err != nil {
			b.Fatal(err)
		}
		// Keep the server's queue from growing without bound.
		_, _ = p.Server.Host.Service(drain)
	}
}

// BenchmarkServerBroadcastStep is one server tick's transport work on the
// owner goroutine: service, queue a snapshot to every peer, flush.
func BenchmarkServerBroadcastStep(b *testing.B) {
	for _, tc := range []struct{ peers, size int }{{8, 300}, {32, 300}, {32, 1800}} {
		b.Run(fmt.Sprintf("peers=%d/bytes=%d", tc.peers, tc.size), func(b *testing.B) {
			server, ids, clients := connectMany(b, tc.peers)
			snap := pattern(0x20, tc.size)
			drain := func(transport.Event) {}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := server.Host.Service(drain); err != nil {
					b.Fatal(err)
				}
				for _, id := range ids {
					if err := server.Host.Send(id, transport.Unreliable, snap); err != nil {
						b.Fatal(err)
					}
				}
				if err := server.Host.Flush(); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for _, c := range clients {
					_, _ = c.Host.Service(drain)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tc.peers), "ns/peer")
		})
	}
}

// connectMany connects n clients to one server.
func connectMany(tb testing.TB, n int) (*transporttest.Endpoint, []transport.PeerID, []*transporttest.Endpoint) {
	tb.Helper()
	sh, err := transport.Listen(Name, "127.0.0.1:0", transport.Options{MaxPeers: n})
	if err != nil {
		tb.Fatal(err)
	}
	server := transporttest.NewEndpoint(tb, "server", sh)
	clients := make([]*transporttest.Endpoint, n)
	for i := range clients {
		ch, err := transport.Dial(Name, transport.Options{})
		if err != nil {
			tb.Fatal(err)
		}
		clients[i] = transporttest.NewEndpoint(tb, fmt.Sprintf("client%d", i), ch)
		if _, err := ch.Connect(sh.Addr(), proto.ConnectData); err != nil {
			tb.Fatal(err)
		}
	}
	var ids []transport.PeerID
	all := append([]*transporttest.Endpoint{server}, clients...)
	transporttest.WaitUntil(tb, fmt.Sprintf("%d connects", n), func() bool {
		for {
			ev, ok := server.Take(transporttest.IsKind(transport.EventConnect))
			if !ok {
				break
			}
			ids = append(ids, ev.Peer)
		}
		return len(ids) == n
	}, all...)
	for _, c := range clients {
		transporttest.WaitEvent(tb, "connect", c, transporttest.IsKind(transport.EventConnect), all...)
	}
	return server, ids, clients
}

// BenchmarkSendReceive is one message client → server, send and receive,
// beside the same benchmark of the other backends (transporttest).
func BenchmarkSendReceive(b *testing.B) {
	transporttest.RunSendReceive(b, Name, transporttest.Config{})
}
