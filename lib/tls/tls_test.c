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

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"
#include "lib/tls/rd_tls.h"

#define TD    "lib/tls/testdata/"
#define FRAME (RD_CTRL_MAX + RD_TLS_OVERHEAD)

static int lookup(void *ctx, const char *user, uint8_t psk[RD_TLS_PSK_LEN])
{
	(void)ctx;
	if (strcmp(user, "alice"))
		return -1;
	return rd_tls_psk_user(user, "s3cret", 6, psk);
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

static void server_cfg(struct rd_tls_cfg *s)
{
	memset(s, 0, sizeof(*s));
	s->lookup = lookup;
}

static void user_cfg(struct rd_tls_cfg *c, const char *user, const char *secret)
{
	memset(c, 0, sizeof(*c));
	c->auth = RD_AUTH_USER;
	c->user = user;
	assert_int_equal(rd_tls_psk_user(user, secret, strlen(secret), c->psk), 0);
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

static void test_user_psk(void **state)
{
	struct rd_tls_cfg cc, sc;
	struct pair p;
	uint8_t k1[32], k2[32];

	user_cfg(&cc, "alice", "s3cret");
	server_cfg(&sc);
	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_peer(p.s)->auth, RD_AUTH_USER);
	assert_string_equal(rd_tls_peer(p.s)->user, "alice");
	assert_int_equal(rd_tls_peer(p.c)->auth, RD_AUTH_USER);
	assert_string_equal(rd_tls_peer(p.c)->cipher, "TLS_AES_128_GCM_SHA256");
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

/* Wrong secret and unknown user fail the same way, with words that say so. */
static void test_user_refused(void **state)
{
	static const char *const users[] = {"alice", "mallory"};
	struct rd_tls_cfg cc, sc;
	struct pair p;
	unsigned i;

	for (i = 0; i < 2; i++) {
		user_cfg(&cc, users[i], i ? "s3cret" : "guess");
		server_cfg(&sc);
		assert_false(shake(&p, &cc, &sc));
		assert_true(p.rc < 0);
		assert_int_equal(rd_tls_err(p.c)->status, RD_EAUTH);
		assert_non_null(strstr(rd_tls_err(p.c)->msg, "authentication failed at server"));
		assert_non_null(strstr(rd_tls_err(p.c)->msg, "wrong secret, or no such user"));
		assert_true(p.rs < 0);
		assert_non_null(strstr(rd_tls_err(p.s)->msg, "wrong secret or unknown user"));
		assert_null(rd_tls_peer(p.s));
		done(&p);
	}
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
	/* A user with a secret on the same server (client CA set): the PSK
	 * session needs a session id context when peers are verified. */
	user_cfg(&cc, "alice", "s3cret");
	assert_true(shake(&p, &cc, &sc));
	assert_int_equal(rd_tls_peer(p.s)->auth, RD_AUTH_USER);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_user_psk),	   cmocka_unit_test(test_user_refused),
	    cmocka_unit_test(test_ssh_psk),	   cmocka_unit_test(test_anonymous),
	    cmocka_unit_test(test_certificates),   cmocka_unit_test(test_certificate_refused),
	    cmocka_unit_test(test_shared_context), cmocka_unit_test(test_export_ctx),
	    cmocka_unit_test(test_record_hygiene), cmocka_unit_test(test_not_before_handshake),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
