//go:build cgo

package enet

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// background services hosts from one goroutine (their owner from now on)
// every millisecond until the returned stop is called, which also closes
// them. Received payloads are discarded.
func background(b *testing.B, hosts ...*Host) (stop func()) {
	b.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	var failed error
	wg.Go(func() {
		defer func() {
			for _, h := range hosts {
				h.Close()
			}
		}()
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-done:
				return
			case <-tk.C:
			}
			for _, h := range hosts {
				if _, err := h.Service(func(transport.Event) {}); err != nil {
					failed = err
					return
				}
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		if failed != nil {
			b.Errorf("background service: %v", failed)
		}
	}
}

func benchListen(b *testing.B, opt transport.Options) *Host {
	b.Helper()
	h, err := backend{}.Listen("127.0.0.1:0", opt)
	if err != nil {
		b.Fatal(err)
	}
	return h.(*Host)
}

func benchDial(b *testing.B, opt transport.Options) *Host {
	b.Helper()
	h, err := backend{}.Dial(opt)
	if err != nil {
		b.Fatal(err)
	}
	return h.(*Host)
}

// waitConnects services h until it has seen n connect events, returning the
// peers.
func waitConnects(b *testing.B, h *Host, n int) []transport.PeerID {
	b.Helper()
	var peers []transport.PeerID
	service := func() int {
		k, err := h.Service(func(ev transport.Event) {
			if ev.Kind == transport.EventConnect {
				peers = append(peers, ev.Peer)
			}
		})
		if err != nil {
			b.Fatal(err)
		}
		return k
	}
	livetest.EventuallyPumping(b, livetest.Wait, service, func() (bool, string) {
		return len(peers) >= n, fmt.Sprintf("%d of %d connects", len(peers), n)
	})
	return peers
}

// BenchmarkClientServiceStep is one swarm client's tick: encode an Input,
// send it unreliably, drain the host. The server runs in the background and
// answers nothing but acknowledgements and pings.
func BenchmarkClientServiceStep(b *testing.B) {
	for _, rc := range []bool{false, true} {
		b.Run(fmt.Sprintf("rangecoder=%v", rc), func(b *testing.B) {
			opt := transport.Options{RangeCoder: rc}
			server := benchListen(b, opt)
			stop := background(b, server)
			defer stop()
			client := benchDial(b, opt)
			defer client.Close()
			peer, err := client.Connect(server.Addr(), proto.ConnectData)
			if err != nil {
				b.Fatal(err)
			}
			waitConnects(b, client, 1)
			buf := make([]byte, 0, proto.InputSize)
			in := proto.Input{Throttle: 0.7, Elevator: -0.1, Aileron: 0.2}
			received := 0
			on := func(ev transport.Event) { received += len(ev.Payload) }
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				in.Seq = uint32(i)
				if err := client.Send(peer, transport.Unreliable, proto.AppendInput(buf[:0], &in)); err != nil {
					b.Fatal(err)
				}
				if _, err := client.Service(on); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkServerBroadcastStep is one server tick for N clients: drain the
// host, send each client a 200 B unreliable snapshot, flush. ns/client is
// the per-client share of the tick. io=batched is the server host as
// created (sendmmsg and recvmmsg, enet_io.c), io=libenet the same host on
// libenet's own system call per datagram.
func BenchmarkServerBroadcastStep(b *testing.B) {
	for _, bench := range []struct {
		n  int
		io string
	}{{64, "libenet"}, {64, "batched"}, {256, "libenet"}, {256, "batched"}} {
		n := bench.n
		b.Run(fmt.Sprintf("clients=%d/io=%s", n, bench.io), func(b *testing.B) {
			server := benchListen(b, transport.Options{MaxPeers: n})
			defer server.Close()
			if bench.io == "libenet" {
				server.unbatch()
			}
			clients := make([]*Host, n)
			for i := range clients {
				clients[i] = benchDial(b, transport.Options{})
				if _, err := clients[i].Connect(server.Addr(), proto.ConnectData); err != nil {
					b.Fatal(err)
				}
			}
			stop := background(b, clients...)
			defer stop()
			peers := waitConnects(b, server, n)
			snap := make([]byte, 0, 200)
			on := func(transport.Event) {}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := server.Service(on); err != nil {
					b.Fatal(err)
				}
				snap = proto.AppendSnapshotHeader(snap[:0], proto.SnapshotHeader{Tick: uint32(i)})
				snap = snap[:200]
				for _, p := range peers {
					if err := server.Send(p, transport.Unreliable, snap); err != nil {
						b.Fatal(err)
					}
				}
				if err := server.Flush(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/client")
		})
	}
}

// BenchmarkSendReceive is one message client → server, send and receive,
// beside the same benchmark of the other backends (transporttest).
func BenchmarkSendReceive(b *testing.B) {
	transporttest.RunSendReceive(b, Name, transporttest.Config{})
}
