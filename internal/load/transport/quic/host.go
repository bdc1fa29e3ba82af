package quic

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/scalegate/scalegate/internal/load/transport"
	"github.com/scalegate/scalegate/internal/load/transport/internal/eventq"
)

// Queue bounds. They keep memory bounded when an owner services slowly or a
// peer floods; every drop is counted in Stats.
const (
	// maxQueuedDatagrams is a peer's unreliable send queue (messages waiting
	// for its sender goroutine). When full the oldest is dropped: a newer
	// snapshot supersedes an older one.
	maxQueuedDatagrams = 64
	// maxQueuedControl bounds a peer's reliable send queue; beyond it Send
	// returns an error instead of dropping (reliable means reliable).
	maxQueuedControl = 4096
	// maxPendingDatagrams bounds received unreliable messages a peer may have
	// waiting for Service; beyond it new ones are dropped.
	maxPendingDatagrams = 256
	// maxPendingControl bounds received reliable messages waiting for
	// Service; beyond it the control reader stops reading, and QUIC flow
	// control pushes back on the sender.
	maxPendingControl = 1024
)

// Timeouts.
const (
	defaultTimeout   = 30 * time.Second // MaxIdleTimeout, as ENet's 30 s maximum
	handshakeTimeout = 5 * time.Second  // quic-go's default HandshakeIdleTimeout
	lingerTimeout    = 2 * time.Second  // graceful close: wait this long for the peer's FIN
	// closeFlushTimeout bounds how long Close waits for Disconnected peers
	// to put their close on the wire.
	closeFlushTimeout = 500 * time.Millisecond
)

// Application error codes above the u32 range are the transport's own; a
// Disconnect reason is any u32 and travels as the code itself.
const (
	codeHostClosed    quicgo.ApplicationErrorCode = 1<<32 + iota // local host closing
	codeProtocolError                                            // control stream violated the framing
	codeServerFull                                               // MaxPeers connections already live
)

// Stats are the QUIC host's own counters: what it dropped and why. Read them
// with (*Host).Stats; they are cumulative since the host was created.
type Stats struct {
	// SendQueueDrops counts unreliable messages dropped because a peer's
	// send queue was full (its sender was blocked in quic-go's 32-deep
	// datagram queue, i.e. congestion control did not let them out).
	SendQueueDrops uint64
	// SendTooLarge counts unreliable messages abandoned because a fragment
	// no longer fit the datagram size (path MTU shrank mid-message).
	SendTooLarge uint64
	// FragmentedSent counts unreliable messages sent as more than one datagram.
	FragmentedSent uint64
	// RecvQueueDrops counts received unreliable messages dropped because the
	// owner had maxPendingDatagrams of that peer's waiting.
	RecvQueueDrops uint64
	// BadFragments counts malformed or inconsistent fragment datagrams; each
	// is also reported to the owner in an EventMalformed for its peer.
	BadFragments uint64
	// IncompleteDropped counts fragmented messages dropped because a
	// fragment never arrived before newer messages needed the slot.
	IncompleteDropped uint64
	// RefusedFull counts connections closed because MaxPeers were live.
	RefusedFull uint64
	// ProtocolErrors counts connections closed for a bad control stream
	// (no stream, short or missing preamble); LastProtocolError is the
	// latest one.
	ProtocolErrors    uint64
	LastProtocolError string
	// DialFailures counts Connects that ended before EventConnect (handshake
	// timeout, refused, abandoned); LastDialError is the latest one's error,
	// which the EventDisconnect (ReasonTimeout, as on ENet) cannot carry.
	DialFailures  uint64
	LastDialError string
}

type stats struct {
	sendQueueDrops, sendTooLarge, fragmentedSent    atomic.Uint64
	recvQueueDrops, badFragments, incompleteDropped atomic.Uint64
	refusedFull, protocolErrors, dialFailures       atomic.Uint64
	lastDialError, lastProtocolError                atomic.Pointer[error]
}

// protocolError counts a control-stream violation and remembers it.
func (s *stats) protocolError(err error) {
	s.protocolErrors.Add(1)
	s.lastProtocolError.Store(&err)
}

// event is a transport.Event plus the peer it concerns, so Service can keep
// its owner-side peer table without locks.
type event struct {
	transport.Event
	p *peer
}

// Host is a QUIC transport.Host. Exported only so callers and tests can read
// Stats with a type assertion; use it through transport.Host.
type Host struct {
	opt    transport.Options
	conf   *quicgo.Config
	sock   *socket
	pool   *socketPool // non-nil when sock is shared with other hosts
	pooled *pooledSocket
	ln     *quicgo.Listener // nil for a dialling host
	ctx    context.Context  // cancelled by Close: every goroutine stops
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine the host started
	nextID atomic.Uint32
	live   atomic.Int32 // peers with goroutines running
	st     stats

	// The event queue: QUIC-side goroutines push, Service takes it.
	events eventq.Queue[event]

	// Owner-only state.
	peers   map[transport.PeerID]*peer
	dirty   []*peer // peers with sends queued since the last Service/Flush
	closed  bool
	sampler *transport.WireSampler
	retired transport.WireCounters // shared socket: counts of connections gone
}

var _ transport.Host = (*Host)(nil)

func newHost(opt transport.Options, server bool, sock *socket) *Host {
	ctx, cancel := context.WithCancel(context.Background())
	h := &Host{
		opt:    opt,
		conf:   quicConfig(opt, server),
		sock:   sock,
		ctx:    ctx,
		cancel: cancel,
		peers:  map[transport.PeerID]*peer{},
	}
	h.sampler = transport.NewWireSampler(time.Now(), h.counters())
	return h
}

// newSharedHost creates a dialling host on a pooled socket.
func newSharedHost(opt transport.Options, pool *socketPool) (*Host, error) {
	ps, err := pool.acquire(opt)
	if err != nil {
		return nil, err
	}
	h := newHost(opt, false, ps.socket)
	h.pool, h.pooled = pool, ps
	return h, nil
}

// counters are the host's cumulative wire counters: the socket's when the
// host owns it; on a shared socket the sum of quic-go's per-connection
// counts (UDP payload bytes, like the socket's; QUIC packets rather than
// datagrams, which differ only for coalesced handshake packets).
func (h *Host) counters() transport.WireCounters {
	if h.pool == nil {
		return h.sock.pc.counters()
	}
	c := h.retired
	for _, p := range h.peers {
		addConnStats(&c, p)
	}
	return c
}

// addConnStats adds a peer connection's byte and packet counts to c.
func addConnStats(c *transport.WireCounters, p *peer) {
	conn := p.conn.Load()
	if conn == nil {
		return
	}
	s := conn.ConnectionStats()
	c.BytesOut += uint32(s.BytesSent)
	c.BytesIn += uint32(s.BytesReceived)
	c.DatagramsOut += uint32(s.PacketsSent)
	c.DatagramsIn += uint32(s.PacketsReceived)
}

// quicConfig maps Options onto quic-go's Config.
func quicConfig(opt transport.Options, server bool) *quicgo.Config {
	idle := opt.Timeout
	if idle <= 0 {
		idle = defaultTimeout
	}
	c := &quicgo.Config{
		EnableDatagrams:       true,
		MaxIdleTimeout:        idle,
		HandshakeIdleTimeout:  min(idle, handshakeTimeout),
		KeepAlivePeriod:       idle / 3, // ENet pings a quiet peer; so does this
		MaxIncomingUniStreams: -1,
		MaxIncomingStreams:    -1,
	}
	if server {
		c.MaxIncomingStreams = 1 // the control stream, nothing else
	}
	return c
}

// Backend reports "quic".
func (h *Host) Backend() string { return Name }

// Addr is the local UDP address.
func (h *Host) Addr() string { return h.sock.pc.LocalAddr().String() }

// Stats returns the host's drop and fragmentation counters.
func (h *Host) Stats() Stats {
	return Stats{
		SendQueueDrops:    h.st.sendQueueDrops.Load(),
		SendTooLarge:      h.st.sendTooLarge.Load(),
		FragmentedSent:    h.st.fragmentedSent.Load(),
		RecvQueueDrops:    h.st.recvQueueDrops.Load(),
		BadFragments:      h.st.badFragments.Load(),
		IncompleteDropped: h.st.incompleteDropped.Load(),
		RefusedFull:       h.st.refusedFull.Load(),
		ProtocolErrors:    h.st.protocolErrors.Load(),
		DialFailures:      h.st.dialFailures.Load(),
		LastDialError:     lastErr(h.st.lastDialError.Load()),
		LastProtocolError: lastErr(h.st.lastProtocolError.Load()),
	}
}

func lastErr(e *error) string {
	if e == nil {
		return ""
	}
	return (*e).Error()
}

// push hands an event from a QUIC-side goroutine to the owner.
func (h *Host) push(e event) { h.events.Push(e) }

// Service delivers every queued event in order. It never blocks: QUIC's own
// goroutines do the socket I/O and queue events as they happen.
func (h *Host) Service(fn func(transport.Event)) (int, error) {
	if h.closed {
		return 0, transport.ErrClosed
	}
	h.wakeDirty()
	evs := h.events.Take()
	n := 0
	for i := range evs {
		if h.closed { // fn closed the host
			break
		}
		e := &evs[i]
		if !h.account(e) {
			continue
		}
		fn(e.Event)
		n++
	}
	h.events.Recycle(evs)
	return n, nil
}

// account updates owner-side state for an event about to be delivered,
// and reports whether to deliver it.
func (h *Host) account(e *event) bool {
	p := e.p
	switch e.Kind {
	case transport.EventMalformed:
		// The count so far; later ones queue a new event.
		e.Data = p.malformed.Swap(0)
		return e.Data > 0
	case transport.EventConnect:
		p.connected = true
		if c := p.conn.Load(); c != nil {
			p.addr = c.RemoteAddr().String()
		}
		h.peers[p.id] = p
	case transport.EventDisconnect:
		p.connected = false
		if h.pool != nil {
			addConnStats(&h.retired, p)
		}
		delete(h.peers, p.id)
	case transport.EventReceive:
		if e.Delivery == transport.Reliable {
			<-p.ctrlSlots
		} else {
			p.pendingDgrams.Add(-1)
		}
	}
	return true
}

// Flush hands every message queued since the last Service or Flush to the
// peers' sender goroutines, which put them into quic-go at once. As with
// ENet, Send only queues: messages leave on Service or Flush. Batching the
// wake-ups keeps a tick's send loop a plain copy loop instead of readying
// one goroutine per Send.
func (h *Host) Flush() error {
	if h.closed {
		return transport.ErrClosed
	}
	h.wakeDirty()
	return nil
}

// markDirty records that p has queued sends (owner goroutine).
func (h *Host) markDirty(p *peer) {
	if !p.dirty {
		p.dirty = true
		h.dirty = append(h.dirty, p)
	}
}

// wakeDirty wakes the sender of every peer with queued sends.
func (h *Host) wakeDirty() {
	for i, p := range h.dirty {
		p.dirty = false
		p.wakeSender()
		h.dirty[i] = nil
	}
	h.dirty = h.dirty[:0]
}

// Connect starts a connection; the dial, TLS handshake, preamble and the
// server host's accept word happen on a goroutine and end in EventConnect
// or EventDisconnect (ReasonTimeout; Stats.LastDialError says why).
func (h *Host) Connect(addr string, data uint32) (transport.PeerID, error) {
	if h.closed {
		return 0, transport.ErrClosed
	}
	if err := checkAddr(addr); err != nil {
		return 0, err
	}
	p := h.newPeer()
	p.addr = addr
	h.peers[p.id] = p
	h.live.Add(1)
	h.wg.Go(func() { h.dial(p, addr, data) })
	return p.id, nil
}

// Send queues msg for peer; the host copies it. The message leaves on the
// next Service or Flush.
func (h *Host) Send(id transport.PeerID, d transport.Delivery, msg []byte) error {
	if h.closed {
		return transport.ErrClosed
	}
	p := h.peers[id]
	if p == nil || !p.connected || p.disconnecting {
		return fmt.Errorf("quic: send to peer %d: %w", id, transport.ErrUnknownPeer)
	}
	switch d {
	case transport.Reliable:
		return p.queueControl(msg)
	case transport.Unreliable:
		return p.queueDatagram(msg)
	}
	return fmt.Errorf("quic: send %s to peer %d: %w", d, id, transport.ErrDelivery)
}

// Disconnect closes peer gracefully: queued messages are sent, then the
// control stream is finished, and once the peer has finished its side (or
// after lingerTimeout) the connection is closed with application error code
// reason. The peer's EventDisconnect carries reason on both ends.
func (h *Host) Disconnect(id transport.PeerID, reason uint32) {
	p := h.peers[id]
	if h.closed || p == nil || p.disconnecting {
		return
	}
	p.disconnecting = true
	p.localReason.Store(uint64(reason) | reasonSet)
	if !p.connected {
		p.cancel() // still dialling (or its EventConnect is queued): abandon
		return
	}
	p.mu.Lock()
	p.closeReq = true
	p.mu.Unlock()
	p.wakeSender()
}

// RTT is quic-go's smoothed RTT for peer.
func (h *Host) RTT(id transport.PeerID) time.Duration {
	p := h.peers[id]
	if p == nil {
		return 0
	}
	c := p.conn.Load()
	if c == nil {
		return 0
	}
	return c.ConnectionStats().SmoothedRTT
}

// LinkStats is quic-go's smoothed RTT and the share of packets declared
// lost since the previous call (a window, so a link that recovers reads
// clean again). Between calls with nothing sent the last figure stands.
func (h *Host) LinkStats(id transport.PeerID) transport.LinkStats {
	p := h.peers[id]
	if p == nil {
		return transport.LinkStats{}
	}
	c := p.conn.Load()
	if c == nil {
		return transport.LinkStats{}
	}
	st := c.ConnectionStats()
	if sent := st.PacketsSent - p.lossSent; sent > 0 && st.PacketsSent >= p.lossSent {
		// PacketsLost can go down (a packet declared lost arrived after all).
		lost := 0.0
		if st.PacketsLost > p.lossLost {
			lost = float64(st.PacketsLost - p.lossLost)
		}
		p.loss, p.lossKnown = min(lost/float64(sent), 1), true
	}
	p.lossSent, p.lossLost = st.PacketsSent, max(st.PacketsLost, p.lossLost)
	return transport.LinkStats{RTT: st.SmoothedRTT, Loss: p.loss, LossKnown: p.lossKnown}
}

// PeerAddr is the peer's remote address.
func (h *Host) PeerAddr(id transport.PeerID) string {
	if p := h.peers[id]; p != nil {
		return p.addr
	}
	return ""
}

// QueuedSends is the messages queued to peer that its sender has not yet
// handed to quic-go: nonzero after a Flush only while quic-go's congestion
// control (its 32-datagram queue, the stream's flow control) holds the
// sender back. 0 for an unknown peer.
func (h *Host) QueuedSends(id transport.PeerID) int {
	if p := h.peers[id]; p != nil {
		return int(p.backlog.Load())
	}
	return 0
}

// WireRates samples the socket counters.
func (h *Host) WireRates() transport.WireRates {
	return h.sampler.Sample(time.Now(), h.counters())
}

// Close stops every goroutine the host started and closes the socket.
// Peers already Disconnected first get up to closeFlushTimeout to put their
// close (with its reason) on the wire, as ENet's Disconnect + Flush +
// destroy does. Other connections are dropped without CONNECTION_CLOSE
// (quic-go's Transport.Close), so remote peers time out, as with ENet. A host on a
// shared socket cannot close the socket under its neighbours: it closes its
// own connections with the transport's "host closed" code, which the remote
// reports as ReasonTimeout at once instead of after the idle timeout.
func (h *Host) Close() error {
	if h.closed {
		return transport.ErrClosed
	}
	h.closed = true
	h.wakeDirty()
	h.flushDisconnects()
	clear(h.peers)
	addr := h.Addr()
	h.cancel()
	var err error
	if h.ln != nil {
		err = h.ln.Close()
	}
	if h.pool == nil {
		if cerr := h.sock.close(); err == nil {
			err = cerr
		}
	}
	h.wg.Wait()
	if h.pool != nil {
		err = h.pool.release(h.pooled)
	}
	if err != nil {
		return fmt.Errorf("quic: close %s: %w", addr, err)
	}
	return nil
}

// checkAddr validates a "host:port" connect address up front, so a typo is
// an error from Connect rather than a later disconnect event.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("quic: connect address %q: %w", addr, err)
	}
	if host == "" {
		return fmt.Errorf("quic: connect address %q: no host", addr)
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("quic: connect address %q: port must be 1-65535", addr)
	}
	return nil
}

// flushDisconnects lets peers the owner already Disconnected finish before
// Close tears the socket down, the way ENet's Disconnect + Flush + destroy
// still puts the disconnect on the wire: their senders hand over what was
// queued, finish the control stream and close with the reason at once,
// without lingering for the peer's FIN. Bounded by closeFlushTimeout for the
// whole host. Control messages queued in the same breath may still be cut
// off by the CONNECTION_CLOSE; the close and its reason are not.
func (h *Host) flushDisconnects() {
	var waits []chan struct{}
	for _, p := range h.peers {
		if p.disconnecting && p.connected {
			close(p.hurry)
			waits = append(waits, p.done)
		}
	}
	if len(waits) == 0 {
		return
	}
	t := time.NewTimer(closeFlushTimeout)
	defer t.Stop()
	for _, d := range waits {
		select {
		case <-d:
		case <-t.C:
			return
		}
	}
}

// acceptLoop accepts connections until the host closes.
func (h *Host) acceptLoop() {
	for {
		conn, err := h.ln.Accept(h.ctx)
		if err != nil {
			return // host closed
		}
		if h.opt.MaxPeers > 0 && int(h.live.Load()) >= h.opt.MaxPeers {
			h.st.refusedFull.Add(1)
			h.wg.Go(func() { _ = conn.CloseWithError(codeServerFull, "server full") })
			continue
		}
		h.live.Add(1)
		h.wg.Go(func() { h.serve(conn) })
	}
}

// socket is one UDP socket with its counters and quic-go Transport.
type socket struct {
	pc *countingConn
	tr *quicgo.Transport
}

// openSocket binds addr (nil: any address, ephemeral port).
func openSocket(addr *net.UDPAddr, opt transport.Options) (*socket, error) {
	udp, err := net.ListenUDP("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("quic: bind %v: %w", addr, err)
	}
	// quic-go then raises both buffers to 7 MiB where it is allowed to.
	if opt.RecvBufferBytes > 0 {
		_ = udp.SetReadBuffer(opt.RecvBufferBytes)
	}
	if opt.SendBufferBytes > 0 {
		_ = udp.SetWriteBuffer(opt.SendBufferBytes)
	}
	pc := newCountingConn(udp)
	return &socket{pc: pc, tr: &quicgo.Transport{Conn: pc}}, nil
}

// close stops the Transport (destroying its connections) and the socket.
func (s *socket) close() error {
	err := s.tr.Close()
	if cerr := s.pc.Close(); err == nil {
		err = cerr
	}
	return err
}

// listen starts the server side on sock.
func listen(sock *socket, opt transport.Options) (*Host, error) {
	tlsConf, err := serverTLS(opt.CertFile, opt.KeyFile)
	if err != nil {
		return nil, err
	}
	h := newHost(opt, true, sock)
	h.ln, err = sock.tr.Listen(tlsConf, h.conf)
	if err != nil {
		return nil, fmt.Errorf("quic: listen on %s: %w", sock.pc.LocalAddr(), err)
	}
	h.wg.Go(h.acceptLoop)
	return h, nil
}
