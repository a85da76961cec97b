// SPDX-License-Identifier: MIT
/* What sessions take from TLS: the chunk key. */
#include <openssl/crypto.h>

#include "lib/session/rd_session_priv.h"
#include "lib/tls/rd_tls.h"

int rd_session_chunk_key(struct rd_conn *c, struct rd_engine *e, struct rd_err *err)
{
	struct rd_tls *t = rd_conn_tls(c);
	uint8_t key[RD_DIGEST_KEY_LEN];
	int ret;

	if (!t)
		return 0; /* no TLS, no key: keyed digests refuse to run */
	ret = rd_tls_export_key(t, RD_TLS_CHUNK_LABEL, key, sizeof(key));
	if (ret)
		return rd_err_copy(err, rd_tls_err(t));
	ret = rd_engine_set_key(e, key);
	OPENSSL_cleanse(key, sizeof(key));
	if (ret)
		rd_err_copy(err, &e->err);
	return ret;
}
