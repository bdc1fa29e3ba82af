package udp

import "time"

// These hold in every build, so callers can name the backend and its limits
// on any system.

// Name is the backend's protocol name.
const Name = "udp"

// Limits and defaults.
const (
	// MaxDatagram is the largest message Send accepts: the UDP payload
	// limit over IPv4 (65,535 − 8 UDP − 20 IP bytes), applied to IPv6 as
	// well. Anything above a path's MTU (1,500 bytes on most links, 65,536
	// on loopback) leaves as IP fragments, and losing one fragment loses
	// the datagram.
	MaxDatagram = 65507
	// maxRecvBuffer is the receive buffer: any UDP datagram fits, so by
	// default none is cut.
	maxRecvBuffer = 65535
	// DefaultTimeout is how long a peer may stay silent before it is
	// disconnected, when Options.Timeout is 0 (ENet's and QUIC's 30 s).
	DefaultTimeout = 30 * time.Second
	// DefaultMaxPeers bounds a listening host's peers when
	// Options.MaxPeers is 0.
	DefaultMaxPeers = 4096
	// DefaultServerRecvBuffer is the SO_RCVBUF a listening host requests
	// (as ENet's): a tick's burst from hundreds of clients lands on one
	// socket.
	DefaultServerRecvBuffer = 4 << 20
	// maxReadsPerService bounds one Service call so a flood cannot keep
	// the owner inside it; what is left stays in the socket buffer.
	maxReadsPerService = 4096
)
