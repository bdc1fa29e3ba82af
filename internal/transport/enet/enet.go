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
#include <enet/enet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

enum {
	SG_CHANNEL_RELIABLE   = 0,
	SG_CHANNEL_UNRELIABLE = 1,
	SG_CHANNELS           = 2,

	// Throttle: interval, acceleration, deceleration. Deceleration 0 keeps
	// packetThrottle at its maximum, so ENet never sheds unreliable packets.
	SG_THROTTLE_INTERVAL_MS = 5000,
	SG_THROTTLE_ACCEL       = 2,
	SG_THROTTLE_DECEL       = 0,

	SG_OK        = 0,
	SG_ERR_PEER  = -1, // no such peer, or not connected
	SG_ERR_ALLOC = -2, // enet_packet_create failed
	SG_ERR_SEND  = -3, // enet_peer_send refused the packet

	SG_DRAIN_DONE  = 0, // ENet had no more events
	SG_DRAIN_MORE  = 1, // the event array or payload buffer is full
	SG_DRAIN_ERROR = -1, // enet_host_service reported a socket error

	// A drain gives up after this many oversized datagrams in a row, so a
	// flood cannot hold the owner inside one Service call.
	SG_MAX_DROPS_PER_DRAIN = 256
};

// sg_host is the C side of one Go host. It lives in C memory so that Go can
// hand its address to every call without pinning anything.
typedef struct {
	ENetHost   *host;
	ENetEvent   pending;     // a receive whose payload did not fit the caller's buffer
	int         has_pending;
	enet_uint32 timeout_ms;  // Options.Timeout; 0 keeps ENet's defaults
	// Results of the last sg_drain, read by Go (keeps Go pointers out of C).
	int         status;
	int         err;
	size_t      need;
	// Datagrams over ENet's 4096 B receive buffer, dropped (see sg_drain).
	unsigned long oversize_dropped;
} sg_host;

// sg_event is one event flattened for Go; the payload is buf[off:off+len].
typedef struct {
	int         kind;
	enet_uint32 peer;
	enet_uint32 data;
	enet_uint32 channel;
	enet_uint32 off;
	enet_uint32 len;
} sg_event;

typedef struct {
	enet_uint32 sent_data, received_data, sent_packets, received_packets;
} sg_counters_t;

// sg_configure_peer applies scalegate's peer settings. The throttle call
// also sends THROTTLE_CONFIGURE, so the remote side adopts the same values.
static void sg_configure_peer(sg_host *s, ENetPeer *p) {
	enet_peer_throttle_configure(p, SG_THROTTLE_INTERVAL_MS, SG_THROTTLE_ACCEL, SG_THROTTLE_DECEL);
	p->packetThrottle = ENET_PEER_PACKET_THROTTLE_SCALE;
	if (s->timeout_ms != 0) {
		enet_peer_timeout(p, 0, s->timeout_ms, s->timeout_ms);
	}
}

// sg_set_buf sizes a socket buffer. SO_*BUFFORCE (CAP_NET_ADMIN) gets the
// size even when net.core.rmem_max/wmem_max is smaller (212992 on stock
// kernels, which would cap a server's burst buffer at a couple of ticks);
// without the privilege the plain option applies, capped by the kernel.
static int sg_set_buf(ENetSocket sock, int force_opt, ENetSocketOption opt, int bytes) {
	if (setsockopt(sock, SOL_SOCKET, force_opt, &bytes, sizeof bytes) == 0) {
		return 0;
	}
	return enet_socket_set_option(sock, opt, bytes);
}

// sg_create makes a host. bind=0 leaves it unbound (a client). On failure it
// returns NULL and *err holds errno, or -1 when ENet gave no errno.
static sg_host *sg_create(int bind, enet_uint32 ip_be, enet_uint16 port, size_t peers,
		int rcvbuf, int sndbuf, int range_coder, enet_uint32 timeout_ms, int *err) {
	ENetAddress addr;
	addr.host = ip_be;
	addr.port = port;
	errno = 0;
	ENetHost *h = enet_host_create(bind ? &addr : NULL, peers, SG_CHANNELS, 0, 0);
	if (h == NULL) {
		*err = errno != 0 ? errno : -1;
		return NULL;
	}
	if ((rcvbuf > 0 && sg_set_buf(h->socket, SO_RCVBUFFORCE, ENET_SOCKOPT_RCVBUF, rcvbuf) < 0) ||
	    (sndbuf > 0 && sg_set_buf(h->socket, SO_SNDBUFFORCE, ENET_SOCKOPT_SNDBUF, sndbuf) < 0) ||
	    (range_coder && enet_host_compress_with_range_coder(h) < 0)) {
		*err = errno != 0 ? errno : -1;
		enet_host_destroy(h);
		return NULL;
	}
	sg_host *s = calloc(1, sizeof *s);
	if (s == NULL) {
		*err = ENOMEM;
		enet_host_destroy(h);
		return NULL;
	}
	s->host = h;
	s->timeout_ms = timeout_ms;
	return s;
}

// sg_destroy frees the host, a pending packet and the wrapper.
static void sg_destroy(sg_host *s) {
	if (s->has_pending && s->pending.type == ENET_EVENT_TYPE_RECEIVE) {
		enet_packet_destroy(s->pending.packet);
	}
	enet_host_destroy(s->host);
	free(s);
}

// sg_local reads the bound address (port is known once the socket is bound).
static int sg_local(sg_host *s, enet_uint32 *ip_be, enet_uint16 *port) {
	ENetAddress a;
	if (enet_socket_get_address(s->host->socket, &a) < 0) {
		return -1;
	}
	*ip_be = a.host;
	*port = a.port;
	return 0;
}

// sg_next returns the pending event or services the host once, without
// blocking: the caller loops while it returns > 0.
static int sg_next(sg_host *s, ENetEvent *ev) {
	if (s->has_pending) {
		*ev = s->pending;
		s->has_pending = 0;
		return 1;
	}
	return enet_host_service(s->host, ev, 0);
}

// sg_drain services the host without blocking and stores up to max events in
// evs, copying payloads into buf[0:cap] and destroying the packets. It stops
// early when a payload does not fit (that event is kept as pending and
// s->need set), so one call delivers a batch with one cgo crossing.
static int sg_drain(sg_host *s, sg_event *evs, int max, unsigned char *buf, size_t cap) {
	int n = 0, drops = 0;
	size_t used = 0;
	s->status = SG_DRAIN_DONE;
	s->err = 0;
	s->need = 0;
	while (n < max) {
		ENetEvent ev;
		errno = 0;
		int r = sg_next(s, &ev);
		if (r == 0) {
			return n;
		}
		if (r < 0) {
			// ENet 1.3.17 fails the whole service call when a datagram
			// was truncated (MSG_TRUNC, no errno of its own: errno is 0 or
			// a stale EAGAIN from a non-blocking call). The datagram is
			// consumed and the host intact, so it is dropped like any other
			// malformed datagram; otherwise anyone could stop a server
			// with one 4097-byte packet. Real socket errors set errno.
			if ((errno == 0 || errno == EAGAIN || errno == EWOULDBLOCK) && ++drops <= SG_MAX_DROPS_PER_DRAIN) {
				s->oversize_dropped++;
				continue;
			}
			if (drops > SG_MAX_DROPS_PER_DRAIN) {
				return n; // the rest waits for the next Service
			}
			s->status = SG_DRAIN_ERROR;
			s->err = errno;
			return n;
		}
		sg_event *o = &evs[n];
		o->kind = ev.type;
		o->peer = (enet_uint32)(ev.peer - s->host->peers);
		o->data = ev.data;
		o->channel = ev.channelID;
		o->off = (enet_uint32)used;
		o->len = 0;
		if (ev.type == ENET_EVENT_TYPE_CONNECT) {
			sg_configure_peer(s, ev.peer);
		} else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
			size_t len = ev.packet->dataLength;
			if (len > cap - used) {
				s->pending = ev;
				s->has_pending = 1;
				s->status = SG_DRAIN_MORE;
				s->need = len;
				return n;
			}
			if (len > 0) {
				memcpy(buf + used, ev.packet->data, len);
			}
			o->len = (enet_uint32)len;
			used += len;
			enet_packet_destroy(ev.packet);
		}
		n++;
	}
	s->status = SG_DRAIN_MORE;
	return n;
}

static ENetPeer *sg_peer(sg_host *s, enet_uint32 id) {
	if (id >= s->host->peerCount) {
		return NULL;
	}
	return &s->host->peers[id];
}

// sg_send copies data into a new packet and queues it on the channel of its
// delivery. UNRELIABLE_FRAGMENT only matters above the fragment size, where
// ENet would otherwise send the packet as reliable fragments.
static int sg_send(sg_host *s, enet_uint32 id, int reliable, const void *data, size_t len) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL || p->state != ENET_PEER_STATE_CONNECTED) {
		return SG_ERR_PEER;
	}
	enet_uint32 flags = reliable ? ENET_PACKET_FLAG_RELIABLE : ENET_PACKET_FLAG_UNRELIABLE_FRAGMENT;
	ENetPacket *pk = enet_packet_create(data, len, flags);
	if (pk == NULL) {
		return SG_ERR_ALLOC;
	}
	if (enet_peer_send(p, reliable ? SG_CHANNEL_RELIABLE : SG_CHANNEL_UNRELIABLE, pk) < 0) {
		enet_packet_destroy(pk);
		return SG_ERR_SEND;
	}
	return SG_OK;
}

// sg_connect starts a connection; returns the peer index or -1 when every
// peer slot is taken.
static long sg_connect(sg_host *s, enet_uint32 ip_be, enet_uint16 port, enet_uint32 data) {
	ENetAddress a;
	a.host = ip_be;
	a.port = port;
	ENetPeer *p = enet_host_connect(s->host, &a, SG_CHANNELS, data);
	if (p == NULL) {
		return -1;
	}
	if (s->timeout_ms != 0) {
		enet_peer_timeout(p, 0, s->timeout_ms, s->timeout_ms);
	}
	return (long)(p - s->host->peers);
}

// sg_disconnect disconnects gracefully after queued data. It returns 1 when
// ENet will deliver a DISCONNECT event later, 0 when the peer was dropped at
// once (it never finished connecting), -1 when there was nothing to do.
static int sg_disconnect(sg_host *s, enet_uint32 id, enet_uint32 reason) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL) {
		return -1;
	}
	switch (p->state) {
	case ENET_PEER_STATE_CONNECTED:
	case ENET_PEER_STATE_DISCONNECT_LATER:
		enet_peer_disconnect_later(p, reason);
		return 1;
	case ENET_PEER_STATE_CONNECTING:
	case ENET_PEER_STATE_ACKNOWLEDGING_CONNECT:
	case ENET_PEER_STATE_CONNECTION_PENDING:
	case ENET_PEER_STATE_CONNECTION_SUCCEEDED:
		enet_peer_disconnect(p, reason);
		return 0;
	default:
		return -1;
	}
}

static enet_uint32 sg_rtt(sg_host *s, enet_uint32 id) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL || p->state != ENET_PEER_STATE_CONNECTED) {
		return 0;
	}
	return p->roundTripTime;
}

static int sg_peer_addr(sg_host *s, enet_uint32 id, enet_uint32 *ip_be, enet_uint16 *port) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL || p->state == ENET_PEER_STATE_DISCONNECTED || p->state == ENET_PEER_STATE_ZOMBIE) {
		return -1;
	}
	*ip_be = p->address.host;
	*port = p->address.port;
	return 0;
}

static sg_counters_t sg_counters(sg_host *s) {
	sg_counters_t c;
	c.sent_data = s->host->totalSentData;
	c.received_data = s->host->totalReceivedData;
	c.sent_packets = s->host->totalSentPackets;
	c.received_packets = s->host->totalReceivedPackets;
	return c;
}

static void sg_flush(sg_host *s) {
	enet_host_flush(s->host);
}

// ---- test hooks: read state the tests must check, set counters near wrap ----

static void sg_set_counters(sg_host *s, sg_counters_t c) {
	s->host->totalSentData = c.sent_data;
	s->host->totalReceivedData = c.received_data;
	s->host->totalSentPackets = c.sent_packets;
	s->host->totalReceivedPackets = c.received_packets;
}

static int sg_peer_throttle(sg_host *s, enet_uint32 id, enet_uint32 *throttle, enet_uint32 *decel) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL || p->state != ENET_PEER_STATE_CONNECTED) {
		return -1;
	}
	*throttle = p->packetThrottle;
	*decel = p->packetThrottleDeceleration;
	return 0;
}

// sg_reliable_in_transit is the reliable bytes sent but not yet acknowledged.
static long sg_reliable_in_transit(sg_host *s, enet_uint32 id) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL) {
		return -1;
	}
	return (long)p->reliableDataInTransit;
}

static int sg_rcvbuf(sg_host *s) {
	int v = 0;
	socklen_t n = sizeof v;
	if (getsockopt(s->host->socket, SOL_SOCKET, SO_RCVBUF, &v, &n) < 0) {
		return -1;
	}
	return v;
}
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

	"github.com/scalegate/scalegate/internal/transport"
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
	h, err := create(false, netip.Addr{}, 0, peers, opt)
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
	return create(true, ip, port, peers, opt)
}

// create makes the C host and its Go wrapper.
func create(bind bool, ip netip.Addr, port uint16, peers int, opt transport.Options) (*Host, error) {
	if peers < 1 || peers > MaxPeers {
		return nil, fmt.Errorf("MaxPeers %d out of range 1..%d", peers, MaxPeers)
	}
	if opt.RecvBufferBytes < 0 || opt.SendBufferBytes < 0 || opt.Timeout < 0 {
		return nil, errors.New("negative RecvBufferBytes, SendBufferBytes or Timeout")
	}
	timeoutMs := opt.Timeout.Milliseconds()
	if timeoutMs > int64(^uint32(0)) {
		return nil, fmt.Errorf("Timeout %v too long", opt.Timeout)
	}
	if opt.Timeout > 0 && timeoutMs == 0 {
		timeoutMs = 1
	}
	var cerr C.int
	s := C.sg_create(cbool(bind), ipBE(ip), C.enet_uint16(port), C.size_t(peers),
		C.int(opt.RecvBufferBytes), C.int(opt.SendBufferBytes), cbool(opt.RangeCoder),
		C.enet_uint32(timeoutMs), &cerr)
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

var _ transport.Host = (*Host)(nil)

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
	var p unsafe.Pointer
	if len(msg) > 0 {
		p = unsafe.Pointer(&msg[0])
	}
	rel := cbool(d == transport.Reliable)
	switch C.sg_send(h.s, C.enet_uint32(peer), rel, p, C.size_t(len(msg))) {
	case C.SG_OK:
		return nil
	case C.SG_ERR_PEER:
		return fmt.Errorf("enet: send to peer %d: %w", peer, transport.ErrUnknownPeer)
	case C.SG_ERR_ALLOC:
		return fmt.Errorf("enet: send %d bytes to peer %d: packet allocation failed", len(msg), peer)
	default:
		return fmt.Errorf("enet: send %d bytes %s to peer %d: refused by ENet (too large?)", len(msg), d, peer)
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
		e := &h.evs[i]
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
			ev.Payload = h.buf[e.off : e.off+e.len : e.off+e.len]
		default:
			continue
		}
		fn(ev)
	}
	return got
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

// recvBuffer is the socket's SO_RCVBUF as the kernel reports it (doubled).
func (h *Host) recvBuffer() int { return int(C.sg_rcvbuf(h.s)) }

// throttleScale is ENet's maximum packet throttle (never drops).
const throttleScale = C.ENET_PEER_PACKET_THROTTLE_SCALE
