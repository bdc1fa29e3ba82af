package ws

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sync/semaphore"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// reasonSet marks peer.localReason as holding a reason (bit 32).
const reasonSet = 1 << 32

// outMsg is one queued message and the pooled copy of its bytes.
type outMsg struct {
	typ websocket.MessageType
	buf *[]byte
}

// peer is one WebSocket connection. Three goroutines serve it once it is
// up: the reader (the goroutine that dialled or accepted it, which also
// ends it), the writer and the pinger.
type peer struct {
	h      *Host
	id     transport.PeerID
	ctx    context.Context // cancelled to stop the peer's goroutines
	cancel context.CancelFunc
	conn   atomic.Pointer[websocket.Conn]
	remote atomic.Pointer[string] // remote TCP address once connected
	done   chan struct{}          // closed when every goroutine of the peer ended

	// Send side: the owner appends, the writer takes.
	mu       sync.Mutex
	out      []outMsg
	closeReq bool // the owner asked for a graceful close
	closing  bool // the writer took it and is closing
	wake     chan struct{}
	backlog  atomic.Int32

	recv        *semaphore.Weighted // received bytes not yet serviced
	rtt         atomic.Int64        // smoothed ping RTT, ns
	timedOut    atomic.Bool
	localReason atomic.Uint64 // reasonSet|reason once Disconnect was called
	linger      atomic.Pointer[time.Timer]

	// Owner-only.
	connected, disconnecting, dirty bool
	addr                            string
}

func (h *Host) newPeer() *peer {
	ctx, cancel := context.WithCancel(h.ctx)
	return &peer{
		h: h, id: transport.PeerID(h.nextID.Add(1)), ctx: ctx, cancel: cancel,
		done: make(chan struct{}), wake: make(chan struct{}, 1),
		recv: semaphore.NewWeighted(int64(h.opt.MaxRecvWaiting)),
	}
}

// bufPool recycles message copies: Send's to the writer, the reader's to
// the owner's Service.
var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) > 64<<10 {
		return // keep the pool's buffers small
	}
	*b = (*b)[:0]
	bufPool.Put(b)
}

// queue copies msg into the send queue (owner); false when it is full.
func (p *peer) queue(typ websocket.MessageType, msg []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.out) >= maxQueuedSends {
		return false
	}
	bp := getBuf()
	*bp = append(*bp, msg...)
	p.out = append(p.out, outMsg{typ: typ, buf: bp})
	p.backlog.Add(1)
	return true
}

func (p *peer) wakeWriter() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// requestClose asks the writer for a graceful close after what is queued,
// and cuts the connection if that takes longer than closeLinger (owner).
func (p *peer) requestClose() {
	p.mu.Lock()
	p.closeReq = true
	p.mu.Unlock()
	p.wakeWriter()
	p.linger.Store(time.AfterFunc(closeLinger, func() {
		if c := p.conn.Load(); c != nil {
			_ = c.CloseNow()
		}
	}))
}

// released returns what a delivered (or discarded) event held.
func (p *peer) released(e *event) {
	if e.buf == nil {
		return
	}
	p.recv.Release(int64(len(*e.buf) + msgOverhead))
	putBuf(e.buf)
	e.buf = nil
}

// serve runs an established connection until it ends, then delivers the
// peer's EventDisconnect. It runs on the goroutine that set the connection
// up and returns when the writer and pinger have stopped too.
func (p *peer) serve(conn *websocket.Conn) {
	conn.SetReadLimit(int64(p.h.opt.MaxRecvMessage))
	stop := context.AfterFunc(p.ctx, func() { _ = conn.CloseNow() })
	defer stop()
	var helpers sync.WaitGroup
	helpers.Go(func() { p.write(conn) })
	helpers.Go(func() { p.ping(conn) })
	err := p.read(conn)
	p.mu.Lock()
	graceful := p.closing
	p.mu.Unlock()
	if !graceful {
		_ = conn.CloseNow()
	}
	p.cancel()
	helpers.Wait()
	_ = conn.CloseNow()
	if t := p.linger.Load(); t != nil {
		t.Stop()
	}
	p.h.push(event{Event: transport.Event{Kind: transport.EventDisconnect, Peer: p.id, Data: p.reason(err), Payload: p.closeText(err)}, p: p})
}

// closeText is the remote's close reason text when the connection ended
// with its close frame (the EventDisconnect's Payload: a foreign server's
// "server full" beside its 4003), nil otherwise.
func (p *peer) closeText(err error) []byte {
	var ce websocket.CloseError
	if p.localReason.Load()&reasonSet != 0 || p.timedOut.Load() || !errors.As(err, &ce) || ce.Reason == "" {
		return nil
	}
	return []byte(ce.Reason)
}

// read delivers messages until the connection fails or closes.
func (p *peer) read(conn *websocket.Conn) error {
	for {
		// No context: one with a Done channel costs the library a timer
		// per message; the connection is closed to stop the read instead.
		typ, r, err := conn.Reader(context.Background())
		if err != nil {
			return err
		}
		bp := getBuf()
		if err := readAll(r, bp); err != nil {
			putBuf(bp)
			return err
		}
		at := time.Now() // the message is whole: its arrival (Event.At)
		w := int64(len(*bp) + msgOverhead)
		if !p.recv.TryAcquire(w) {
			p.h.st.recvStalls.Add(1)
			if err := p.recv.Acquire(p.ctx, w); err != nil {
				putBuf(bp)
				return err
			}
		}
		d := transport.Reliable
		if typ == websocket.MessageText {
			d = transport.Text
		}
		p.h.push(event{Event: transport.Event{Kind: transport.EventReceive, Peer: p.id, Delivery: d, Payload: *bp, At: at}, p: p, buf: bp})
	}
}

// readAll reads one message into *bp, growing it as needed (the library's
// read limit bounds it).
func readAll(r io.Reader, bp *[]byte) error {
	b := (*bp)[:0]
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			*bp = b
			return nil
		}
		if err != nil {
			*bp = b
			return err
		}
	}
}

// write puts queued messages on the connection when woken, and closes it
// gracefully when the owner asked.
func (p *peer) write(conn *websocket.Conn) {
	var mine []outMsg
	for {
		select {
		case <-p.wake:
		case <-p.ctx.Done():
			p.drop(mine)
			return
		}
		p.mu.Lock()
		mine, p.out = p.out, mine[:0]
		closeReq := p.closeReq
		p.closing = closeReq
		p.mu.Unlock()
		var err error
		for _, m := range mine {
			if err == nil {
				err = conn.Write(context.Background(), m.typ, *m.buf)
			}
			putBuf(m.buf)
			p.backlog.Add(-1)
		}
		clear(mine)
		if err != nil {
			_ = conn.CloseNow() // the reader reports the lost connection
			return
		}
		if closeReq {
			code, text := encodeReason(uint32(p.localReason.Load()))
			_ = conn.Close(code, text)
			return
		}
	}
}

// drop releases messages the writer will never write.
func (p *peer) drop(mine []outMsg) {
	p.mu.Lock()
	mine = append(mine, p.out...)
	p.out = nil
	p.mu.Unlock()
	for _, m := range mine {
		if m.buf != nil {
			putBuf(m.buf)
			p.backlog.Add(-1)
		}
	}
}

// pingInterval is how often a peer is pinged: every pong is an RTT sample,
// and at least three pings fit in the timeout.
func pingInterval(timeout time.Duration) time.Duration {
	return min(maxPingInterval, timeout/3)
}

// ping pings the peer at once and then every pingInterval, keeps the
// smoothed RTT, and cuts the connection when a ping goes unanswered for
// Options.Timeout.
func (p *peer) ping(conn *websocket.Conn) {
	t := time.NewTicker(pingInterval(p.h.opt.Timeout))
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(p.ctx, p.h.opt.Timeout)
		t0 := time.Now()
		err := conn.Ping(ctx)
		cancel()
		if err != nil {
			if p.ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				p.timedOut.Store(true)
				p.h.st.timedOut.Add(1)
				_ = conn.CloseNow()
			}
			return
		}
		p.sample(time.Since(t0))
		select {
		case <-t.C:
		case <-p.ctx.Done():
			return
		}
	}
}

// sample folds one RTT measurement into the smoothed RTT (TCP's 1/8 gain).
func (p *peer) sample(rtt time.Duration) {
	old := time.Duration(p.rtt.Load())
	if old == 0 {
		p.rtt.Store(int64(max(rtt, 1)))
		return
	}
	p.rtt.Store(int64(max(old+(rtt-old)/8, 1)))
}

// reason is the EventDisconnect data for a connection that ended with err.
func (p *peer) reason(err error) uint32 {
	if lr := p.localReason.Load(); lr&reasonSet != 0 {
		return uint32(lr)
	}
	if p.timedOut.Load() {
		return transport.ReasonTimeout
	}
	var ce websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return decodeReason(ce.Code, ce.Reason)
	case errors.Is(err, websocket.ErrMessageTooBig):
		p.h.st.oversized.Add(1)
		return uint32(websocket.StatusMessageTooBig)
	case lost(err):
		return transport.ReasonTimeout
	}
	p.h.st.protocolErrors.Add(1)
	setLast(&p.h.st.lastProtocolError, err)
	return uint32(websocket.StatusProtocolError)
}

// lost reports whether err is the connection going away (closed, reset,
// cut mid-frame) rather than the peer breaking the protocol.
func lost(err error) bool {
	for _, e := range []error{io.EOF, io.ErrUnexpectedEOF, net.ErrClosed, syscall.ECONNRESET,
		syscall.EPIPE, os.ErrDeadlineExceeded, context.Canceled} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// encodeReason is the close frame for Disconnect(reason): status 1000
// (normal closure, which every server understands) with the reason in
// decimal as the close text.
func encodeReason(reason uint32) (websocket.StatusCode, string) {
	return websocket.StatusNormalClosure, strconv.FormatUint(uint64(reason), 10)
}

// decodeReason is the disconnect reason of a received close frame: the
// number in its text when the status is 1000 and the text is a decimal
// uint32 (what encodeReason sends), otherwise the status code itself (a
// server's 4000-4999 application code, 1001 going away, 1008 policy, ...).
func decodeReason(code websocket.StatusCode, text string) uint32 {
	if code == websocket.StatusNormalClosure {
		if n, err := strconv.ParseUint(text, 10, 32); err == nil {
			return uint32(n)
		}
	}
	return uint32(code)
}
