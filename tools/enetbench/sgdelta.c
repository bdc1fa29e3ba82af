/*
 * sgdelta.c: the sg-entities/3 client decoder of sgdelta.h, written from
 * docs/snapshot-format.md ("Version 3") the way a C game client would: one
 * pass over the entity section through a 64-bit window, each entity coded
 * against its base state found by a merge walk over the (sorted) base
 * view, the hash folded as it goes, then the view merge.
 */
#include "sgdelta.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

enum {
	HEADER = 13,
	EVENT = 11,
	EV_DESPAWN = 1,
	VIEW_KEEP = 240,
	MAX_VIEW = 2048,
	K_GAP = 3, K_AGE = 2, K_POS = 1, K_VEL = 1, K_QUAT = 1,
	M_POS = 1, M_VEL = 2, M_QUAT = 4, M_META = 8,
	PAD = 128, /* zero bytes after the section's copy: a window never reads past them */
	RAW_MAX = 1 << 20,
};

static const unsigned pos_bits[3] = {21, 17, 21};

struct sgd_decoder {
	ZSTD_DCtx *z;
	uint8_t *raw;   /* a decompressed body */
	uint8_t *sec;   /* the entity section, zero-padded */
	size_t sec_cap;
	sgd_state *msg; /* the states the body carried */
	size_t msg_cap;
	sgd_state *out; /* the view being built */
	size_t out_cap;
	uint32_t *despawn;
	size_t ndespawn, despawn_cap;
};

sgd_decoder *sgd_new(void) {
	sgd_decoder *d = calloc(1, sizeof *d);
	if (d == NULL) return NULL;
	d->z = ZSTD_createDCtx();
	d->raw = malloc(RAW_MAX);
	if (d->z == NULL || d->raw == NULL) {
		sgd_free(d);
		return NULL;
	}
	return d;
}

void sgd_free(sgd_decoder *d) {
	if (d == NULL) return;
	ZSTD_freeDCtx(d->z);
	free(d->raw), free(d->sec), free(d->msg), free(d->out), free(d->despawn);
	free(d);
}

void sgd_ring_free(sgd_ring *r) {
	for (int i = 0; i < SGD_RING; i++) free(r->v[i].s);
	memset(r, 0, sizeof *r);
}

/* grow makes *p hold n elements of size sz; 0 when out of memory. */
static int grow(void **p, size_t *cap, size_t n, size_t sz) {
	if (n <= *cap) return 1;
	size_t c = n + n / 4 + 16;
	void *q = realloc(*p, c * sz);
	if (q == NULL) return 0;
	*p = q, *cap = c;
	return 1;
}

static uint16_t u16(const uint8_t *b) { return (uint16_t)(b[0] | b[1] << 8); }
static uint32_t u32(const uint8_t *b) { uint32_t v; memcpy(&v, b, 4); return v; }

/* peek returns at least 57 bits of the padded section from bit pos. */
static inline uint64_t peek(const uint8_t *b, uint64_t pos) {
	uint64_t w;
	memcpy(&w, b + (pos >> 3), 8);
	return w >> (pos & 7);
}

/* fixed reads n ≤ 32 bits at *pos. */
static inline uint32_t fixed(const uint8_t *b, uint64_t *pos, unsigned n) {
	uint32_t v = (uint32_t)(peek(b, *pos) & ((1ULL << n) - 1));
	*pos += n;
	return v;
}

/* eg reads an order-k Exp-Golomb code at *pos (LSB first: z zero bits, a
 * one, then the low z+k bits of u + 2^k); 0 for a prefix of over 32 − k
 * zeros, which no field can have. */
static inline int eg(const uint8_t *b, uint64_t *pos, unsigned k, uint64_t *u) {
	uint64_t w = peek(b, *pos);
	if (w == 0) return 0;
	unsigned z = (unsigned)__builtin_ctzll(w);
	if (z > 32 - k) return 0;
	unsigned m = z + k;
	uint64_t v;
	if (2 * z + 1 + k <= 57) {
		v = (w >> (z + 1)) & ((1ULL << m) - 1);
	} else {
		v = peek(b, *pos + z + 1) & ((1ULL << m) - 1);
	}
	*pos += 2 * z + 1 + k;
	*u = ((1ULL << m) | v) - (1ULL << k);
	return 1;
}

static inline int64_t unzigzag(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }

/* floor_div120 is ⌊a / 120⌋ for the predictions' range. */
static inline int64_t floor_div120(int64_t a) {
	int64_t q = a / 120;
	return (a % 120 != 0 && a < 0) ? q - 1 : q;
}

static inline int64_t predict(const sgd_state *s, int k, uint32_t dt) {
	int64_t v = (int64_t)s->vel[k] - 8192;
	return (int64_t)s->pos[k] + floor_div120(2 * v * (int64_t)dt + 60);
}

/* quat_ok is version 2's unit-quaternion rule on the three codes (exact
 * ties, which need the float computation, are let through). */
static inline int quat_ok(uint32_t q) {
	int k0 = abs((int)(q >> 20 & 1023) - 511), k1 = abs((int)(q >> 10 & 1023) - 511), k2 = abs((int)(q & 1023) - 511);
	int m = k0 > k1 ? k0 : k1;
	if (k2 > m) m = k2;
	if (m <= 4) return 1;
	int rest = 2 * 511 * 511 - (k0 * k0 + k1 * k1 + k2 * k2), dd = m - 4;
	return rest >= 0 && dd * dd <= rest;
}

static inline uint64_t mix(uint64_t h, uint64_t x) {
	h = (h ^ x) * 0x100000001b3ULL;
	return h ^ h >> 29;
}

static inline uint64_t hash_state(uint64_t h, const sgd_state *s) {
	h = mix(h, s->id | (uint64_t)s->pos[0] << 32);
	h = mix(h, s->pos[1] | (uint64_t)s->pos[2] << 32);
	h = mix(h, s->quat | (uint64_t)s->vel[0] << 32 | (uint64_t)s->vel[1] << 48);
	return mix(h, s->vel[2] | (uint64_t)s->type << 16 | (uint64_t)s->flags << 24 | (uint64_t)s->age << 32);
}

static void read_full(const uint8_t *b, uint64_t *pos, sgd_state *s) {
	for (int k = 0; k < 3; k++) s->pos[k] = fixed(b, pos, pos_bits[k]);
	s->quat = fixed(b, pos, 32);
	for (int k = 0; k < 3; k++) s->vel[k] = (uint16_t)fixed(b, pos, 14);
	s->type = (uint8_t)fixed(b, pos, 8);
	s->flags = (uint8_t)fixed(b, pos, 3);
}

/* read_delta reads s against base; 0 for a code out of range or a field
 * flagged changed that did not (an encoding has one form). */
static int read_delta(const uint8_t *b, uint64_t *pos, const sgd_state *base, sgd_state *s, uint32_t tick) {
	uint32_t mask = fixed(b, pos, 4);
	uint32_t dt = tick - base->tick;
	uint64_t u, sent = 0;
	for (int k = 0; k < 3; k++) {
		int64_t p = predict(base, k, dt);
		if (mask & M_POS) {
			if (!eg(b, pos, K_POS, &u)) return 0;
			p += unzigzag(u), sent |= u;
		}
		if (p < 0 || p >= (1LL << pos_bits[k])) return 0;
		s->pos[k] = (uint32_t)p;
	}
	if ((mask & M_POS) && sent == 0) return 0;
	memcpy(s->vel, base->vel, sizeof s->vel);
	if (mask & M_VEL) {
		sent = 0;
		for (int k = 0; k < 3; k++) {
			if (!eg(b, pos, K_VEL, &u)) return 0;
			int64_t v = base->vel[k] + unzigzag(u);
			if (v < 0 || v >= 1 << 14) return 0;
			s->vel[k] = (uint16_t)v, sent |= u;
		}
		if (sent == 0) return 0;
	}
	s->quat = base->quat;
	if (mask & M_QUAT) {
		if (fixed(b, pos, 1) == 0) {
			s->quat = fixed(b, pos, 32);
			if (s->quat >> 30 == base->quat >> 30) return 0;
		} else {
			uint32_t q = base->quat & ~((1u << 30) - 1);
			for (int sh = 20; sh >= 0; sh -= 10) {
				if (!eg(b, pos, K_QUAT, &u)) return 0;
				int64_t c = (int64_t)(base->quat >> sh & 1023) + unzigzag(u);
				if (c < 0 || c > 1023) return 0;
				q |= (uint32_t)c << sh;
			}
			if (q == base->quat) return 0;
			s->quat = q;
		}
	}
	s->type = base->type, s->flags = base->flags;
	if (mask & M_META) {
		s->type = (uint8_t)fixed(b, pos, 8);
		s->flags = (uint8_t)fixed(b, pos, 3);
		if (s->type == base->type && s->flags == base->flags) return 0;
	}
	return 1;
}

static int despawned(const sgd_decoder *d, uint32_t id) {
	for (size_t i = 0; i < d->ndespawn; i++)
		if (d->despawn[i] == id) return 1;
	return 0;
}

/* keep_run appends the base states of run that neither expired nor were
 * despawned (the doc's merge rule). */
static size_t keep_run(const sgd_decoder *d, sgd_state *dst, size_t n, const sgd_state *run, size_t len,
                       uint32_t tick) {
	for (size_t k = 0; k < len; k++) {
		if (tick - run[k].tick < VIEW_KEEP && (d->ndespawn == 0 || !despawned(d, run[k].id))) dst[n++] = run[k];
	}
	return n;
}

/* merge builds d->out, the view after the snapshot of tick: base minus
 * what the message carried, despawned or expired, plus the message's
 * states stamped with tick; beyond MAX_VIEW, the message's alone. */
static size_t merge(sgd_decoder *d, const sgd_state *base, size_t nbase, size_t nmsg, uint32_t tick) {
	sgd_state *out = d->out;
	size_t n = 0, i = 0;
	for (size_t j = 0; j < nmsg; j++) {
		size_t k = i;
		while (k < nbase && base[k].id < d->msg[j].id) k++;
		n = keep_run(d, out, n, base + i, k - i, tick);
		i = k;
		if (i < nbase && base[i].id == d->msg[j].id) i++;
		if (d->ndespawn == 0 || !despawned(d, d->msg[j].id)) {
			out[n] = d->msg[j];
			out[n].tick = tick, out[n].age = 0;
			n++;
		}
	}
	n = keep_run(d, out, n, base + i, nbase - i, tick);
	if (n > MAX_VIEW) {
		n = 0;
		for (size_t j = 0; j < nmsg; j++) {
			if (despawned(d, d->msg[j].id)) continue;
			out[n] = d->msg[j];
			out[n].tick = tick, out[n].age = 0;
			n++;
		}
	}
	return n;
}

static sgd_view *find(sgd_ring *r, uint32_t tick) {
	for (int i = 0; i < SGD_RING; i++)
		if (r->v[i].valid && r->v[i].tick == tick) return &r->v[i];
	return NULL;
}

/* push stores d->out (n states) as the view of tick; the slot's old
 * storage becomes the next build's. */
static void push(sgd_decoder *d, sgd_ring *r, uint32_t tick, size_t n) {
	sgd_view *slot = find(r, tick);
	if (slot == NULL) slot = &r->v[r->next], r->next = (r->next + 1) % SGD_RING;
	sgd_state *old = slot->s;
	size_t old_cap = slot->cap;
	slot->s = d->out, slot->cap = d->out_cap, slot->n = n, slot->tick = tick, slot->valid = 1;
	d->out = old, d->out_cap = old_cap;
}

/* states decodes the n states of the padded section (bits bits long)
 * against base into d->msg and returns whether they decoded and hash to
 * want. */
static int states(sgd_decoder *d, uint64_t bits, size_t n, const sgd_state *base, size_t nbase, uint32_t tick,
                  uint32_t want) {
	const uint8_t *b = d->sec;
	uint64_t pos = 0, h = 0xcbf29ce484222325ULL ^ tick ^ (uint64_t)n << 32, prev = 0, gap, age;
	size_t bi = 0;
	for (size_t i = 0; i < n; i++) {
		if (!eg(b, &pos, K_GAP, &gap) || !eg(b, &pos, K_AGE, &age)) return 0;
		uint64_t id = prev + gap + 1;
		if (id > UINT32_MAX || age > 255) return 0;
		sgd_state *s = &d->msg[i];
		s->id = (uint32_t)id, s->age = (uint8_t)age, s->tick = 0;
		while (bi < nbase && base[bi].id < id) bi++;
		if (bi < nbase && base[bi].id == id) {
			if (!read_delta(b, &pos, &base[bi], s, tick)) return 0;
			bi++;
		} else {
			read_full(b, &pos, s);
		}
		if (pos > bits || s->type == 0 || !quat_ok(s->quat)) return 0;
		h = hash_state(h, s);
		prev = id;
	}
	/* The section ends with under a byte of zero bits. */
	if (bits - pos >= 8 || peek(b, pos) != 0) return 0;
	return ((uint32_t)h ^ (uint32_t)(h >> 32)) == want;
}

int sgd_decode(sgd_decoder *d, uint8_t flags, const uint8_t *body, size_t len, uint32_t tick, sgd_ring *r,
               int *delta) {
	*delta = 0;
	if (flags & ~1u) return -1;
	if (flags & 1) {
		size_t got = ZSTD_decompressDCtx(d->z, d->raw, RAW_MAX, body, len);
		if (ZSTD_isError(got)) return -1;
		body = d->raw, len = got;
	}
	if (len == 0) return -1;
	if (body[0] != 3) return body[0] == 1 || body[0] == 2 ? body[0] : -1;
	if (len < HEADER) return -1;
	uint16_t back = u16(body + 1);
	uint32_t want = u32(body + 3);
	size_t n = u16(body + 7), nev = u16(body + 9), pad = u16(body + 11);
	if (HEADER + nev * EVENT + pad > len) return -1;
	size_t sec_len = len - HEADER - nev * EVENT - pad;
	const sgd_state *base = NULL;
	size_t nbase = 0;
	if (back > 0) {
		sgd_view *v = find(r, tick - back);
		if (v == NULL) return -1;
		base = v->s, nbase = v->n;
	}
	if (!grow((void **)&d->sec, &d->sec_cap, sec_len + PAD, 1) || !grow((void **)&d->msg, &d->msg_cap, n, sizeof *d->msg) ||
	    !grow((void **)&d->out, &d->out_cap, nbase + n, sizeof *d->out) ||
	    !grow((void **)&d->despawn, &d->despawn_cap, nev, sizeof *d->despawn))
		return -1;
	memcpy(d->sec, body + HEADER, sec_len);
	memset(d->sec + sec_len, 0, PAD);
	const uint8_t *ev = body + HEADER + sec_len;
	d->ndespawn = 0;
	for (size_t i = 0; i < nev; i++) {
		uint8_t kind = ev[i * EVENT];
		uint32_t id = u32(ev + i * EVENT + 1);
		if (kind < 1 || kind > 4 || id == 0) return -1;
		if (kind == EV_DESPAWN) d->despawn[d->ndespawn++] = id;
	}
	if (!states(d, (uint64_t)sec_len * 8, n, base, nbase, tick, want)) return -1;
	push(d, r, tick, merge(d, base, nbase, n, tick));
	*delta = back > 0;
	return 3;
}
