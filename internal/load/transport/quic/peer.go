package quic

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"sync"
	"sync/atomic"
	"time"

	quicgo "github.com/quic-go/quic-go"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// reasonSet marks peer.localReason as holding a reason (bit 32).
const reasonSet = 1 << 32

// defaultDatagramLimit is the datagram payload assumed before quic-go says
// otherwise: it is below what 1200-byte packets carry, so the first
// fragments of a message always fit.
const defaultDatagramLimit = 1150

// peer is one connection. Three goroutines serve it once it is established:
// the lifecycle goroutine (which dialled or accepted it and then reads the
// control stream), the datagram reader and the sender.
type peer struct {
	h      *Host
	id     transport.PeerID
	ctx    context.Context // cancelled to abandon the peer (host Close, Disconnect while dialling)
	cancel context.CancelFunc
	conn   atomic.Pointer[quicgo.Conn]
	stream *quicgo.Stream // set before the sender starts

	// Send side: the owner appends, the sender takes.
	mu       sync.Mutex
	ctrl     [][]byte  // framed control messages
	dgrams   []*[]byte // unreliable messages, pooled buffers
	closeReq bool      // local graceful Disconnect requested
	finReq   bool      // the peer finished its control stream: finish ours
	wake     chan struct{}
	peerFin  chan struct{} // closed when the peer's control stream ended
	hurry    chan struct{} // closed by host Close: do not linger for the peer's FIN
	done     chan struct{} // closed when the peer's goroutines are finished

	// backlog is the messages queued by Send and not yet handed to quic-go
	// (in ctrl/dgrams, or taken by the sender and not yet written): the
	// owner adds, the sender and the drop-oldest path subtract.
	backlog atomic.Int32

	// Receive side bounds (see maxPendingControl, maxPendingDatagrams).
	ctrlSlots     chan struct{}
	pendingDgrams atomic.Int32
	// malformed counts bad datagrams not yet reported to the owner; one
	// EventMalformed is queued when it leaves 0 and carries the count.
	malformed atomic.Uint32

	localReason atomic.Uint64 // reasonSet|reason once Disconnect was called

	// Owner-only.
	connected     bool // EventConnect delivered
	disconnecting bool // Disconnect called
	dirty         bool // queued since the last Service/Flush
	addr          string
	// Loss sampling (LinkStats): the counters at the previous call and
	// the loss over the interval since it.
	lossSent, lossLost uint64
	loss               float64
	lossKnown          bool
}

func (h *Host) newPeer() *peer {
	ctx, cancel := context.WithCancel(h.ctx)
	return &peer{
		h:         h,
		id:        transport.PeerID(h.nextID.Add(1)),
		ctx:       ctx,
		cancel:    cancel,
		wake:      make(chan struct{}, 1),
		peerFin:   make(chan struct{}),
		hurry:     make(chan struct{}),
		done:      make(chan struct{}),
		ctrlSlots: make(chan struct{}, maxPendingControl),
	}
}

// bufPool recycles message copies between the owner (Send) and the senders.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 1536); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 64<<10+64 {
		return // keep the pool's buffers small
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// queueControl frames and queues a reliable message (owner goroutine).
func (p *peer) queueControl(msg []byte) error {
	if len(msg) > MaxReliableSize {
		return fmt.Errorf("quic: send %d bytes to peer %d: %w", len(msg), p.id, errFrameTooLarge)
	}
	framed, _ := appendFrame(make([]byte, 0, frameHeaderLen+len(msg)), msg)
	p.mu.Lock()
	if len(p.ctrl) >= maxQueuedControl {
		p.mu.Unlock()
		return fmt.Errorf("quic: peer %d has %d reliable messages queued; it is not reading", p.id, maxQueuedControl)
	}
	p.ctrl = append(p.ctrl, framed)
	p.mu.Unlock()
	p.backlog.Add(1)
	p.h.markDirty(p)
	return nil
}

// queueDatagram copies and queues an unreliable message (owner goroutine).
// A full queue drops its oldest message: a newer snapshot supersedes it.
func (p *peer) queueDatagram(msg []byte) error {
	if len(msg) > MaxUnreliableSize {
		return fmt.Errorf("quic: unreliable message of %d bytes to peer %d exceeds %d", len(msg), p.id, MaxUnreliableSize)
	}
	bp := getBuf()
	*bp = append(*bp, msg...)
	var dropped *[]byte
	p.mu.Lock()
	if len(p.dgrams) >= maxQueuedDatagrams {
		dropped = p.dgrams[0]
		n := copy(p.dgrams, p.dgrams[1:])
		p.dgrams[n] = nil
		p.dgrams = p.dgrams[:n]
	}
	p.dgrams = append(p.dgrams, bp)
	p.mu.Unlock()
	p.backlog.Add(1)
	if dropped != nil {
		p.backlog.Add(-1)
		putBuf(dropped)
		p.h.st.sendQueueDrops.Add(1)
	}
	p.h.markDirty(p)
	return nil
}

func (p *peer) wakeSender() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// dial runs a client connection from handshake to EventDisconnect.
func (h *Host) dial(p *peer, addr string, data uint32) {
	defer h.live.Add(-1)
	defer close(p.done)
	defer p.cancel()
	conn, stream, err := h.open(p, addr, data)
	if err != nil {
		h.st.dialFailures.Add(1)
		h.st.lastDialError.Store(&err)
		if conn != nil {
			p.closeConn(conn, p.closeCode(), "")
		}
		h.push(event{Event: transport.Event{Kind: transport.EventDisconnect, Peer: p.id, Data: p.reason(err)}, p: p})
		return
	}
	p.conn.Store(conn)
	p.stream = stream
	h.push(event{Event: transport.Event{Kind: transport.EventConnect, Peer: p.id}, p: p})
	p.run(conn, stream)
}

// dialAttempts bounds the dials of one Connect. quic-go completes a
// handshake and then queues the connection for the server's Accept; when
// more than 32 complete before the server host accepts them (a burst of
// connects on a busy machine) it refuses the rest with CONNECTION_REFUSED.
// Such a refusal comes before the server host's accept word, so the client
// has reported nothing yet and dials again.
const dialAttempts = 3

// open dials until the server host accepts the connection: handshake,
// control stream, preamble, accept word.
func (h *Host) open(p *peer, addr string, data uint32) (*quicgo.Conn, *quicgo.Stream, error) {
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("quic: resolve %s: %w", addr, err)
	}
	for attempt := 1; ; attempt++ {
		conn, stream, err := h.openOnce(p, ua, data)
		if err == nil || attempt == dialAttempts || !isRefused(err) || p.ctx.Err() != nil {
			if err != nil && attempt > 1 {
				err = fmt.Errorf("attempt %d of %d: %w", attempt, dialAttempts, err)
			}
			return conn, stream, err
		}
	}
}

// isRefused reports whether the server's quic-go refused the connection.
func isRefused(err error) bool {
	var te *quicgo.TransportError
	return errors.As(err, &te) && te.Remote && te.ErrorCode == quicgo.ConnectionRefused
}

// openOnce is one dial: handshake, control stream and preamble, then the
// server host's accept word (the connect data echoed), all within twice the
// handshake idle timeout.
func (h *Host) openOnce(p *peer, ua *net.UDPAddr, data uint32) (*quicgo.Conn, *quicgo.Stream, error) {
	ctx, cancel := context.WithTimeout(p.ctx, 2*h.conf.HandshakeIdleTimeout)
	defer cancel()
	conn, err := h.sock.tr.Dial(ctx, ua, clientTLS(), h.conf)
	if err != nil {
		return nil, nil, fmt.Errorf("quic: dial %s: %w", ua, err)
	}
	stream, err := conn.OpenStream()
	if err == nil {
		_, err = stream.Write(appendPreamble(nil, data))
	}
	if err != nil {
		return conn, nil, fmt.Errorf("quic: open control stream to %s: %w", ua, err)
	}
	stop := context.AfterFunc(ctx, func() { _ = stream.SetReadDeadline(time.Now()) })
	defer stop()
	var word [preambleLen]byte
	if _, err := io.ReadFull(stream, word[:]); err != nil {
		return conn, nil, fmt.Errorf("quic: %s did not accept the connection: %w", ua, err)
	}
	_ = stream.SetReadDeadline(time.Time{})
	if got, _ := parsePreamble(word[:]); got != data {
		return conn, nil, fmt.Errorf("quic: %s answered connect data %#x with %#x", ua, data, got)
	}
	return conn, stream, nil
}

// serve runs an accepted connection from preamble to EventDisconnect.
func (h *Host) serve(conn *quicgo.Conn) {
	defer h.live.Add(-1)
	p := h.newPeer()
	defer close(p.done)
	defer p.cancel()
	p.conn.Store(conn)
	stream, data, err := acceptControl(p.ctx, conn)
	if err != nil {
		// No EventConnect was delivered, so no EventDisconnect follows.
		if p.ctx.Err() == nil {
			h.st.protocolError(err)
		}
		p.closeConn(conn, codeProtocolError, err.Error())
		return
	}
	// The accept word tells the client that this host, not just quic-go's
	// handshake, took the connection. The sender is not running yet, so
	// this goroutine is the stream's only writer.
	if _, err := stream.Write(appendPreamble(nil, data)); err != nil {
		p.closeConn(conn, codeProtocolError, err.Error())
		return
	}
	p.stream = stream
	h.push(event{Event: transport.Event{Kind: transport.EventConnect, Peer: p.id, Data: data}, p: p})
	p.run(conn, stream)
}

// acceptControl waits for the client's control stream and reads the
// connect-data preamble, within the handshake timeout.
func acceptControl(ctx context.Context, conn *quicgo.Conn) (*quicgo.Stream, uint32, error) {
	ctx, cancel := context.WithTimeout(ctx, handshakeTimeout)
	defer cancel()
	stream, err := conn.AcceptStream(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("quic: no control stream from %s: %w", conn.RemoteAddr(), err)
	}
	var pre [preambleLen]byte
	_ = stream.SetReadDeadline(time.Now().Add(handshakeTimeout))
	if _, err := io.ReadFull(stream, pre[:]); err != nil {
		return nil, 0, fmt.Errorf("quic: connect-data preamble from %s: %w", conn.RemoteAddr(), err)
	}
	_ = stream.SetReadDeadline(time.Time{})
	data, err := parsePreamble(pre[:])
	return stream, data, err
}

// closeConn closes conn with code unless the host is closing (Close drops
// connections without notice, as ENet does). It waits until quic-go has
// closed the connection.
func (p *peer) closeConn(conn *quicgo.Conn, code quicgo.ApplicationErrorCode, msg string) {
	if p.h.ctx.Err() != nil && p.h.pool == nil {
		return // Close is dropping the whole socket
	}
	_ = conn.CloseWithError(code, msg)
}

// run serves an established connection: it starts the sender and the
// datagram reader, reads the control stream, and when the connection is
// over waits for both and queues EventDisconnect, so no event of this peer
// can follow it.
func (p *peer) run(conn *quicgo.Conn, stream *quicgo.Stream) {
	var wg sync.WaitGroup
	wg.Go(func() { p.sendLoop(conn, stream) })
	wg.Go(func() { p.datagramLoop(conn) })
	// Abandoning the peer (Disconnect before its EventConnect was delivered)
	// must unblock the control stream read: close the connection.
	closed := make(chan struct{})
	stop := context.AfterFunc(p.ctx, func() {
		defer close(closed)
		p.closeConn(conn, p.closeCode(), "")
	})
	err := p.controlLoop(conn, stream)
	p.afterControl(conn, err)
	if !stop() {
		<-closed
	}
	p.closeConn(conn, p.closeCode(), "") // no-op when already closed
	p.cancel()
	wg.Wait()
	reason := p.reason(context.Cause(conn.Context()))
	p.h.push(event{Event: transport.Event{Kind: transport.EventDisconnect, Peer: p.id, Data: reason}, p: p})
}

// afterControl handles the end of the control stream and waits for the
// connection to end.
func (p *peer) afterControl(conn *quicgo.Conn, err error) {
	switch {
	case errors.Is(err, io.EOF):
		// The peer finished its control stream: a graceful disconnect.
		// Answer with our FIN; the peer then closes the connection with
		// its reason. A peer that never does is closed after a grace.
		close(p.peerFin)
		p.mu.Lock()
		p.finReq = true
		p.mu.Unlock()
		p.wakeSender()
		t := time.NewTimer(2 * lingerTimeout)
		defer t.Stop()
		select {
		case <-conn.Context().Done():
		case <-p.ctx.Done():
		case <-t.C:
		}
		return
	case isStreamReset(err):
		// The peer reset the control stream but kept the connection: a
		// protocol violation (a closing connection fails reads with the
		// connection's error instead, which is not counted).
		p.h.st.protocolError(err)
		p.closeConn(conn, codeProtocolError, fmt.Sprintf("control stream: %v", err))
	}
	select {
	case <-conn.Context().Done():
	case <-p.ctx.Done():
	}
}

// closeCode is the application error code to close with: the Disconnect
// reason if one was given, else "host closed".
func (p *peer) closeCode() quicgo.ApplicationErrorCode {
	if r := p.localReason.Load(); r&reasonSet != 0 {
		return quicgo.ApplicationErrorCode(uint32(r))
	}
	return codeHostClosed
}

// reason maps why the connection ended to a Disconnect reason: the local
// Disconnect reason, else the peer's application error code when it is a
// u32 reason, else ReasonTimeout (idle timeout, handshake failure, a
// transport error, the peer's host closing).
func (p *peer) reason(cause error) uint32 {
	if r := p.localReason.Load(); r&reasonSet != 0 {
		return uint32(r)
	}
	var ae *quicgo.ApplicationError
	if errors.As(cause, &ae) && ae.ErrorCode <= math.MaxUint32 {
		return uint32(ae.ErrorCode)
	}
	return transport.ReasonTimeout
}

// isStreamReset reports whether err is the peer resetting the stream.
func isStreamReset(err error) bool {
	var se *quicgo.StreamError
	return errors.As(err, &se) && se.Remote
}

// controlLoop reads framed messages until the stream ends or fails.
func (p *peer) controlLoop(conn *quicgo.Conn, stream *quicgo.Stream) error {
	buf := make([]byte, 4096)
	var dec frameDecoder
	for {
		n, err := stream.Read(buf)
		if n > 0 {
			dec.write(buf[:n])
			for msg, ok := dec.next(); ok; msg, ok = dec.next() {
				if !p.deliverControl(conn, msg) {
					return context.Canceled
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) && dec.buffered() > 0 {
				// A FIN inside a frame is a framing violation.
				err := errors.New("quic: control stream ended inside a frame")
				p.h.st.protocolError(err)
				p.closeConn(conn, codeProtocolError, err.Error())
				return err
			}
			return err
		}
	}
}

// deliverControl queues one reliable message, waiting while the owner has
// maxPendingControl of this peer's undelivered.
func (p *peer) deliverControl(conn *quicgo.Conn, msg []byte) bool {
	select {
	case p.ctrlSlots <- struct{}{}:
	case <-p.ctx.Done():
		return false
	case <-conn.Context().Done():
		return false
	}
	cp := append(make([]byte, 0, len(msg)), msg...)
	p.h.push(event{Event: transport.Event{Kind: transport.EventReceive, Peer: p.id, Delivery: transport.Reliable, Payload: cp, At: time.Now()}, p: p})
	return true
}

// datagramLoop drains quic-go's 128-deep datagram receive queue into the
// event queue, reassembling fragmented messages.
func (p *peer) datagramLoop(conn *quicgo.Conn) {
	var r reassembler
	defer func() { p.h.st.incompleteDropped.Add(r.evicted) }()
	for {
		b, err := conn.ReceiveDatagram(p.ctx)
		if err != nil {
			return
		}
		at := time.Now() // taken off the connection: its arrival (Event.At)
		whole, f, isFrag, err := parseDatagram(b)
		if err != nil {
			p.badDatagram()
			continue
		}
		if isFrag {
			inv := r.invalid
			msg, ok := r.add(f)
			if r.invalid != inv {
				p.badDatagram()
			}
			if !ok {
				continue
			}
			whole = msg
		}
		if p.pendingDgrams.Load() >= maxPendingDatagrams {
			p.h.st.recvQueueDrops.Add(1)
			continue
		}
		p.pendingDgrams.Add(1)
		p.h.push(event{Event: transport.Event{Kind: transport.EventReceive, Peer: p.id, Delivery: transport.Unreliable, Payload: whole, At: at}, p: p})
	}
}

// badDatagram counts a malformed fragment datagram and tells the owner, so
// the application can strike the peer as it strikes a malformed message.
// One queued event covers any number of them: a flood cannot grow the event
// queue.
func (p *peer) badDatagram() {
	p.h.st.badFragments.Add(1)
	if p.malformed.Add(1) == 1 {
		p.h.push(event{Event: transport.Event{Kind: transport.EventMalformed, Peer: p.id}, p: p})
	}
}

// sender is the state of one peer's send goroutine.
type sender struct {
	p       *peer
	conn    *quicgo.Conn
	stream  *quicgo.Stream
	limit   int    // current datagram payload limit as quic-go last reported it
	nextID  uint16 // fragmented message id
	scratch []byte
	frames  []byte
	finSent bool
}

// sendLoop moves queued messages into quic-go. It is the only goroutine
// that writes the control stream or calls SendDatagram, which blocks when
// quic-go's 32-datagram queue is full: that blocks this goroutine, never the
// owner; meanwhile Send keeps queueing and drops the oldest datagrams.
func (p *peer) sendLoop(conn *quicgo.Conn, stream *quicgo.Stream) {
	s := &sender{p: p, conn: conn, stream: stream, limit: defaultDatagramLimit, scratch: make([]byte, 0, 1500)}
	var ctrl [][]byte
	var dgrams []*[]byte
	for {
		select {
		case <-p.wake:
		case <-p.ctx.Done():
			return
		}
		p.mu.Lock()
		ctrl, p.ctrl = p.ctrl, ctrl[:0]
		dgrams, p.dgrams = p.dgrams, dgrams[:0]
		closeReq, finReq := p.closeReq, p.finReq
		p.mu.Unlock()
		s.writeControl(ctrl)
		p.backlog.Add(-int32(len(ctrl)))
		clear(ctrl)
		for i, bp := range dgrams {
			s.sendUnreliable(*bp)
			p.backlog.Add(-1)
			putBuf(bp)
			dgrams[i] = nil
		}
		if closeReq {
			s.finish()
			return
		}
		if finReq && !s.finSent {
			s.finSent = true
			_ = stream.Close()
		}
	}
}

// writeControl writes the framed messages in one stream write.
func (s *sender) writeControl(ctrl [][]byte) {
	if len(ctrl) == 0 || s.finSent {
		return
	}
	s.frames = s.frames[:0]
	for _, f := range ctrl {
		s.frames = append(s.frames, f...)
	}
	// An error means the connection is closing; the lifecycle goroutine
	// reports it.
	_, _ = s.stream.Write(s.frames)
}

// sendUnreliable sends one message as a datagram, or as fragments when it
// does not fit one.
func (s *sender) sendUnreliable(msg []byte) {
	if len(msg) == 0 || msg[0] != fragMarker {
		err := s.conn.SendDatagram(msg)
		var tl *quicgo.DatagramTooLargeError
		if !errors.As(err, &tl) {
			return // sent, or the connection is closing
		}
		s.limit = int(tl.MaxDatagramPayloadSize)
	}
	s.sendFragments(msg)
}

// sendFragments splits msg into datagrams of at most s.limit bytes.
func (s *sender) sendFragments(msg []byte) {
	chunk := s.limit - fragHeaderLen
	count := splitCount(len(msg), chunk)
	if chunk < minChunk || count > MaxFragments {
		s.p.h.st.sendTooLarge.Add(1)
		return
	}
	id := s.nextID
	s.nextID++
	if count > 1 {
		s.p.h.st.fragmentedSent.Add(1)
	}
	for i := 0; i < count; i++ {
		part := msg[i*chunk : min(len(msg), (i+1)*chunk)]
		s.scratch = appendFragment(s.scratch[:0], id, uint8(i), uint8(count), part)
		err := s.conn.SendDatagram(s.scratch)
		var tl *quicgo.DatagramTooLargeError
		if errors.As(err, &tl) {
			// The path shrank mid-message: the receiver can never complete
			// it, so stop; the next message uses the new limit.
			s.limit = int(tl.MaxDatagramPayloadSize)
			s.p.h.st.sendTooLarge.Add(1)
			return
		}
		if err != nil {
			return
		}
	}
}

// finish closes gracefully: FIN after the queued control data, wait for the
// peer's FIN (it has then read everything we sent), close with the reason.
func (s *sender) finish() {
	if !s.finSent {
		s.finSent = true
		_ = s.stream.Close()
	}
	t := time.NewTimer(lingerTimeout)
	defer t.Stop()
	select {
	case <-s.p.peerFin:
	case <-s.p.hurry:
	case <-t.C:
	case <-s.conn.Context().Done():
	case <-s.p.ctx.Done():
	}
	s.p.closeConn(s.conn, s.p.closeCode(), "")
}
