// SPDX-License-Identifier: MIT
/*
 * The password login inside TLS (rd_tls.h, issue 27 item 5): after the
 * handshake, once the client checked the server's key, it sends LOGIN
 * (the user, and a proof of its secret bound to this TLS session), and
 * the server answers VERDICT. Both are single TLS records of the
 * handshake phase (lib/proto/rd_proto.h section 4):
 *
 *	LOGIN	u8 1, u8 n (1..RD_TLS_USER_MAX), n bytes user, u8 proof[32]
 *	VERDICT	u8 2, u8 status (0 logged in, 1 refused)
 *
 * proof = HMAC-SHA256(K, E): K = scrypt(secret, "rdcp-login:" user,
 * N 2^14, r 8, p 1, 32 bytes), E = the TLS exporter of this session
 * (RD_TLS_LOGIN_LABEL, 32 bytes). The server does the same work for every
 * login, known user or not (K of random bytes for an unknown one),
 * compares in constant time, and answers the same VERDICT for any
 * refusal: neither the time nor the answer tells whether a user exists.
 */
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "lib/proto/rd_proto.h"
#include "lib/tls/rd_tls_priv.h"

#define KDF_N	     (1u << 14)
#define KDF_R	     8u
#define KDF_P	     1u
#define KDF_MAXMEM   (64u << 20) /* 128 * r * N = 16 MiB, and room */
#define PROOF_LEN    32
#define LOGIN_KIND   1
#define VERDICT_KIND 2
#define SALT_PREFIX  "rdcp-login:"
#define SECRET_MAX   1024

int rd_tls_login_key(const char *user, const void *secret, size_t len, uint8_t key[RD_TLS_KEY_LEN])
{
	char salt[sizeof(SALT_PREFIX) + RD_TLS_USER_MAX];
	int n = snprintf(salt, sizeof(salt), SALT_PREFIX "%s", user);

	if (n < 0 || (size_t)n >= sizeof(salt) || len > SECRET_MAX)
		return -RD_EUSAGE;
	if (EVP_PBE_scrypt(secret, len, (const unsigned char *)salt, (size_t)n, KDF_N, KDF_R, KDF_P,
			   KDF_MAXMEM, key, RD_TLS_KEY_LEN) != 1)
		return -RD_ENOMEM;
	return 0;
}

int rd_tls_key_fingerprint(EVP_PKEY *k, char fp[RD_TLS_FP_MAX])
{
	unsigned char *der = NULL, md[32], b64[48];
	unsigned mdlen = 0;
	int n = i2d_PUBKEY(k, &der), b;

	fp[0] = '\0';
	if (n <= 0)
		return -RD_ENOMEM;
	b = EVP_Digest(der, (size_t)n, md, &mdlen, EVP_sha256(), NULL) && mdlen == sizeof(md)
		? EVP_EncodeBlock(b64, md, sizeof(md))
		: -1;
	OPENSSL_free(der);
	if (b <= 0)
		return -RD_ENOMEM;
	while (b > 0 && b64[b - 1] == '=') /* as ssh writes it: no padding */
		b--;
	snprintf(fp, RD_TLS_FP_MAX, "SHA256:%.*s", b, (const char *)b64);
	return 0;
}

int rd_tls_login_agreed(const struct rd_tls *t)
{
	const unsigned char *p = NULL;
	unsigned len = 0;

	SSL_get0_alpn_selected(t->ssl, &p, &len);
	return len == strlen(RD_TLS_LOGIN_ALPN) && !memcmp(p, RD_TLS_LOGIN_ALPN, len);
}

/* proof = HMAC-SHA256(key, this session's exporter). */
static int make_proof(struct rd_tls *t, const uint8_t key[RD_TLS_KEY_LEN], uint8_t proof[PROOF_LEN])
{
	uint8_t e[32];
	unsigned plen = 0;
	int ok = SSL_export_keying_material(t->ssl, e, sizeof(e), RD_TLS_LOGIN_LABEL,
					    strlen(RD_TLS_LOGIN_LABEL), NULL, 0, 0) == 1 &&
		 HMAC(EVP_sha256(), key, RD_TLS_KEY_LEN, e, sizeof(e), proof, &plen) &&
		 plen == PROOF_LEN;

	OPENSSL_cleanse(e, sizeof(e));
	return ok ? 0 : -RD_ENOMEM;
}

/* The server's key: against --ca (done by OpenSSL) or the pin. */
static int check_server_key(struct rd_tls *t)
{
	X509 *cert = SSL_get0_peer_certificate(t->ssl);
	EVP_PKEY *k = cert ? X509_get0_pubkey(cert) : NULL;
	int r;

	if (!k || rd_tls_key_fingerprint(k, t->peer.server_key))
		return rd_err_set(&t->err, RD_EAUTH, 0, "TLS with %s: the server showed no key",
				  t->peer_name);
	if (t->cfg.ca_file)
		return 0;
	if (!t->cfg.pin)
		return rd_err_set(&t->err, RD_EAUTH, 0,
				  "TLS with %s: no way to check the server's key %s (give --ca)",
				  t->peer_name, t->peer.server_key);
	rd_err_clear(&t->err);
	r = t->cfg.pin(t->cfg.pin_ctx, t->peer.server_key, &t->err);
	if (r && !t->err.status)
		rd_err_set(&t->err, RD_EAUTH, 0, "TLS with %s: the server's key %s was refused",
			   t->peer_name, t->peer.server_key);
	return r ? -t->err.status : 0;
}

int rd_tls_login_start(struct rd_tls *t)
{
	uint8_t rec[2 + RD_TLS_USER_MAX + PROOF_LEN];
	size_t ulen = strlen(t->user), n = 2 + ulen + PROOF_LEN;
	int r;

	if (!rd_tls_login_agreed(t))
		return rd_err_set(&t->err, RD_EAUTH, 0,
				  "%s takes no password logins (no secrets file there, or an "
				  "rdcpd older than protocol %d)",
				  t->peer_name, RD_PROTO_LOGIN);
	r = check_server_key(t);
	if (r)
		return r;
	rec[0] = LOGIN_KIND;
	rec[1] = (uint8_t)ulen;
	memcpy(rec + 2, t->user, ulen);
	r = make_proof(t, t->cfg.login_key, rec + 2 + ulen);
	if (!r && SSL_write(t->ssl, rec, (int)n) != (int)n)
		r = rd_tls_fail(t, RD_ECONN, "sending the login");
	else if (r)
		r = rd_tls_fail(t, RD_ENOMEM, "the login proof");
	OPENSSL_cleanse(rec, sizeof(rec));
	return r;
}

/* A user name: printable, no blank or ':', not "rdcp:...". */
static int name_ok(const uint8_t *u, size_t len)
{
	size_t i;

	if (!len || len > RD_TLS_USER_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (u[i] <= 0x20 || u[i] >= 0x7f || u[i] == ':')
			return 0;
	return 1;
}

/* One record, read whole: its length, 0 when it has not arrived, or negative. */
static int read_record(struct rd_tls *t, uint8_t *buf, size_t cap)
{
	int n = SSL_read(t->ssl, buf, (int)cap);

	if (n > 0)
		return n;
	if (SSL_get_error(t->ssl, n) == SSL_ERROR_WANT_READ)
		return 0;
	return rd_tls_fail(t, RD_EAUTH, "login");
}

static int verdict(struct rd_tls *t, int ok)
{
	uint8_t v[2] = {VERDICT_KIND, ok ? 0 : 1};

	return SSL_write(t->ssl, v, 2) == 2 ? 0 : rd_tls_fail(t, RD_ECONN, "answering the login");
}

/* Server: check LOGIN, answer VERDICT. */
static int server_step(struct rd_tls *t)
{
	uint8_t rec[2 + RD_TLS_USER_MAX + PROOF_LEN + 1], key[RD_TLS_KEY_LEN], want[PROOF_LEN];
	uint8_t fake[32];
	const uint8_t *secret = NULL;
	size_t slen = 0, ulen;
	int n = read_record(t, rec, sizeof(rec)), known, ok, r;

	if (n <= 0)
		return n;
	ulen = rec[1];
	if (n < 2 || rec[0] != LOGIN_KIND || (size_t)n != 2 + ulen + PROOF_LEN)
		return rd_err_set(&t->err, RD_EPROTO, 0,
				  "%s broke the protocol: a bad LOGIN (%d bytes)", t->peer_name, n);
	snprintf(t->psk_user, sizeof(t->psk_user), "%.*s", name_ok(rec + 2, ulen) ? (int)ulen : 0,
		 (const char *)rec + 2);
	known = t->psk_user[0] && t->cfg.lookup &&
		!t->cfg.lookup(t->cfg.lookup_ctx, t->psk_user, &secret, &slen);
	/* An unknown user costs the same scrypt, on random bytes. */
	if (!known) {
		if (RAND_bytes(fake, sizeof(fake)) != 1)
			return rd_tls_fail(t, RD_ENOMEM, "login");
		secret = fake;
		slen = sizeof(fake);
	}
	r = rd_tls_login_key(t->psk_user[0] ? t->psk_user : "-", secret, slen, key);
	if (!r)
		r = make_proof(t, key, want);
	ok = !r && known && !CRYPTO_memcmp(want, rec + 2 + ulen, PROOF_LEN);
	OPENSSL_cleanse(key, sizeof(key));
	OPENSSL_cleanse(fake, sizeof(fake));
	if (r)
		return rd_tls_fail(t, RD_ENOMEM, "login");
	r = verdict(t, ok);
	if (r)
		return r;
	if (!ok)
		return rd_err_set(&t->err, RD_EAUTH, 0,
				  "authentication failed from %s: wrong secret or unknown user %s "
				  "(%s)",
				  t->peer_name, t->psk_user[0] ? t->psk_user : "?",
				  !t->psk_user[0] ? "a name that cannot be a user's"
				  : known	  ? "the secret is wrong"
						  : "no such user here");
	t->peer.auth = RD_AUTH_USER;
	snprintf(t->peer.user, sizeof(t->peer.user), "%s", t->psk_user);
	return 1;
}

/* Client: read VERDICT. */
static int client_step(struct rd_tls *t)
{
	uint8_t v[16];
	int n = read_record(t, v, sizeof(v));

	if (n <= 0)
		return n;
	if (n != 2 || v[0] != VERDICT_KIND || v[1] > 1)
		return rd_err_set(&t->err, RD_EPROTO, 0,
				  "%s broke the protocol: a bad login answer (%d bytes)",
				  t->peer_name, n);
	if (v[1])
		return rd_err_set(&t->err, RD_EAUTH, 0,
				  "authentication failed at %s: the secret of that user was "
				  "refused (wrong secret, or no such user there)",
				  t->peer_name);
	t->peer.auth = RD_AUTH_USER;
	return 1;
}

int rd_tls_login_step(struct rd_tls *t)
{
	return t->cfg.role == RD_TLS_SERVER ? server_step(t) : client_step(t);
}
