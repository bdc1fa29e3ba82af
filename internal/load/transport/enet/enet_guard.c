//go:build cgo

// enet_guard.c keeps connect floods from taking ENet's peer slots.
//
// ENet gives a peer slot to every CONNECT command it receives and holds it
// in ACKNOWLEDGING_CONNECT until the handshake completes or its reliable
// VERIFY_CONNECT times out (25-30 s with ENet's defaults). The application
// hears of a peer only when the handshake completes, so its admission
// limits never see a half-open one: 400 forged 52-byte CONNECTs from one
// socket filled every slot and locked new clients out for half a minute.
//
// Two defences, both before the application is involved:
//   - ENet's intercept hook sees every datagram before ENet parses it. A
//     CONNECT datagram (peer id 0xFFF, first command CONNECT) from a source
//     address (ip:port) that already sent `limit` of them within the
//     window is dropped, so it never takes a slot. Every attempt counts,
//     dropped ones too, so a source that keeps flooding stays shut out. A
//     real client sends one CONNECT (plus a retransmit every few hundred
//     ms until answered) from its own socket, so it is never near the limit.
//   - A peer still half-open after half_open_ms is reset. A completed
//     handshake on loopback takes well under a millisecond; this bounds
//     what a flood from many source addresses can hold.
#include <stdlib.h>
#include <string.h>

#include "enet_glue.h"

// sg_current is the host being drained on this thread: ENet's intercept
// callback gets the ENetHost, which has no user-data field, so sg_drain
// names the sg_host here for the duration of its own call (a cgo call runs
// on one thread from start to end).
static __thread sg_host *sg_current;


int sg_guard_init(sg_host *s, const sg_options *o) {
	if (o->connect_limit <= 0) {
		return 0;
	}
	sg_guard *g = calloc(1, sizeof *g);
	if (g == NULL) {
		return -1;
	}
	g->half_open_since = calloc(s->host->peerCount, sizeof *g->half_open_since);
	if (g->half_open_since == NULL) {
		free(g);
		return -1;
	}
	g->limit = o->connect_limit > SG_GUARD_MAX_LIMIT ? SG_GUARD_MAX_LIMIT : o->connect_limit;
	g->window_ms = o->connect_window_ms > 0 ? o->connect_window_ms : 1;
	g->half_open_ms = o->half_open_ms;
	s->guard = g;
	s->host->intercept = sg_intercept;
	return 0;
}

void sg_guard_free(sg_host *s) {
	if (s->guard == NULL) {
		return;
	}
	if (!s->stamp_rx) {
		s->host->intercept = NULL;
	}
	free(s->guard->half_open_since);
	free(s->guard);
	s->guard = NULL;
}

void sg_guard_enter(sg_host *s) { sg_current = s; }

void sg_guard_leave(void) { sg_current = NULL; }

// sg_is_connect reports whether a datagram is one ENet would answer by
// taking a peer slot: addressed to no peer (id 0xFFF) with a whole CONNECT
// as its first command. ENet processes no other command without a peer. A
// compressed one counts too (its command cannot be read before ENet
// decompresses it, and it can only be a CONNECT). checksum says whether the
// host uses ENet's optional 4-byte checksum.
int sg_is_connect(const enet_uint8 *data, size_t len, int checksum) {
	if (len < 2) {
		return 0;
	}
	enet_uint16 id = (enet_uint16)((data[0] << 8) | data[1]);
	enet_uint16 flags = id & ENET_PROTOCOL_HEADER_FLAG_MASK;
	id &= ~(ENET_PROTOCOL_HEADER_FLAG_MASK | ENET_PROTOCOL_HEADER_SESSION_MASK);
	if (id != ENET_PROTOCOL_MAXIMUM_PEER_ID) {
		return 0;
	}
	size_t header = (flags & ENET_PROTOCOL_HEADER_FLAG_SENT_TIME) ? sizeof(ENetProtocolHeader) : 2;
	if (checksum) {
		header += sizeof(enet_uint32);
	}
	if (len < header) {
		return 0;
	}
	if (flags & ENET_PROTOCOL_HEADER_FLAG_COMPRESSED) {
		return 1;
	}
	return len - header >= sizeof(ENetProtocolConnect) &&
	       (data[header] & ENET_PROTOCOL_COMMAND_MASK) == ENET_PROTOCOL_COMMAND_CONNECT;
}

// sg_expire forgets a source's attempts that left the window.
static void sg_expire(sg_source *e, enet_uint32 now, enet_uint32 window) {
	while (e->n > 0 && (enet_uint32)(now - e->at[e->head]) >= window) {
		e->head = (enet_uint8)((e->head + 1) % SG_GUARD_MAX_LIMIT);
		e->n--;
	}
	if (e->n == 0) {
		e->used = 0;
	}
}

// sg_newest is the time of a source's latest attempt.
static enet_uint32 sg_newest(const sg_source *e) {
	return e->at[(e->head + e->n - 1) % SG_GUARD_MAX_LIMIT];
}

// sg_source_of finds addr's entry, or claims a free one among its probe
// slots, or evicts the one there that was quiet longest. The table is
// bounded: a flood from many addresses evicts entries, it never grows it.
static sg_source *sg_source_of(sg_guard *g, const ENetAddress *a, enet_uint32 now) {
	enet_uint32 h = (a->host * 2654435761u) ^ ((enet_uint32)a->port * 40503u);
	sg_source *free_slot = NULL, *victim = NULL;
	for (int i = 0; i < SG_GUARD_PROBE; i++) {
		sg_source *e = &g->sources[(h + (enet_uint32)i) & (SG_GUARD_SLOTS - 1)];
		if (e->used) {
			sg_expire(e, now, g->window_ms);
		}
		if (e->used && e->ip_be == a->host && e->port == a->port) {
			return e;
		}
		if (!e->used) {
			if (free_slot == NULL) {
				free_slot = e;
			}
		} else if (victim == NULL || (enet_uint32)(now - sg_newest(e)) > (enet_uint32)(now - sg_newest(victim))) {
			victim = e;
		}
	}
	sg_source *e = free_slot != NULL ? free_slot : victim;
	memset(e, 0, sizeof *e);
	e->used = 1;
	e->ip_be = a->host;
	e->port = a->port;
	return e;
}

// sg_admit records one CONNECT from addr at now and reports whether it is
// within the source's limit.
static int sg_admit(sg_guard *g, const ENetAddress *a, enet_uint32 now) {
	sg_source *e = sg_source_of(g, a, now);
	int ok = e->n < g->limit;
	if (e->n == SG_GUARD_MAX_LIMIT) { // keep the newest; the oldest is moot
		e->head = (enet_uint8)((e->head + 1) % SG_GUARD_MAX_LIMIT);
		e->n--;
	}
	e->at[(e->head + e->n) % SG_GUARD_MAX_LIMIT] = now;
	e->n++;
	return ok;
}

// sg_intercept is the hook ENet calls with each datagram it reads, before
// parsing it. A stamping host dates what it receives (sg_stamp_rx); a
// guarded one drops CONNECT datagrams over a source's limit. Everything
// else goes on to ENet (return 0).
int ENET_CALLBACK sg_intercept(ENetHost *host, ENetEvent *event) {
	(void)event;
	sg_host *s = sg_current;
	if (s == NULL || s->host != host) {
		return 0;
	}
	if (s->stamp_rx) {
		sg_stamp_rx(s);
	}
	if (s->guard == NULL) {
		return 0;
	}
	if (!sg_is_connect(host->receivedData, host->receivedDataLength, host->checksum != NULL)) {
		return 0;
	}
	if (sg_admit(s->guard, &host->receivedAddress, enet_time_get())) {
		return 0;
	}
	s->guard->dropped++;
	return 1;
}

// sg_reap_half_open resets peers that stayed half-open (ACKNOWLEDGING_CONNECT)
// longer than half_open_ms. ENet never reported them to the application, so
// no event is owed; a real client that was too slow retransmits its
// CONNECT and gets a fresh slot.
void sg_reap_half_open(sg_host *s) {
	sg_guard *g = s->guard;
	if (g == NULL || g->half_open_ms == 0) {
		return;
	}
	enet_uint32 now = enet_time_get() | 1; // 0 means "not half-open"
	if ((enet_uint32)(now - g->last_reap) < SG_REAP_EVERY_MS) {
		return;
	}
	g->last_reap = now;
	for (size_t i = 0; i < s->host->peerCount; i++) {
		ENetPeer *p = &s->host->peers[i];
		if (p->state != ENET_PEER_STATE_ACKNOWLEDGING_CONNECT) {
			g->half_open_since[i] = 0;
		} else if (g->half_open_since[i] == 0) {
			g->half_open_since[i] = now;
		} else if ((enet_uint32)(now - g->half_open_since[i]) >= g->half_open_ms) {
			enet_peer_reset(p);
			g->half_open_since[i] = 0;
			g->reaped++;
		}
	}
}

unsigned long sg_guard_dropped(sg_host *s) { return s->guard != NULL ? s->guard->dropped : 0; }

unsigned long sg_guard_reaped(sg_host *s) { return s->guard != NULL ? s->guard->reaped : 0; }
