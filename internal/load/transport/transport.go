// Package transport is the one interface servers and clients use to move
// protocol messages. It is the same whatever the backend: ENet, QUIC, raw UDP
// or WebSocket.
//
// A Host is owned by exactly one goroutine: every method except Backend and
// Addr must be called from that goroutine. The owner drives the host with
// Service in its own loop (a 60 Hz tick on a server, the worker loop in the
// swarm); Service never blocks. This matches ENet, whose host state is not
// thread-safe, and lets QUIC (which has its own goroutines) hand events over
// through a queue without changing callers.
//
// Backends register themselves (see Register); callers pick one by name with
// Listen and Dial. A name this build cannot speak is an *UnknownBackendError,
// never a silent fallback. Backends differ in what they can honour (raw UDP
// has no handshake and no reliability, WebSocket runs over TCP): each declares
// it in its Capabilities, which callers read with CapabilitiesOf instead of
// assuming ENet's behaviour.
package transport

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// PeerID identifies a peer within one Host. IDs may be reused after a
// Disconnect event for that peer has been delivered.
type PeerID uint32

// Delivery is how a message travels.
type Delivery uint8

// Deliveries. Reliable is ordered and retransmitted (ENet channel 0, the QUIC
// control stream, a WebSocket binary message); Unreliable is sequenced, never
// retransmitted (ENet channel 1, QUIC datagrams). On raw UDP both are the same
// plain datagram: Capabilities.Reliable says whether Reliable is honoured.
//
// Text is a reliable message that is text (UTF-8, which the sender
// guarantees): a WebSocket text message, for protocols that speak JSON or
// other text to browsers. Only backends with Capabilities.Text accept it;
// the others refuse it in Send with ErrDelivery. It was added after Reliable
// and Unreliable, so code that never sends Text is unchanged, and a receiver
// sees it only from a backend that declares Text.
const (
	Reliable Delivery = iota
	Unreliable
	Text
)

func (d Delivery) String() string {
	switch d {
	case Reliable:
		return "reliable"
	case Unreliable:
		return "unreliable"
	case Text:
		return "text"
	}
	return fmt.Sprintf("delivery(%d)", uint8(d))
}

// EventKind says what happened.
type EventKind uint8

// Event kinds.
const (
	EventConnect EventKind = iota + 1
	EventReceive
	EventDisconnect
	// EventMalformed reports datagrams from a peer that the backend dropped
	// as malformed before they became messages; Data is how many since the
	// previous EventMalformed for that peer. Backends that cannot tell
	// whose garbage it was (ENet) never deliver it.
	EventMalformed
)

func (k EventKind) String() string {
	switch k {
	case EventConnect:
		return "connect"
	case EventReceive:
		return "receive"
	case EventDisconnect:
		return "disconnect"
	case EventMalformed:
		return "malformed"
	}
	return "unknown"
}

// Disconnect reasons carried in Event.Data of an EventDisconnect. A remote
// Disconnect(peer, reason) arrives with that reason; a timeout arrives as
// ReasonTimeout (ENet reports 0).
const (
	ReasonTimeout uint32 = 0
)

// Event is one thing that happened on a Host.
type Event struct {
	Kind EventKind
	Peer PeerID
	// Data is the connect data word (EventConnect on a server), the
	// disconnect reason (EventDisconnect), or the number of malformed
	// datagrams dropped (EventMalformed).
	Data uint32
	// Delivery is how a received message travelled (EventReceive): the
	// sender's Delivery where the backend carries it
	// (Capabilities.TaggedDelivery), otherwise what the backend can tell
	// (Capabilities.Arrives).
	Delivery Delivery
	// Payload is the received message (EventReceive). On an
	// EventDisconnect it is what the backend knows of why, as text, where
	// it knows more than Data: a WebSocket close frame's reason text, or
	// why a dial failed ("HTTP 403 Forbidden"; never the dialled URL's
	// query or credentials). It is valid only until the callback returns:
	// copy what you keep.
	Payload []byte
	// At is when the message arrived (EventReceive), where the backend
	// knows better than the moment Service handed it over: the kernel's
	// receive stamp (ENet, raw UDP dialling hosts) or when the backend's
	// reader took it off the connection (QUIC, WebSocket). Zero: unknown,
	// take the Service call's time. It is what the swarm times round trips
	// and input latency by, so a message that waited in a socket for the
	// client's next turn is not counted as a slower server.
	At time.Time
}

// WireRates are socket-level traffic rates over the interval since the
// previous sample: framing, compression and encryption included, IP/UDP
// headers excluded. 1 KB = 1000 bytes is the caller's conversion.
type WireRates struct {
	Interval           time.Duration
	BytesOutPerSec     float64
	BytesInPerSec      float64
	DatagramsOutPerSec float64
	DatagramsInPerSec  float64
}

// Host is one transport endpoint: a listening server or a dialling client.
type Host interface {
	// Backend names the protocol actually spoken ("enet", "quic"). It comes
	// from the implementation, never from configuration.
	Backend() string
	// Addr is the local address the host is bound to.
	Addr() string
	// Connect starts a connection to addr ("host:port") carrying data; the
	// outcome arrives later as EventConnect or EventDisconnect for the peer.
	Connect(addr string, data uint32) (PeerID, error)
	// Send queues msg to peer. The host copies msg; the caller may reuse it.
	// A Delivery the backend cannot carry (Text without Capabilities.Text)
	// is an error wrapping ErrDelivery.
	Send(peer PeerID, d Delivery, msg []byte) error
	// Service performs I/O without blocking and calls fn for every event
	// that is ready, in order. It returns the number of events delivered.
	Service(fn func(Event)) (int, error)
	// Flush pushes queued sends to the socket without receiving.
	Flush() error
	// Disconnect gracefully disconnects peer with reason; queued data is
	// sent first. An EventDisconnect for peer follows.
	Disconnect(peer PeerID, reason uint32)
	// RTT is the backend's current round-trip estimate for peer, 0 if none.
	RTT(peer PeerID) time.Duration
	// PeerAddr is the remote address of peer ("ip:port"), "" if unknown.
	PeerAddr(peer PeerID) string
	// WireRates returns traffic rates since the previous call (or since the
	// host was created). Counters that wrap are handled by the backend.
	WireRates() WireRates
	// QueuedSends is the peer's outbound backlog: messages Send accepted
	// for peer that the host still holds after a Flush because it could not
	// put them out yet — ENet: in the peer's outgoing queue, not yet written
	// to the socket (held back by the reliable window or the throttle; a
	// fragmented message counts once); QUIC: queued for the peer's sender
	// and not yet handed to the QUIC stack (its congestion control is
	// blocking the sender). 0 for an unknown peer. The server's
	// send_queue_max is the largest value over its peers (docs/metrics.md).
	QueuedSends(peer PeerID) int
	// Close destroys the host and frees everything it holds. Peers are
	// dropped without notice; disconnect them first for a graceful close.
	Close() error
}

// LinkStats is what a backend knows about one peer's link.
type LinkStats struct {
	// RTT is the backend's smoothed round trip, 0 when it has none yet.
	RTT time.Duration
	// Loss is the backend's own packet-loss estimate, 0..1, valid only
	// when LossKnown: not every backend measures loss, and a loss it does
	// not measure must not read as a clean link.
	Loss      float64
	LossKnown bool
}

// LinkStater is a Host that reports per-peer link statistics. Like the
// Host's other methods, LinkStats belongs to the owner goroutine.
type LinkStater interface {
	LinkStats(peer PeerID) LinkStats
}

// Options configure a Host. Zero values mean the backend's sensible default.
type Options struct {
	// MaxPeers bounds the peers a listening host accepts (ENet allocates the
	// slots up front). Dialling hosts use 1 when zero.
	MaxPeers int
	// RangeCoder enables ENet's range-coder compression. Both ends must
	// agree; QUIC ignores it.
	RangeCoder bool
	// RecvBufferBytes is the socket receive buffer to request; servers
	// should enlarge it (a burst from N clients lands on one socket).
	RecvBufferBytes int
	// SendBufferBytes is the socket send buffer to request.
	SendBufferBytes int
	// CertFile and KeyFile name a TLS certificate for QUIC and wss
	// servers; when empty a self-signed one is generated.
	CertFile, KeyFile string
	// CAFile names PEM certificates a wss client trusts in addition to the
	// system's roots (a server with a self-signed certificate). QUIC
	// clients do not verify (docs/transport-quic.md) and ignore it.
	CAFile string
	// Header is the HTTP request headers a WebSocket client sends with
	// every upgrade (a cookie, an Authorization: join secrets, which the
	// host never shows); the upgrade's own headers override these. Other
	// backends ignore it.
	Header map[string][]string
	// Path is the HTTP path of a WebSocket server host's endpoint, and the
	// path a WebSocket client uses when Connect is given "host:port"
	// rather than a URL. Empty means "/". Other backends ignore it.
	Path string
	// Timeout is how long a peer may stay silent before it is disconnected
	// (zero: the backend default).
	Timeout time.Duration
	// MaxRecvMessage is the largest message the host reassembles from a
	// peer, and MaxRecvWaiting the bytes one peer may have received but
	// not yet delivered; larger ones are dropped by the backend before
	// they are allocated. Zero: the backend default (ENet: 32 MiB each).
	// What the host sends is not limited by them.
	MaxRecvMessage, MaxRecvWaiting int
	// ConnectGuard limits connection attempts before they take a peer
	// slot (ENet only; QUIC ignores it). The zero value is no guard.
	ConnectGuard ConnectGuard
}

// ConnectGuard limits connection attempts per source address below the
// application: a handshake that never completes holds a peer slot the
// application never hears of, so its own admission limits cannot see it.
type ConnectGuard struct {
	// PerSource is how many attempts one source address (ip:port) may make
	// within Window; more are dropped before they take a slot, and every
	// attempt counts, dropped ones too. 0 disables the guard.
	PerSource int
	Window    time.Duration
	// HalfOpen resets a peer whose handshake has not completed after this
	// long (0: the backend's own timeouts).
	HalfOpen time.Duration
}

// GuardStats count what a host's connect guard did.
type GuardStats struct {
	// ConnectsDropped is the connection attempts dropped before they took
	// a peer slot.
	ConnectsDropped uint64
	// HalfOpenReset is the peers reset because their handshake did not
	// complete within ConnectGuard.HalfOpen.
	HalfOpenReset uint64
}

// Guarded is implemented by hosts that have a connect guard.
type Guarded interface {
	// GuardStats returns the guard's cumulative counts.
	GuardStats() GuardStats
}

// Backend creates hosts of one kind.
type Backend interface {
	// Name is the backend's protocol name.
	Name() string
	// Capabilities says which parts of the Host contract the backend's
	// hosts honour. It is a constant of the implementation.
	Capabilities() Capabilities
	// Listen creates a server host bound to addr ("ip:port", port may be 0).
	Listen(addr string, opt Options) (Host, error)
	// Dial creates a client host with no listening address; call Connect
	// on it to open the connection.
	Dial(opt Options) (Host, error)
}

// UnknownBackendError is returned for a backend this build cannot speak.
type UnknownBackendError struct {
	Name      string
	Available []string
}

func (e *UnknownBackendError) Error() string {
	return fmt.Sprintf("transport %q is not available in this build (available: %v)", e.Name, e.Available)
}

// ErrClosed is returned by methods called on a closed host.
var ErrClosed = errors.New("transport: host closed")

// ErrUnknownPeer is returned by Send for a peer that is not connected.
var ErrUnknownPeer = errors.New("transport: unknown or disconnected peer")

// ErrDelivery is wrapped by Send's error for a Delivery the backend cannot
// carry (Text on a backend without text messages).
var ErrDelivery = errors.New("transport: delivery not supported by this backend")

// ErrTooLarge is wrapped by Send's error for a message larger than the
// backend can put on the wire as one message (a raw UDP datagram above
// 65,507 bytes); nothing is sent.
var ErrTooLarge = errors.New("transport: message too large")

var (
	regMu    sync.RWMutex
	registry = map[string]Backend{}
)

// Register makes a backend available by name. Backend packages call it from
// init; importing the package is what makes a build speak that transport.
func Register(b Backend) {
	regMu.Lock()
	defer regMu.Unlock()
	if _, dup := registry[b.Name()]; dup {
		panic("transport: backend registered twice: " + b.Name())
	}
	registry[b.Name()] = b
}

// Lookup returns the named backend or an *UnknownBackendError.
func Lookup(name string) (Backend, error) {
	regMu.RLock()
	defer regMu.RUnlock()
	if b, ok := registry[name]; ok {
		return b, nil
	}
	return nil, &UnknownBackendError{Name: name, Available: availableLocked()}
}

// Available lists the registered backend names, sorted.
func Available() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	return availableLocked()
}

func availableLocked() []string {
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// CapabilitiesOf returns the named backend's capabilities, or an
// *UnknownBackendError.
func CapabilitiesOf(name string) (Capabilities, error) {
	b, err := Lookup(name)
	if err != nil {
		return Capabilities{}, err
	}
	return b.Capabilities(), nil
}

// CheckImpairable returns nil when the named backend's traffic can go
// through the impairment relay (Capabilities.Datagram), and otherwise an
// error saying why not, for a profile that asks for impairment on it.
func CheckImpairable(name string) error {
	c, err := CapabilitiesOf(name)
	if err != nil {
		return err
	}
	if !c.Datagram {
		return fmt.Errorf("transport %q runs over TCP, not UDP datagrams: the impairment relay drops, delays and duplicates datagrams and cannot impair a TCP stream; remove the impairment phases or gate a datagram transport (%v)",
			name, datagramBackends())
	}
	return nil
}

// datagramBackends lists the registered backends the relay can impair.
func datagramBackends() []string {
	var names []string
	for _, n := range Available() {
		if c, err := CapabilitiesOf(n); err == nil && c.Datagram {
			names = append(names, n)
		}
	}
	return names
}

// Listen creates a server host on the named backend.
func Listen(backend, addr string, opt Options) (Host, error) {
	b, err := Lookup(backend)
	if err != nil {
		return nil, err
	}
	return b.Listen(addr, opt)
}

// Dial creates a client host on the named backend.
func Dial(backend string, opt Options) (Host, error) {
	b, err := Lookup(backend)
	if err != nil {
		return nil, err
	}
	return b.Dial(opt)
}

// Inline is a Backend whose hosts do all their work inside their owner's
// calls: no goroutines of their own and no Go network poller (ENet, whose
// sockets are read and written in C within Service). Only over such hosts
// may an owner keep its OS thread and processor between calls (the swarm's
// held pacing) without starving the transport.
type Inline interface {
	// InlineIO reports whether every host's I/O happens in its owner's calls.
	InlineIO() bool
}

// Batcher is a Backend whose client hosts can be sent to and serviced many
// at a time. A swarm worker owns hundreds of hosts and visits each one per
// tick; with a cgo backend, one crossing per worker iteration instead of two
// per client keeps the Go runtime's per-call work (and the scheduler's
// reaction to many short foreign calls) out of the harness's cost.
type Batcher interface {
	NewBatch() Batch
}

// Batch is one worker's reusable batched send-and-service. It belongs to
// the goroutine that owns its hosts.
type Batch interface {
	// Reset empties the batch.
	Reset()
	// Add appends host h, which must come from the same backend, with msg
	// to send to peer unreliably before servicing it (nil: nothing). msg is
	// copied. Add returns the item's index.
	Add(h Host, peer PeerID, msg []byte) int
	// Run performs every item's send and then its Service, in item order,
	// and calls fn for each event with the item's index and the time its
	// turn began. fn must not call the hosts' Service.
	Run(fn func(item int, at time.Time, ev Event))
	// Result reports item's send and service errors after Run, and the
	// time its turn began.
	Result(item int) (at time.Time, sendErr, serviceErr error)
}
