//go:build cgo

package enet

/*
#cgo pkg-config: libenet
#cgo noescape sg_drain
#cgo nocallback sg_drain
#cgo noescape sg_send
#cgo nocallback sg_send
#cgo nocallback sg_counters
#cgo nocallback sg_flush
#cgo nocallback sg_queued
#include "enet_glue.h"
*/
import "C"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/scalegate/scalegate/internal/load/transport"
)

// batchEvents is how many events one cgo crossing can return.
const batchEvents = 256

// initialPayloadBuffer is the reused receive buffer; it grows to fit the
// largest message seen.
const initialPayloadBuffer = 64 << 10

// maxEventsPerService bounds one Service call so a flood cannot keep the
// owner inside it forever; what is left stays queued in ENet for the next
// call.
const maxEventsPerService = 1 << 16

func init() { transport.Register(backend{}) }

// backend creates ENet hosts.
type backend struct{}

// Name returns "enet".
func (backend) Name() string { return Name }

// Capabilities: ENet is the shape the Host contract was written from; it
// has everything but text messages.
func (backend) Capabilities() transport.Capabilities {
	return transport.Capabilities{Datagram: true, Reliable: true, TaggedDelivery: true,
		ConnectData: true, Handshake: true, DisconnectNotice: true, RTT: true}
}

// InlineIO reports true: libenet reads and writes a host's socket only
// inside Service (and Batch.Run), on the owner's thread.
func (backend) InlineIO() bool { return true }

// Listen creates a server host bound to addr.
func (backend) Listen(addr string, opt transport.Options) (transport.Host, error) {
	h, err := listen(addr, opt)
	if err != nil {
		return nil, fmt.Errorf("enet: listen %s: %w", addr, err)
	}
	return h, nil
}

// Dial creates an unbound client host.
func (backend) Dial(opt transport.Options) (transport.Host, error) {
	peers := opt.MaxPeers
	if peers == 0 {
		peers = 1
	}
	// Bound now (every interface, an ephemeral port: what the first send
	// would bind anyway), so Addr names the socket before anything is
	// sent: the impairment relay relays for that socket only.
	h, err := create(true, false, netip.IPv4Unspecified(), 0, peers, opt)
	if err != nil {
		return nil, fmt.Errorf("enet: dial: %w", err)
	}
	return h, nil
}

func listen(addr string, opt transport.Options) (*Host, error) {
	ip, port, err := parseAddr(addr)
	if err != nil {
		return nil, err
	}
	peers := opt.MaxPeers
	if peers == 0 {
		peers = DefaultMaxPeers
	}
	if opt.RecvBufferBytes == 0 {
		opt.RecvBufferBytes = DefaultServerRecvBuffer
	}
	return create(true, true, ip, port, peers, opt)
}

// create makes the C host and its Go wrapper.
func create(bind, listening bool, ip netip.Addr, port uint16, peers int, opt transport.Options) (*Host, error) {
	if peers < 1 || peers > MaxPeers {
		return nil, fmt.Errorf("MaxPeers %d out of range 1..%d", peers, MaxPeers)
	}
	if opt.RecvBufferBytes < 0 || opt.SendBufferBytes < 0 || opt.Timeout < 0 {
		return nil, errors.New("negative RecvBufferBytes, SendBufferBytes or Timeout")
	}
	timeoutMs := opt.Timeout.Milliseconds()
	if timeoutMs > int64(^uint32(0)) {
		return nil, fmt.Errorf("timeout %v too long (at most %d ms)", opt.Timeout, ^uint32(0))
	}
	if opt.Timeout > 0 && timeoutMs == 0 {
		timeoutMs = 1
	}
	o, err := cOptions(opt, timeoutMs)
	if err != nil {
		return nil, err
	}
	// A dialling host reads one peer's datagrams on its own socket: the
	// kernel's stamp of each dates the messages it carried, and one read per
	// drain is enough (the rest waits for the next turn, dated). A server's
	// socket mixes every peer's: it would pay a system call per datagram
	// for stamps nothing reads, and it reads until the socket is empty.
	o.stamp_rx = cbool(!listening)
	o.read_once = cbool(!listening)
	// A server's socket carries a datagram to and from every peer each
	// tick: it batches them, a system call per batch (enet_io.c).
	o.batch_io = cbool(listening)
	var cerr C.int
	s := C.sg_create(cbool(bind), ipBE(ip), C.enet_uint16(port), C.size_t(peers), &o, &cerr)
	if s == nil {
		return nil, createError(int(cerr))
	}
	h := &Host{
		s:       s,
		evs:     make([]C.sg_event, batchEvents),
		buf:     make([]byte, initialPayloadBuffer),
		sampler: transport.NewWireSampler(time.Now(), transport.WireCounters{}),
	}
	h.refreshAddr()
	return h, nil
}

// MaxConnectGuardPerSource is the largest ConnectGuard.PerSource the C side
// keeps per source address.
const MaxConnectGuardPerSource = C.SG_GUARD_MAX_LIMIT

// cOptions checks and converts the Options the C side applies.
func cOptions(opt transport.Options, timeoutMs int64) (C.sg_options, error) {
	g := opt.ConnectGuard
	switch {
	case opt.MaxRecvMessage < 0 || opt.MaxRecvWaiting < 0:
		return C.sg_options{}, errors.New("negative MaxRecvMessage or MaxRecvWaiting")
	case g.PerSource < 0 || g.PerSource > MaxConnectGuardPerSource:
		return C.sg_options{}, fmt.Errorf("ConnectGuard.PerSource %d out of range 0..%d", g.PerSource, MaxConnectGuardPerSource)
	case g.PerSource > 0 && (g.Window < time.Millisecond || g.Window.Milliseconds() > int64(^uint32(0))):
		return C.sg_options{}, fmt.Errorf("ConnectGuard.Window %v out of range 1ms..%v", g.Window, time.Duration(^uint32(0))*time.Millisecond)
	case g.HalfOpen < 0 || g.HalfOpen.Milliseconds() > int64(^uint32(0)):
		return C.sg_options{}, fmt.Errorf("ConnectGuard.HalfOpen %v out of range", g.HalfOpen)
	}
	return C.sg_options{
		rcvbuf: C.int(opt.RecvBufferBytes), sndbuf: C.int(opt.SendBufferBytes),
		range_coder: cbool(opt.RangeCoder), timeout_ms: C.enet_uint32(timeoutMs),
		max_packet: C.size_t(opt.MaxRecvMessage), max_waiting: C.size_t(opt.MaxRecvWaiting),
		connect_limit: C.int(g.PerSource), connect_window_ms: C.enet_uint32(g.Window.Milliseconds()),
		half_open_ms: C.enet_uint32(g.HalfOpen.Milliseconds()),
	}, nil
}

// createError keeps the errno itself, so errors.Is(err, syscall.EADDRINUSE)
// works and the text is the system's ("address already in use").
func createError(errno int) error {
	if errno < 0 {
		return errors.New("enet_host_create failed (out of memory or socket error)")
	}
	return syscall.Errno(errno)
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// ipBE returns ip as ENet stores it: network byte order in a native uint32.
func ipBE(ip netip.Addr) C.enet_uint32 {
	if !ip.IsValid() {
		return 0
	}
	b := ip.As4()
	return C.enet_uint32(binary.NativeEndian.Uint32(b[:]))
}

func formatAddr(ipBE C.enet_uint32, port C.enet_uint16) string {
	var b [4]byte
	binary.NativeEndian.PutUint32(b[:], uint32(ipBE))
	return netip.AddrPortFrom(netip.AddrFrom4(b), uint16(port)).String()
}

// Host is an ENet host. All methods except Backend and Addr belong to the
// goroutine that owns the host.
type Host struct {
	s       *C.sg_host // nil once closed
	evs     []C.sg_event
	buf     []byte
	sampler *transport.WireSampler
	// addr is read by any goroutine; the owner fills it in once the socket
	// has a port (an unbound client gets one on its first send).
	addr      atomic.Pointer[string]
	addrFinal bool
	// synth are disconnect events ENet will not deliver itself (a peer
	// dropped before it finished connecting); delivered on the next Service.
	synth     []transport.Event
	servicing bool
}

var (
	_ transport.Host    = (*Host)(nil)
	_ transport.Guarded = (*Host)(nil)
)

// Backend returns "enet".
func (h *Host) Backend() string { return Name }

// Addr is the local address ("ip:port"); an unbound client reports
// "0.0.0.0:0" until its first send binds an ephemeral port.
func (h *Host) Addr() string {
	if p := h.addr.Load(); p != nil {
		return *p
	}
	return "0.0.0.0:0"
}

func (h *Host) refreshAddr() {
	if h.addrFinal || h.s == nil {
		return
	}
	var ip C.enet_uint32
	var port C.enet_uint16
	if C.sg_local(h.s, &ip, &port) != 0 {
		return
	}
	a := formatAddr(ip, port)
	h.addr.Store(&a)
	h.addrFinal = port != 0
}

// Connect starts a connection to addr carrying data.
func (h *Host) Connect(addr string, data uint32) (transport.PeerID, error) {
	if h.s == nil {
		return 0, transport.ErrClosed
	}
	ip, port, err := parseAddr(addr)
	if err != nil {
		return 0, fmt.Errorf("enet: connect: %w", err)
	}
	if port == 0 || ip.IsUnspecified() {
		return 0, fmt.Errorf("enet: connect %s: need a concrete address and port", addr)
	}
	id := C.sg_connect(h.s, ipBE(ip), C.enet_uint16(port), C.enet_uint32(data))
	if id < 0 {
		return 0, fmt.Errorf("enet: connect %s: all %d peer slots of this host are in use", addr, h.s.host.peerCount)
	}
	return transport.PeerID(id), nil
}

// Send queues a copy of msg to peer.
func (h *Host) Send(peer transport.PeerID, d transport.Delivery, msg []byte) error {
	if h.s == nil {
		return transport.ErrClosed
	}
	if d != transport.Reliable && d != transport.Unreliable {
		return fmt.Errorf("enet: send %s to peer %d: %w", d, peer, transport.ErrDelivery)
	}
	rel := cbool(d == transport.Reliable)
	if len(msg) == 0 {
		return sendError(int(C.sg_send(h.s, C.enet_uint32(peer), rel, nil, 0)), peer, d, 0)
	}
	// &msg[0] written in the call itself: cgo then checks only msg's
	// backing array for Go pointers. Through an unsafe.Pointer variable it
	// checks the whole allocation msg lives in, and a caller's buffer that
	// is an array inside a struct holding pointers would panic.
	return sendError(int(C.sg_send(h.s, C.enet_uint32(peer), rel, unsafe.Pointer(&msg[0]), C.size_t(len(msg)))), peer, d, len(msg))
}

// sendError maps sg_send's result to Send's error.
func sendError(rc int, peer transport.PeerID, d transport.Delivery, n int) error {
	switch rc {
	case C.SG_OK:
		return nil
	case C.SG_ERR_PEER:
		return fmt.Errorf("enet: send to peer %d: %w", peer, transport.ErrUnknownPeer)
	case C.SG_ERR_ALLOC:
		return fmt.Errorf("enet: send %d bytes to peer %d: packet allocation failed", n, peer)
	default:
		return fmt.Errorf("enet: send %d bytes %s to peer %d: refused by ENet (too large?)", n, d, peer)
	}
}

// Service performs I/O without blocking and calls fn for each ready event.
func (h *Host) Service(fn func(transport.Event)) (int, error) {
	if h.s == nil {
		return 0, transport.ErrClosed
	}
	if h.servicing {
		return 0, errors.New("enet: Service called from inside its own event callback")
	}
	h.servicing = true
	defer func() { h.servicing = false }()
	n := h.deliverSynth(fn)
	for n < maxEventsPerService && h.s != nil {
		got := int(C.sg_drain(h.s, &h.evs[0], C.int(len(h.evs)), (*C.uchar)(unsafe.Pointer(&h.buf[0])), C.size_t(len(h.buf))))
		status, cerr, need := h.s.status, h.s.err, int(h.s.need)
		n += h.deliver(got, fn)
		if status == C.SG_DRAIN_DONE || h.s == nil {
			break
		}
		if status == C.SG_DRAIN_ERROR {
			return n, fmt.Errorf("enet: service %s: socket error: %w", h.Addr(), errnoErr(int(cerr)))
		}
		if need > len(h.buf) {
			h.buf = make([]byte, max(need, 2*len(h.buf)))
		}
	}
	h.refreshAddr()
	return n, nil
}

func errnoErr(e int) error {
	if e == 0 {
		return errors.New("unknown (ENet gave no errno)")
	}
	return syscall.Errno(e)
}

// deliver hands got batched events to fn; it stops if fn closed the host.
func (h *Host) deliver(got int, fn func(transport.Event)) int {
	for i := 0; i < got; i++ {
		if h.s == nil {
			return i
		}
		if ev, ok := toEvent(&h.evs[i], h.buf); ok {
			fn(ev)
		}
	}
	return got
}

// toEvent is a flattened C event as a transport.Event, its payload a view
// of buf; false for a kind the interface does not carry.
func toEvent(e *C.sg_event, buf []byte) (transport.Event, bool) {
	ev := transport.Event{Peer: transport.PeerID(e.peer), Data: uint32(e.data)}
	switch e.kind {
	case C.ENET_EVENT_TYPE_CONNECT:
		ev.Kind = transport.EventConnect
	case C.ENET_EVENT_TYPE_DISCONNECT:
		ev.Kind = transport.EventDisconnect
	case C.ENET_EVENT_TYPE_RECEIVE:
		ev.Kind = transport.EventReceive
		ev.Delivery = transport.Unreliable
		if e.channel == C.SG_CHANNEL_RELIABLE {
			ev.Delivery = transport.Reliable
		}
		ev.Payload = buf[e.off : e.off+e.len : e.off+e.len]
		if e.rx_ns != 0 {
			ev.At = time.Unix(0, int64(e.rx_ns))
		}
	default:
		return ev, false
	}
	return ev, true
}

func (h *Host) deliverSynth(fn func(transport.Event)) int {
	n := 0
	for len(h.synth) > 0 && h.s != nil {
		ev := h.synth[0]
		h.synth = h.synth[1:]
		fn(ev)
		n++
	}
	return n
}

// Flush pushes queued sends to the socket without receiving.
func (h *Host) Flush() error {
	if h.s == nil {
		return transport.ErrClosed
	}
	C.sg_flush(h.s)
	h.refreshAddr()
	return nil
}

// Disconnect disconnects peer gracefully after its queued data. The remote
// side's EventDisconnect carries reason; this side's own EventDisconnect
// carries 0 (ENet reports the acknowledgement, not the reason).
func (h *Host) Disconnect(peer transport.PeerID, reason uint32) {
	if h.s == nil {
		return
	}
	if C.sg_disconnect(h.s, C.enet_uint32(peer), C.enet_uint32(reason)) == 0 {
		// ENet reset the half-open peer without an event; the interface
		// promises one.
		h.synth = append(h.synth, transport.Event{Kind: transport.EventDisconnect, Peer: peer})
	}
}

// RTT is ENet's smoothed round-trip time for a connected peer. ENet seeds it
// with 500 ms and moves it 1/8 toward each acknowledged sample.
func (h *Host) RTT(peer transport.PeerID) time.Duration {
	if h.s == nil {
		return 0
	}
	return time.Duration(C.sg_rtt(h.s, C.enet_uint32(peer))) * time.Millisecond
}

// pingInterval is how long ENet waits for an acknowledgement from peer
// before it pings it (sg_configure_peer spreads it by slot).
func (h *Host) pingInterval(peer transport.PeerID) time.Duration {
	if h.s == nil {
		return 0
	}
	return time.Duration(C.sg_ping_interval(h.s, C.enet_uint32(peer))) * time.Millisecond
}

// LinkStats is the peer's RTT and ENet's packetLoss: the share of reliable
// commands retransmitted, averaged over 10 s intervals. It says nothing
// about unreliable loss, so a link dropping only snapshots reads near 0.
func (h *Host) LinkStats(peer transport.PeerID) transport.LinkStats {
	if h.s == nil {
		return transport.LinkStats{}
	}
	var rtt, loss C.enet_uint32
	if C.sg_link(h.s, C.enet_uint32(peer), &rtt, &loss) != 0 {
		return transport.LinkStats{}
	}
	return transport.LinkStats{RTT: time.Duration(rtt) * time.Millisecond,
		Loss: float64(loss) / float64(C.ENET_PEER_PACKET_LOSS_SCALE), LossKnown: true}
}

// PeerAddr is the remote address of peer, "" if it has none.
func (h *Host) PeerAddr(peer transport.PeerID) string {
	if h.s == nil {
		return ""
	}
	var ip C.enet_uint32
	var port C.enet_uint16
	if C.sg_peer_addr(h.s, C.enet_uint32(peer), &ip, &port) != 0 {
		return ""
	}
	return formatAddr(ip, port)
}

// WireRates returns socket-level rates since the previous call, from ENet's
// 32-bit host counters (wrap-safe through transport.WireSampler).
func (h *Host) WireRates() transport.WireRates {
	if h.s == nil {
		return transport.WireRates{}
	}
	return h.sampler.Sample(time.Now(), h.counters())
}

func (h *Host) counters() transport.WireCounters {
	c := C.sg_counters(h.s)
	return transport.WireCounters{
		BytesOut: uint32(c.sent_data), BytesIn: uint32(c.received_data),
		DatagramsOut: uint32(c.sent_packets), DatagramsIn: uint32(c.received_packets),
	}
}

// GuardStats returns the connect guard's counts (zero without a guard).
func (h *Host) GuardStats() transport.GuardStats {
	if h.s == nil {
		return transport.GuardStats{}
	}
	return transport.GuardStats{
		ConnectsDropped: uint64(C.sg_guard_dropped(h.s)),
		HalfOpenReset:   uint64(C.sg_guard_reaped(h.s)),
	}
}

// QueuedSends is the messages queued to peer that ENet has not yet written
// to the socket (held back by the reliable window or the throttle); a
// fragmented message counts once. 0 for an unknown peer.
func (h *Host) QueuedSends(peer transport.PeerID) int {
	if h.s == nil {
		return 0
	}
	return max(int(C.sg_queued(h.s, C.enet_uint32(peer))), 0)
}

// Close destroys the host, its peers and any packet it still holds. Calls
// after Close, including a second Close, return transport.ErrClosed.
func (h *Host) Close() error {
	if h.s == nil {
		return transport.ErrClosed
	}
	C.sg_destroy(h.s)
	h.s = nil
	h.synth = nil
	return nil
}

// ---- hooks for this package's tests (cgo cannot be used in _test files) ----

// setCounters overwrites ENet's host counters, to drive them across a wrap.
func (h *Host) setCounters(c transport.WireCounters) {
	C.sg_set_counters(h.s, C.sg_counters_t{
		sent_data: C.enet_uint32(c.BytesOut), received_data: C.enet_uint32(c.BytesIn),
		sent_packets: C.enet_uint32(c.DatagramsOut), received_packets: C.enet_uint32(c.DatagramsIn),
	})
}

// peerThrottle reports a connected peer's packet throttle and deceleration.
func (h *Host) peerThrottle(peer transport.PeerID) (throttle, decel uint32, ok bool) {
	var t, d C.enet_uint32
	if C.sg_peer_throttle(h.s, C.enet_uint32(peer), &t, &d) != 0 {
		return 0, 0, false
	}
	return uint32(t), uint32(d), true
}

// reliableInTransit is the peer's unacknowledged reliable bytes.
func (h *Host) reliableInTransit(peer transport.PeerID) int {
	return int(C.sg_reliable_in_transit(h.s, C.enet_uint32(peer)))
}

// oversizeDropped counts datagrams dropped for exceeding ENet's buffer.
func (h *Host) oversizeDropped() uint64 { return uint64(h.s.oversize_dropped) }

// ioStats are the batching counts of a server host (zero on a client).
type ioStats struct{ SendCalls, Sent, SendDropped, RecvCalls, Received uint64 }

func (h *Host) ioStats() ioStats {
	st := C.sg_io_read_stats(h.s.io)
	return ioStats{
		SendCalls: uint64(st.send_calls), Sent: uint64(st.sent), SendDropped: uint64(st.send_dropped),
		RecvCalls: uint64(st.recv_calls), Received: uint64(st.received),
	}
}

// unbatch puts a server host on libenet's own socket I/O (a system call
// per datagram), for benchmarks side by side; before any traffic.
func (h *Host) unbatch() { C.sg_unbatch(h.s) }

// setPeerPort points peer at another port (0: the kernel refuses the send).
func (h *Host) setPeerPort(peer transport.PeerID, port uint16) {
	if C.sg_set_peer_port(h.s, C.enet_uint32(peer), C.enet_uint16(port)) != 0 {
		panic(fmt.Sprintf("setPeerPort: no peer %d", peer))
	}
}

// recvBuffer is the socket's SO_RCVBUF as the kernel reports it (doubled).
func (h *Host) recvBuffer() int { return int(C.sg_rcvbuf(h.s)) }

// throttleScale is ENet's maximum packet throttle (never drops).
const throttleScale = C.ENET_PEER_PACKET_THROTTLE_SCALE

// halfOpen counts peers in the middle of the connect handshake.
func (h *Host) halfOpen() int { return int(C.sg_half_open(h.s)) }

// waiting is the bytes ENet holds for peer, received but not delivered.
func (h *Host) waiting(peer transport.PeerID) int {
	return int(C.sg_waiting(h.s, C.enet_uint32(peer)))
}

// isConnectDatagram runs the connect guard's recogniser on b (no checksum).
func isConnectDatagram(b []byte) bool {
	if len(b) == 0 {
		return C.sg_is_connect(nil, 0, 0) != 0
	}
	return C.sg_is_connect((*C.enet_uint8)(unsafe.Pointer(&b[0])), C.size_t(len(b)), 0) != 0
}
