/* SPDX-License-Identifier: MIT */
/*
 * Chunk digests behind a small ops table, one file per implementation:
 * rd_digest_evp.c (any OpenSSL EVP digest by name) and rd_digest_none.c
 * ("none": no checksum, said plainly in summaries).
 *
 * A struct rd_digest is created once per connection and reused for every
 * chunk: no allocation per chunk.
 */
#ifndef RDCP_DIGEST_RD_DIGEST_H
#define RDCP_DIGEST_RD_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/rd_err.h"

#define RD_DIGEST_DEFAULT "sha256"
#define RD_DIGEST_OUT_MAX 64

struct rd_digest;

struct rd_digest_ops {
	const char *kind; /* "evp" or "none" */
	int (*init)(struct rd_digest *d, const char *name);
	/* One-shot digest of buf; writes d->size bytes to out. */
	int (*oneshot)(struct rd_digest *d, const void *buf, size_t len, uint8_t *out);
	void (*fini)(struct rd_digest *d);
};

struct rd_digest {
	const struct rd_digest_ops *ops;
	char name[32]; /* canonical name, e.g. "sha256", "none" */
	unsigned size; /* output bytes, 0 for none */
	void *priv;    /* implementation state */
	struct rd_err err;
};

/*
 * Open a digest by name: "none", or any name EVP_MD_fetch() accepts
 * (sha256, sha512, blake2b512, sha3-256, ...). Variable-length (XOF)
 * digests and ones larger than RD_DIGEST_OUT_MAX are refused. On failure
 * returns -RD_EUSAGE (-RD_ENOMEM if allocation failed) with a message
 * naming the digest in (*out)->err if *out could be allocated (the caller
 * still closes it), else in err; err (if not NULL) always gets a copy.
 * "none" is matched case-insensitively, like OpenSSL's names; d->name is
 * the given name in lower case. Names of sizeof(d->name) bytes or more are
 * refused.
 */
int rd_digest_open(struct rd_digest **out, const char *name, struct rd_err *err);
int rd_digest_compute(struct rd_digest *d, const void *buf, size_t len, uint8_t *out);
void rd_digest_close(struct rd_digest *d); /* accepts NULL */

extern const struct rd_digest_ops rd_digest_evp_ops;
extern const struct rd_digest_ops rd_digest_none_ops;

#endif
