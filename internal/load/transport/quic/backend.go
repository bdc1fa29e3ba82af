// Package quic is scalegate's encrypted transport: QUIC with RFC 9221
// datagrams.
//
// It runs on quic-go, with ALPN "scalegate/1" and TLS 1.3. Importing it
// registers the "quic" backend with package transport.
// docs/transport-quic.md describes the mapping of protocol v1 onto QUIC:
// the control stream framing, the connect-data preamble, disconnect
// reasons, fragmentation of unreliable messages, and how wire bytes are
// counted.
package quic

import (
	"fmt"
	"net"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// Name is the backend's protocol name.
const Name = "quic"

func init() { transport.Register(backend{}) }

// backend creates QUIC hosts.
type backend struct{}

// Name reports "quic".
func (backend) Name() string { return Name }

// Capabilities: QUIC honours the whole Host contract (the connect-data
// preamble and accept word are the handshake, the control stream is
// reliable, the datagrams travel as UDP) except text messages.
func (backend) Capabilities() transport.Capabilities {
	return transport.Capabilities{Datagram: true, Reliable: true, TaggedDelivery: true,
		ConnectData: true, Handshake: true, DisconnectNotice: true, RTT: true}
}

// Listen binds addr and accepts connections on it.
func (backend) Listen(addr string, opt transport.Options) (transport.Host, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("quic: listen address %q: %w", addr, err)
	}
	sock, err := openSocket(ua, opt)
	if err != nil {
		return nil, err
	}
	h, err := listen(sock, opt)
	if err != nil {
		_ = sock.close()
		return nil, err
	}
	return h, nil
}

// Dial creates a client host on its own ephemeral UDP socket.
func (backend) Dial(opt transport.Options) (transport.Host, error) {
	sock, err := openSocket(nil, opt)
	if err != nil {
		return nil, err
	}
	return newHost(opt, false, sock), nil
}
