/* SPDX-License-Identifier: MIT */
/*
 * TLS 1.3 for the control channel (OpenSSL, memory BIOs): a transport-
 * independent core. The caller moves bytes: what rd_tls_out() yields goes
 * to the peer in RD_MSG_TLS frames; what arrives is fed back in. One
 * control message is sealed into exactly one TLS record (messages are at
 * most RD_CTRL_MAX = 16384 bytes, TLS's largest plaintext), so message
 * boundaries and credit accounting are unchanged by TLS.
 *
 * Who the peer is (struct rd_tls_peer) comes from how the handshake was
 * authenticated:
 *  - RD_AUTH_USER: a password login inside TLS (issue 27 item 5). The
 *    server shows a certificate (its "tls certificate", or a self-signed
 *    one around its host key); the client checks it against --ca, or
 *    against the key it pinned for that server on first contact (the
 *    pin callback: a known_hosts file, as ssh does). Only then does it
 *    send LOGIN, inside the encrypted channel: the user name and
 *    HMAC-SHA256(K, exporter) where K = scrypt(secret, "rdcp-login:"
 *    user; N 2^14, r 8, p 1), bound to this TLS session by the exporter
 *    (label "EXPORTER-rdcp-login"). The server derives K from its
 *    secrets file, for an unknown user from random bytes (the same
 *    work), compares in constant time and answers VERDICT, the same
 *    byte for a wrong secret and an unknown user. A passive observer
 *    sees neither the user nor anything that depends on the secret
 *    (every byte of it is under keys from ephemeral ECDHE); an impostor
 *    without the pinned key is refused before the client proves
 *    anything; only an impostor met on first contact (nothing pinned,
 *    no --ca) gets a proof, and then pays an scrypt per guess.
 *    lib/proto/rd_proto.h section 4 has the bytes. Clients of protocol
 *    8 and older derived a TLS PSK from the secret (PBKDF2) and named
 *    the user in clear: an observer could test guesses offline. Their
 *    user-name identities are refused.
 *  - RD_AUTH_SSH: identity "rdcp:ssh", key SHA-256("rdcp ssh psk" || the
 *    one-time secret the ssh channel carried).
 *  - RD_AUTH_CERT: no PSK; the server shows an X.509 certificate the client
 *    verifies against --ca (host name checked); a client certificate, if
 *    sent and valid under the server's client CA, names the user by CN.
 *  - RD_AUTH_ANON: identity "rdcp:anonymous" with a public key: the channel
 *    is encrypted and integrity-protected against a passive attacker only.
 *    The server grants such peers only modules with "auth = none".
 * Only TLS 1.3, only SHA-256 suites (TLS_AES_128_GCM_SHA256,
 * TLS_CHACHA20_POLY1305_SHA256), PSK always with (EC)DHE, no tickets.
 */
#ifndef RDCP_TLS_RD_TLS_H
#define RDCP_TLS_RD_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/rd_err.h"

#define RD_TLS_PSK_LEN	32
#define RD_TLS_KEY_LEN	32
#define RD_TLS_USER_MAX 64
#define RD_TLS_OVERHEAD 256 /* record header + tag + content type, rounded up */
#define RD_TLS_ID_SSH	"rdcp:ssh"
#define RD_TLS_ID_ANON	"rdcp:anonymous"
#define RD_TLS_FP_MAX	64 /* "SHA256:" and 43 base64 characters, NUL included */

enum rd_tls_role { RD_TLS_CLIENT = 1, RD_TLS_SERVER = 2 };
enum rd_auth_kind { RD_AUTH_NONE = 0, RD_AUTH_ANON, RD_AUTH_USER, RD_AUTH_SSH, RD_AUTH_CERT };

/*
 * Server: the secret of a user (the secrets file). Return 0 with *secret
 * and *len set (valid while ctx lives), non-zero when there is no such
 * user. Called from the handshake.
 */
typedef int (*rd_tls_secret_fn)(void *ctx, const char *user, const uint8_t **secret, size_t *len);

/*
 * Client, password login without --ca: is fp ("SHA256:<base64>" of the
 * server's public key) the key of this server? Return 0 to go on, or a
 * negative status with the reason on err (then nothing is sent).
 */
typedef int (*rd_tls_pin_fn)(void *ctx, const char *fp, struct rd_err *err);

struct rd_tls_cfg {
	enum rd_tls_role role;
	/* Client: how we prove who we are. */
	enum rd_auth_kind auth;		   /* USER, SSH, CERT or ANON */
	const char *user;		   /* RD_AUTH_USER */
	uint8_t login_key[RD_TLS_KEY_LEN]; /* RD_AUTH_USER: rd_tls_login_key() */
	uint8_t psk[RD_TLS_PSK_LEN];	   /* RD_AUTH_SSH (both sides) */
	const char *ca_file;		   /* client: verify the server's certificate */
	const char *host;		   /* client: the name the certificate must carry */
	rd_tls_pin_fn pin;		   /* client, USER without ca_file: the server's key */
	void *pin_ctx;
	const char *cert_file; /* our certificate (server; client optional) */
	const char *key_file;
	/* Server. */
	const char *client_ca_file; /* verify client certificates */
	/*
	 * Without cert_file: our key (PEM), shown in a self-signed certificate;
	 * made (Ed25519, mode 0600) if it does not exist yet. Like the secrets
	 * file it must be a regular file of ours that nobody else may read.
	 */
	const char *host_key_file;
	rd_tls_secret_fn lookup; /* users' secrets: password logins */
	void *lookup_ctx;
	int ssh_secret_set; /* accept RD_TLS_ID_SSH with psk */
	int allow_anon;	    /* accept RD_TLS_ID_ANON */
	/* Optional: a context made by rd_tls_ctx_new() from this same cfg
	 * (role, certificate files), shared instead of making one. */
	struct rd_tls_ctx *shared;
};

struct rd_tls_peer {
	enum rd_auth_kind auth;
	char user[RD_TLS_USER_MAX + 1]; /* USER/CERT: the user; else "" */
	char cipher[64];		/* negotiated suite */
	char server_key[RD_TLS_FP_MAX]; /* client: the server's key, if it showed one */
};

struct rd_tls;

/*
 * Create one side. Certificates and keys are read here (errors name the
 * file). On failure *out may be non-NULL with the message on it; err gets
 * a copy. Close with rd_tls_free.
 */
int rd_tls_new(struct rd_tls **out, const struct rd_tls_cfg *cfg, const char *peer,
	       struct rd_err *err);

/*
 * A context for many sessions of one configuration (the daemon makes one
 * per configuration it loads): SSL_CTX_new fetches every algorithm TLS may
 * use, more CPU than the rest of a session's handshake, and the
 * certificate files are read once, here, so a bad one is found when the
 * configuration is loaded. Sessions name it in rd_tls_cfg.shared; each
 * holds a reference, so rd_tls_ctx_free() may come before their end.
 */
struct rd_tls_ctx;
int rd_tls_ctx_new(struct rd_tls_ctx **out, const struct rd_tls_cfg *cfg, struct rd_err *err);
void rd_tls_ctx_free(struct rd_tls_ctx *x); /* accepts NULL */
void rd_tls_free(struct rd_tls *t); /* accepts NULL */
const struct rd_err *rd_tls_err(const struct rd_tls *t);

/*
 * Handshake step: feed bytes from the peer (in may be NULL/0 to start or
 * continue). Returns 1 when the handshake is complete, 0 when it needs
 * more input (first send what rd_tls_out() has), negative on failure with
 * a message that says what failed (wrong secret, certificate, ...).
 */
int rd_tls_handshake(struct rd_tls *t, const void *in, size_t len);

/* Bytes waiting to go to the peer: copies up to cap, returns how many. */
size_t rd_tls_out(struct rd_tls *t, void *buf, size_t cap);
size_t rd_tls_out_pending(const struct rd_tls *t);

/* Seal one message (<= 16384 bytes) into one record (then rd_tls_out). */
int rd_tls_seal(struct rd_tls *t, const void *msg, size_t len);

/*
 * Open one record of len bytes (exactly one, as rd_tls_out gave it) into
 * msg of cap bytes; *mlen gets the plaintext length. Returns 0, or a
 * negative status: -RD_EPROTO for anything that is not one valid record
 * (forged, replayed, reordered, truncated, an alert), -RD_ECONN when the
 * peer closed the TLS session.
 */
int rd_tls_open(struct rd_tls *t, const void *rec, size_t len, void *msg, size_t cap, size_t *mlen);

/* After the handshake: who the peer is, and keying material. */
const struct rd_tls_peer *rd_tls_peer(const struct rd_tls *t);
int rd_tls_export_key(struct rd_tls *t, const char *label, uint8_t *out, size_t len);
/* The same with a context (RFC 8446 7.5): a different key per context. */
int rd_tls_export_ctx(struct rd_tls *t, const char *label, const uint8_t *ctx, size_t ctxlen,
		      uint8_t *out, size_t len);

/* Exporter label of the chunk key (lib/digest keyed kinds). */
#define RD_TLS_CHUNK_LABEL "EXPORTER-rdcp-chunk-key"

/* The server's key as clients pin it (rd_tls_ctx_new made with a certificate or host key). */
int rd_tls_ctx_fingerprint(const struct rd_tls_ctx *x, char fp[RD_TLS_FP_MAX]);

/*
 * Password logins (see the top): K = scrypt(secret, "rdcp-login:" user).
 * The client derives it once, before connecting (about 16 MiB and tens of
 * milliseconds). 0 or a negative status.
 */
int rd_tls_login_key(const char *user, const void *secret, size_t len, uint8_t key[RD_TLS_KEY_LEN]);
#define RD_TLS_LOGIN_ALPN  "rdcp-login"
#define RD_TLS_LOGIN_LABEL "EXPORTER-rdcp-login"

/* The ssh-started session's PSK (see the top). */
int rd_tls_psk_ssh(const uint8_t *secret, size_t len, uint8_t psk[RD_TLS_PSK_LEN]);

/*
 * The client's pins: a known_hosts file of "NAME SHA256:..." lines ('#'
 * comments), NAME being "host" or "[host]:port". Returns 0 when name is
 * pinned to fp; 0 with *added = 1 when name was not there and fp was
 * appended (first contact: the file and its directory are made, 0600 and
 * 0700); a negative status with err naming the file and line when name is
 * pinned to another key, or when it is new and the file cannot take it.
 * Concurrent callers are serialized (flock).
 */
int rd_known_hosts_check(const char *path, const char *name, const char *fp, int *added,
			 struct rd_err *err);

#endif
