// SPDX-License-Identifier: MIT
/*
 * Any fixed-size OpenSSL 3 EVP digest, by name. The EVP_MD is fetched
 * once and one EVP_MD_CTX is reused for every chunk (EVP_DigestInit_ex2
 * resets it), so computing a digest allocates nothing.
 */
#include "lib/digest/rd_digest.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/evp.h>

#include "lib/base/rd_escape.h"

struct evp_priv {
	EVP_MD *md;
	EVP_MD_CTX *ctx;
};

static void evp_fini(struct rd_digest *d)
{
	struct evp_priv *p = d->priv;

	if (!p)
		return;
	EVP_MD_CTX_free(p->ctx);
	EVP_MD_free(p->md);
	free(p);
	d->priv = NULL;
}

static int evp_init(struct rd_digest *d, const char *name)
{
	char shown[4 * sizeof(d->name) + 1];
	struct evp_priv *p;
	size_t i;
	int ret, size;

	rd_escape(shown, sizeof(shown), name, strlen(name));
	p = calloc(1, sizeof(*p));
	if (!p) {
		ret = rd_err_set(&d->err, RD_ENOMEM, 0, "checksum '%s': out of memory", shown);
		goto out;
	}
	d->priv = p;
	p->md = EVP_MD_fetch(NULL, name, NULL);
	if (!p->md) {
		ret = rd_err_set(&d->err, RD_EUSAGE, 0,
				 "unknown checksum '%s' (OpenSSL has no such digest; try sha256, "
				 "sha512, blake2b512, none)",
				 shown);
		goto out;
	}
	if (EVP_MD_get_flags(p->md) & EVP_MD_FLAG_XOF) {
		ret = rd_err_set(&d->err, RD_EUSAGE, 0,
				 "checksum '%s' has variable-length output (XOF); use a fixed-size "
				 "digest such as sha256, sha512 or blake2b512",
				 shown);
		goto out;
	}
	size = EVP_MD_get_size(p->md);
	if (size <= 0 || size > RD_DIGEST_OUT_MAX) {
		ret = rd_err_set(&d->err, RD_EUSAGE, 0,
				 "checksum '%s' has a %d-byte output; at most %d is supported",
				 shown, size, RD_DIGEST_OUT_MAX);
		goto out;
	}
	p->ctx = EVP_MD_CTX_new();
	if (!p->ctx) {
		ret = rd_err_set(&d->err, RD_ENOMEM, 0, "checksum '%s': out of memory", shown);
		goto out;
	}
	/* OpenSSL names are case-insensitive; keep ours canonical. */
	for (i = 0; name[i] && i < sizeof(d->name) - 1; i++)
		d->name[i] = (char)tolower((unsigned char)name[i]);
	d->name[i] = '\0';
	d->size = (unsigned)size;
	d->sum_size = d->size;
	ret = 0;
out:
	if (ret) {
		ERR_clear_error();
		evp_fini(d);
	}
	return ret;
}

static int evp_oneshot(struct rd_digest *d, const void *buf, size_t len, uint8_t *out)
{
	struct evp_priv *p = d->priv;
	unsigned int n = 0;
	int ret = 0;

	if (!EVP_DigestInit_ex2(p->ctx, p->md, NULL) || !EVP_DigestUpdate(p->ctx, buf, len) ||
	    !EVP_DigestFinal_ex(p->ctx, out, &n) || n != d->size) {
		ERR_clear_error();
		ret = rd_err_set(&d->err, RD_ESYS, 0, "checksum '%s': OpenSSL digest failed",
				 d->name);
	}
	return ret;
}

const struct rd_digest_ops rd_digest_evp_ops = {
    .kind = "evp",
    .init = evp_init,
    .oneshot = evp_oneshot,
    .fini = evp_fini,
};
