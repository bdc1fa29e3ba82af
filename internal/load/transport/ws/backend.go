package ws

import (
	"fmt"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// Names of the two backends: plain WebSocket and WebSocket over TLS.
const (
	Name    = "ws"
	NameTLS = "wss"
)

// Limits and defaults.
const (
	// DefaultMaxMessage is the largest message a host reads when
	// Options.MaxRecvMessage is 0; a larger one closes the connection with
	// status 1009 (message too big).
	DefaultMaxMessage = 1 << 20
	// DefaultMaxWaiting bounds the bytes one peer may have received and the
	// owner not yet serviced when Options.MaxRecvWaiting is 0; at the bound
	// the peer's reader stops reading and TCP pushes back on the sender.
	DefaultMaxWaiting = 4 << 20
	// DefaultTimeout is how long a ping may go unanswered before the peer
	// is disconnected, when Options.Timeout is 0 (ENet's and QUIC's 30 s).
	DefaultTimeout = 30 * time.Second
	// maxPingInterval is how often each end pings its peer (more often when
	// Options.Timeout is under 3 s): every pong is an RTT sample.
	maxPingInterval = time.Second
	// handshakeTimeout bounds the TCP connect, TLS and HTTP upgrade of a
	// Connect (at most Options.Timeout).
	handshakeTimeout = 10 * time.Second
	// maxQueuedSends bounds the messages queued for one peer's writer.
	// Beyond it a Reliable or Text Send fails and an Unreliable one is
	// dropped (Stats.SendQueueDrops): the peer is not reading.
	maxQueuedSends = 4096
	// closeLinger bounds a graceful Disconnect: queued writes, the close
	// frame and the peer's answer; then the connection is cut.
	closeLinger = 5 * time.Second
	// closeFlushTimeout bounds how long Close waits for peers already
	// Disconnected to finish their close handshake.
	closeFlushTimeout = 500 * time.Millisecond
	// msgOverhead is what one queued received message counts against
	// MaxRecvWaiting beyond its bytes, so empty messages are bounded too.
	msgOverhead = 64
)

func init() {
	transport.Register(backend{name: Name})
	transport.Register(backend{name: NameTLS, tls: true})
}

// backend creates WebSocket hosts, with TLS ("wss") or without ("ws").
type backend struct {
	name string
	tls  bool
}

// Name reports "ws" or "wss".
func (b backend) Name() string { return b.name }

// Capabilities: a TCP connection per peer, so every message is reliable and
// ordered and the relay cannot impair it; text messages; an HTTP upgrade
// for a handshake, without a connect data word; a close frame carrying the
// reason; RTT from ping/pong.
func (backend) Capabilities() transport.Capabilities {
	return transport.Capabilities{Reliable: true, Text: true, Handshake: true, DisconnectNotice: true, RTT: true}
}

// Listen serves WebSocket upgrades on addr at Options.Path.
func (b backend) Listen(addr string, opt transport.Options) (transport.Host, error) {
	if err := checkOptions(opt); err != nil {
		return nil, fmt.Errorf("%s: listen %s: %w", b.name, addr, err)
	}
	return listen(b.name, b.tls, addr, opt)
}

// Dial creates a client host; each Connect opens one TCP connection.
func (b backend) Dial(opt transport.Options) (transport.Host, error) {
	if err := checkOptions(opt); err != nil {
		return nil, fmt.Errorf("%s: dial: %w", b.name, err)
	}
	return dial(b.name, b.tls, opt)
}

func checkOptions(opt transport.Options) error {
	switch {
	case opt.MaxPeers < 0:
		return fmt.Errorf("negative MaxPeers %d", opt.MaxPeers)
	case opt.Timeout < 0:
		return fmt.Errorf("negative Timeout %v", opt.Timeout)
	case opt.MaxRecvMessage < 0 || opt.MaxRecvWaiting < 0:
		return fmt.Errorf("negative MaxRecvMessage (%d) or MaxRecvWaiting (%d)", opt.MaxRecvMessage, opt.MaxRecvWaiting)
	case opt.Path != "" && opt.Path[0] != '/':
		return fmt.Errorf("option Path %q must start with /", opt.Path)
	}
	return nil
}
