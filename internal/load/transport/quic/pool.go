package quic

import (
	"sync"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// socketPool lets client hosts share UDP sockets: up to perSocket hosts
// dial through one quic-go Transport. Each host still owns its own QUIC
// connection (own connection IDs, TLS keys, congestion controller, RTT
// estimator, flow control, datagram queues); what is shared is the socket,
// its kernel buffers and quic-go's per-Transport reader goroutine. See
// docs/transport-quic.md ("Swarm cost") for what that changes.
type socketPool struct {
	mu        sync.Mutex
	perSocket int
	cur       *pooledSocket
}

// pooledSocket is a socket with a reference count.
type pooledSocket struct {
	*socket
	handed int // hosts ever given this socket
	users  int // hosts still holding it
}

// acquire returns a socket with room for one more host.
func (sp *socketPool) acquire(opt transport.Options) (*pooledSocket, error) {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.cur == nil || sp.cur.handed >= sp.perSocket {
		s, err := openSocket(nil, opt)
		if err != nil {
			return nil, err
		}
		sp.cur = &pooledSocket{socket: s}
	}
	sp.cur.handed++
	sp.cur.users++
	return sp.cur, nil
}

// release drops one host's hold; the last one closes the socket.
func (sp *socketPool) release(ps *pooledSocket) error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	ps.users--
	if ps.users > 0 {
		return nil
	}
	if sp.cur == ps {
		sp.cur = nil
	}
	return ps.close()
}

// SocketPool hands out client hosts that share UDP sockets, perSocket
// hosts to a socket. It exists for the swarm-cost measurement
// (tools/swarmcost) and for callers that want fewer sockets;
// transport.Dial gives every host its own socket.
type SocketPool struct{ p socketPool }

// NewSocketPool returns a pool putting up to perSocket hosts on one socket
// (perSocket < 1 means 1).
func NewSocketPool(perSocket int) *SocketPool {
	return &SocketPool{p: socketPool{perSocket: max(perSocket, 1)}}
}

// Dial creates a client host on a shared socket.
func (sp *SocketPool) Dial(opt transport.Options) (transport.Host, error) {
	return newSharedHost(opt, &sp.p)
}
