package ws

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/internal/eventq"
)

// Stats are a WebSocket host's own counters, cumulative since it was
// created. Read them with (*Host).Stats.
type Stats struct {
	// Oversized counts connections closed (status 1009) because a peer sent
	// a message over MaxRecvMessage.
	Oversized uint64
	// ProtocolErrors counts connections closed (status 1002) because a
	// peer broke the WebSocket framing (unmasked client frame, unknown
	// opcode, bad control frame, ...); LastProtocolError is the latest.
	ProtocolErrors    uint64
	LastProtocolError string
	// RecvStalls counts times a peer's reader waited because MaxRecvWaiting
	// bytes were already waiting for Service: nothing is dropped (every
	// message is reliable), the peer's TCP window closes instead.
	RecvStalls uint64
	// SendQueueDrops counts Unreliable messages dropped because the peer
	// had maxQueuedSends messages queued (it is not reading).
	SendQueueDrops uint64
	// TimedOut counts peers disconnected because a ping went unanswered
	// for Options.Timeout.
	TimedOut uint64
	// RefusedFull counts upgrade requests answered 503 because MaxPeers
	// peers were live; Rejected counts requests that failed the WebSocket
	// handshake (wrong path, not an upgrade, bad headers) or TLS.
	RefusedFull, Rejected uint64
	// DialFailures counts Connects that ended before EventConnect;
	// LastDialError is the latest one's error, with the URL's query values
	// and userinfo redacted (its EventDisconnect carries ReasonTimeout,
	// and the error without the URL as its Payload).
	DialFailures  uint64
	LastDialError string
}

type stats struct {
	oversized, protocolErrors, recvStalls, sendQueueDrops atomic.Uint64
	timedOut, refusedFull, rejected, dialFailures         atomic.Uint64
	lastProtocolError, lastDialError                      atomic.Pointer[string]
}

func setLast(p *atomic.Pointer[string], err error) {
	s := err.Error()
	p.Store(&s)
}

func loadLast(p *atomic.Pointer[string]) string {
	if s := p.Load(); s != nil {
		return *s
	}
	return ""
}

// event is a transport.Event with the peer it concerns and, for a
// received message, the pooled buffer holding its payload.
type event struct {
	transport.Event
	p   *peer
	buf *[]byte
}

// Host is a WebSocket transport.Host. Exported only so callers can read
// Stats with a type assertion; use it through transport.Host.
//
// The WebSocket library blocks, so each connection has goroutines (a
// reader, a writer and a pinger) that hand events to the owner through
// the host's queue; every one is started by the host, stopped by
// Disconnect, a broken connection or Close, and waited for by Close.
type Host struct {
	name   string // "ws" or "wss"
	opt    transport.Options
	path   string
	ctx    context.Context // cancelled by Close: every goroutine stops
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the host started
	w      wire
	st     stats
	nextID atomic.Uint32
	live   atomic.Int32 // peers with goroutines running

	// The event queue: goroutines push, Service takes it.
	events eventq.Queue[event]
	// mu guards closing.
	mu      sync.Mutex
	closing bool // Close began: no new goroutine may join wg

	// Server side (nil on a dialling host).
	ln  net.Listener
	srv *http.Server
	// Client side (nil on a listening host).
	client *http.Client
	tr     *http.Transport
	scheme string
	header http.Header // Options.Header, sent with every upgrade

	// Owner-only state.
	addr    string
	peers   map[transport.PeerID]*peer
	dirty   []*peer
	closed  bool
	sampler *transport.WireSampler
}

var _ transport.Host = (*Host)(nil)

func newHost(name string, opt transport.Options) *Host {
	ctx, cancel := context.WithCancel(context.Background())
	if opt.Timeout == 0 {
		opt.Timeout = DefaultTimeout
	}
	if opt.MaxRecvMessage == 0 {
		opt.MaxRecvMessage = DefaultMaxMessage
	}
	if opt.MaxRecvWaiting == 0 {
		opt.MaxRecvWaiting = DefaultMaxWaiting
	}
	// One message at the limit must always fit.
	opt.MaxRecvWaiting = max(opt.MaxRecvWaiting, opt.MaxRecvMessage+msgOverhead)
	path := opt.Path
	if path == "" {
		path = "/"
	}
	h := &Host{name: name, opt: opt, path: path, ctx: ctx, cancel: cancel, peers: map[transport.PeerID]*peer{}}
	h.sampler = transport.NewWireSampler(time.Now(), h.w.counters())
	return h
}

// join registers a goroutine with the host unless Close began; it reports
// whether the goroutine may run (and must call h.wg.Done when it ends).
func (h *Host) join() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closing {
		return false
	}
	h.wg.Add(1)
	return true
}

// push hands an event from a connection goroutine to the owner.
func (h *Host) push(e event) { h.events.Push(e) }

// Backend reports "ws" or "wss".
func (h *Host) Backend() string { return h.name }

// Addr is the listening address (a dialling host has none of its own: each
// Connect is a TCP connection from an ephemeral port).
func (h *Host) Addr() string { return h.addr }

// Stats returns the host's counters.
func (h *Host) Stats() Stats {
	return Stats{
		Oversized: h.st.oversized.Load(), ProtocolErrors: h.st.protocolErrors.Load(),
		LastProtocolError: loadLast(&h.st.lastProtocolError),
		RecvStalls:        h.st.recvStalls.Load(), SendQueueDrops: h.st.sendQueueDrops.Load(),
		TimedOut: h.st.timedOut.Load(), RefusedFull: h.st.refusedFull.Load(), Rejected: h.st.rejected.Load(),
		DialFailures: h.st.dialFailures.Load(), LastDialError: loadLast(&h.st.lastDialError),
	}
}

// Service delivers every event the connections queued, in order. It never
// blocks: the connection goroutines do the I/O.
func (h *Host) Service(fn func(transport.Event)) (int, error) {
	if h.closed {
		return 0, transport.ErrClosed
	}
	h.wakeDirty()
	evs := h.events.Take()
	n := 0
	for i := range evs {
		e := &evs[i]
		if h.closed { // fn closed the host
			e.p.released(e)
			continue
		}
		h.account(e)
		fn(e.Event)
		e.p.released(e)
		n++
	}
	h.events.Recycle(evs)
	return n, nil
}

// account updates the owner's peer table for an event about to be
// delivered.
func (h *Host) account(e *event) {
	p := e.p
	switch e.Kind {
	case transport.EventConnect:
		p.connected = true
		if a := p.remote.Load(); a != nil {
			p.addr = *a
		}
		h.peers[p.id] = p
	case transport.EventDisconnect:
		p.connected = false
		delete(h.peers, p.id)
	}
}

// Send queues msg for peer's writer; the host copies it. It leaves on the
// next Service or Flush. Reliable and Unreliable both travel as a binary
// message (TCP delivers both, in order); Text as a text message.
func (h *Host) Send(id transport.PeerID, d transport.Delivery, msg []byte) error {
	if h.closed {
		return transport.ErrClosed
	}
	p := h.peers[id]
	if p == nil || !p.connected || p.disconnecting {
		return fmt.Errorf("%s: send to peer %d: %w", h.name, id, transport.ErrUnknownPeer)
	}
	typ := websocket.MessageBinary
	switch d {
	case transport.Reliable, transport.Unreliable:
	case transport.Text:
		typ = websocket.MessageText
	default:
		return fmt.Errorf("%s: send %s to peer %d: %w", h.name, d, id, transport.ErrDelivery)
	}
	if !p.queue(typ, msg) {
		if d == transport.Unreliable {
			h.st.sendQueueDrops.Add(1)
			return nil
		}
		return fmt.Errorf("%s: peer %d has %d messages queued; it is not reading", h.name, id, maxQueuedSends)
	}
	if !p.dirty {
		p.dirty = true
		h.dirty = append(h.dirty, p)
	}
	return nil
}

// Flush wakes the writer of every peer with queued messages.
func (h *Host) Flush() error {
	if h.closed {
		return transport.ErrClosed
	}
	h.wakeDirty()
	return nil
}

func (h *Host) wakeDirty() {
	for i, p := range h.dirty {
		p.dirty = false
		p.wakeWriter()
		h.dirty[i] = nil
	}
	h.dirty = h.dirty[:0]
}

// Disconnect closes peer gracefully: queued messages are written, then a
// close frame carrying reason (status 1000, the reason in decimal as its
// text), and once the peer answered (or after closeLinger) the TCP
// connection is closed. EventDisconnect with reason follows on both ends.
func (h *Host) Disconnect(id transport.PeerID, reason uint32) {
	p := h.peers[id]
	if h.closed || p == nil || p.disconnecting {
		return
	}
	p.disconnecting = true
	p.localReason.Store(uint64(reason) | reasonSet)
	if !p.connected {
		p.cancel() // still dialling, or its EventConnect not yet delivered
		return
	}
	p.requestClose()
}

// RTT is the smoothed round trip of the peer's pings, 0 before the first
// pong.
func (h *Host) RTT(id transport.PeerID) time.Duration {
	if p := h.peers[id]; p != nil {
		return time.Duration(p.rtt.Load())
	}
	return 0
}

// PeerAddr is the peer's remote TCP address (before the connection is up on
// a dialling host: the address it was asked to connect to).
func (h *Host) PeerAddr(id transport.PeerID) string {
	if p := h.peers[id]; p != nil {
		return p.addr
	}
	return ""
}

// WireRates samples the host's socket counters (see wire).
func (h *Host) WireRates() transport.WireRates {
	return h.sampler.Sample(time.Now(), h.w.counters())
}

// QueuedSends is the messages queued for peer's writer and not yet written
// to its connection.
func (h *Host) QueuedSends(id transport.PeerID) int {
	if p := h.peers[id]; p != nil {
		return int(p.backlog.Load())
	}
	return 0
}

// Close stops every goroutine the host started and closes every socket.
// Peers already Disconnected get up to closeFlushTimeout to finish their
// close handshake; the others are cut without a close frame, which their
// remote end sees at once as a lost connection (ReasonTimeout).
func (h *Host) Close() error {
	if h.closed {
		return transport.ErrClosed
	}
	h.closed = true
	h.wakeDirty()
	h.flushDisconnects()
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	h.cancel() // every connection's context: readers, writers, pingers, dials
	var err error
	if h.srv != nil {
		err = h.srv.Close() // the listener and connections not yet upgraded
	}
	h.wg.Wait()
	if h.tr != nil {
		h.tr.CloseIdleConnections()
	}
	// Every goroutine has stopped: release what was never delivered.
	evs := h.events.Take()
	for i := range evs {
		evs[i].p.released(&evs[i])
	}
	clear(h.peers)
	if err != nil {
		return fmt.Errorf("%s: close %s: %w", h.name, h.addr, err)
	}
	return nil
}

// flushDisconnects waits, up to closeFlushTimeout in all, for the peers the
// owner already Disconnected to finish, so Disconnect + Close still puts
// the close frame and its reason on the wire.
func (h *Host) flushDisconnects() {
	t := time.NewTimer(closeFlushTimeout)
	defer t.Stop()
	for _, p := range h.peers {
		if !p.disconnecting || !p.connected {
			continue
		}
		select {
		case <-p.done:
		case <-t.C:
			return
		}
	}
}
