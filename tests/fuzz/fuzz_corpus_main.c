// SPDX-License-Identifier: MIT
/*
 * Deterministic driver for the fuzz harness (no libFuzzer): every valid
 * sample message, all its truncations, and a fixed-seed stream of
 * mutations. Runs as fuzz_proto_corpus_test in every `bazel test //...`.
 *
 *	fuzz_proto_corpus_test [SEED_DIR]
 * With SEED_DIR, also writes the valid samples there as a libFuzzer seed
 * corpus.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/proto/rd_proto.h"
#include "lib/proto/rd_proto_testutil.h"
#include "tests/fuzz/fuzz_proto.h"

#define NMUTATIONS 20000
#define NSAMPLES   (2 * (RD_MSG_TYPE_MAX - 1) + 3)

struct sample {
	uint8_t b[RD_CTRL_MAX];
	size_t n;
};

static struct sample samples[NSAMPLES];
static size_t nsamples;
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Run the harness on an exact-size heap copy, so ASan sees overreads. */
static void run(const uint8_t *p, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);

	if (!copy) {
		fprintf(stderr, "fuzz_corpus: out of memory\n");
		exit(1);
	}
	if (n)
		memcpy(copy, p, n);
	LLVMFuzzerTestOneInput(copy, n);
	free(copy);
}

static void build_samples(void)
{
	struct rd_cm_req req = {.ver_min = 1, .ver_max = 1, .ctrl_depth = 16};
	struct rd_cm_rep rep = {.version = 1, .ctrl_depth = 16};
	struct rd_cm_rej rej = {RD_REJ_AUTH, 1, 1};
	struct rd_msg m;
	uint8_t t;
	int v, n;

	for (t = 1; t < RD_MSG_TYPE_MAX; t++) {
		if (t == RD_MSG_TLS)
			continue; /* not a message: TLS frames are refused by the decoder */
		for (v = 0; v < 2; v++) {
			if (!rd_msg_sample(&m, t, v))
				abort();
			n = rd_msg_encode(samples[nsamples].b, RD_CTRL_MAX, &m);
			if (n < 0) {
				fprintf(stderr, "fuzz_corpus: cannot encode %s/%d\n",
					rd_msg_type_name(t), v);
				exit(1);
			}
			samples[nsamples++].n = (size_t)n;
		}
	}
	rd_cm_req_encode(samples[nsamples].b, &req);
	samples[nsamples++].n = RD_CM_REQ_LEN;
	rd_cm_rep_encode(samples[nsamples].b, &rep);
	samples[nsamples++].n = RD_CM_REP_LEN;
	rd_cm_rej_encode(samples[nsamples].b, &rej);
	samples[nsamples++].n = RD_CM_REJ_LEN;
}

static int write_seeds(const char *dir)
{
	char path[4096];
	FILE *f;
	size_t i;

	for (i = 0; i < nsamples; i++) {
		snprintf(path, sizeof(path), "%s/seed-%02zu", dir, i);
		f = fopen(path, "wb");
		if (!f || fwrite(samples[i].b, 1, samples[i].n, f) != samples[i].n) {
			perror(path);
			if (f)
				fclose(f);
			return 1;
		}
		fclose(f);
	}
	printf("wrote %zu seeds to %s\n", nsamples, dir);
	return 0;
}

static const uint16_t interesting[] = {0,     1,     2,	     0x7f,   0x80,   0xff,   0x100,
				       0x400, 0x401, 0x1000, 0x1001, 0x3ff8, 0x7fff, 0xffff};

/* One random edit of b[0..*n), keeping *n <= RD_CTRL_MAX + 8. */
static void mutate(uint8_t *b, size_t *n)
{
	size_t cap = RD_CTRL_MAX + 8, at, len;
	uint16_t v;

	at = *n ? next() % *n : 0;
	switch (next() % 7) {
	case 0: /* flip a bit */
		if (*n)
			b[at] ^= (uint8_t)(1u << (next() % 8));
		break;
	case 1: /* random byte */
		if (*n)
			b[at] = (uint8_t)next();
		break;
	case 2: /* interesting u16 (lengths, counts) */
		if (*n >= 2) {
			at = next() % (*n - 1);
			v = interesting[next() % (sizeof(interesting) / sizeof(interesting[0]))];
			b[at] = (uint8_t)(v >> 8);
			b[at + 1] = (uint8_t)v;
		}
		break;
	case 3: /* truncate */
		*n = at;
		break;
	case 4: /* append random bytes */
		len = next() % 16;
		while (len-- && *n < cap)
			b[(*n)++] = (uint8_t)next();
		break;
	case 5: /* delete a range */
		len = *n - at ? next() % (*n - at) : 0;
		memmove(b + at, b + at + len, *n - at - len);
		*n -= len;
		break;
	default: /* set the type byte */
		if (*n)
			b[0] = (uint8_t)(next() % (RD_MSG_TYPE_MAX + 2));
		break;
	}
}

int main(int argc, char **argv)
{
	static uint8_t buf[RD_CTRL_MAX + 8];
	size_t i, n, k, edits;

	build_samples();
	if (argc > 1)
		return write_seeds(argv[1]);
	for (i = 0; i < nsamples; i++) {
		for (n = 0; n <= samples[i].n; n++)
			run(samples[i].b, n);
	}
	for (k = 0; k < NMUTATIONS; k++) {
		i = next() % nsamples;
		n = samples[i].n;
		memcpy(buf, samples[i].b, n);
		edits = 1 + next() % 4;
		while (edits--)
			mutate(buf, &n);
		run(buf, n);
	}
	printf("fuzz_corpus: %zu samples, their truncations and %d mutations: ok\n", nsamples,
	       NMUTATIONS);
	return 0;
}
