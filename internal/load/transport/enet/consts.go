package enet

import "github.com/scalegate/scalegate/internal/wire/proto"

// These hold in every build, so callers can name the backend and its
// limits whether or not this build has cgo.

// Name is the backend's protocol name.
const Name = "enet"

// Defaults for zero Options fields.
const (
	// DefaultMaxPeers is the peer slots of a listening host: the project's
	// client cap.
	DefaultMaxPeers = proto.MaxClients
	// MaxPeers is ENet's protocol limit (ENET_PROTOCOL_MAXIMUM_PEER_ID).
	MaxPeers = 4095
	// DefaultServerRecvBuffer is the SO_RCVBUF a listening host requests: a
	// tick's burst from hundreds of clients lands on one socket, and ENet's
	// 256 KiB overflowed at 500 clients (transport brief, measured).
	DefaultServerRecvBuffer = 4 << 20
)
