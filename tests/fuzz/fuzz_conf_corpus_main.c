// SPDX-License-Identifier: MIT
/*
 * Deterministic driver for the lib/conf fuzz harness (no libFuzzer): the
 * seed files given on the command line (tests/fuzz/conf_corpus and the
 * shipped packaging/conf/rdcpd.conf), every truncation of each, and a
 * fixed-seed stream of mutations, byte-level and line-aware (keys from
 * the key table with awkward values, duplicated and spliced lines, new
 * sections, over-long lines, control bytes). Runs as
 * fuzz_conf_corpus_test in every `bazel test //...`.
 *
 * It also fails if the seeds together do not set every key of the key
 * table, so a new key needs a seed.
 *
 *	fuzz_conf_corpus_test SEED...
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/conf/rd_conf.h"
#include "tests/fuzz/fuzz_conf.h"

#define NMUTATIONS 20000
#define SEEDS_MAX  64
#define CAP	   (64u << 10)

struct seed {
	const char *name;
	char *b;
	size_t n;
};

static struct seed seeds[SEEDS_MAX];
static size_t nseeds;
static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void die(const char *what, const char *name)
{
	fprintf(stderr, "fuzz_conf_corpus: %s: %s\n", name, what);
	exit(1);
}

/* Run the harness on an exact-size heap copy, so ASan sees overreads. */
static void run(const char *p, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);

	if (!copy)
		die("out of memory", "run");
	if (n)
		memcpy(copy, p, n);
	LLVMFuzzerTestOneInput(copy, n);
	free(copy);
}

static void load_seed(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct seed *s = &seeds[nseeds];

	if (!f)
		die("cannot open", path);
	if (nseeds >= SEEDS_MAX)
		die("too many seeds", path);
	s->b = malloc(CAP);
	if (!s->b)
		die("out of memory", path);
	s->n = fread(s->b, 1, CAP, f);
	fclose(f);
	s->name = path;
	nseeds++;
}

/* Every key of the table must be set by some seed. */
static void check_coverage(void)
{
	int covered[RD_CK_COUNT] = {0};
	struct rd_conf *c;
	size_t i;
	int k, m, missing = 0;

	for (i = 0; i < nseeds; i++) {
		c = rd_conf_new(NULL, NULL);
		if (!c)
			die("out of memory", "coverage");
		rd_conf_parse(c, seeds[i].name, seeds[i].b, seeds[i].n);
		for (k = 0; k < RD_CK_COUNT; k++) {
			covered[k] |= rd_conf_key_section(k) == RD_CONF_GLOBAL && c->set[k];
			for (m = 0; m < c->nmods; m++)
				covered[k] |=
				    rd_conf_key_section(k) == RD_CONF_MODULE && c->mods[m]->set[k];
		}
		rd_conf_free(c);
	}
	for (k = 0; k < RD_CK_COUNT; k++) {
		if (!covered[k]) {
			fprintf(stderr, "fuzz_conf_corpus: no seed sets '%s'\n",
				rd_conf_key_name(k));
			missing++;
		}
	}
	if (missing)
		exit(1);
}

static const char *const values[] = {
    "yes",
    "no",
    "0",
    "1",
    "-1",
    "4294967296",
    "18446744073709551616",
    "1T",
    "17T",
    "5m",
    "24h",
    "10.0.0.0/8",
    "::/0",
    "[::1]",
    "::ffff:10.0.0.0/104",
    "10.0.0.0/255.255.0.0",
    "alice:rw, @g:ro, *:deny",
    "/",
    "/srv/x/../y",
    "relative",
    "none",
    "sha256",
    "a:b:c",
    "#",
    " # x",
    ",,,",
    "@",
    "*",
    "[",
    "]",
    "=",
    "rdma",
    "tcp",
    "both",
    "debug",
};

static const char *const sections[] = {"[m]", "[data]", "[..]",	 "[global]", "[a/b]",
				       "[]",  "[ x ]",	"[m] y", "[pub]"};

/* Insert s (len n) at b[at], keeping *n_b <= CAP. */
static void insert(char *b, size_t *nb, size_t at, const char *s, size_t n)
{
	if (*nb + n > CAP)
		n = CAP - *nb;
	memmove(b + at + n, b + at, *nb - at);
	memcpy(b + at, s, n);
	*nb += n;
}

/* The start of the line that holds b[at]. */
static size_t line_start(const char *b, size_t at)
{
	while (at && b[at - 1] != '\n')
		at--;
	return at;
}

static size_t line_end(const char *b, size_t n, size_t at)
{
	while (at < n && b[at] != '\n')
		at++;
	return at < n ? at + 1 : n;
}

static void mutate(char *b, size_t *n)
{
	char line[5000];
	size_t at = *n ? next() % *n : 0, len, s, e, i;
	const char *key;
	const struct seed *o;

	switch (next() % 11) {
	case 0: /* flip a bit */
		if (*n)
			b[at] ^= (char)(1u << (next() % 8));
		break;
	case 1: /* random printable byte */
		if (*n)
			b[at] = (char)(0x20 + next() % 0x5f);
		break;
	case 2: /* truncate */
		*n = at;
		break;
	case 3: /* control bytes, NUL, CR */
		line[0] = "\0\r\x01\x7f\t\n\xff"[next() % 7];
		insert(b, n, at, line, 1);
		break;
	case 4: /* delete a range */
		len = *n - at ? next() % (*n - at) : 0;
		memmove(b + at, b + at + len, *n - at - len);
		*n -= len;
		break;
	case 5: /* a key of the table, oddly spelled, with an awkward value */
		key = rd_conf_key_name((int)(next() % RD_CK_COUNT));
		len = (size_t)snprintf(line, sizeof(line), "%s = %s\n", key,
				       values[next() % (sizeof(values) / sizeof(values[0]))]);
		for (i = 0; i < len && next() % 4 == 0; i++)
			line[i] = (char)toupper((unsigned char)line[i]);
		insert(b, n, line_start(b, at), line, len);
		break;
	case 6: /* duplicate a line */
		s = line_start(b, at);
		e = line_end(b, *n, at);
		len = e - s < sizeof(line) ? e - s : sizeof(line);
		memcpy(line, b + s, len);
		insert(b, n, e, line, len);
		break;
	case 7: /* a new section */
		len = (size_t)snprintf(line, sizeof(line), "%s\n",
				       sections[next() % (sizeof(sections) / sizeof(sections[0]))]);
		insert(b, n, line_start(b, at), line, len);
		break;
	case 8: /* a line around the length limit */
		len = RD_CONF_LINE_MAX - 4 + next() % 8;
		memset(line, 'x', len);
		memcpy(line, "comment = ", 10);
		line[len++] = '\n';
		insert(b, n, line_start(b, at), line, len);
		break;
	case 9: /* splice a line from another seed */
		o = &seeds[next() % nseeds];
		if (!o->n)
			break;
		i = next() % o->n;
		s = line_start(o->b, i);
		e = line_end(o->b, o->n, i);
		len = e - s < sizeof(line) ? e - s : sizeof(line);
		memcpy(line, o->b + s, len);
		insert(b, n, line_start(b, at), line, len);
		break;
	default: /* delete a line */
		s = line_start(b, at);
		e = line_end(b, *n, at);
		memmove(b + s, b + e, *n - e);
		*n -= e - s;
		break;
	}
}

int main(int argc, char **argv)
{
	static char buf[CAP];
	size_t i, n, k, edits, runs = 0;
	int a;

	for (a = 1; a < argc; a++)
		load_seed(argv[a]);
	if (!nseeds)
		die("give the seed files", "usage");
	check_coverage();
	for (i = 0; i < nseeds; i++) {
		for (n = 0; n <= seeds[i].n; n++, runs++)
			run(seeds[i].b, n);
	}
	for (k = 0; k < NMUTATIONS; k++, runs++) {
		i = next() % nseeds;
		n = seeds[i].n;
		memcpy(buf, seeds[i].b, n);
		edits = 1 + next() % 6;
		while (edits--)
			mutate(buf, &n);
		run(buf, n);
	}
	printf("fuzz_conf_corpus: %zu seeds (every key covered), their truncations and %d "
	       "mutations: %zu inputs, ok\n",
	       nseeds, NMUTATIONS, runs);
	for (i = 0; i < nseeds; i++)
		free(seeds[i].b);
	return 0;
}
