package ws

import (
	"net"
	"sync/atomic"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// wire counts a host's traffic at its TCP sockets: every byte written to or
// read from the kernel, so WebSocket frame headers, masks, control frames,
// the HTTP upgrade and (wss) TLS records and handshakes are all in; TCP/IP
// headers are not, as UDP/IP headers are not for the datagram backends.
// "Datagrams" are socket writes and reads that moved data: TCP keeps no
// datagram boundaries, and how the kernel cuts segments is invisible here.
type wire struct {
	bytesOut, bytesIn atomic.Uint64
	writes, reads     atomic.Uint64
}

func (w *wire) counters() transport.WireCounters {
	return transport.WireCounters{
		BytesOut: uint32(w.bytesOut.Load()), BytesIn: uint32(w.bytesIn.Load()),
		DatagramsOut: uint32(w.writes.Load()), DatagramsIn: uint32(w.reads.Load()),
	}
}

// countingConn is a TCP connection that adds what moves through it to its
// host's wire counters. It sits directly on the socket, below TLS.
type countingConn struct {
	net.Conn
	w *wire
}

// Read reads and counts.
func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.w.bytesIn.Add(uint64(n))
		c.w.reads.Add(1)
	}
	return n, err
}

// Write writes and counts what the kernel took.
func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.w.bytesOut.Add(uint64(n))
		c.w.writes.Add(1)
	}
	return n, err
}

// countingListener wraps every accepted connection in a countingConn.
type countingListener struct {
	net.Listener
	w *wire
}

// Accept accepts and wraps.
func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, w: l.w}, nil
}
