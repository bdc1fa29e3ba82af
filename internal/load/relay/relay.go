// Package relay makes the loopback link between clients and server behave like a bad one.
//
// It is the harness's UDP impairment relay: it sits between every
// synthetic client and the server under test and, during the phases of
// its schedule (package impairment), adds loss, bursty loss, delay,
// jitter, reordering, duplication or a rate limit; outside them the link
// is clean. Loopback never loses a packet, so without it no run can show
// how a server copes with a real network.
//
// It works on datagrams, below any transport, so ENet, QUIC and a team's own
// server are impaired the same way. Each client gets its own relay socket,
// so the server still sees one distinct address per client. Every decision
// comes from a seeded generator per link and direction: the same seed and
// the same traffic give the same drops.
package relay

import (
	"container/heap"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/scalegate/scalegate/internal/load/relay/impairment"
)

// Defaults and bounds.
const (
	// DefaultMaxPending bounds the datagrams held for later delivery
	// across all links. Beyond it the relay has fallen behind what it was
	// asked to model and drops, counted as overflow, never as loss.
	DefaultMaxPending = 1 << 17
	// LateThreshold: a held datagram delivered this much after its due
	// time counts as late (the relay's own delay, not the configured one).
	LateThreshold = 5 * time.Millisecond
	// socketBuffer is requested for every relay socket: a relay that
	// overflows its own receive buffer would add loss nobody configured.
	socketBuffer = 4 << 20
	maxDatagram  = 65536
)

// Config is one relay: a socket per client in front of one server.
type Config struct {
	// Server is the address of the server under test ("127.0.0.1:PORT").
	Server string
	// Links is the number of client sockets.
	Links int
	// Schedule is when and how the links are impaired (normalized).
	Schedule impairment.Schedule
	// Seed makes every link's decisions reproducible.
	Seed uint64
	// Start is the origin of the schedule's times.
	Start time.Time
	// MaxPending bounds the held datagrams (0 = DefaultMaxPending).
	MaxPending int
}

type counters struct {
	dgramsDown, dgramsUp, droppedDown, droppedUp, queueDropped atomic.Int64
	delayed, duplicated, late, stray                           atomic.Int64
	overHeld, overWrite, overKernel                            atomic.Int64
}

// Relay owns its sockets and two kinds of goroutines: one reader per link
// and one scheduler delivering held datagrams. Close stops them all.
type Relay struct {
	cfg    Config
	server netip.AddrPort
	links  []*link
	sched  *scheduler
	c      counters
	gen    atomic.Uint64 // numbers the Expect calls
	wg     sync.WaitGroup
	once   sync.Once
}

// link is one client's socket. It relays only for the client socket
// Expect named: until then everything but nothing reaches the server, and
// datagrams from any other source are stray. client is the concrete source
// address of that socket, learnt from its first datagram; only the reader
// touches client and clientGen.
type link struct {
	r         *Relay
	idx       int
	conn      *net.UDPConn
	want      atomic.Pointer[expected]
	client    netip.AddrPort
	clientGen uint64 // the expected.gen client was learnt for
	down, up  *model
	rxDrops   uint32 // last kernel drop count seen (SO_RXQ_OVFL)
}

// expected is the client socket a link relays for.
type expected struct {
	addr netip.AddrPort // the socket's bound address
	// any: bound to the unspecified address (0.0.0.0, ::): datagrams to
	// the relay's loopback port come from a loopback address with its
	// port.
	any bool
	gen uint64
}

// matches reports whether a datagram from from comes from the socket.
func (e *expected) matches(from netip.AddrPort) bool {
	if from.Port() != e.addr.Port() {
		return false
	}
	if e.any {
		return from.Addr().IsLoopback()
	}
	return from.Addr() == e.addr.Addr()
}

// New opens one loopback socket per link and starts relaying to
// cfg.Server. The schedule must already be normalized.
func New(cfg Config) (*Relay, error) {
	server, err := netip.ParseAddrPort(cfg.Server)
	if err != nil {
		return nil, fmt.Errorf("relay: server address %q: %w", cfg.Server, err)
	}
	if !server.Addr().IsLoopback() {
		return nil, fmt.Errorf("relay: server address %s is not loopback: the relay only impairs local test traffic", cfg.Server)
	}
	if cfg.Links < 1 {
		return nil, fmt.Errorf("relay: %d links: need at least one", cfg.Links)
	}
	if err := cfg.Schedule.Validate(); err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	if cfg.MaxPending <= 0 {
		cfg.MaxPending = DefaultMaxPending
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Now()
	}
	r := &Relay{cfg: cfg, server: unmap(server)}
	r.sched = newScheduler(r)
	for i := 0; i < cfg.Links; i++ {
		conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			r.closeLinks()
			return nil, fmt.Errorf("relay: link %d: %w", i, err)
		}
		_ = conn.SetReadBuffer(socketBuffer)
		_ = conn.SetWriteBuffer(socketBuffer)
		watchKernelDrops(conn)
		r.links = append(r.links, &link{r: r, idx: i, conn: conn,
			down: newModel(cfg.Seed, i, 0), up: newModel(cfg.Seed, i, 1)})
	}
	r.wg.Go(r.sched.run)
	for _, l := range r.links {
		r.wg.Go(l.run)
	}
	return r, nil
}

// Addr is the address client i must connect to instead of the server.
func (r *Relay) Addr(i int) string { return r.links[i].conn.LocalAddr().String() }

// Expect tells link i which socket its client sends from: local, the
// client host's bound address ("0.0.0.0:PORT", "127.0.0.1:PORT"), given
// before the client sends anything. The link relays that socket's
// datagrams only; any other source is stray. Calling it again (a new
// socket for the same client) moves the link to the new socket. Safe to
// call from any goroutine.
func (r *Relay) Expect(i int, local string) error {
	if i < 0 || i >= len(r.links) {
		return fmt.Errorf("relay: link %d of %d", i, len(r.links))
	}
	ap, err := netip.ParseAddrPort(local)
	if err != nil {
		return fmt.Errorf("relay: link %d: client address %q: %w", i, local, err)
	}
	ap = unmap(ap)
	if ap.Port() == 0 {
		return fmt.Errorf("relay: link %d: client address %s has no port yet (the socket must be bound before it sends)", i, local)
	}
	if !ap.Addr().IsUnspecified() && !ap.Addr().IsLoopback() {
		return fmt.Errorf("relay: link %d: client address %s is not loopback", i, local)
	}
	r.gen.Add(1)
	r.links[i].want.Store(&expected{addr: ap, any: ap.Addr().IsUnspecified(), gen: r.gen.Load()})
	return nil
}

// Links is the number of client sockets.
func (r *Relay) Links() int { return len(r.links) }

// Stats returns the counts so far.
func (r *Relay) Stats() impairment.Stats {
	c := &r.c
	return impairment.Stats{
		DatagramsDown: c.dgramsDown.Load(), DatagramsUp: c.dgramsUp.Load(),
		DroppedDown: c.droppedDown.Load(), DroppedUp: c.droppedUp.Load(), QueueDropped: c.queueDropped.Load(),
		Delayed: c.delayed.Load(), Duplicated: c.duplicated.Load(),
		Overflow:     c.overHeld.Load() + c.overWrite.Load() + c.overKernel.Load(),
		OverflowHeld: c.overHeld.Load(), OverflowWrite: c.overWrite.Load(), OverflowKernel: c.overKernel.Load(),
		Late: c.late.Load(), Stray: c.stray.Load(),
	}
}

// Close closes every socket, stops the goroutines and waits for them.
// Datagrams still held are discarded. It is safe to call more than once.
func (r *Relay) Close() error {
	r.once.Do(func() {
		r.sched.stop()
		r.closeLinks()
	})
	r.wg.Wait()
	return nil
}

func (r *Relay) closeLinks() {
	for _, l := range r.links {
		l.conn.Close()
	}
}

// run reads the link's socket until it is closed.
func (l *link) run() {
	buf := make([]byte, maxDatagram)
	oob := make([]byte, 128)
	for {
		n, oobn, _, from, err := l.conn.ReadMsgUDPAddrPort(buf, oob)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue // a transient error on an unconnected loopback socket
		}
		l.kernelDrops(oob[:oobn])
		l.handle(buf[:n], unmap(from), time.Now())
	}
}

// handle routes one datagram: from the server it goes down to the client,
// from the client up to the server.
func (l *link) handle(b []byte, from netip.AddrPort, now time.Time) {
	r := l.r
	var dst netip.AddrPort
	var m *model
	dir := impairment.DirUp
	want := l.want.Load()
	switch {
	case from == r.server:
		// Down only to the client the link expects, once it has spoken.
		if want == nil || !l.client.IsValid() || l.clientGen != want.gen {
			r.c.stray.Add(1)
			return
		}
		dst, m, dir = l.client, l.down, impairment.DirDown
		r.c.dgramsDown.Add(1)
	case want != nil && want.matches(from):
		l.client, l.clientGen = from, want.gen
		dst, m = r.server, l.up
		r.c.dgramsUp.Add(1)
	default:
		// Not this link's client socket: never relayed, never learnt.
		r.c.stray.Add(1)
		return
	}
	var s *impairment.Settings
	if p := r.cfg.Schedule.At(now.Sub(r.cfg.Start)); p != nil && p.Applies(dir) {
		s = &p.Settings
	}
	v := m.decide(s, now, len(b))
	if v.out != deliver {
		if dir == impairment.DirDown {
			r.c.droppedDown.Add(1)
		} else {
			r.c.droppedUp.Add(1)
		}
		if v.out == dropQueue {
			r.c.queueDropped.Add(1)
		}
		return
	}
	l.forward(b, dst, v.due, now)
	if v.dup {
		r.c.duplicated.Add(1)
		l.forward(b, dst, v.dupDue, now)
	}
}

// forward sends now, or hands a copy to the scheduler for later.
func (l *link) forward(b []byte, dst netip.AddrPort, due, now time.Time) {
	if !due.After(now) {
		l.write(b, dst)
		return
	}
	l.r.c.delayed.Add(1)
	l.r.sched.push(l, dst, b, due)
}

func (l *link) write(b []byte, dst netip.AddrPort) {
	_, err := l.conn.WriteToUDPAddrPort(b, dst)
	// A write racing Close finds the socket closed: the run is over and
	// nothing is lost that anyone would have received.
	if err != nil && !errors.Is(err, net.ErrClosed) {
		l.r.c.overWrite.Add(1)
	}
}

// held is one datagram waiting for its delivery time.
type held struct {
	due  time.Time
	seq  uint64 // arrival order among equal due times
	link *link
	dst  netip.AddrPort
	buf  *[]byte
}

type heldHeap []held

func (h heldHeap) Len() int { return len(h) }
func (h heldHeap) Less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}
func (h heldHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *heldHeap) Push(x any)   { *h = append(*h, x.(held)) }
func (h *heldHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = held{}
	*h = old[:len(old)-1]
	return x
}

// scheduler delivers held datagrams at their due time, in due order.
type scheduler struct {
	r    *Relay
	mu   sync.Mutex
	h    heldHeap
	seq  uint64
	wake chan struct{}
	quit chan struct{}
	pool sync.Pool
}

func newScheduler(r *Relay) *scheduler {
	return &scheduler{r: r, wake: make(chan struct{}, 1), quit: make(chan struct{}),
		pool: sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}}
}

func (s *scheduler) push(l *link, dst netip.AddrPort, b []byte, due time.Time) {
	buf := s.pool.Get().(*[]byte)
	*buf = append((*buf)[:0], b...)
	s.mu.Lock()
	if len(s.h) >= s.r.cfg.MaxPending {
		s.mu.Unlock()
		s.pool.Put(buf)
		s.r.c.overHeld.Add(1)
		return
	}
	s.seq++
	heap.Push(&s.h, held{due: due, seq: s.seq, link: l, dst: dst, buf: buf})
	first := s.h[0].seq == s.seq
	s.mu.Unlock()
	if first {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
}

func (s *scheduler) stop() { close(s.quit) }

// run sleeps until the earliest due time (or a push of an earlier one),
// then delivers everything due.
func (s *scheduler) run() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var batch []held
	for {
		batch = s.due(time.Now(), batch[:0])
		for _, h := range batch {
			if late := time.Since(h.due); late > LateThreshold {
				s.r.c.late.Add(1)
			}
			h.link.write(*h.buf, h.dst)
			s.pool.Put(h.buf)
		}
		wait := time.Hour
		s.mu.Lock()
		if len(s.h) > 0 {
			wait = time.Until(s.h[0].due)
		}
		s.mu.Unlock()
		if wait <= 0 {
			continue
		}
		t.Reset(wait)
		select {
		case <-s.quit:
			return
		case <-s.wake:
			t.Stop()
		case <-t.C:
		}
	}
}

// due pops every datagram due at now into batch.
func (s *scheduler) due(now time.Time, batch []held) []held {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.h) > 0 && !s.h[0].due.After(now) {
		batch = append(batch, heap.Pop(&s.h).(held))
	}
	return batch
}

// unmap turns an IPv4-mapped IPv6 address into plain IPv4, so the server's
// address compares equal however a socket reports it.
func unmap(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap(), a.Port())
}
