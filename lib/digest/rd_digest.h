/* SPDX-License-Identifier: MIT */
/*
 * Chunk digests behind a small ops table, one file per implementation:
 * rd_digest_evp.c (any OpenSSL EVP digest by name), rd_digest_none.c
 * ("none": no checksum, said plainly in summaries) and rd_digest_keyed.c
 * ("gmac" and "aes-128-gcm": keyed per-chunk integrity, optionally with
 * encryption, under a session key; see there for nonces and rekeying).
 *
 * Two uses:
 *  - protect/verify: the tag a chunk carries in DATA (d->size bytes). For
 *    unkeyed digests it is the digest of the bytes; for keyed ones a MAC
 *    bound to the chunk's identity (entry id, chunk number, length) and to
 *    the request's sequence number, and for AEAD the bytes are encrypted in
 *    place as well.
 *  - compute: a plain collision-resistant digest (d->sum_size bytes) for
 *    comparing data both sides already hold (GET kind SUM). Keyed kinds use
 *    SHA-256 here: the sum travels inside the authenticated channel.
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

/* Keyed kinds: the default once a session has a key, and the AEAD one. */
#define RD_DIGEST_KEYED "gmac"
#define RD_DIGEST_AEAD "aes-128-gcm"
#define RD_DIGEST_KEY_LEN 32

struct rd_digest;

/* What a chunk's tag is bound to (all of it is authenticated data). */
struct rd_chunk_ref {
	uint32_t id;	/* entry id */
	uint64_t chunk; /* chunk number in the entry */
	uint32_t len;	/* bytes in the chunk */
	uint64_t seq;	/* request sequence number: unique per key */
};

struct rd_digest_ops {
	const char *kind; /* "evp", "none" or "keyed" */
	int (*init)(struct rd_digest *d, const char *name);
	/* One-shot plain digest of buf; writes d->sum_size bytes to out. */
	int (*oneshot)(struct rd_digest *d, const void *buf, size_t len, uint8_t *out);
	void (*fini)(struct rd_digest *d);
	/* Keyed kinds only (NULL otherwise). */
	int (*set_key)(struct rd_digest *d, const uint8_t key[RD_DIGEST_KEY_LEN]);
	int (*protect)(struct rd_digest *d, const struct rd_chunk_ref *ref, void *buf,
		       size_t len, uint8_t *tag);
	int (*verify)(struct rd_digest *d, const struct rd_chunk_ref *ref, void *buf,
		      size_t len, const uint8_t *tag);
};

struct rd_digest {
	const struct rd_digest_ops *ops;
	char name[32];	   /* canonical name, e.g. "sha256", "gmac", "none" */
	unsigned size;	   /* tag bytes in DATA, 0 for none */
	unsigned sum_size; /* rd_digest_compute() bytes, 0 for none */
	unsigned keyed : 1;    /* needs rd_digest_set_key() before protect/verify */
	unsigned encrypts : 1; /* protect encrypts the chunk in place */
	unsigned has_key : 1;
	void *priv; /* implementation state */
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

/*
 * Give a keyed kind its session key (32 bytes, e.g. from the TLS
 * exporter). Unkeyed kinds ignore it. Returns -RD_EUSAGE for a keyed kind
 * that is never given one (protect/verify refuse to run without a key).
 */
int rd_digest_set_key(struct rd_digest *d, const uint8_t key[RD_DIGEST_KEY_LEN]);

/*
 * Sender: compute the tag for a chunk (d->size bytes to tag); AEAD kinds
 * encrypt buf in place too. Receiver: check it; AEAD kinds decrypt in
 * place (on failure buf holds garbage and must not be used). verify
 * returns 0 when the chunk is good, -RD_ECORRUPT when it is not (no
 * message is set: a bad chunk is an expected event), other negative
 * statuses on internal failure (message on d->err).
 */
int rd_digest_protect(struct rd_digest *d, const struct rd_chunk_ref *ref, void *buf, size_t len,
		      uint8_t *tag);
int rd_digest_verify(struct rd_digest *d, const struct rd_chunk_ref *ref, void *buf, size_t len,
		     const uint8_t *tag);

extern const struct rd_digest_ops rd_digest_evp_ops;
extern const struct rd_digest_ops rd_digest_none_ops;
extern const struct rd_digest_ops rd_digest_keyed_ops;

#endif
