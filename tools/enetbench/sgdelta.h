/*
 * sgdelta: an sg-entities/3 client decoder in C (docs/snapshot-format.md,
 * "Version 3"), so that enetbench can do what the Go swarm does with every
 * snapshot of a delta server: decode it against its baseline ring, check
 * its state_hash, keep its view, and acknowledge it. It applies the Go
 * decoder's fast-path rules (the baseline held, the stream's length and
 * prefixes, each code's range, one form per content, type non-zero, the
 * unit quaternion, the hash over every decoded state) except two: an exact
 * quaternion tie, which needs the float computation, is let through, and
 * an event is only checked for its kind and a non-zero id. It does not
 * name its errors; the swarm's reference path does that.
 */
#ifndef SGDELTA_H
#define SGDELTA_H

#include <stddef.h>
#include <stdint.h>

enum { SGD_RING = 32 };

/* sgd_state is one entity's version-3 codes; tick is the snapshot that
 * last carried it (in a view). */
typedef struct {
	uint32_t id, pos[3], quat, tick;
	uint16_t vel[3];
	uint8_t type, flags, age;
} sgd_state;

typedef struct {
	uint32_t tick;
	int valid;
	sgd_state *s;
	size_t n, cap;
} sgd_view;

/* sgd_ring is one client's baselines: the views of the last SGD_RING
 * snapshots it decoded. Zeroed, it is empty. */
typedef struct {
	sgd_view v[SGD_RING];
	int next;
} sgd_ring;

/* sgd_decoder is the scratch one loop shares between its clients. */
typedef struct sgd_decoder sgd_decoder;

sgd_decoder *sgd_new(void);
void sgd_free(sgd_decoder *d);
void sgd_ring_free(sgd_ring *r);

/* sgd_decode decodes the body of the snapshot of tick (flags: the
 * envelope's, bit 1 cleared) against r, which it updates. It returns the
 * body's version (3, or 1/2 for a full body it does not decode) or −1 on a
 * decode error, leaving r as it was; *delta says a version-3 body was a
 * delta. */
int sgd_decode(sgd_decoder *d, uint8_t flags, const uint8_t *body, size_t len, uint32_t tick, sgd_ring *r,
               int *delta);

#endif
