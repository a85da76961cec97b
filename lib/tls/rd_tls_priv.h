/* SPDX-License-Identifier: MIT */
/* Private to lib/tls: the state behind struct rd_tls. */
#ifndef RDCP_TLS_RD_TLS_PRIV_H
#define RDCP_TLS_RD_TLS_PRIV_H

#include <openssl/ssl.h>

#include "lib/tls/rd_tls.h"

/* Where a session is: the TLS handshake, then (password logins) LOGIN/VERDICT. */
enum rd_tls_phase { PH_HANDSHAKE = 0, PH_LOGIN, PH_DONE };

struct rd_tls {
	SSL_CTX *ctx;
	SSL *ssl;
	BIO *rbio, *wbio; /* owned by ssl */
	struct rd_tls_cfg cfg;
	char user[RD_TLS_USER_MAX + 1];	    /* client: our user */
	char peer_name[128];		    /* for messages */
	enum rd_auth_kind psk_kind;	    /* server: what the PSK identity matched */
	enum rd_auth_kind psk_asked;	    /* server: what the PSK identity named */
	char psk_user[RD_TLS_USER_MAX + 1]; /* server: the user (LOGIN, or an old PSK) */
	enum rd_tls_phase phase;
	int done;
	struct rd_tls_peer peer;
	struct rd_err err;
};

/* rd_tls_ctx.c: context set-up and the PSK callbacks. */
int rd_tls_ctx_setup(struct rd_tls *t);
/* rd_tls_fail.c: record an OpenSSL failure as a sentence on t->err. */
int rd_tls_fail(struct rd_tls *t, int status, const char *what);

/*
 * rd_tls_login.c: the password login after the handshake (rd_tls.h).
 * Did this session agree on it (ALPN)? The client's first step (check the
 * server's key, send LOGIN), and each side's step on what arrived: 0 more
 * input needed, 1 logged in, negative refused (a message on t->err).
 */
int rd_tls_login_agreed(const struct rd_tls *t);
int rd_tls_login_start(struct rd_tls *t);
int rd_tls_login_step(struct rd_tls *t);
/* "SHA256:<base64, unpadded>" of a public key (DER SubjectPublicKeyInfo). */
int rd_tls_key_fingerprint(EVP_PKEY *k, char fp[RD_TLS_FP_MAX]);
/* rd_tls_hostkey.c: our key and a self-signed certificate around it on ctx. */
int rd_tls_use_host_key(struct rd_tls *t, const char *path);

#endif
