//go:build linux

package udp

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// Stats are what a raw UDP host dropped or noticed, cumulative since it was
// created. Read them with (*Host).Stats.
type Stats struct {
	// Stray counts datagrams a dialling host received from an address that
	// is none of its peers (dropped).
	Stray uint64
	// RefusedFull counts datagrams from new addresses that a listening
	// host dropped because MaxPeers peers were live.
	RefusedFull uint64
	// Oversized counts datagrams longer than MaxRecvMessage (dropped; each
	// is also an EventMalformed for its peer).
	Oversized uint64
	// SendDropped counts datagrams Send could not put out because the
	// socket's send buffer was full: lost at the sender, as the network
	// would lose them; Send still returns nil.
	SendDropped uint64
	// TimedOut counts peers disconnected for silence (Options.Timeout).
	TimedOut uint64
}

// peer is one remote address the host exchanges datagrams with.
type peer struct {
	id    transport.PeerID
	addr  netip.AddrPort
	name  string // addr as PeerAddr reports it, formatted once
	dst   dest
	heard time.Time // when the last datagram from it arrived (or Connect)
}

// Host is a raw UDP transport.Host: one socket, and a peer per remote
// address. Every method belongs to the owner goroutine; there are no
// goroutines behind it (its I/O happens inside Service and Send). Exported
// only so callers can read Stats with a type assertion.
type Host struct {
	s       *sock
	listen  bool // peers appear on their first datagram
	max     int  // MaxPeers
	timeout time.Duration
	maxRecv int // largest datagram delivered as a message
	sweep   time.Duration
	next    time.Time // next idle-timeout sweep
	nextID  transport.PeerID
	byAddr  map[netip.AddrPort]*peer
	byID    map[transport.PeerID]*peer
	pending []transport.Event // connects and local disconnects for the next Service
	closed  bool
	addr    string

	bytesOut, bytesIn         uint64
	datagramsOut, datagramsIn uint64
	sampler                   *transport.WireSampler
	st                        Stats
}

var _ transport.Host = (*Host)(nil)

// bufPool holds receive buffers: a host borrows one for the length of a
// Service call, so a swarm of hundreds of hosts on one goroutine shares a
// few 64 KiB buffers instead of holding one each.
var bufPool = sync.Pool{New: func() any { b := make([]byte, maxRecvBuffer); return &b }}

// newHost wraps a bound socket.
func newHost(conn *net.UDPConn, listen bool, opt transport.Options) (*Host, error) {
	s, err := newSock(conn)
	if err != nil {
		return nil, err
	}
	h := &Host{
		s:       s,
		listen:  listen,
		max:     opt.MaxPeers,
		timeout: opt.Timeout,
		maxRecv: opt.MaxRecvMessage,
		byAddr:  map[netip.AddrPort]*peer{},
		byID:    map[transport.PeerID]*peer{},
		addr:    conn.LocalAddr().String(),
	}
	if h.timeout == 0 {
		h.timeout = DefaultTimeout
	}
	if !listen {
		// A dialling host stamps what it receives (Event.At): the swarm
		// times round trips by the datagram's arrival, not its next turn.
		s.stampOn()
	}
	if h.maxRecv == 0 {
		h.maxRecv = maxRecvBuffer
	}
	// A silent peer is found within a quarter of the timeout after it
	// expires, and the sweep over all peers runs at most 4 times a timeout.
	h.sweep = min(h.timeout/4, time.Second)
	h.next = time.Now().Add(h.sweep)
	h.sampler = transport.NewWireSampler(time.Now(), h.counters())
	return h, nil
}

// Backend reports "udp".
func (h *Host) Backend() string { return Name }

// Addr is the socket's local address.
func (h *Host) Addr() string { return h.addr }

// Stats returns the host's drop counters.
func (h *Host) Stats() Stats { return h.st }

// Connect adds the peer at addr. There is no handshake and nothing is sent:
// EventConnect follows on the next Service, and data is not carried
// (Capabilities.ConnectData is false). A peer that never answers is
// disconnected by the idle timeout like any silent one.
func (h *Host) Connect(addr string, _ uint32) (transport.PeerID, error) {
	if h.closed {
		return 0, transport.ErrClosed
	}
	ap, err := resolve(addr)
	if err != nil {
		return 0, err
	}
	if h.byAddr[ap] != nil {
		return 0, fmt.Errorf("udp: connect %s: already a peer of this host", ap)
	}
	if len(h.byID) >= h.max {
		return 0, fmt.Errorf("udp: connect %s: host has its %d peers (MaxPeers)", ap, h.max)
	}
	d, err := h.s.dest(ap)
	if err != nil {
		return 0, err
	}
	p := h.addPeer(ap, d, time.Now())
	h.pending = append(h.pending, transport.Event{Kind: transport.EventConnect, Peer: p.id})
	return p.id, nil
}

// resolve parses "ip:port", resolving a host name if it is not an IP.
func resolve(addr string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		if ap.Port() == 0 {
			return netip.AddrPort{}, fmt.Errorf("udp: connect address %q: port 0", addr)
		}
		return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("udp: connect address %q: %w", addr, err)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || n == 0 || host == "" {
		return netip.AddrPort{}, fmt.Errorf("udp: connect address %q: want host:port with a port 1-65535", addr)
	}
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("udp: connect address %q: %w", addr, err)
	}
	ap := ua.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), nil
}

func (h *Host) addPeer(ap netip.AddrPort, d dest, now time.Time) *peer {
	h.nextID++
	p := &peer{id: h.nextID, addr: ap, name: ap.String(), dst: d, heard: now}
	h.byAddr[ap] = p
	h.byID[p.id] = p
	return p
}

func (h *Host) dropPeer(p *peer) {
	delete(h.byAddr, p.addr)
	delete(h.byID, p.id)
}

// Send writes msg to peer as one datagram, at once, whatever d says
// (Reliable means nothing here: Capabilities.Reliable is false). A message
// over MaxDatagram is refused with ErrTooLarge; a full socket send buffer
// drops the datagram (Stats.SendDropped) and Send returns nil, as loss on
// the network would.
func (h *Host) Send(id transport.PeerID, d transport.Delivery, msg []byte) error {
	if h.closed {
		return transport.ErrClosed
	}
	p := h.byID[id]
	if p == nil {
		return fmt.Errorf("udp: send to peer %d: %w", id, transport.ErrUnknownPeer)
	}
	if d != transport.Reliable && d != transport.Unreliable {
		return fmt.Errorf("udp: send %s to peer %d: %w", d, id, transport.ErrDelivery)
	}
	if len(msg) > MaxDatagram {
		return fmt.Errorf("udp: send %d bytes to peer %d: over %d: %w", len(msg), id, MaxDatagram, transport.ErrTooLarge)
	}
	switch err := h.s.send(msg, &p.dst); {
	case err == nil:
		h.bytesOut += uint64(len(msg))
		h.datagramsOut++
	case errors.Is(err, errAgain):
		h.st.SendDropped++
	default:
		return fmt.Errorf("udp: send %d bytes to %s: %w", len(msg), p.name, err)
	}
	return nil
}

// Service delivers the connects and disconnects queued since the last
// call, then reads what the socket holds (at most maxReadsPerService
// datagrams) and delivers each as it is read, then disconnects peers silent
// for longer than the timeout and delivers those events. It never blocks.
func (h *Host) Service(fn func(transport.Event)) (int, error) {
	if h.closed {
		return 0, transport.ErrClosed
	}
	n := h.deliverPending(fn)
	bp := bufPool.Get().(*[]byte)
	defer bufPool.Put(bp)
	buf := (*bp)[:min(h.maxRecv, len(*bp))]
	now := time.Now()
	for range maxReadsPerService {
		if h.closed {
			return n, nil
		}
		size, from, err := h.s.recv(buf)
		if errors.Is(err, errAgain) {
			break
		}
		if err != nil {
			return n, err
		}
		h.bytesIn += uint64(size)
		h.datagramsIn++
		var at time.Time
		if !h.listen {
			at = h.s.stamp() // one peer's datagrams: each one's own arrival
		}
		n += h.receive(fn, buf, size, from, now, at)
	}
	if !h.closed && !now.Before(h.next) {
		h.next = now.Add(h.sweep)
		h.expire(now)
	}
	// Timeouts, and disconnects fn asked for while receiving.
	return n + h.deliverPending(fn), nil
}

// deliverPending hands over the queued events; fn may queue more (a
// Disconnect), which the same loop delivers.
func (h *Host) deliverPending(fn func(transport.Event)) int {
	n := 0
	for i := 0; i < len(h.pending) && !h.closed; i++ {
		fn(h.pending[i])
		n++
	}
	clear(h.pending)
	h.pending = h.pending[:0]
	return n
}

// receive turns one datagram into events: a connect for a new address on
// a listening host, then the message (or EventMalformed when it was longer
// than the buffer).
func (h *Host) receive(fn func(transport.Event), buf []byte, size int, from netip.AddrPort, now, at time.Time) int {
	p := h.byAddr[from]
	n := 0
	if p == nil {
		if !h.listen {
			h.st.Stray++
			return 0
		}
		if len(h.byID) >= h.max {
			h.st.RefusedFull++
			return 0
		}
		p = h.addPeer(from, h.s.lastDest(), now)
		fn(transport.Event{Kind: transport.EventConnect, Peer: p.id})
		n++
		if h.closed || h.byID[p.id] != p { // fn closed the host or dropped the peer
			return n
		}
	}
	p.heard = now
	if size > len(buf) {
		h.st.Oversized++
		fn(transport.Event{Kind: transport.EventMalformed, Peer: p.id, Data: 1})
		return n + 1
	}
	fn(transport.Event{Kind: transport.EventReceive, Peer: p.id, Delivery: transport.Unreliable, Payload: buf[:size], At: at})
	return n + 1
}

// expire disconnects every peer nothing was heard from for the timeout.
func (h *Host) expire(now time.Time) {
	for _, p := range h.byID {
		if now.Sub(p.heard) > h.timeout {
			h.dropPeer(p)
			h.st.TimedOut++
			h.pending = append(h.pending, transport.Event{Kind: transport.EventDisconnect, Peer: p.id, Data: transport.ReasonTimeout})
		}
	}
}

// Flush has nothing to do: Send writes at once.
func (h *Host) Flush() error {
	if h.closed {
		return transport.ErrClosed
	}
	return nil
}

// Disconnect forgets peer. Nothing is sent (raw UDP has no disconnect
// message): the local EventDisconnect, carrying reason, follows on the next
// Service, and the remote learns of it only by its own idle timeout. A
// later datagram from the same address is a new peer on a listening host
// and stray on a dialling one.
func (h *Host) Disconnect(id transport.PeerID, reason uint32) {
	p := h.byID[id]
	if h.closed || p == nil {
		return
	}
	h.dropPeer(p)
	h.pending = append(h.pending, transport.Event{Kind: transport.EventDisconnect, Peer: id, Data: reason})
}

// RTT is always 0: raw UDP carries no acknowledgement to time.
func (h *Host) RTT(transport.PeerID) time.Duration { return 0 }

// PeerAddr is the peer's address.
func (h *Host) PeerAddr(id transport.PeerID) string {
	if p := h.byID[id]; p != nil {
		return p.name
	}
	return ""
}

// WireRates samples the host's datagram counters (UDP payload bytes; there
// is no framing, so they equal the messages' bytes).
func (h *Host) WireRates() transport.WireRates {
	return h.sampler.Sample(time.Now(), h.counters())
}

func (h *Host) counters() transport.WireCounters {
	return transport.WireCounters{
		BytesOut: uint32(h.bytesOut), BytesIn: uint32(h.bytesIn),
		DatagramsOut: uint32(h.datagramsOut), DatagramsIn: uint32(h.datagramsIn),
	}
}

// QueuedSends is always 0: Send hands every datagram to the kernel at once.
func (h *Host) QueuedSends(transport.PeerID) int { return 0 }

// Close closes the socket. Peers are not told (nothing could tell them).
func (h *Host) Close() error {
	if h.closed {
		return transport.ErrClosed
	}
	h.closed = true
	clear(h.byAddr)
	clear(h.byID)
	h.pending = nil
	if err := h.s.close(); err != nil {
		return fmt.Errorf("udp: close %s: %w", h.addr, err)
	}
	return nil
}
