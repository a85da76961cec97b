/* SPDX-License-Identifier: MIT */
/* Private to lib/tls: the state behind struct rd_tls. */
#ifndef RDCP_TLS_RD_TLS_PRIV_H
#define RDCP_TLS_RD_TLS_PRIV_H

#include <openssl/ssl.h>

#include "lib/tls/rd_tls.h"

struct rd_tls {
	SSL_CTX *ctx;
	SSL *ssl;
	BIO *rbio, *wbio; /* owned by ssl */
	struct rd_tls_cfg cfg;
	char user[RD_TLS_USER_MAX + 1];	    /* client: our user */
	char peer_name[128];		    /* for messages */
	enum rd_auth_kind psk_kind;	    /* server: what the PSK identity matched */
	char psk_user[RD_TLS_USER_MAX + 1]; /* server: the identity */
	int done;
	struct rd_tls_peer peer;
	struct rd_err err;
};

/* rd_tls_ctx.c: context set-up and the PSK callbacks. */
int rd_tls_ctx_setup(struct rd_tls *t);
/* rd_tls.c: record an OpenSSL failure as a sentence on t->err. */
int rd_tls_fail(struct rd_tls *t, int status, const char *what);

#endif
