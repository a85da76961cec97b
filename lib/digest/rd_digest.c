// SPDX-License-Identifier: MIT
/*
 * Digest dispatch: "none" selects rd_digest_none.c, every other name goes
 * to OpenSSL (rd_digest_evp.c), which decides whether it knows it.
 */
#include "lib/digest/rd_digest.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "lib/base/rd_escape.h"

int rd_digest_open(struct rd_digest **out, const char *name, struct rd_err *err)
{
	struct rd_digest *d = NULL;
	char shown[4 * sizeof(d->name) + 8];
	size_t len;
	int ret;

	*out = NULL;
	if (!name || !name[0]) {
		ret = rd_err_set(err, RD_EUSAGE, 0, "empty checksum name");
		goto out;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		ret = rd_err_set(err, RD_ENOMEM, errno, "checksum '%.32s'", name);
		goto out;
	}
	*out = d;
	len = strnlen(name, sizeof(d->name));
	if (len >= sizeof(d->name)) {
		rd_escape(shown, sizeof(shown), name, len);
		ret = rd_err_set(&d->err, RD_EUSAGE, 0,
				 "checksum name '%s...' is too long (at most %zu bytes)", shown,
				 sizeof(d->name) - 1);
		goto fail;
	}
	if (!strcasecmp(name, "none"))
		d->ops = &rd_digest_none_ops;
	else if (!strcasecmp(name, RD_DIGEST_KEYED) || !strcasecmp(name, RD_DIGEST_AEAD))
		d->ops = &rd_digest_keyed_ops;
	else
		d->ops = &rd_digest_evp_ops;
	ret = d->ops->init(d, name);
	if (ret)
		goto fail;
	goto out;
fail:
	/* The message stays on d (the caller closes it); err gets a copy. */
	if (err)
		rd_err_copy(err, &d->err);
out:
	return ret;
}

int rd_digest_compute(struct rd_digest *d, const void *buf, size_t len, uint8_t *out)
{
	return d->ops->oneshot(d, buf, len, out);
}

int rd_digest_set_key(struct rd_digest *d, const uint8_t key[RD_DIGEST_KEY_LEN])
{
	if (!d->ops->set_key)
		return 0;
	return d->ops->set_key(d, key);
}

int rd_digest_protect(struct rd_digest *d, const struct rd_chunk_ref *ref, void *buf, size_t len,
		      uint8_t *tag)
{
	if (d->ops->protect)
		return d->ops->protect(d, ref, buf, len, tag);
	return d->ops->oneshot(d, buf, len, tag);
}

int rd_digest_verify(struct rd_digest *d, const struct rd_chunk_ref *ref, void *buf, size_t len,
		     const uint8_t *tag)
{
	uint8_t mine[RD_DIGEST_OUT_MAX];
	int ret;

	if (d->ops->verify)
		return d->ops->verify(d, ref, buf, len, tag);
	if (!d->size)
		return 0;
	ret = d->ops->oneshot(d, buf, len, mine);
	if (ret)
		return ret;
	return CRYPTO_memcmp(mine, tag, d->size) ? -RD_ECORRUPT : 0;
}

void rd_digest_close(struct rd_digest *d)
{
	if (!d)
		return;
	if (d->ops && d->ops->fini)
		d->ops->fini(d);
	free(d);
}
