// SPDX-License-Identifier: MIT
/*
 * TLS 1.3 over memory BIOs: handshake, one message per record, exporter.
 * The byte moving is the caller's (lib/xport's TLS layer); see rd_tls.h.
 */
#include "lib/tls/rd_tls.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "lib/proto/rd_proto.h"
#include "lib/tls/rd_tls_priv.h"

int rd_tls_new(struct rd_tls **out, const struct rd_tls_cfg *cfg, const char *peer,
	       struct rd_err *err)
{
	struct rd_tls *t;
	int ret;

	*out = NULL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return rd_err_set(err, RD_ENOMEM, 0, "TLS state: out of memory");
	*out = t;
	t->cfg = *cfg;
	snprintf(t->peer_name, sizeof(t->peer_name), "%s", peer ? peer : "peer");
	if (cfg->role == RD_TLS_CLIENT && cfg->auth == RD_AUTH_USER) {
		if (!cfg->user || !cfg->user[0] || strlen(cfg->user) > RD_TLS_USER_MAX) {
			ret = rd_err_set(&t->err, RD_EUSAGE, 0,
					 "user name must be 1..%d characters", RD_TLS_USER_MAX);
			goto out;
		}
		snprintf(t->user, sizeof(t->user), "%s", cfg->user);
	}
	t->cfg.user = NULL;
	ret = rd_tls_ctx_setup(t);
	if (ret)
		goto out;
	t->rbio = BIO_new(BIO_s_mem());
	t->wbio = BIO_new(BIO_s_mem());
	if (!t->rbio || !t->wbio) {
		BIO_free(t->rbio);
		BIO_free(t->wbio);
		ret = rd_tls_fail(t, RD_ENOMEM, "TLS buffers");
		goto out;
	}
	BIO_set_mem_eof_return(t->rbio, -1);
	SSL_set_bio(t->ssl, t->rbio, t->wbio);
out:
	if (ret && err)
		rd_err_copy(err, &t->err);
	return ret;
}

void rd_tls_free(struct rd_tls *t)
{
	if (!t)
		return;
	SSL_free(t->ssl);
	SSL_CTX_free(t->ctx);
	OPENSSL_cleanse(&t->cfg, sizeof(t->cfg));
	free(t);
}

const struct rd_err *rd_tls_err(const struct rd_tls *t)
{
	return &t->err;
}

/* After the handshake: who is on the other side, by what proof. */
static int settle_peer(struct rd_tls *t)
{
	struct rd_tls_peer *p = &t->peer;
	X509 *cert;
	int n;

	snprintf(p->cipher, sizeof(p->cipher), "%s", SSL_get_cipher_name(t->ssl));
	if (t->cfg.role == RD_TLS_CLIENT) {
		p->auth = SSL_session_reused(t->ssl) ? t->cfg.auth : RD_AUTH_CERT;
		return 0;
	}
	if (SSL_session_reused(t->ssl)) {
		p->auth = t->psk_kind;
		if (p->auth == RD_AUTH_USER)
			snprintf(p->user, sizeof(p->user), "%s", t->psk_user);
		return p->auth == RD_AUTH_NONE ? rd_tls_fail(t, RD_EAUTH, "no identity") : 0;
	}
	/* Certificate handshake: a verified client certificate names the user. */
	p->auth = RD_AUTH_ANON;
	cert = SSL_get0_peer_certificate(t->ssl);
	if (cert && SSL_get_verify_result(t->ssl) == X509_V_OK) {
		n = X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, p->user,
					      sizeof(p->user));
		if (n <= 0 || (size_t)n >= sizeof(p->user) || strlen(p->user) != (size_t)n)
			return rd_err_set(&t->err, RD_EAUTH, 0,
					  "client certificate from %s has no usable common name",
					  t->peer_name);
		p->auth = RD_AUTH_CERT;
	}
	return 0;
}

/* After the handshake: does a password login (LOGIN, VERDICT) follow? */
static int login_follows(const struct rd_tls *t)
{
	return t->cfg.role == RD_TLS_CLIENT ? t->cfg.auth == RD_AUTH_USER : rd_tls_login_agreed(t);
}

int rd_tls_handshake(struct rd_tls *t, const void *in, size_t len)
{
	int r;

	if (t->done)
		return 1;
	if (len > RD_CTRL_MAX + RD_TLS_OVERHEAD)
		return rd_err_set(&t->err, RD_EPROTO, 0, "TLS with %s: handshake frame too long",
				  t->peer_name);
	if (len && BIO_write(t->rbio, in, (int)len) != (int)len)
		return rd_tls_fail(t, RD_ENOMEM, "handshake");
	if (t->phase == PH_HANDSHAKE) {
		r = SSL_do_handshake(t->ssl);
		if (r != 1)
			return SSL_get_error(t->ssl, r) == SSL_ERROR_WANT_READ
				   ? 0
				   : rd_tls_fail(t, RD_EAUTH, "handshake failed");
		r = settle_peer(t);
		if (r)
			return r;
		t->phase = login_follows(t) ? PH_LOGIN : PH_DONE;
		if (t->phase == PH_LOGIN && t->cfg.role == RD_TLS_CLIENT) {
			r = rd_tls_login_start(t);
			if (r)
				return r;
		}
	}
	r = t->phase == PH_LOGIN ? rd_tls_login_step(t) : 1;
	if (r == 1) {
		t->phase = PH_DONE;
		t->done = 1;
	}
	return r;
}

size_t rd_tls_out_pending(const struct rd_tls *t)
{
	return BIO_ctrl_pending(t->wbio);
}

size_t rd_tls_out(struct rd_tls *t, void *buf, size_t cap)
{
	int n;

	if (cap > (size_t)RD_CTRL_MAX + RD_TLS_OVERHEAD)
		cap = (size_t)RD_CTRL_MAX + RD_TLS_OVERHEAD;
	n = BIO_read(t->wbio, buf, (int)cap);
	return n > 0 ? (size_t)n : 0;
}

int rd_tls_seal(struct rd_tls *t, const void *msg, size_t len)
{
	if (!t->done || !len || len > RD_CTRL_MAX)
		return rd_err_set(&t->err, RD_EUSAGE, 0, "TLS: cannot seal %zu bytes now", len);
	if (SSL_write(t->ssl, msg, (int)len) != (int)len)
		return rd_tls_fail(t, RD_ECONN, "sending");
	return 0;
}

int rd_tls_open(struct rd_tls *t, const void *rec, size_t len, void *msg, size_t cap, size_t *mlen)
{
	int n;

	*mlen = 0;
	if (!t->done || len > RD_CTRL_MAX + RD_TLS_OVERHEAD)
		return rd_err_set(&t->err, RD_EPROTO, 0, "TLS record from %s out of place",
				  t->peer_name);
	if (BIO_write(t->rbio, rec, (int)len) != (int)len)
		return rd_tls_fail(t, RD_ENOMEM, "receiving");
	n = SSL_read(t->ssl, msg, (int)cap);
	if (n <= 0) {
		int e = SSL_get_error(t->ssl, n);

		if (e == SSL_ERROR_ZERO_RETURN)
			return rd_err_set(&t->err, RD_ECONN, 0, "%s closed the TLS session",
					  t->peer_name);
		if (e == SSL_ERROR_WANT_READ) {
			(void)BIO_reset(t->rbio);
			return rd_err_set(&t->err, RD_EPROTO, 0,
					  "TLS frame from %s is not one whole record",
					  t->peer_name);
		}
		return rd_tls_fail(t, RD_EPROTO, "bad record (forged or damaged)");
	}
	/* Exactly one record, exactly one message. */
	if (BIO_ctrl_pending(t->rbio) || SSL_pending(t->ssl))
		return rd_err_set(&t->err, RD_EPROTO, 0,
				  "TLS frame from %s holds more than one message", t->peer_name);
	*mlen = (size_t)n;
	return 0;
}

const struct rd_tls_peer *rd_tls_peer(const struct rd_tls *t)
{
	return t->done ? &t->peer : NULL;
}

int rd_tls_export_key(struct rd_tls *t, const char *label, uint8_t *out, size_t len)
{
	return rd_tls_export_ctx(t, label, NULL, 0, out, len);
}

int rd_tls_export_ctx(struct rd_tls *t, const char *label, const uint8_t *ctx, size_t ctxlen,
		      uint8_t *out, size_t len)
{
	if (!t->done || SSL_export_keying_material(t->ssl, out, len, label, strlen(label), ctx,
						   ctxlen, ctx != NULL) != 1)
		return rd_tls_fail(t, RD_EUSAGE, "exporting keys");
	return 0;
}
