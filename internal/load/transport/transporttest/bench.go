package transporttest

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/testkit/livetest"
	"github.com/scalegate/scalegate/internal/wire/proto"
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
	r := &sendReceive{
		p:     ConnectPair(b, backend, proto.ConnectData, cfg.Server, cfg.Client),
		msg:   make([]byte, size),
		batch: batch,
	}
	// Bound once, outside the timed loop, so handing them to Service costs
	// the ops nothing.
	count, drain := r.count, func(transport.Event) {}
	b.ReportAllocs()
	cpu0 := processCPU()
	b.ResetTimer()
	for b.Loop() {
		r.got = 0
		r.send(b)
		r.await(b, count, drain)
	}
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*batch), "ns/msg")
	if cpu0 >= 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N*batch), "cpu-ns/msg")
	}
}

// sendReceive is one BenchSendReceive run: its pair, its message, and the
// messages of the current batch the server received.
type sendReceive struct {
	p     *Pair
	msg   []byte
	batch int
	got   int
}

// count is the server's event handler: it counts the batch's arrivals.
func (r *sendReceive) count(ev transport.Event) {
	if ev.Kind == transport.EventReceive {
		r.got++
	}
}

// send queues one batch of Unreliable messages at the client.
func (r *sendReceive) send(b *testing.B) {
	for range r.batch {
		if err := r.p.Client.Host.Send(r.p.CPeer, transport.Unreliable, r.msg); err != nil {
			b.Fatal(err)
		}
	}
}

// await services the client (with drain) and the server (with count)
// until the whole batch arrived, backing off while nothing does.
func (r *sendReceive) await(b *testing.B, count, drain func(transport.Event)) {
	var w backoff
	for r.got < r.batch {
		if _, err := r.p.Client.Host.Service(drain); err != nil {
			b.Fatal(err)
		}
		before := r.got
		if _, err := r.p.Server.Host.Service(count); err != nil {
			b.Fatal(err)
		}
		if r.got > before {
			w.empty = 0
			continue
		}
		if !w.idle() {
			b.Fatalf("%d of %d messages arrived within %v", r.got, r.batch, livetest.Wait)
		}
	}
}

// backoff paces a wait on messages that are with a backend's goroutines
// (QUIC, WebSocket): it yields, then sleeps, rather than spin, so the CPU
// figure is the backend's work and not the owner's polling.
type backoff struct {
	empty    int // passes in a row that delivered nothing
	deadline time.Time
}

// idle is called after a pass that delivered nothing; it reports false
// once the wait outlasted livetest.Wait.
func (w *backoff) idle() bool {
	w.empty++
	switch {
	case w.empty <= 20:
		runtime.Gosched()
	case w.empty == 21:
		w.deadline = time.Now().Add(livetest.Wait)
	default:
		time.Sleep(20 * time.Microsecond)
		if time.Now().After(w.deadline) {
			return false
		}
	}
	return true
}

// sendReceiveCases are the sizes and batches every backend's benchmark runs:
// a 25-byte input one at a time, and a 200-byte snapshot 64 at a time.
var sendReceiveCases = []struct{ Size, Batch int }{{25, 1}, {200, 1}, {200, 64}}

// RunSendReceive runs BenchSendReceive for every case of sendReceiveCases.
func RunSendReceive(b *testing.B, backend string, cfg Config) {
	for _, c := range sendReceiveCases {
		b.Run(fmt.Sprintf("bytes=%d/batch=%d", c.Size, c.Batch), func(b *testing.B) {
			BenchSendReceive(b, backend, cfg, c.Size, c.Batch)
		})
	}
}
