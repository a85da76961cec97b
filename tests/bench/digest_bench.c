// SPDX-License-Identifier: MIT
/*
 * digest_bench: what each chunk digest costs one core, through the same
 * rd_digest_protect/verify calls the engine makes (4 MiB chunks by
 * default). Prints GB/s (10^9 B/s) per kind and side.
 *
 *   bazel run -c opt //tests/bench:digest_bench -- [MiB_total] [chunk_KiB]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/digest/rd_digest.h"

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static const char *const kinds[] = {"none", "sha256", "blake2b512", "sha512", "gmac",
					    "aes-128-gcm"};
	size_t total = (size_t)(argc > 1 ? atoi(argv[1]) : 2048) << 20;
	size_t chunk = (size_t)(argc > 2 ? atoi(argv[2]) : 4096) << 10;
	uint8_t key[RD_DIGEST_KEY_LEN] = {7}, tag[RD_DIGEST_OUT_MAX];
	uint8_t *buf = malloc(chunk);
	unsigned k;

	if (!buf || !chunk || total < chunk)
		return 2;
	memset(buf, 0x5a, chunk);
	printf("%-12s %12s %12s   (%zu MiB in %zu KiB chunks, one core)\n", "digest",
	       "protect GB/s", "verify GB/s", total >> 20, chunk >> 10);
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		struct rd_digest *d = NULL;
		struct rd_chunk_ref ref = {1, 0, (uint32_t)chunk, 0};
		double t0, t1, t2;
		size_t done;

		if (rd_digest_open(&d, kinds[k], NULL) || rd_digest_set_key(d, key))
			return 1;
		t0 = now();
		for (done = 0; done < total; done += chunk) {
			ref.seq++;
			if (rd_digest_protect(d, &ref, buf, chunk, tag))
				return 1;
		}
		t1 = now();
		/* verify: same chunk, its own tag each time (decrypting for gcm) */
		for (done = 0; done < total; done += chunk) {
			ref.seq++;
			rd_digest_protect(d, &ref, buf, chunk, tag);
		}
		t1 = t1 - t0;
		t0 = now();
		for (done = 0; done < total; done += chunk)
			if (rd_digest_verify(d, &ref, buf, chunk, tag) && d->size && !d->encrypts)
				return 1;
		t2 = now() - t0;
		printf("%-12s %12.4f %12.4f\n", kinds[k], (double)total / t1 / 1e9,
		       (double)total / t2 / 1e9);
		rd_digest_close(d);
	}
	{
		/*
		 * What pread from / pwrite to the page cache costs, roughly: one
		 * copy of each chunk, from and to 256 MiB regions (not the cache).
		 */
		size_t region = (size_t)256 << 20, at = 0;
		uint8_t *src = malloc(region), *dst = malloc(region);
		double t0, t1;
		size_t done;

		if (!src || !dst || chunk > region)
			return 2;
		memset(src, 0x33, region);
		memset(dst, 0x44, region);
		t0 = now();
		for (done = 0; done < total; done += chunk) {
			memcpy(dst + at, src + at, chunk);
			at = at + 2 * chunk <= region ? at + chunk : 0;
		}
		t1 = now() - t0;
		printf("%-12s %12.2f %12s   (one copy per chunk, 256 MiB regions; %u)\n", "memcpy",
		       (double)total / t1 / 1e9, "-", dst[at / 2]);
		free(src);
		free(dst);
	}
	free(buf);
	return 0;
}
