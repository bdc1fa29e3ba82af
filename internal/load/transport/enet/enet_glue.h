// enet_glue.h: the C side of package enet's binding on libenet 1.3.17.
// enet.go includes it in its cgo preamble; enet_glue.c implements it. Every
// call takes the sg_host of one Go Host, and the Go goroutine that owns the
// host is the only caller (ENet's threading rule).
#ifndef SCALEGATE_ENET_GLUE_H
#define SCALEGATE_ENET_GLUE_H

#include <stddef.h>

#include <stdint.h>
#include <enet/enet.h>

enum {
	SG_CHANNEL_RELIABLE   = 0,
	SG_CHANNEL_UNRELIABLE = 1,
	SG_CHANNELS           = 2,

	// Throttle: interval, acceleration, deceleration. Deceleration 0 keeps
	// packetThrottle at its maximum, so ENet never sheds unreliable packets.
	SG_THROTTLE_INTERVAL_MS = 5000,
	SG_THROTTLE_ACCEL       = 2,
	SG_THROTTLE_DECEL       = 0,

	// Pings (sg_configure_peer): a peer's interval is SG_PING_BASE_MS plus
	// its slot modulo SG_PING_STEPS times SG_PING_STEP_MS, 450–569 ms (ENet's
	// default is 500 for every peer).
	SG_PING_BASE_MS = 450,
	SG_PING_STEP_MS = 17,
	SG_PING_STEPS   = 8,

	SG_OK        = 0,
	SG_ERR_PEER  = -1, // no such peer, or not connected
	SG_ERR_ALLOC = -2, // enet_packet_create failed
	SG_ERR_SEND  = -3, // enet_peer_send refused the packet

	SG_DRAIN_DONE  = 0, // ENet had no more events
	SG_DRAIN_MORE  = 1, // the event array or payload buffer is full
	SG_DRAIN_ERROR = -1, // enet_host_service reported a socket error

	// A drain gives up after this many oversized datagrams in a row, so a
	// flood cannot hold the owner inside one Service call.
	SG_MAX_DROPS_PER_DRAIN = 256,

	// Connect guard (enet_guard.c): the source table's size (a power of
	// two), how many slots a source may probe, and the most attempts per
	// window a source may be allowed (the ring kept per source).
	SG_GUARD_SLOTS     = 4096,
	SG_GUARD_PROBE     = 8,
	SG_GUARD_MAX_LIMIT = 16,
	// Half-open peers are checked at most this often.
	SG_REAP_EVERY_MS = 50
};

// sg_source is one source address's recent CONNECT datagrams.
typedef struct {
	enet_uint32 ip_be;
	enet_uint16 port;
	enet_uint8  used;
	enet_uint8  n;                      // attempts in at[] (oldest at head)
	enet_uint8  head;
	enet_uint32 at[SG_GUARD_MAX_LIMIT]; // ENet service times, ms
} sg_source;

// sg_guard limits CONNECT datagrams per source address before ENet gives
// them a peer slot, and resets peers left half-open.
typedef struct {
	int           limit;        // attempts per source per window (1..SG_GUARD_MAX_LIMIT)
	enet_uint32   window_ms;
	enet_uint32   half_open_ms; // 0: ENet's own timeouts
	enet_uint32   last_reap;
	enet_uint32  *half_open_since; // per peer slot; 0 = not half-open
	unsigned long dropped;      // CONNECT datagrams dropped by the limit
	unsigned long reaped;       // half-open peers reset
	sg_source     sources[SG_GUARD_SLOTS];
} sg_guard;

// sg_options are the Options fields the C side applies at creation.
typedef struct {
	int         rcvbuf, sndbuf, range_coder;
	enet_uint32 timeout_ms;
	size_t      max_packet;  // largest message reassembled from a peer; 0: ENet's 32 MiB
	size_t      max_waiting; // per-peer bytes received, not yet delivered; 0: ENet's 32 MiB
	int         connect_limit; // 0: no connect guard
	enet_uint32 connect_window_ms, half_open_ms;
	int         stamp_rx;      // stamp received messages (sg_host.stamp_rx)
	int         read_once;     // one socket read per drain (sg_host.read_once)
	int         batch_io;      // sendmmsg/recvmmsg (enet_io.c)
} sg_options;

// sg_io batches one host's socket I/O (enet_io.c); opaque outside it.
typedef struct sg_io sg_io;

// sg_io_stats counts a batching host's system calls and datagrams.
typedef struct {
	unsigned long send_calls, sent, send_dropped; // sendmmsg calls, datagrams queued, refused by the kernel
	unsigned long recv_calls, received;           // recvmmsg calls, datagrams read
} sg_io_stats;

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
	sg_guard   *guard;       // NULL without a connect guard
	size_t      max_packet;  // the receive cap; sends are not limited by it
	// stamp_rx: a dialling host stamps each received message with the
	// kernel's arrival time of the datagram that carried it (SIOCGSTAMPNS,
	// read per datagram in the intercept hook: see sg_stamp_rx). rx_cur is
	// the stamp of the datagram read last (0: unknown).
	int         stamp_rx;
	long long   rx_cur;
	// read_once: a drain reads the socket in one service call and then
	// only dispatches what that read queued (see sg_next); drain_read says
	// the current drain has read it.
	int         read_once, drain_read;
	sg_io      *io;          // NULL: libenet's own one-call-per-datagram I/O
} sg_host;

// sg_event is one event flattened for Go; the payload is buf[off:off+len].
typedef struct {
	int         kind;
	enet_uint32 peer;
	enet_uint32 data;
	enet_uint32 channel;
	enet_uint32 off;
	enet_uint32 len;
	long long   rx_ns; // CLOCK_REALTIME arrival (stamp_rx hosts, receives); 0: unknown
} sg_event;

typedef struct {
	enet_uint32 sent_data, received_data, sent_packets, received_packets;
} sg_counters_t;

// sg_batch_item is one client host of a batched send-and-service (sg_batch).
// The host is held as an integer: Go checks every pointer field of an array
// it passes to C (cgocheck), which for a pointer field meant walking all the
// items on every call (cgoCheckArg and inHeapOrStack: 140 of 14,306 perf
// samples of the swarm at 256 clients, ≈ 1 %).
typedef struct {
	uintptr_t   host;               // the sg_host, or 0 for a host closed before the call
	enet_uint32 peer;
	enet_uint32 send_off, send_len; // in: an unreliable message in the send buffer (len 0: none)
	int         send_rc;            // out: sg_send's result
	int         first, count;       // out: its events, evs[first:first+count]
	int         status, err;        // out: SG_DRAIN_* and errno of its drain
	long long   at_ns;              // out: CLOCK_MONOTONIC when its turn began
} sg_batch_item;

// Lifecycle and addresses.
sg_host *sg_create(int bind, enet_uint32 ip_be, enet_uint16 port, size_t peers, const sg_options *o, int *err);
void sg_destroy(sg_host *s);
int sg_local(sg_host *s, enet_uint32 *ip_be, enet_uint16 *port);

// I/O: a batched, non-blocking drain and queued sends.
int sg_drain(sg_host *s, sg_event *evs, int max, unsigned char *buf, size_t cap);
int sg_send(sg_host *s, enet_uint32 id, int reliable, const void *data, size_t len);
void sg_flush(sg_host *s);
int sg_batch(sg_batch_item *items, int from, int n, const unsigned char *sends,
             sg_event *evs, int max_evs, unsigned char *buf, size_t cap);

// Peers.
long sg_connect(sg_host *s, enet_uint32 ip_be, enet_uint16 port, enet_uint32 data);
int sg_disconnect(sg_host *s, enet_uint32 id, enet_uint32 reason);
enet_uint32 sg_rtt(sg_host *s, enet_uint32 id);
enet_uint32 sg_ping_interval(sg_host *s, enet_uint32 id);
// sg_link reads a connected peer's smoothed RTT (ms) and ENet's packet loss
// estimate (scaled by ENET_PEER_PACKET_LOSS_SCALE); -1 if not connected.
int sg_link(sg_host *s, enet_uint32 id, enet_uint32 *rtt, enet_uint32 *loss);
int sg_peer_addr(sg_host *s, enet_uint32 id, enet_uint32 *ip_be, enet_uint16 *port);
long sg_queued(sg_host *s, enet_uint32 id);

// Batched socket I/O (enet_io.c). sg_io_begin opens io's batch on this
// thread (NULL: nothing to open); sg_io_end writes what was queued, closes
// it and returns a send error (errno) or 0.
sg_io *sg_io_new(ENetHost *h);
void sg_io_free(sg_io *io);
void sg_io_begin(sg_io *io);
int sg_io_end(sg_io *io);
sg_io_stats sg_io_read_stats(const sg_io *io);

// Host counters.
sg_counters_t sg_counters(sg_host *s);

// The intercept hook (enet_guard.c): per-datagram receive stamps
// (sg_stamp_rx, enet_glue.c) and the connect guard.
int ENET_CALLBACK sg_intercept(ENetHost *host, ENetEvent *event);
void sg_stamp_rx(sg_host *s);

// Connect guard (enet_guard.c).
int sg_guard_init(sg_host *s, const sg_options *o);
void sg_guard_free(sg_host *s);
int sg_is_connect(const enet_uint8 *data, size_t len, int checksum);
void sg_reap_half_open(sg_host *s);
void sg_guard_enter(sg_host *s);
void sg_guard_leave(void);
unsigned long sg_guard_dropped(sg_host *s);
unsigned long sg_guard_reaped(sg_host *s);

// Test hooks: read state the tests must check, set counters near wrap.
void sg_set_counters(sg_host *s, sg_counters_t c);
int sg_peer_throttle(sg_host *s, enet_uint32 id, enet_uint32 *throttle, enet_uint32 *decel);
long sg_reliable_in_transit(sg_host *s, enet_uint32 id);
int sg_rcvbuf(sg_host *s);
void sg_unbatch(sg_host *s);
int sg_set_peer_port(sg_host *s, enet_uint32 id, enet_uint16 port);
long sg_half_open(sg_host *s);
long sg_waiting(sg_host *s, enet_uint32 id);

#endif // SCALEGATE_ENET_GLUE_H
