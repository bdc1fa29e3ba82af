/*
 * decbench: times sgdelta.c, the C decoder of enetbench's C11d leg, on the
 * streams BenchmarkRingDecodeOwnBodies times the Go decoder on, in the same
 * order: per pass every client's ring is emptied (its storage kept), then
 * tick by tick each client decodes its own body against its own ring
 * through one decoder. It prints ns per client-snapshot, as the Go
 * benchmark's ns/client-snapshot.
 *
 *	go test -run '^$' -bench 'RingDecodeOwnBodies$' -benchtime 1x \
 *	    ./internal/wire/snapshot -args -ringcorpus /tmp/ringcorpus.bin
 *	gcc -O2 -o /tmp/decbench tools/enetbench/decbench.c tools/enetbench/sgdelta.c -lzstd
 *	/tmp/decbench /tmp/ringcorpus.bin [SECONDS]
 *
 * It exits non-zero if any body fails to decode or a delta is not decoded
 * as one, so a figure always stands for the whole stream decoded.
 */
#include "sgdelta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
	uint8_t flags;
	uint32_t len;
	const uint8_t *body;
} body;

static uint32_t le32(const uint8_t *b) { return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24; }

static double now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* load reads the corpus at path into *buf and indexes it; it returns 0 and
 * says why on a file that is not one. */
static int load(const char *path, uint8_t **buf, body **bodies, uint32_t *clients, uint32_t *ticks) {
	FILE *f = fopen(path, "rb");
	if (f == NULL) return perror(path), 0;
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	if (size < 0) return fprintf(stderr, "%s: not a regular file\n", path), fclose(f), 0;
	rewind(f);
	*buf = malloc((size_t)size);
	if (*buf == NULL || fread(*buf, 1, (size_t)size, f) != (size_t)size) return fprintf(stderr, "%s: read failed\n", path), fclose(f), 0;
	fclose(f);
	const uint8_t *p = *buf, *end = *buf + size;
	if (size < 13 || memcmp(p, "sgrc1", 5) != 0) return fprintf(stderr, "%s: not a ring corpus (no sgrc1 header)\n", path), 0;
	*clients = le32(p + 5), *ticks = le32(p + 9);
	p += 13;
	*bodies = calloc((size_t)*clients * *ticks, sizeof **bodies);
	if (*bodies == NULL) return fprintf(stderr, "%s: %u×%u bodies: out of memory\n", path, *clients, *ticks), 0;
	for (size_t i = 0; i < (size_t)*clients * *ticks; i++) {
		if (end - p < 5) return fprintf(stderr, "%s: truncated at body %zu\n", path, i), 0;
		body *b = &(*bodies)[i];
		b->flags = p[0], b->len = le32(p + 1), p += 5;
		if ((size_t)(end - p) < b->len) return fprintf(stderr, "%s: body %zu: %u bytes, %td left\n", path, i, b->len, end - p), 0;
		b->body = p, p += b->len;
	}
	if (p != end) return fprintf(stderr, "%s: %td bytes after the last body\n", path, end - p), 0;
	return 1;
}

/* pass decodes every stream once, rings emptied first; the number of
 * deltas, or −1 after saying which body failed. */
static long pass(sgd_decoder *d, sgd_ring *rings, const body *bodies, uint32_t clients, uint32_t ticks) {
	long deltas = 0;
	for (uint32_t i = 0; i < clients; i++) {
		for (int k = 0; k < SGD_RING; k++) rings[i].v[k].valid = 0;
		rings[i].next = 0;
	}
	for (uint32_t t = 0; t < ticks; t++) {
		for (uint32_t i = 0; i < clients; i++) {
			const body *b = &bodies[(size_t)i * ticks + t];
			int delta;
			if (sgd_decode(d, b->flags, b->body, b->len, t + 1, &rings[i], &delta) != 3) {
				fprintf(stderr, "decbench: client %u, tick %u: decode failed\n", i, t + 1);
				return -1;
			}
			deltas += delta;
		}
	}
	return deltas;
}

int main(int argc, char **argv) {
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: decbench CORPUS [SECONDS]\n");
		return 2;
	}
	double secs = argc == 3 ? atof(argv[2]) : 1.0;
	uint8_t *buf;
	body *bodies;
	uint32_t clients, ticks;
	if (!load(argv[1], &buf, &bodies, &clients, &ticks)) return 1;
	sgd_decoder *d = sgd_new();
	sgd_ring *rings = calloc(clients, sizeof *rings);
	if (d == NULL || rings == NULL) return fprintf(stderr, "decbench: out of memory\n"), 1;
	long deltas = pass(d, rings, bodies, clients, ticks); /* storage grows once, untimed */
	if (deltas < 0) return 1;
	/* Every body after the first two ticks is a delta (acknowledged two ticks
	 * before): a corpus that decodes as full bodies would time other work. */
	if (deltas != (long)clients * (ticks - 2)) {
		fprintf(stderr, "decbench: %ld deltas, want %ld\n", deltas, (long)clients * (ticks - 2));
		return 1;
	}
	long passes = 0;
	double start = now(), el;
	do {
		if (pass(d, rings, bodies, clients, ticks) < 0) return 1;
		passes++;
		el = now() - start;
	} while (el < secs);
	printf("decbench %u clients × %u ticks, %ld passes: %.0f ns/client-snapshot (%ld deltas a pass)\n", clients, ticks, passes,
	       el * 1e9 / ((double)passes * clients * ticks), deltas);
	for (uint32_t i = 0; i < clients; i++) sgd_ring_free(&rings[i]);
	free(rings), sgd_free(d), free(bodies), free(buf);
	return 0;
}
