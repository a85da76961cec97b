// SPDX-License-Identifier: MIT
/* lib/tls: handshakes of every kind, refusals, and record hygiene, with
 * both ends in this process exchanging frames through buffers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"
#include "lib/tls/rd_tls.h"

#define TD    "lib/tls/testdata/"
#define FRAME (RD_CTRL_MAX + RD_TLS_OVERHEAD)

static int lookups; /* how often the server looked a user up */

static int lookup(void *ctx, const char *user, const uint8_t **secret, size_t *len)
{
	(void)ctx;
	lookups++;
	if (strcmp(user, "alice"))
		return -1;
	*secret = (const uint8_t *)"s3cret";
	*len = 6;
	return 0;
}

/* The client's pin: records what it was shown; refuses when told to. */
static char pinned_fp[RD_TLS_FP_MAX];
static int pin_calls, pin_refuse;

static int pin(void *ctx, const char *fp, struct rd_err *err)
{
	(void)ctx;
	pin_calls++;
	snprintf(pinned_fp, sizeof(pinned_fp), "%s", fp);
	if (pin_refuse)
		return rd_err_set(err, RD_EAUTH, 0, "not the pinned key");
	return 0;
}

static const char *tmp_path(const char *name)
{
	static char buf[4][512];
	static int i;
	const char *d = getenv("TEST_TMPDIR");

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", d ? d : "/tmp", name);
	return buf[i];
}

struct pair {
	struct rd_tls *c, *s;
	int rc, rs; /* last handshake results */
};

/* Move one side's pending output to the other, frame by frame. */
static int flush(struct rd_tls *from, struct rd_tls *to, int *to_rc)
{
	static uint8_t buf[FRAME];
	size_t n;
	int moved = 0;

	while ((n = rd_tls_out(from, buf, sizeof(buf))) > 0) {
		moved = 1;
		if (*to_rc == 0)
			*to_rc = rd_tls_handshake(to, buf, n);
	}
	return moved;
}

/* Run the handshake; returns 1 when both finished, 0 when one failed. */
static int shake(struct pair *p, struct rd_tls_cfg *cc, struct rd_tls_cfg *sc)
{
	int i;

	cc->role = RD_TLS_CLIENT;
	sc->role = RD_TLS_SERVER;
	assert_int_equal(rd_tls_new(&p->c, cc, "server", NULL), 0);
	assert_int_equal(rd_tls_new(&p->s, sc, "client", NULL), 0);
	p->rc = rd_tls_handshake(p->c, NULL, 0);
	p->rs = 0;
	for (i = 0; i < 10 && (p->rc >= 0 && p->rs >= 0); i++) {
		int a = flush(p->c, p->s, &p->rs);
		int b = flush(p->s, p->c, &p->rc);

		if (!a && !b)
			break;
	}
	return p->rc == 1 && p->rs == 1;
}

static void done(struct pair *p)
{
	rd_tls_free(p->c);
	rd_tls_free(p->s);
}

/* A daemon with a secrets file: its host key is made on first use. */
static void server_cfg(struct rd_tls_cfg *s)
{
	memset(s, 0, sizeof(*s));
	s->lookup = lookup;
	s->host_key_file = tmp_path("host.key");
}

/* A password login, the server's key checked by pin(). */
static void user_cfg(struct rd_tls_cfg *c, const char *user, const char *secret)
{
	memset(c, 0, sizeof(*c));
	c->auth = RD_AUTH_USER;
	c->user = user;
	c->pin = pin;
	pin_refuse = 0;
	assert_int_equal(rd_tls_login_key(user, secret, strlen(secret), c->login_key), 0);
}

/* One message each way through records, as lib/xport will move them. */
static void roundtrip(struct rd_tls *a, struct rd_tls *b, const char *text)
{
	static uint8_t rec[FRAME], msg[RD_CTRL_MAX];
	size_t n, m;

	assert_int_equal(rd_tls_seal(a, text, strlen(text)), 0);
	n = rd_tls_out(a, rec, sizeof(rec));
	assert_true(n > strlen(text));
	assert_null(memmem(rec, n, text, strlen(text))); /* not in clear */
	assert_int_equal(rd_tls_open(b, rec, n, msg, sizeof(msg), &m), 0);
	assert_int_equal(m, strlen(text));
	assert_memory_equal(msg, text, m);
}

static void test_user_login(void **state)
{
	struct rd_tls_cfg cc, sc;
	struct rd_tls_ctx *x = NULL;
	struct rd_err err;
	struct pair p;
	uint8_t k1[32], k2[32];
	char fp[RD_TLS_FP_MAX];

	user_cfg(&cc, "alice", "s3cret");
	server_cfg(&sc);
	pin_calls = 0;
	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_peer(p.s)->auth, RD_AUTH_USER);
	assert_string_equal(rd_tls_peer(p.s)->user, "alice");
	assert_int_equal(rd_tls_peer(p.c)->auth, RD_AUTH_USER);
	assert_true(strlen(rd_tls_peer(p.c)->cipher) > 0);
	/* the client checked the server's key (its host key) before proving anything */
	assert_int_equal(pin_calls, 1);
	assert_string_equal(rd_tls_peer(p.c)->server_key, pinned_fp);
	sc.role = RD_TLS_SERVER;
	assert_int_equal(rd_tls_ctx_new(&x, &sc, &err), 0);
	assert_int_equal(rd_tls_ctx_fingerprint(x, fp), 0);
	rd_tls_ctx_free(x);
	assert_string_equal(fp, pinned_fp);
	assert_int_equal(strncmp(fp, "SHA256:", 7), 0);
	assert_int_equal(strlen(fp), 7 + 43);
	assert_int_equal(rd_tls_export_key(p.c, RD_TLS_CHUNK_LABEL, k1, 32), 0);
	assert_int_equal(rd_tls_export_key(p.s, RD_TLS_CHUNK_LABEL, k2, 32), 0);
	assert_memory_equal(k1, k2, 32);
	roundtrip(p.c, p.s, "OPEN module/path");
	roundtrip(p.s, p.c, "OPEN_OK");
	roundtrip(p.c, p.s, "GET chunk 1");
	done(&p);
}

/* An exporter context (lane proofs): both ends agree, and each context,
 * and no context at all, gives another key. */
static void test_export_ctx(void **state)
{
	static const uint8_t c1[] = {1, 2, 3}, c2[] = {1, 2, 4};
	struct rd_tls_cfg cc, sc;
	struct pair p;
	uint8_t a[16], b[16], x[16], n[16];

	user_cfg(&cc, "alice", "s3cret");
	server_cfg(&sc);
	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_export_ctx(p.c, "EXPORTER-t", c1, sizeof(c1), a, 16), 0);
	assert_int_equal(rd_tls_export_ctx(p.s, "EXPORTER-t", c1, sizeof(c1), b, 16), 0);
	assert_memory_equal(a, b, 16);
	assert_int_equal(rd_tls_export_ctx(p.s, "EXPORTER-t", c2, sizeof(c2), x, 16), 0);
	assert_memory_not_equal(a, x, 16);
	assert_int_equal(rd_tls_export_key(p.s, "EXPORTER-t", n, 16), 0);
	assert_memory_not_equal(a, n, 16);
	done(&p);
}

/*
 * Wrong secret and unknown user fail the same way for the client (same
 * words, same answer); the server's log says which.
 */
static void test_user_refused(void **state)
{
	static const char *const users[] = {"alice", "mallory"};
	static const char *const logs[] = {
	    "wrong secret or unknown user alice (the secret is wrong)",
	    "wrong secret or unknown user mallory (no such user here)"};
	char client_msg[2][RD_ERR_MSG_MAX];
	struct rd_tls_cfg cc, sc;
	struct pair p;
	unsigned i;

	for (i = 0; i < 2; i++) {
		user_cfg(&cc, users[i], i ? "s3cret" : "guess");
		server_cfg(&sc);
		assert_false(shake(&p, &cc, &sc));
		assert_true(p.rc < 0);
		assert_int_equal(rd_tls_err(p.c)->status, RD_EAUTH);
		snprintf(client_msg[i], sizeof(client_msg[i]), "%s", rd_tls_err(p.c)->msg);
		assert_non_null(strstr(client_msg[i], "authentication failed at server"));
		assert_non_null(strstr(client_msg[i], "wrong secret, or no such user"));
		assert_true(p.rs < 0);
		assert_non_null(strstr(rd_tls_err(p.s)->msg, logs[i]));
		assert_null(rd_tls_peer(p.s));
		done(&p);
	}
	assert_string_equal(client_msg[0], client_msg[1]);
}

/*
 * What a passive observer of a login sees: no user name, and no
 * pre_shared_key extension (whose binder, derived from the secret, was
 * what let an observer test guesses before protocol 9).
 */
static void test_login_observed(void **state)
{
	static uint8_t wire[1 << 16], buf[FRAME];
	struct rd_tls_cfg cc, sc;
	struct pair p;
	size_t n, len = 0;
	int i;

	user_cfg(&cc, "alice", "s3cret");
	server_cfg(&sc);
	cc.role = RD_TLS_CLIENT;
	sc.role = RD_TLS_SERVER;
	assert_int_equal(rd_tls_new(&p.c, &cc, "server", NULL), 0);
	assert_int_equal(rd_tls_new(&p.s, &sc, "client", NULL), 0);
	p.rc = rd_tls_handshake(p.c, NULL, 0);
	p.rs = 0;
	for (i = 0; i < 10 && p.rc >= 0 && p.rs >= 0 && !(p.rc == 1 && p.rs == 1); i++) {
		while ((n = rd_tls_out(p.c, buf, sizeof(buf))) > 0) {
			assert_true(len + n <= sizeof(wire));
			memcpy(wire + len, buf, n); /* what went to the server */
			len += n;
			if (p.rs == 0)
				p.rs = rd_tls_handshake(p.s, buf, n);
		}
		while ((n = rd_tls_out(p.s, buf, sizeof(buf))) > 0)
			if (p.rc == 0)
				p.rc = rd_tls_handshake(p.c, buf, n);
	}
	assert_int_equal(p.rc, 1);
	assert_int_equal(p.rs, 1);
	assert_true(len > 200);
	assert_null(memmem(wire, len, "alice", 5));
	assert_null(memmem(wire, len, "s3cret", 6));
	/* ClientHello: no extension 41 (pre_shared_key) in its extension list */
	{
		size_t off = 5 + 4 + 2 + 32, end;

		assert_int_equal(wire[0], 22);			     /* a handshake record */
		assert_int_equal(wire[5], 1);			     /* ClientHello */
		off += 1 + wire[off];				     /* session id */
		off += 2 + ((size_t)wire[off] << 8 | wire[off + 1]); /* cipher suites */
		off += 1 + wire[off];				     /* compression */
		end = off + 2 + ((size_t)wire[off] << 8 | wire[off + 1]);
		for (off += 2; off + 4 <= end;
		     off += 4 + ((size_t)wire[off + 2] << 8 | wire[off + 3]))
			assert_int_not_equal((wire[off] << 8) | wire[off + 1], 41);
	}
	done(&p);
}

/* A key that is not the pinned one: refused before the client proves anything. */
static void test_pin_refused(void **state)
{
	struct rd_tls_cfg cc, sc;
	struct pair p;

	user_cfg(&cc, "alice", "s3cret");
	pin_refuse = 1;
	server_cfg(&sc);
	lookups = 0;
	assert_false(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_err(p.c)->status, RD_EAUTH);
	assert_non_null(strstr(rd_tls_err(p.c)->msg, "not the pinned key"));
	assert_int_equal(lookups, 0); /* no LOGIN reached the server */
	assert_null(rd_tls_peer(p.s));
	done(&p);
	/* no pin and no --ca: nothing to check the key against, nothing sent */
	user_cfg(&cc, "alice", "s3cret");
	cc.pin = NULL;
	assert_false(shake(&p, &cc, &sc));
	assert_non_null(strstr(rd_tls_err(p.c)->msg, "no way to check the server's key"));
	assert_int_equal(lookups, 0);
	done(&p);
}

/* A server without secrets takes no password logins, and says so. */
static void test_no_login_server(void **state)
{
	struct rd_tls_cfg cc, sc;
	struct pair p;

	user_cfg(&cc, "alice", "s3cret");
	memset(&sc, 0, sizeof(sc));
	sc.allow_anon = 1; /* an auth = none daemon, no certificate */
	assert_false(shake(&p, &cc, &sc));
	assert_non_null(strstr(rd_tls_err(p.c)->msg, "takes no password logins"));
	done(&p);
	sc.cert_file = TD "server.pem"; /* a certificate, but no secrets file */
	sc.key_file = TD "server.key";
	assert_false(shake(&p, &cc, &sc));
	assert_non_null(strstr(rd_tls_err(p.c)->msg, "takes no password logins"));
	done(&p);
}

static void test_ssh_psk(void **state)
{
	static const uint8_t secret[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
	struct rd_tls_cfg cc, sc;
	struct pair p;

	memset(&cc, 0, sizeof(cc));
	cc.auth = RD_AUTH_SSH;
	assert_int_equal(rd_tls_psk_ssh(secret, sizeof(secret), cc.psk), 0);
	server_cfg(&sc);
	sc.ssh_secret_set = 1;
	memcpy(sc.psk, cc.psk, sizeof(sc.psk));
	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_peer(p.s)->auth, RD_AUTH_SSH);
	done(&p);
	/* Another secret, or a server expecting none: refused. */
	sc.psk[0] ^= 1;
	assert_false(shake(&p, &cc, &sc));
	assert_non_null(strstr(rd_tls_err(p.c)->msg, "one-time secret"));
	done(&p);
	server_cfg(&sc);
	assert_false(shake(&p, &cc, &sc));
	done(&p);
}

static void test_anonymous(void **state)
{
	struct rd_tls_cfg cc, sc;
	struct pair p;

	memset(&cc, 0, sizeof(cc));
	cc.auth = RD_AUTH_ANON;
	server_cfg(&sc);
	sc.allow_anon = 1;
	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_peer(p.s)->auth, RD_AUTH_ANON);
	assert_string_equal(rd_tls_peer(p.s)->user, "");
	roundtrip(p.c, p.s, "OPEN pub/x");
	done(&p);
	sc.allow_anon = 0;
	assert_false(shake(&p, &cc, &sc));
	assert_non_null(strstr(rd_tls_err(p.c)->msg, "anonymous access was refused"));
	done(&p);
}

static void cert_server(struct rd_tls_cfg *sc)
{
	server_cfg(sc);
	sc->cert_file = TD "server.pem";
	sc->key_file = TD "server.key";
	sc->client_ca_file = TD "ca.pem";
}

/* A client that verifies the daemon's certificate (storage1, the test CA),
 * with a certificate of its own if cert is set (key beside it). */
static void cert_client(struct rd_tls_cfg *c, const char *cert, const char *key)
{
	memset(c, 0, sizeof(*c));
	c->auth = RD_AUTH_CERT;
	c->ca_file = TD "ca.pem";
	c->host = "storage1";
	c->cert_file = cert;
	c->key_file = key;
}

static void test_certificates(void **state)
{
	struct rd_tls_cfg cc, sc;
	struct pair p;

	/* Server certificate verified by the client, no client certificate. */
	cert_client(&cc, NULL, NULL);
	cert_server(&sc);
	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_peer(p.c)->auth, RD_AUTH_CERT);
	assert_int_equal(rd_tls_peer(p.s)->auth, RD_AUTH_ANON);
	done(&p);
	/* By address too. */
	cc.host = "127.0.0.1";
	assert_true(shake(&p, &cc, &sc));
	done(&p);
	/* With a client certificate: the user is its CN. */
	cc.cert_file = TD "client.pem";
	cc.key_file = TD "client.key";
	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_peer(p.s)->auth, RD_AUTH_CERT);
	assert_string_equal(rd_tls_peer(p.s)->user, "alice");
	done(&p);
	/* A user with a secret on the same server (client CA set): the
	 * certificate's key pinned, or the certificate checked with --ca. */
	user_cfg(&cc, "alice", "s3cret");
	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_peer(p.s)->auth, RD_AUTH_USER);
	done(&p);
	user_cfg(&cc, "alice", "s3cret");
	cc.pin = NULL;
	cc.ca_file = TD "ca.pem";
	cc.host = "storage1";
	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_peer(p.s)->auth, RD_AUTH_USER);
	done(&p);
	cc.host = "storage2"; /* --ca: the name is checked too */
	assert_false(shake(&p, &cc, &sc));
	assert_non_null(strstr(rd_tls_err(p.c)->msg, "certificate was not accepted"));
	done(&p);
	/* A client certificate from another CA is refused. */
	cert_client(&cc, TD "rogue.pem", TD "rogue.key");
	assert_false(shake(&p, &cc, &sc));
	assert_true(p.rs < 0);
	done(&p);
}

/*
 * One context for many sessions (the daemon's): certificates read once,
 * each session still authenticated on its own (PSK user, certificate
 * with a client certificate), the context freed before a session that
 * uses it ends; a missing certificate file is named when it is made.
 */
static void test_shared_context(void **state)
{
	struct rd_tls_cfg cc, sc;
	struct rd_tls_ctx *x = NULL;
	struct rd_err err;
	struct pair p1, p2;

	(void)state;
	cert_server(&sc);
	sc.role = RD_TLS_SERVER;
	assert_int_equal(rd_tls_ctx_new(&x, &sc, &err), 0);
	assert_non_null(x);
	sc.shared = x;
	user_cfg(&cc, "alice", "s3cret");
	assert_true(shake(&p1, &cc, &sc));
	assert_int_equal(rd_tls_peer(p1.s)->auth, RD_AUTH_USER);
	assert_string_equal(rd_tls_peer(p1.s)->user, "alice");
	cert_client(&cc, TD "client.pem", TD "client.key");
	assert_true(shake(&p2, &cc, &sc));
	assert_int_equal(rd_tls_peer(p2.s)->auth, RD_AUTH_CERT);
	assert_string_equal(rd_tls_peer(p2.s)->user, "alice");
	user_cfg(&cc, "alice", "wrong");
	{
		struct pair p3;

		assert_false(shake(&p3, &cc, &sc)); /* a wrong secret is still refused */
		done(&p3);
	}
	rd_tls_ctx_free(x); /* the sessions hold their own references */
	roundtrip(p1.c, p1.s, "after the shared context is gone");
	roundtrip(p2.s, p2.c, "and on the other session");
	done(&p1);
	done(&p2);

	cert_server(&sc);
	sc.role = RD_TLS_SERVER;
	sc.cert_file = TD "nosuch.pem";
	assert_int_equal(rd_tls_ctx_new(&x, &sc, &err), -RD_EUSAGE);
	assert_null(x);
	assert_non_null(strstr(err.msg, "nosuch.pem"));
}

static void test_certificate_refused(void **state)
{
	struct rd_tls_cfg cc, sc;
	struct pair p;

	cert_client(&cc, NULL, NULL);
	cc.host = "storage2"; /* not the name in the certificate */
	cert_server(&sc);
	assert_false(shake(&p, &cc, &sc));
	assert_non_null(strstr(rd_tls_err(p.c)->msg, "certificate was not accepted"));
	done(&p);
	cc.ca_file = TD "other-ca.pem";
	cc.host = "storage1";
	assert_false(shake(&p, &cc, &sc));
	assert_non_null(strstr(rd_tls_err(p.c)->msg, "certificate was not accepted"));
	done(&p);
	/* No --ca: nothing is trusted, and the message says what to give. */
	cc.ca_file = NULL;
	assert_false(shake(&p, &cc, &sc));
	assert_non_null(strstr(rd_tls_err(p.c)->msg, "--ca FILE"));
	done(&p);
	/* A missing file is named. */
	cc.ca_file = TD "nonexistent.pem";
	cc.role = RD_TLS_CLIENT;
	assert_int_not_equal(rd_tls_new(&p.c, &cc, "server", NULL), 0);
	assert_non_null(strstr(rd_tls_err(p.c)->msg, "nonexistent.pem"));
	rd_tls_free(p.c);
}

/* Forged, replayed, truncated and doubled records are refused. */
static void test_record_hygiene(void **state)
{
	static uint8_t rec[FRAME], two[2 * FRAME], msg[RD_CTRL_MAX], big[RD_CTRL_MAX + 1];
	struct rd_tls_cfg cc, sc;
	struct pair p;
	size_t n, n2, m;

	user_cfg(&cc, "alice", "s3cret");
	server_cfg(&sc);
	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_seal(p.c, "hello", 5), 0);
	n = rd_tls_out(p.c, rec, sizeof(rec));
	rec[n - 1] ^= 1;
	assert_int_equal(rd_tls_open(p.s, rec, n, msg, sizeof(msg), &m), -RD_EPROTO);
	done(&p);

	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_seal(p.c, "hello", 5), 0);
	n = rd_tls_out(p.c, rec, sizeof(rec));
	assert_int_equal(rd_tls_open(p.s, rec, n, msg, sizeof(msg), &m), 0);
	assert_int_equal(rd_tls_open(p.s, rec, n, msg, sizeof(msg), &m), -RD_EPROTO); /* replay */
	done(&p);

	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_seal(p.c, "hello", 5), 0);
	n = rd_tls_out(p.c, rec, sizeof(rec));
	assert_int_equal(rd_tls_open(p.s, rec, n - 3, msg, sizeof(msg), &m), -RD_EPROTO);
	assert_non_null(strstr(rd_tls_err(p.s)->msg, "not one whole record"));
	done(&p);

	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_seal(p.c, "one", 3), 0);
	assert_int_equal(rd_tls_seal(p.c, "two", 3), 0);
	n = rd_tls_out(p.c, two, sizeof(two));
	assert_int_equal(rd_tls_open(p.s, two, n, msg, sizeof(msg), &m), -RD_EPROTO);
	assert_non_null(strstr(rd_tls_err(p.s)->msg, "more than one message"));
	/* The largest message fits one record; one byte more is refused. */
	memset(big, 'x', sizeof(big));
	assert_int_equal(rd_tls_seal(p.c, big, RD_CTRL_MAX), 0);
	n2 = rd_tls_out(p.c, rec, sizeof(rec));
	assert_true(n2 <= FRAME && rd_tls_out_pending(p.c) == 0);
	assert_int_equal(rd_tls_seal(p.c, big, sizeof(big)), -RD_EUSAGE);
	done(&p);
}

/* Before the handshake nothing can be sealed, opened or exported. */
static void test_not_before_handshake(void **state)
{
	struct rd_tls_cfg cc;
	struct rd_tls *t;
	uint8_t k[32], msg[16];
	size_t m;

	user_cfg(&cc, "alice", "s3cret");
	cc.role = RD_TLS_CLIENT;
	assert_int_equal(rd_tls_new(&t, &cc, "server", NULL), 0);
	assert_int_equal(rd_tls_seal(t, "x", 1), -RD_EUSAGE);
	assert_int_equal(rd_tls_open(t, "x", 1, msg, sizeof(msg), &m), -RD_EPROTO);
	assert_true(rd_tls_export_key(t, RD_TLS_CHUNK_LABEL, k, 32) < 0);
	assert_null(rd_tls_peer(t));
	rd_tls_free(t);
	cc.user = "";
	assert_int_equal(rd_tls_new(&t, &cc, "server", NULL), -RD_EUSAGE);
	rd_tls_free(t);
	rd_tls_free(NULL);
}

/*
 * An rdcp before protocol 9: a TLS PSK named after the user, derived from
 * the secret with PBKDF2 (what an observer could test guesses against).
 * Refused, whatever the secret, and the server says why.
 */
static SSL_SESSION *old_session(SSL *ssl, const uint8_t *key)
{
	static const unsigned char aes128gcm[] = {0x13, 0x01};
	SSL_SESSION *s = SSL_SESSION_new();

	assert_non_null(s);
	assert_int_equal(SSL_SESSION_set1_master_key(s, key, 32), 1);
	assert_int_equal(SSL_SESSION_set_cipher(s, SSL_CIPHER_find(ssl, aes128gcm)), 1);
	assert_int_equal(SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION), 1);
	return s;
}

static int old_client_cb(SSL *ssl, const EVP_MD *md, const unsigned char **id, size_t *idlen,
			 SSL_SESSION **sess)
{
	uint8_t key[32];

	(void)md;
	assert_int_equal(PKCS5_PBKDF2_HMAC("s3cret", 6, (const unsigned char *)"rdcp-psk:alice", 14,
					   10000, EVP_sha256(), 32, key),
			 1);
	*sess = old_session(ssl, key);
	*id = (const unsigned char *)"alice";
	*idlen = 5;
	return 1;
}

static void test_old_client_refused(void **state)
{
	static uint8_t buf[FRAME];
	struct rd_tls_cfg sc;
	struct rd_tls *s;
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *c;
	BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
	size_t n;
	int i, rs = 0, r;

	assert_non_null(ctx);
	assert_int_equal(SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION), 1);
	c = SSL_new(ctx);
	SSL_set_psk_use_session_callback(c, old_client_cb);
	SSL_set_bio(c, in, out);
	SSL_set_connect_state(c);
	server_cfg(&sc);
	sc.role = RD_TLS_SERVER;
	assert_int_equal(rd_tls_new(&s, &sc, "old client", NULL), 0);
	for (i = 0; i < 5 && rs == 0; i++) {
		r = SSL_do_handshake(c);
		(void)r;
		while ((r = BIO_read(out, buf, sizeof(buf))) > 0 && rs == 0)
			rs = rd_tls_handshake(s, buf, (size_t)r);
		while ((n = rd_tls_out(s, buf, sizeof(buf))) > 0)
			BIO_write(in, buf, (int)n);
	}
	assert_true(rs < 0);
	assert_int_equal(rd_tls_err(s)->status, RD_EAUTH);
	assert_non_null(strstr(rd_tls_err(s)->msg, "user alice logs in the way of rdcp before "
						   "protocol 9"));
	assert_null(rd_tls_peer(s));
	rd_tls_free(s);
	SSL_free(c);
	SSL_CTX_free(ctx);
}

/* The host key: made once (0600), the same key read back; refused when others may read it. */
static void test_host_key(void **state)
{
	struct rd_tls_cfg sc;
	struct rd_tls_ctx *x = NULL;
	struct rd_err err;
	struct stat st;
	char fp1[RD_TLS_FP_MAX], fp2[RD_TLS_FP_MAX];
	const char *path = tmp_path("hk/new.key");

	unlink(path);
	server_cfg(&sc);
	sc.role = RD_TLS_SERVER;
	sc.host_key_file = path;
	assert_int_equal(rd_tls_ctx_new(&x, &sc, &err), 0);
	assert_int_equal(rd_tls_ctx_fingerprint(x, fp1), 0);
	rd_tls_ctx_free(x);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(tmp_path("hk"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(rd_tls_ctx_new(&x, &sc, &err), 0);
	assert_int_equal(rd_tls_ctx_fingerprint(x, fp2), 0);
	rd_tls_ctx_free(x);
	assert_string_equal(fp1, fp2);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_not_equal(rd_tls_ctx_new(&x, &sc, &err), 0);
	assert_null(x);
	assert_non_null(strstr(err.msg, path));
	assert_non_null(strstr(err.msg, "make it 0600"));
	assert_int_equal(chmod(path, 0600), 0);
	assert_int_equal(symlink(path, tmp_path("hk/link.key")), 0);
	sc.host_key_file = tmp_path("hk/link.key");
	assert_int_not_equal(rd_tls_ctx_new(&x, &sc, &err), 0);
	assert_non_null(strstr(err.msg, "symbolic link"));
	/* secrets but no key at all: refused when the context is made */
	sc.host_key_file = NULL;
	assert_int_not_equal(rd_tls_ctx_new(&x, &sc, &err), 0);
	assert_non_null(strstr(err.msg, "password logins need the server's own key"));
}

/* The client's pins: first contact adds, the same key passes, another is refused. */
static void test_known_hosts(void **state)
{
	const char *path = tmp_path("home/.rdcp/known_hosts");
	struct rd_err err;
	char text[512];
	FILE *f;
	int added;

	rd_err_clear(&err);
	mkdir(tmp_path("home"), 0700);
	assert_int_equal(rd_known_hosts_check(path, "storage1", "SHA256:one", &added, &err), 0);
	assert_int_equal(added, 1);
	assert_int_equal(rd_known_hosts_check(path, "[storage1]:9000", "SHA256:two", &added, &err),
			 0);
	assert_int_equal(added, 1);
	assert_int_equal(rd_known_hosts_check(path, "storage1", "SHA256:one", &added, &err), 0);
	assert_int_equal(added, 0);
	assert_int_equal(rd_known_hosts_check(path, "storage1", "SHA256:evil", &added, &err),
			 -RD_EAUTH);
	assert_non_null(strstr(err.msg, "known_hosts:1 pins SHA256:one"));
	assert_non_null(strstr(err.msg, "impersonating storage1"));
	f = fopen(path, "r");
	assert_non_null(f);
	text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
	fclose(f);
	assert_string_equal(text, "storage1 SHA256:one\n[storage1]:9000 SHA256:two\n");
	/* a file that cannot be written pins what it lists and takes nothing new */
	if (geteuid() != 0) {
		assert_int_equal(chmod(path, 0400), 0);
		assert_int_equal(rd_known_hosts_check(path, "storage9", "SHA256:x", &added, &err),
				 -RD_EAUTH);
		assert_non_null(strstr(err.msg, "cannot be written"));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_user_login),	    cmocka_unit_test(test_user_refused),
	    cmocka_unit_test(test_login_observed),  cmocka_unit_test(test_pin_refused),
	    cmocka_unit_test(test_no_login_server), cmocka_unit_test(test_old_client_refused),
	    cmocka_unit_test(test_host_key),	    cmocka_unit_test(test_known_hosts),
	    cmocka_unit_test(test_ssh_psk),	    cmocka_unit_test(test_anonymous),
	    cmocka_unit_test(test_certificates),    cmocka_unit_test(test_certificate_refused),
	    cmocka_unit_test(test_shared_context),  cmocka_unit_test(test_export_ctx),
	    cmocka_unit_test(test_record_hygiene),  cmocka_unit_test(test_not_before_handshake),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
