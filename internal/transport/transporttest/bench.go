package transporttest

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/livetest"
	"github.com/scalegate/scalegate/internal/proto"
	"github.com/scalegate/scalegate/internal/transport"
)

// BenchSendReceive measures one message from a client to a server on
// backend, send and receive, in the owner's goroutine: each op sends batch
// Unreliable messages of size bytes and services the server (and, for
// backends that send on Service, the client) until all of them arrived.
// It reports ns/msg (wall), cpu-ns/msg (the process's user+system CPU,
// which counts the backend's own goroutines and the kernel's work in the
// syscalls, and moves far less than wall time when other processes load the
// machine), and allocs/op, per batch: with batch 1 it is the allocations of
// one message's send and receive. Every wait has the harness's deadline.
func BenchSendReceive(b *testing.B, backend string, cfg Config, size, batch int) {
	p := ConnectPair(b, backend, proto.ConnectData, cfg.Server, cfg.Client)
	msg := make([]byte, size)
	got := 0
	count := func(ev transport.Event) {
		if ev.Kind == transport.EventReceive {
			got++
		}
	}
	drain := func(transport.Event) {}
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for b.Loop() {
		got = 0
		for range batch {
			if err := p.Client.Host.Send(p.CPeer, transport.Unreliable, msg); err != nil {
				b.Fatal(err)
			}
		}
		deadline := time.Time{}
		for empty := 0; got < batch; {
			if _, err := p.Client.Host.Service(drain); err != nil {
				b.Fatal(err)
			}
			before := got
			if _, err := p.Server.Host.Service(count); err != nil {
				b.Fatal(err)
			}
			if got > before {
				empty = 0
				continue
			}
			// Nothing yet: the message is with a backend's goroutines
			// (QUIC, WebSocket). Yield, then sleep, rather than spin, so
			// the CPU figure is the backend's work and not the owner's
			// polling.
			empty++
			switch {
			case empty <= 20:
				runtime.Gosched()
			case empty == 21:
				deadline = time.Now().Add(livetest.Wait)
			default:
				time.Sleep(20 * time.Microsecond)
				if time.Now().After(deadline) {
					b.Fatalf("%d of %d messages arrived within %v", got, batch, livetest.Wait)
				}
			}
		}
	}
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/msg")
	if cpu0 >= 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*batch), "cpu-ns/msg")
	}
}

// SendReceiveCases are the sizes and batches every backend's benchmark runs:
// a 25-byte input one at a time, and a 200-byte snapshot 64 at a time.
var SendReceiveCases = []struct{ Size, Batch int }{{25, 1}, {200, 1}, {200, 64}}

// RunSendReceive runs BenchSendReceive for every case of SendReceiveCases.
func RunSendReceive(b *testing.B, backend string, cfg Config) {
	for _, c := range SendReceiveCases {
		b.Run(fmt.Sprintf("bytes=%d/batch=%d", c.Size, c.Batch), func(b *testing.B) {
			BenchSendReceive(b, backend, cfg, c.Size, c.Batch)
		})
	}
}
