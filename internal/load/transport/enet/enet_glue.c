//go:build cgo

// enet_glue.c implements enet_glue.h. The go command compiles it with the
// #cgo flags of enet.go (pkg-config libenet); the build constraint keeps it
// out of CGO_ENABLED=0 builds, where nocgo.go stands in for the package.
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include "enet_glue.h"

// sg_rx_ns is the kernel's CLOCK_REALTIME arrival time of the datagram the
// socket read last, in ns; 0 when the host does not stamp or the kernel
// has no stamp.
static long long sg_rx_ns(sg_host *s) {
	struct timespec ts;
	if (!s->stamp_rx || ioctl(s->host->socket, SIOCGSTAMPNS, &ts) != 0) {
		return 0;
	}
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

// SG_RX_UNKNOWN in a packet's userData dates it without a stamp (the kernel
// had none): a later datagram's stamp must not be given to it. No real
// CLOCK_REALTIME stamp is 1 ns after the epoch.
#define SG_RX_UNKNOWN 1

// sg_rx_stamp is the userData stamp of what the datagram read last carried.
static void *sg_rx_stamp(const sg_host *s) {
	return (void *)(intptr_t)(s->rx_cur > 0 ? s->rx_cur : SG_RX_UNKNOWN);
}

// sg_stamp_dispatched dates the packets ENet made deliverable since it last
// ran: they came from the datagram read last, whose arrival is s->rx_cur.
// A packet's userData holds its stamp (ENet leaves the field to the
// application and creates packets with it NULL). Only dispatched commands
// are dated: one still waiting in a channel (a reliable message behind a
// lost one) is dated by the datagram after which it became deliverable.
static void sg_stamp_dispatched(sg_host *s) {
	ENetList *q = &s->host->dispatchQueue;
	void *stamp = sg_rx_stamp(s);
	for (ENetListIterator p = enet_list_begin(q); p != enet_list_end(q); p = enet_list_next(p)) {
		ENetList *cmds = &((ENetPeer *)p)->dispatchedCommands;
		for (ENetListIterator c = enet_list_begin(cmds); c != enet_list_end(cmds); c = enet_list_next(c)) {
			ENetPacket *pk = ((ENetIncomingCommand *)c)->packet;
			if (pk != NULL && pk->userData == NULL) {
				pk->userData = stamp;
			}
		}
	}
}

// sg_stamp_rx runs in the intercept hook for each datagram a stamping host
// reads, before ENet parses it: the packets the previous datagram made
// deliverable are dated with its arrival, and this one's is read. ENet
// reads every waiting datagram in one service call before it delivers any,
// so a stamp read once per drain would date two snapshots that arrived a
// tick apart with the later one's arrival.
void sg_stamp_rx(sg_host *s) {
	sg_stamp_dispatched(s);
	s->rx_cur = sg_rx_ns(s);
}

// sg_rx_of is the arrival of a delivered packet in ns (0: unknown).
static long long sg_rx_of(const ENetPacket *pk) {
	long long rx = (long long)(intptr_t)pk->userData;
	return rx > SG_RX_UNKNOWN ? rx : 0;
}

// sg_configure_peer applies scalegate's peer settings. The throttle call
// also sends THROTTLE_CONFIGURE, so the remote side adopts the same values.
//
// ENet pings a peer it has had no acknowledgement from for pingInterval.
// A server reads its peers' acknowledgements once a tick, so their pings
// fall into step: with ENet's 500 ms for all, the reference server sent
// its 128 peers' pings and read their acknowledgements on every 31st
// tick, 0.3-0.5 ms more of that tick's maintenance phase on 3 % of the
// ticks, more than the 1 % a tick p99 reads. Intervals that differ by a
// 60 Hz tick (17 ms) by slot make the peers' pings drift apart and stay
// apart; the mean stays near 500 ms.
static void sg_configure_peer(sg_host *s, ENetPeer *p) {
	enet_peer_throttle_configure(p, SG_THROTTLE_INTERVAL_MS, SG_THROTTLE_ACCEL, SG_THROTTLE_DECEL);
	p->packetThrottle = ENET_PEER_PACKET_THROTTLE_SCALE;
	enet_peer_ping_interval(p, SG_PING_BASE_MS + (enet_uint32)(p - s->host->peers) % SG_PING_STEPS * SG_PING_STEP_MS);
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
sg_host *sg_create(int bind, enet_uint32 ip_be, enet_uint16 port, size_t peers, const sg_options *o, int *err) {
	ENetAddress addr;
	addr.host = ip_be;
	addr.port = port;
	errno = 0;
	ENetHost *h = enet_host_create(bind ? &addr : NULL, peers, SG_CHANNELS, 0, 0);
	if (h == NULL) {
		*err = errno != 0 ? errno : -1;
		return NULL;
	}
	if ((o->rcvbuf > 0 && sg_set_buf(h->socket, SO_RCVBUFFORCE, ENET_SOCKOPT_RCVBUF, o->rcvbuf) < 0) ||
	    (o->sndbuf > 0 && sg_set_buf(h->socket, SO_SNDBUFFORCE, ENET_SOCKOPT_SNDBUF, o->sndbuf) < 0) ||
	    (o->range_coder && enet_host_compress_with_range_coder(h) < 0)) {
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
	s->timeout_ms = o->timeout_ms;
	s->stamp_rx = o->stamp_rx;
	s->read_once = o->read_once;
	if (s->stamp_rx) {
		// The first SIOCGSTAMPNS turns the socket's receive stamps on (it
		// fails, with nothing stamped yet); later datagrams are stamped,
		// each read in the intercept hook.
		(void)sg_rx_ns(s);
		h->intercept = sg_intercept;
	}
	// ENet's 32 MiB defaults let one peer make the host allocate a 32 MiB
	// packet with a single fragment header and keep it until the peer goes.
	if (o->max_packet > 0) {
		h->maximumPacketSize = o->max_packet;
	}
	if (o->max_waiting > 0) {
		h->maximumWaitingData = o->max_waiting;
	}
	s->max_packet = h->maximumPacketSize;
	if (o->batch_io) {
		// NULL (no memory, or no libenet functions to fall back on)
		// leaves the host on libenet's own I/O, which is correct, only
		// dearer.
		s->io = sg_io_new(h);
	}
	if (sg_guard_init(s, o) < 0) {
		*err = ENOMEM;
		sg_destroy(s);
		return NULL;
	}
	return s;
}

// sg_destroy frees the host, a pending packet and the wrapper.
void sg_destroy(sg_host *s) {
	sg_guard_free(s);
	sg_io_free(s->io);
	if (s->has_pending && s->pending.type == ENET_EVENT_TYPE_RECEIVE) {
		enet_packet_destroy(s->pending.packet);
	}
	enet_host_destroy(s->host);
	free(s);
}

// sg_local reads the bound address (port is known once the socket is bound).
int sg_local(sg_host *s, enet_uint32 *ip_be, enet_uint16 *port) {
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
//
// A read_once host services its socket once per drain and then only
// dispatches (enet_host_check_events) what that read queued. ENet reads
// every waiting datagram in one service call, so a further call per drain
// is one more recvmsg that answers EAGAIN (and one more pass over the
// peers to send nothing): for a swarm client, one system call per
// client-tick spent finding out that nothing else came. What arrives
// during the drain waits for the client's next turn, dated by its own
// arrival (sg_stamp_rx). A server keeps reading until the socket is empty:
// an Input that arrives mid-drain is applied this tick.
static int sg_next(sg_host *s, ENetEvent *ev) {
	if (s->has_pending) {
		*ev = s->pending;
		s->has_pending = 0;
		return 1;
	}
	if (s->read_once) {
		if (s->drain_read) {
			return enet_host_check_events(s->host, ev);
		}
		// With nothing queued, this service call goes to the socket; with
		// events queued (a drain cut short) it returns one of them first.
		s->drain_read = enet_list_empty(&s->host->dispatchQueue);
	}
	int r = enet_host_service(s->host, ev, 0);
	if (s->stamp_rx) {
		// What the last datagram read made deliverable, the event
		// returned among it, is that datagram's (sg_stamp_rx dated the
		// ones before).
		sg_stamp_dispatched(s);
		if (r > 0 && ev->type == ENET_EVENT_TYPE_RECEIVE && ev->packet->userData == NULL) {
			ev->packet->userData = sg_rx_stamp(s);
		}
	}
	return r;
}

static int sg_drain_events(sg_host *s, sg_event *evs, int max, unsigned char *buf, size_t cap, size_t *used);


// sg_drain services the host without blocking and stores up to max events in
// evs, copying payloads into buf[0:cap] and destroying the packets. It stops
// early when a payload does not fit (that event is kept as pending and
// s->need set), so one call delivers a batch with one cgo crossing.
int sg_drain(sg_host *s, sg_event *evs, int max, unsigned char *buf, size_t cap) {
	int n = 0;
	sg_io_begin(s->io);
	sg_reap_half_open(s);
	sg_guard_enter(s);
	size_t used = 0;
	n = sg_drain_events(s, evs, max, buf, cap, &used);
	sg_guard_leave();
	int e = sg_io_end(s->io);
	if (e != 0 && s->status != SG_DRAIN_ERROR) {
		// A datagram of this drain was refused when the batch was
		// written: libenet would have failed the service call with it.
		s->status = SG_DRAIN_ERROR;
		s->err = e;
	}
	return n;
}

// sg_drain_events is sg_drain's loop, run while the connect guard is armed.
// Payloads are appended to buf from *used on, which it advances.
static int sg_drain_events(sg_host *s, sg_event *evs, int max, unsigned char *buf, size_t cap, size_t *used) {
	int n = 0, drops = 0;
	s->status = SG_DRAIN_DONE;
	s->drain_read = 0;
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
		o->off = (enet_uint32)*used;
		o->len = 0;
		o->rx_ns = 0;
		if (ev.type == ENET_EVENT_TYPE_CONNECT) {
			sg_configure_peer(s, ev.peer);
		} else if (ev.type == ENET_EVENT_TYPE_RECEIVE) {
			size_t len = ev.packet->dataLength;
			if (len > cap - *used) {
				s->pending = ev;
				s->has_pending = 1;
				s->status = SG_DRAIN_MORE;
				s->need = len;
				return n;
			}
			if (len > 0) {
				memcpy(buf + *used, ev.packet->data, len);
			}
			o->len = (enet_uint32)len;
			*used += len;
			o->rx_ns = sg_rx_of(ev.packet);
			enet_packet_destroy(ev.packet);
		}
		n++;
	}
	s->status = SG_DRAIN_MORE;
	return n;
}

// sg_batch_prefetch starts loading what later items' turns read first: each
// turn begins with a chain of dependent loads (sg_host, its ENetHost, the
// peer) that, at hundreds of hosts a tick, miss the cache. Each link is
// requested one item after the one it depends on, so its address is
// already at hand (perf at 256 clients: sg_send's own time was 3 % of the
// swarm's, nearly all of it waiting on those loads). A macro, not a
// function: GCC 12 at -O2 dropped the prefetches of the inlined function.
#define SG_PREFETCH4(p)                                                                   \
	do {                                                                              \
		const char *sg_pf_ = (const char *)(p);                                   \
		__builtin_prefetch(sg_pf_);                                               \
		__builtin_prefetch(sg_pf_ + 64);                                          \
		__builtin_prefetch(sg_pf_ + 128);                                         \
		__builtin_prefetch(sg_pf_ + 192);                                         \
	} while (0)

// sg_batch sends each item's Input (if any) and services its host, in item
// order from items[from], appending events to evs and payloads to buf. It
// returns the index of the first item it did not finish: n when all are
// done, else an item whose drain stopped because evs or buf is full (status
// SG_DRAIN_MORE; its send is done and its send_len zeroed, so calling again
// from there resumes it). An item whose send fails is not serviced, nor is
// one whose host is NULL (closed before the call).
int sg_batch(sg_batch_item *items, int from, int n, const unsigned char *sends,
             sg_event *evs, int max_evs, unsigned char *buf, size_t cap) {
	int nev = 0;
	size_t used = 0;
	struct timespec ts;
	for (int i = from; i < n; i++) {
		if (i + 3 < n && items[i + 3].host) {
			SG_PREFETCH4(items[i + 3].host);
		}
		if (i + 2 < n && items[i + 2].host) {
			SG_PREFETCH4(((const sg_host *)items[i + 2].host)->host);
		}
		if (i + 1 < n && items[i + 1].host) {
			const ENetHost *h = ((const sg_host *)items[i + 1].host)->host;
			if (items[i + 1].peer < h->peerCount) {
				SG_PREFETCH4(&h->peers[items[i + 1].peer]);
			}
		}
		sg_batch_item *it = &items[i];
		sg_host *s = (sg_host *)it->host;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		it->at_ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
		it->first = nev;
		it->count = 0;
		it->status = SG_DRAIN_DONE;
		if (s == NULL) { // closed before its turn: Go reports it
			continue;
		}
		if (it->send_len > 0) {
			it->send_rc = sg_send(s, it->peer, 0, sends + it->send_off, it->send_len);
			it->send_len = 0;
			if (it->send_rc != SG_OK) {
				continue;
			}
		}
		sg_reap_half_open(s);
		sg_guard_enter(s);
		int got = sg_drain_events(s, evs + nev, max_evs - nev, buf, cap, &used);
		sg_guard_leave();
		it->count = got;
		nev += got;
		it->status = s->status;
		it->err = s->err;
		if (s->status == SG_DRAIN_MORE) {
			return i;
		}
	}
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
int sg_send(sg_host *s, enet_uint32 id, int reliable, const void *data, size_t len) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL || p->state != ENET_PEER_STATE_CONNECTED) {
		return SG_ERR_PEER;
	}
	enet_uint32 flags = reliable ? ENET_PACKET_FLAG_RELIABLE : ENET_PACKET_FLAG_UNRELIABLE_FRAGMENT;
	ENetPacket *pk = enet_packet_create(data, len, flags);
	if (pk == NULL) {
		return SG_ERR_ALLOC;
	}
	// ENet checks one maximumPacketSize for what it sends and what it
	// reassembles. The cap is for what peers send us; our own messages
	// (snapshots) may be larger, so lift it for this call only.
	s->host->maximumPacketSize = ENET_HOST_DEFAULT_MAXIMUM_PACKET_SIZE;
	int r = enet_peer_send(p, reliable ? SG_CHANNEL_RELIABLE : SG_CHANNEL_UNRELIABLE, pk);
	s->host->maximumPacketSize = s->max_packet;
	if (r < 0) {
		enet_packet_destroy(pk);
		return SG_ERR_SEND;
	}
	return SG_OK;
}

// sg_connect starts a connection; returns the peer index or -1 when every
// peer slot is taken.
long sg_connect(sg_host *s, enet_uint32 ip_be, enet_uint16 port, enet_uint32 data) {
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
int sg_disconnect(sg_host *s, enet_uint32 id, enet_uint32 reason) {
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

enet_uint32 sg_rtt(sg_host *s, enet_uint32 id) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL || p->state != ENET_PEER_STATE_CONNECTED) {
		return 0;
	}
	return p->roundTripTime;
}

enet_uint32 sg_ping_interval(sg_host *s, enet_uint32 id) {
	ENetPeer *p = sg_peer(s, id);
	return p == NULL ? 0 : p->pingInterval;
}

int sg_link(sg_host *s, enet_uint32 id, enet_uint32 *rtt, enet_uint32 *loss) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL || p->state != ENET_PEER_STATE_CONNECTED) {
		return -1;
	}
	*rtt = p->roundTripTime;
	*loss = p->packetLoss;
	return 0;
}

int sg_peer_addr(sg_host *s, enet_uint32 id, enet_uint32 *ip_be, enet_uint16 *port) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL || p->state == ENET_PEER_STATE_DISCONNECTED || p->state == ENET_PEER_STATE_ZOMBIE) {
		return -1;
	}
	*ip_be = p->address.host;
	*port = p->address.port;
	return 0;
}

sg_counters_t sg_counters(sg_host *s) {
	sg_counters_t c;
	c.sent_data = s->host->totalSentData;
	c.received_data = s->host->totalReceivedData;
	c.sent_packets = s->host->totalSentPackets;
	c.received_packets = s->host->totalReceivedPackets;
	return c;
}

// sg_flush writes what ENet has queued. A send error is dropped, as
// enet_host_flush drops libenet's own.
void sg_flush(sg_host *s) {
	sg_io_begin(s->io);
	enet_host_flush(s->host);
	(void)sg_io_end(s->io);
}

// sg_queued counts the messages queued to a peer and not yet written to
// the socket: outgoing commands that carry a packet, one per message (only
// a fragmented message's first fragment counts). Protocol commands (ping,
// disconnect) carry none. -1 for no such peer.
long sg_queued(sg_host *s, enet_uint32 id) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL) {
		return -1;
	}
	long n = 0;
	for (ENetListIterator it = enet_list_begin(&p->outgoingCommands); it != enet_list_end(&p->outgoingCommands); it = enet_list_next(it)) {
		ENetOutgoingCommand *c = (ENetOutgoingCommand *)it;
		if (c->packet != NULL && c->fragmentOffset == 0) {
			n++;
		}
	}
	return n;
}

// ---- test hooks: read state the tests must check, set counters near wrap ----

void sg_set_counters(sg_host *s, sg_counters_t c) {
	s->host->totalSentData = c.sent_data;
	s->host->totalReceivedData = c.received_data;
	s->host->totalSentPackets = c.sent_packets;
	s->host->totalReceivedPackets = c.received_packets;
}

int sg_peer_throttle(sg_host *s, enet_uint32 id, enet_uint32 *throttle, enet_uint32 *decel) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL || p->state != ENET_PEER_STATE_CONNECTED) {
		return -1;
	}
	*throttle = p->packetThrottle;
	*decel = p->packetThrottleDeceleration;
	return 0;
}

// sg_reliable_in_transit is the reliable bytes sent but not yet acknowledged.
long sg_reliable_in_transit(sg_host *s, enet_uint32 id) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL) {
		return -1;
	}
	return (long)p->reliableDataInTransit;
}

// sg_unbatch puts a host back on libenet's own socket I/O. Datagrams read
// ahead are dropped with the ring: call it before traffic.
void sg_unbatch(sg_host *s) {
	sg_io_free(s->io);
	s->io = NULL;
}

// sg_set_peer_port points a peer at another port of its host (0: one the
// kernel refuses to send to).
int sg_set_peer_port(sg_host *s, enet_uint32 id, enet_uint16 port) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL) {
		return -1;
	}
	p->address.port = port;
	return 0;
}

int sg_rcvbuf(sg_host *s) {
	int v = 0;
	socklen_t n = sizeof v;
	if (getsockopt(s->host->socket, SOL_SOCKET, SO_RCVBUF, &v, &n) < 0) {
		return -1;
	}
	return v;
}

// sg_half_open counts the peers in the middle of the connect handshake.
long sg_half_open(sg_host *s) {
	long n = 0;
	for (size_t i = 0; i < s->host->peerCount; i++) {
		if (s->host->peers[i].state == ENET_PEER_STATE_ACKNOWLEDGING_CONNECT) {
			n++;
		}
	}
	return n;
}

// sg_waiting is the bytes ENet holds for a peer: received or being
// reassembled, not yet delivered.
long sg_waiting(sg_host *s, enet_uint32 id) {
	ENetPeer *p = sg_peer(s, id);
	if (p == NULL) {
		return -1;
	}
	return (long)p->totalWaitingData;
}
