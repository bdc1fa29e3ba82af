//go:build linux

package udp

import (
	"fmt"
	"net"

	"github.com/scalegate/scalegate/internal/load/transport"
)

func init() { transport.Register(backend{}) }

// backend creates raw UDP hosts.
type backend struct{}

// Name reports "udp".
func (backend) Name() string { return Name }

// Capabilities: datagrams and nothing more (see the package doc).
func (backend) Capabilities() transport.Capabilities {
	return transport.Capabilities{Datagram: true, MessageDatagram: true}
}

// InlineIO reports true: a host reads and writes its socket only inside
// its owner's Service and Send calls, with no goroutine of its own.
func (backend) InlineIO() bool { return true }

// Listen binds addr; peers appear on their first datagram.
func (backend) Listen(addr string, opt transport.Options) (transport.Host, error) {
	if err := checkOptions(opt); err != nil {
		return nil, fmt.Errorf("udp: listen %s: %w", addr, err)
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("udp: listen address %q: %w", addr, err)
	}
	if opt.MaxPeers == 0 {
		opt.MaxPeers = DefaultMaxPeers
	}
	if opt.RecvBufferBytes == 0 {
		opt.RecvBufferBytes = DefaultServerRecvBuffer
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		return nil, fmt.Errorf("udp: listen %s: %w", addr, err)
	}
	return open(conn, true, opt)
}

// Dial creates a client host on its own ephemeral socket (every address
// family the system has). Call Connect to add the server as its peer.
func (backend) Dial(opt transport.Options) (transport.Host, error) {
	if err := checkOptions(opt); err != nil {
		return nil, fmt.Errorf("udp: dial: %w", err)
	}
	if opt.MaxPeers == 0 {
		opt.MaxPeers = 1
	}
	conn, err := net.ListenUDP("udp", nil)
	if err != nil {
		return nil, fmt.Errorf("udp: dial: %w", err)
	}
	return open(conn, false, opt)
}

func checkOptions(opt transport.Options) error {
	switch {
	case opt.MaxPeers < 0:
		return fmt.Errorf("negative MaxPeers %d", opt.MaxPeers)
	case opt.Timeout < 0:
		return fmt.Errorf("negative Timeout %v", opt.Timeout)
	case opt.RecvBufferBytes < 0 || opt.SendBufferBytes < 0:
		return fmt.Errorf("negative RecvBufferBytes (%d) or SendBufferBytes (%d)", opt.RecvBufferBytes, opt.SendBufferBytes)
	case opt.MaxRecvMessage < 0 || opt.MaxRecvMessage > maxRecvBuffer:
		return fmt.Errorf("option MaxRecvMessage %d out of range 0..%d", opt.MaxRecvMessage, maxRecvBuffer)
	}
	return nil
}

// open sizes the socket's buffers and wraps it in a Host.
func open(conn *net.UDPConn, listen bool, opt transport.Options) (*Host, error) {
	// The kernel caps the request at net.core.[rw]mem_max; a smaller
	// buffer than asked for is not an error (ENet and QUIC do the same).
	if opt.RecvBufferBytes > 0 {
		_ = conn.SetReadBuffer(opt.RecvBufferBytes)
	}
	if opt.SendBufferBytes > 0 {
		_ = conn.SetWriteBuffer(opt.SendBufferBytes)
	}
	h, err := newHost(conn, listen, opt)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return h, nil
}
