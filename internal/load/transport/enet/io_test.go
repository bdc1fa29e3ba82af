//go:build cgo

package enet

import (
	"errors"
	"syscall"
	"testing"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/transporttest"
	"github.com/scalegate/scalegate/internal/wire/proto"
)

// connectMany connects n clients to one server.
func connectMany(t *testing.T, n int) []*transporttest.Pair {
	t.Helper()
	p := connect(t, transport.Options{}, transport.Options{})
	pairs := []*transporttest.Pair{p}
	for len(pairs) < n {
		pairs = append(pairs, transporttest.ConnectTo(t, Name, p.Server, p.Server.Host.Addr(), proto.ConnectData, transport.Options{}))
	}
	return pairs
}

// expectByte waits for the client of q to receive the one-byte message b.
func expectByte(t *testing.T, q *transporttest.Pair, b byte) {
	t.Helper()
	ev := transporttest.WaitEvent(t, "the server's message", q.Client, transporttest.IsReceive(transport.Unreliable), q.Client)
	if len(ev.Payload) != 1 || ev.Payload[0] != b {
		t.Fatalf("client got %v, want [%d]", ev.Payload, b)
	}
}

// TestServerBatchesSocketIO: a server host writes the datagrams of one
// flush with one sendmmsg and reads what waits with recvmmsg (enet_io.c),
// and every message still arrives. A libenet that stopped calling its
// socket functions through the PLT would leave the counts at zero.
func TestServerBatchesSocketIO(t *testing.T) {
	const n = 8
	pairs := connectMany(t, n)
	server := enetHost(pairs[0].Server)
	before := server.ioStats()
	if before.Sent == 0 || before.Received == 0 {
		t.Fatalf("the handshakes did not go through the batch: %+v", before)
	}
	for i, q := range pairs {
		if err := server.Send(q.SPeer, transport.Unreliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := server.Flush(); err != nil {
		t.Fatal(err)
	}
	after := server.ioStats()
	if sent, calls := after.Sent-before.Sent, after.SendCalls-before.SendCalls; sent < n || calls != 1 {
		t.Fatalf("one flush to %d peers: %d datagrams in %d sendmmsg calls, want at least %d in 1", n, sent, calls, n)
	}
	for i, q := range pairs {
		expectByte(t, q, byte(i))
	}

	before = server.ioStats()
	for i, q := range pairs {
		if err := q.Client.Host.Send(q.CPeer, transport.Unreliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
		if err := q.Client.Host.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	got := 0
	transporttest.WaitUntil(t, "every client's message", func() bool {
		got += len(pairs[0].Server.TakeAll(transporttest.IsReceive(transport.Unreliable)))
		return got == n
	}, pairs[0].Server)
	after = server.ioStats()
	// Loopback delivers a datagram inside its sender's system call, so the
	// eight wait together: one recvmmsg reads them and one more finds the
	// socket empty. A read per datagram would make calls exceed datagrams.
	if read, calls := after.Received-before.Received, after.RecvCalls-before.RecvCalls; read < n || calls >= read {
		t.Fatalf("%d messages from %d clients: %d datagrams read in %d recvmmsg calls, want at least %d in fewer calls", got, n, read, calls, n)
	}
}

// TestBatchedSendRefused: a datagram the kernel refuses when the batch is
// written (here EINVAL, a peer at port 0) is taken back out of the wire
// counters and the rest of the batch still goes. A Flush drops the error,
// as enet_host_flush drops libenet's; a drain reports it, as libenet's own
// send failure fails enet_host_service.
func TestBatchedSendRefused(t *testing.T) {
	pairs := connectMany(t, 3)
	server := enetHost(pairs[0].Server)
	server.setPeerPort(pairs[1].SPeer, 0)
	c0, s0 := server.counters(), server.ioStats()
	for i, q := range pairs {
		if err := server.Send(q.SPeer, transport.Unreliable, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := server.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	c1, s1 := server.counters(), server.ioStats()
	if d := s1.SendDropped - s0.SendDropped; d != 1 {
		t.Errorf("%d datagrams refused, want 1", d)
	}
	if d := c1.DatagramsOut - c0.DatagramsOut; d != 2 {
		t.Errorf("wire counters count %d datagrams out, want the 2 the kernel took", d)
	}
	expectByte(t, pairs[0], 0)
	expectByte(t, pairs[2], 2)

	if err := server.Send(pairs[1].SPeer, transport.Unreliable, []byte{1}); err != nil {
		t.Fatal(err)
	}
	_, err := server.Service(func(transport.Event) {})
	if !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("Service with a refused datagram: %v, want EINVAL", err)
	}
}
