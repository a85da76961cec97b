// SPDX-License-Identifier: MIT
/*
 * SSL_CTX set-up for one side, and the TLS 1.3 external-PSK callbacks
 * (identities and key derivations are described in rd_tls.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>

#include "lib/tls/rd_tls_priv.h"

#define SUITES "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256"

static const unsigned char suite_aes128gcm_sha256[] = {0x13, 0x01};
/* ALPN's wire form of RD_TLS_LOGIN_ALPN: a length byte, then the name. */
static const unsigned char alpn_login[] = "\x0a" RD_TLS_LOGIN_ALPN;

static int sha256_of(const char *label, const uint8_t *p, size_t len, uint8_t out[32])
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	int ok = c && EVP_DigestInit_ex(c, EVP_sha256(), NULL) &&
		 EVP_DigestUpdate(c, label, strlen(label)) && EVP_DigestUpdate(c, p, len) &&
		 EVP_DigestFinal_ex(c, out, NULL);

	EVP_MD_CTX_free(c);
	return ok ? 0 : -RD_ENOMEM;
}

int rd_tls_psk_ssh(const uint8_t *secret, size_t len, uint8_t psk[RD_TLS_PSK_LEN])
{
	return sha256_of("rdcp ssh psk", secret, len, psk);
}

/* The public key of anonymous sessions: no secret, by design. */
static int psk_anon(uint8_t psk[RD_TLS_PSK_LEN])
{
	return sha256_of("rdcp anonymous psk", NULL, 0, psk);
}

static SSL_SESSION *psk_session(SSL *ssl, const uint8_t *key)
{
	const SSL_CIPHER *c = SSL_CIPHER_find(ssl, suite_aes128gcm_sha256);
	SSL_SESSION *s = SSL_SESSION_new();

	if (!c || !s || !SSL_SESSION_set1_master_key(s, key, RD_TLS_PSK_LEN) ||
	    !SSL_SESSION_set_cipher(s, c) || !SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION)) {
		SSL_SESSION_free(s);
		return NULL;
	}
	return s;
}

static int client_psk_cb(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
			 SSL_SESSION **sess)
{
	struct rd_tls *t = SSL_get_app_data(ssl);
	uint8_t anon[RD_TLS_PSK_LEN];
	const uint8_t *key = t->cfg.psk;
	const char *ident;
	SSL_SESSION *s;

	*sess = NULL;
	switch (t->cfg.auth) {
	case RD_AUTH_SSH:
		ident = RD_TLS_ID_SSH;
		break;
	case RD_AUTH_ANON:
		if (psk_anon(anon))
			return 0;
		key = anon;
		ident = RD_TLS_ID_ANON;
		break;
	default:
		return 1; /* certificates only (a password login comes after them) */
	}
	s = psk_session(ssl, key);
	if (!s)
		return 0;
	if (md && md != SSL_CIPHER_get_handshake_digest(SSL_SESSION_get0_cipher(s))) {
		SSL_SESSION_free(s);
		return 1;
	}
	*id = (const unsigned char *)ident;
	*idlen = strlen(ident);
	*sess = s;
	return 1;
}

/* A user name as a PSK identity (rdcp before protocol 9): printable, no "rdcp:" prefix. */
static int user_ok(const unsigned char *id, size_t len)
{
	size_t i;

	if (!len || len > RD_TLS_USER_MAX || (len >= 5 && !memcmp(id, "rdcp:", 5)))
		return 0;
	for (i = 0; i < len; i++)
		if (id[i] <= 0x20 || id[i] >= 0x7f || id[i] == ':')
			return 0;
	return 1;
}

static int server_psk_cb(SSL *ssl, const unsigned char *id, size_t len, SSL_SESSION **sess)
{
	struct rd_tls *t = SSL_get_app_data(ssl);
	uint8_t key[RD_TLS_PSK_LEN];
	int known = 0;

	*sess = NULL;
	t->psk_kind = RD_AUTH_NONE;
	t->psk_user[0] = '\0';
	if (len == strlen(RD_TLS_ID_SSH) && !memcmp(id, RD_TLS_ID_SSH, len)) {
		t->psk_asked = RD_AUTH_SSH;
		known = t->cfg.ssh_secret_set;
		if (known) {
			memcpy(key, t->cfg.psk, sizeof(key));
			t->psk_kind = RD_AUTH_SSH;
		}
	} else if (len == strlen(RD_TLS_ID_ANON) && !memcmp(id, RD_TLS_ID_ANON, len)) {
		t->psk_asked = RD_AUTH_ANON;
		known = t->cfg.allow_anon && !psk_anon(key);
		if (known)
			t->psk_kind = RD_AUTH_ANON;
	} else if (user_ok(id, len)) {
		/*
		 * rdcp before protocol 9 named its user here, with a key derived
		 * from the secret that anyone who saw the handshake could test
		 * guesses against: refused, whoever it is (rd_tls_fail says why).
		 */
		memcpy(t->psk_user, id, len);
		t->psk_user[len] = '\0';
		t->psk_asked = RD_AUTH_USER;
	}
	/* Anything else gets a random key: it fails like a wrong secret. */
	if (!known && RAND_bytes(key, sizeof(key)) != 1)
		return 0;
	*sess = psk_session(ssl, key);
	OPENSSL_cleanse(key, sizeof(key));
	return *sess ? 1 : 0;
}

/* Server: agree on a password login when the client offers it and we take them. */
static int alpn_select_cb(SSL *ssl, const unsigned char **out, unsigned char *outlen,
			  const unsigned char *in, unsigned inlen, void *arg)
{
	struct rd_tls *t = SSL_get_app_data(ssl);
	unsigned char *sel = NULL;

	(void)arg;
	if (!t || !t->cfg.lookup ||
	    SSL_select_next_proto(&sel, outlen, alpn_login, sizeof(alpn_login) - 1, in, inlen) !=
		OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_NOACK;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

/* Client, password login without --ca: the chain is not judged here; the
 * server's key is, against the pin, before anything is sent (rd_tls_login.c). */
static int pin_verify_cb(int preverify, X509_STORE_CTX *x)
{
	(void)preverify;
	(void)x;
	return 1;
}

static int load_files(struct rd_tls *t)
{
	const struct rd_tls_cfg *c = &t->cfg;
	STACK_OF(X509_NAME) * names;
	int ret;

	if (c->role == RD_TLS_SERVER && !c->cert_file && c->host_key_file) {
		ret = rd_tls_use_host_key(t, c->host_key_file);
		if (ret)
			return ret;
	}
	if (c->role == RD_TLS_SERVER && c->lookup && !c->cert_file && !c->host_key_file)
		return rd_err_set(&t->err, RD_EUSAGE, 0,
				  "password logins need the server's own key: a host key or a "
				  "tls certificate");
	if (c->cert_file && SSL_CTX_use_certificate_chain_file(t->ctx, c->cert_file) != 1)
		return rd_tls_fail(t, RD_EUSAGE, c->cert_file);
	if (c->key_file && SSL_CTX_use_PrivateKey_file(t->ctx, c->key_file, SSL_FILETYPE_PEM) != 1)
		return rd_tls_fail(t, RD_EUSAGE, c->key_file);
	if (c->cert_file && c->key_file && SSL_CTX_check_private_key(t->ctx) != 1)
		return rd_tls_fail(t, RD_EUSAGE, c->key_file);
	if (c->role == RD_TLS_CLIENT) {
		/* Always verify: with no --ca nothing is trusted, so a
		 * certificate handshake fails rather than trusting anyone. */
		if (c->ca_file && SSL_CTX_load_verify_locations(t->ctx, c->ca_file, NULL) != 1)
			return rd_tls_fail(t, RD_EUSAGE, c->ca_file);
		SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
		return 0;
	}
	if (c->client_ca_file) {
		if (SSL_CTX_load_verify_locations(t->ctx, c->client_ca_file, NULL) != 1)
			return rd_tls_fail(t, RD_EUSAGE, c->client_ca_file);
		names = SSL_load_client_CA_file(c->client_ca_file);
		if (!names)
			return rd_tls_fail(t, RD_EUSAGE, c->client_ca_file);
		SSL_CTX_set_client_CA_list(t->ctx, names);
		/* A certificate is optional: PSK clients have none. */
		SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
	}
	return 0;
}

struct rd_tls_ctx {
	SSL_CTX *ctx;
};

/* t->ctx for t's role and files: TLS 1.3 only, our suites, no tickets. */
static int ctx_make(struct rd_tls *t)
{
	int client = t->cfg.role == RD_TLS_CLIENT;

	t->ctx = SSL_CTX_new(client ? TLS_client_method() : TLS_server_method());
	if (!t->ctx)
		return rd_tls_fail(t, RD_ENOMEM, "TLS context");
	if (!SSL_CTX_set_min_proto_version(t->ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_max_proto_version(t->ctx, TLS1_3_VERSION) ||
	    !SSL_CTX_set_ciphersuites(t->ctx, SUITES) || !SSL_CTX_set_num_tickets(t->ctx, 0))
		return rd_tls_fail(t, RD_ENOMEM, "TLS 1.3 settings");
	SSL_CTX_set_options(t->ctx, SSL_OP_NO_TICKET | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_OFF);
	/* A server that verifies peers (tls client ca) refuses to make the
	 * session of a PSK handshake without a session id context
	 * ("session id context uninitialized"): users with secrets could
	 * not log in there. Nothing is cached; this only names the server. */
	if (!client && !SSL_CTX_set_session_id_context(t->ctx, (const unsigned char *)"rdcp", 4))
		return rd_tls_fail(t, RD_ENOMEM, "TLS session id context");
	if (!client)
		SSL_CTX_set_alpn_select_cb(t->ctx, alpn_select_cb, NULL);
	return load_files(t);
}

int rd_tls_ctx_new(struct rd_tls_ctx **out, const struct rd_tls_cfg *cfg, struct rd_err *err)
{
	struct rd_tls *t = calloc(1, sizeof(*t));
	struct rd_tls_ctx *x = calloc(1, sizeof(*x));
	int ret;

	*out = NULL;
	if (!t || !x) {
		ret = rd_err_set(err, RD_ENOMEM, 0, "TLS context: out of memory");
		goto out;
	}
	t->cfg = *cfg;
	t->cfg.shared = NULL;
	snprintf(t->peer_name, sizeof(t->peer_name), "its certificate files");
	ret = ctx_make(t);
	if (ret) {
		rd_err_copy(err, &t->err);
		goto out;
	}
	x->ctx = t->ctx;
	t->ctx = NULL;
	*out = x;
	x = NULL;
out:
	if (t) {
		SSL_CTX_free(t->ctx);
		OPENSSL_cleanse(&t->cfg, sizeof(t->cfg));
		free(t);
	}
	free(x);
	return ret;
}

int rd_tls_ctx_fingerprint(const struct rd_tls_ctx *x, char fp[RD_TLS_FP_MAX])
{
	EVP_PKEY *k = x ? SSL_CTX_get0_privatekey(x->ctx) : NULL;

	fp[0] = '\0';
	return k ? rd_tls_key_fingerprint(k, fp) : -RD_ENOENT;
}

void rd_tls_ctx_free(struct rd_tls_ctx *x)
{
	if (!x)
		return;
	SSL_CTX_free(x->ctx);
	free(x);
}

int rd_tls_ctx_setup(struct rd_tls *t)
{
	int client = t->cfg.role == RD_TLS_CLIENT;
	int ret;

	if (t->cfg.shared) {
		t->ctx = t->cfg.shared->ctx;
		if (!SSL_CTX_up_ref(t->ctx)) {
			t->ctx = NULL;
			return rd_tls_fail(t, RD_ENOMEM, "TLS context");
		}
	} else {
		ret = ctx_make(t);
		if (ret)
			return ret;
	}
	t->ssl = SSL_new(t->ctx);
	if (!t->ssl)
		return rd_tls_fail(t, RD_ENOMEM, "TLS session");
	SSL_set_app_data(t->ssl, t);
	if (client) {
		SSL_set_psk_use_session_callback(t->ssl, client_psk_cb);
		if (t->cfg.auth == RD_AUTH_USER) {
			/* SSL_set_alpn_protos returns 0 on success */
			if (SSL_set_alpn_protos(t->ssl, alpn_login, sizeof(alpn_login) - 1))
				return rd_tls_fail(t, RD_ENOMEM, "TLS login protocol");
			if (!t->cfg.ca_file)
				SSL_set_verify(t->ssl, SSL_VERIFY_PEER, pin_verify_cb);
		}
		/* The certificate must name the host we asked for (address or name). */
		if (t->cfg.host &&
		    !X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), t->cfg.host) &&
		    !SSL_set1_host(t->ssl, t->cfg.host))
			return rd_tls_fail(t, RD_ENOMEM, "TLS host name");
		SSL_set_connect_state(t->ssl);
	} else {
		SSL_set_psk_find_session_callback(t->ssl, server_psk_cb);
		SSL_set_accept_state(t->ssl);
	}
	return 0;
}
