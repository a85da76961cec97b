// SPDX-License-Identifier: MIT
/*
 * Deterministic driver for fuzz_report (no libFuzzer): hand-made seeds (a
 * path that prefixes the message, NUL bytes in the path, the longest path
 * and message, control and invalid UTF-8 bytes), every truncation of each,
 * and 20,000 fixed-seed mutations. Runs in every `bazel test //...`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/report/rd_report.h"
#include "tests/fuzz/fuzz_report.h"

#define NMUTATIONS 20000
#define BUFMAX	   (2 + RD_REPORT_PATH_MAX + 2 * RD_REPORT_MSG_MAX + 1)

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void run(const uint8_t *p, size_t n)
{
	uint8_t *copy = malloc(n ? n : 1);

	if (!copy)
		exit(1);
	memcpy(copy, p, n);
	LLVMFuzzerTestOneInput(copy, n);
	free(copy);
}

static size_t seed(uint8_t *b, const char *path, size_t plen, const char *msg, size_t mlen)
{
	b[0] = (uint8_t)(plen >> 8);
	b[1] = (uint8_t)plen;
	memcpy(b + 2, path, plen);
	memcpy(b + 2 + plen, msg, mlen);
	return 2 + plen + mlen;
}

int main(void)
{
	static uint8_t seeds[8][BUFMAX], buf[BUFMAX];
	static char longp[RD_REPORT_PATH_MAX], longm[2 * RD_REPORT_MSG_MAX];
	size_t len[8], n, i, j, k, nseeds = 0, runs = 0;

	memset(longp, 'p', sizeof(longp));
	memset(longm, 'm', sizeof(longm));
	memcpy(longm, longp, 100);
	longm[100] = ':';
	longm[101] = ' ';
	len[nseeds] = seed(seeds[nseeds], "a/b", 3, "a/b: Permission denied", 22);
	nseeds++;
	len[nseeds] = seed(seeds[nseeds], "a\0b", 3, "a", 1);
	nseeds++;
	len[nseeds] = seed(seeds[nseeds], "\0\0\0\0", 4, "", 0);
	nseeds++;
	len[nseeds] = seed(seeds[nseeds], longp, sizeof(longp), longm, sizeof(longm));
	nseeds++;
	len[nseeds] = seed(seeds[nseeds], longp, 100, longm, sizeof(longm));
	nseeds++;
	len[nseeds] = seed(seeds[nseeds], "\033[2J\n", 5, "\033[2J\nrdcp: forged\r\xff\xfe", 20);
	nseeds++;
	len[nseeds] = seed(seeds[nseeds], "x", 1, "x:", 2);
	nseeds++;
	for (i = 0; i < nseeds; i++)
		for (n = 0; n <= len[i]; n += (len[i] > 600 ? 97 : 1), runs++)
			run(seeds[i], n);
	for (k = 0; k < NMUTATIONS; k++, runs++) {
		i = next() % nseeds;
		n = len[i];
		memcpy(buf, seeds[i], n);
		for (j = next() % 8 + 1; j; j--) {
			switch (next() % 4) {
			case 0: /* flip a byte */
				if (n)
					buf[next() % n] = (uint8_t)next();
				break;
			case 1: /* cut */
				n = n ? next() % n : 0;
				break;
			case 2: /* a NUL, ':' or ' ' somewhere */
				if (n)
					buf[next() % n] = (uint8_t)":\0 \n"[next() % 4];
				break;
			default: /* a new path length */
				buf[0] = (uint8_t)next();
				buf[1] = (uint8_t)next();
				break;
			}
		}
		run(buf, n);
	}
	printf("fuzz_report_corpus: %zu inputs, no crash\n", runs);
	return 0;
}
