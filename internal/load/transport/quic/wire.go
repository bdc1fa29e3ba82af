package quic

import (
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// countingConn wraps the UDP socket a quic.Transport reads and writes, and
// counts every datagram and byte at the socket (UDP payload: QUIC headers,
// AEAD tags, ACKs, handshakes and retransmissions included; IP/UDP headers
// excluded, as ENet's host counters do).
//
// It deliberately implements only net.PacketConn plus the buffer and
// SyscallConn methods, not ReadMsgUDP/WriteMsgUDP: quic-go reads an
// OOB-capable conn through ipv4.PacketConn.ReadBatch on the raw fd, which
// would bypass these counters, and writes several datagrams per syscall with
// GSO. On this plain path every datagram is one ReadFrom or WriteTo, so the
// counts are exact. SyscallConn lets quic-go still set the DF bit, so path
// MTU discovery keeps working; what is lost is recvmmsg batching, GSO and ECN.
type countingConn struct {
	udp *net.UDPConn

	bytesOut, bytesIn         atomic.Uint64
	datagramsOut, datagramsIn atomic.Uint64
}

func newCountingConn(udp *net.UDPConn) *countingConn { return &countingConn{udp: udp} }

// ReadFrom reads one datagram and counts it.
func (c *countingConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, addr, err := c.udp.ReadFrom(p)
	if err == nil {
		c.bytesIn.Add(uint64(n))
		c.datagramsIn.Add(1)
	}
	return n, addr, err
}

// WriteTo writes one datagram and counts what the kernel accepted.
func (c *countingConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	n, err := c.udp.WriteTo(p, addr)
	if err == nil {
		c.bytesOut.Add(uint64(n))
		c.datagramsOut.Add(1)
	}
	return n, err
}

// Close closes the socket.
func (c *countingConn) Close() error { return c.udp.Close() }

// LocalAddr is the socket's local address.
func (c *countingConn) LocalAddr() net.Addr { return c.udp.LocalAddr() }

// SetDeadline sets both deadlines.
func (c *countingConn) SetDeadline(t time.Time) error { return c.udp.SetDeadline(t) }

// SetReadDeadline sets the read deadline (quic-go uses it to unblock its reader on Close).
func (c *countingConn) SetReadDeadline(t time.Time) error { return c.udp.SetReadDeadline(t) }

// SetWriteDeadline sets the write deadline.
func (c *countingConn) SetWriteDeadline(t time.Time) error { return c.udp.SetWriteDeadline(t) }

// SetReadBuffer sets SO_RCVBUF (quic-go asks for 7 MiB).
func (c *countingConn) SetReadBuffer(n int) error { return c.udp.SetReadBuffer(n) }

// SetWriteBuffer sets SO_SNDBUF.
func (c *countingConn) SetWriteBuffer(n int) error { return c.udp.SetWriteBuffer(n) }

// SyscallConn exposes the fd so quic-go can set DF and inspect buffer sizes.
func (c *countingConn) SyscallConn() (syscall.RawConn, error) { return c.udp.SyscallConn() }

// counters returns the cumulative counts truncated to the sampler's uint32
// (the sampler's modular deltas make the truncation harmless).
func (c *countingConn) counters() transport.WireCounters {
	return transport.WireCounters{
		BytesOut:     uint32(c.bytesOut.Load()),
		BytesIn:      uint32(c.bytesIn.Load()),
		DatagramsOut: uint32(c.datagramsOut.Load()),
		DatagramsIn:  uint32(c.datagramsIn.Load()),
	}
}

var _ net.PacketConn = (*countingConn)(nil)
