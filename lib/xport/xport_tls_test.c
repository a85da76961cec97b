// SPDX-License-Identifier: MIT
/*
 * The TLS layer over the loopback transport: handshakes, sealed messages
 * and writes, nothing in clear on the wire, tampering and clear-text
 * messages refused, refused secrets and silent peers.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/proto/rd_proto.h"
#include "lib/tls/rd_tls.h"
#include "lib/xport/rd_xport.h"
#include "lib/xport/rd_xport_loop.h"

static const char secret_path[] = "secret-dir/secret-file.bin";

struct wire {
	int tamper;	/* flip a byte of side 0's first TLS frame after n_hs */
	int seen_clear; /* a frame other than TLS/CREDIT crossed */
	int seen_plain; /* the secret path crossed in clear */
	int seen_data;	/* the written payload was seen */
	int retype;	/* make side 0's first frame after n_hs a clear NOTE */
	unsigned n_hs;	/* frames of side 0 before tampering */
};

static enum rd_loop_action hook(void *ctx, struct rd_loop_event *ev)
{
	struct wire *w = ctx;

	if (ev->type != RD_MSG_TLS && ev->type != RD_MSG_CREDIT)
		w->seen_clear = 1;
	if (memmem(ev->msg, ev->len, secret_path, strlen(secret_path)))
		w->seen_plain = 1;
	if (ev->data)
		w->seen_data = 1;
	if (w->tamper && ev->side == 0 && ev->type == RD_MSG_TLS && ev->n > w->n_hs) {
		ev->msg[ev->len - 3] ^= 0x20;
		w->tamper = 0;
	}
	if (w->retype && ev->side == 0 && ev->type == RD_MSG_TLS && ev->n > w->n_hs) {
		ev->msg[0] = RD_MSG_NOTE;
		w->retype = 0;
	}
	return RD_LOOP_PASS;
}

static int lookup(void *ctx, const char *user, const uint8_t **secret, size_t *len)
{
	if (strcmp(user, "alice"))
		return -1;
	*secret = (const uint8_t *)"right";
	*len = 5;
	return 0;
}

/* The client's pin: any key (lib/tls/tls_test.c tests pins). */
static int pin_any(void *ctx, const char *fp, struct rd_err *err)
{
	return 0;
}

/* The server's host key: made by the first test, read by the others. */
static const char *host_key(void)
{
	static char path[512];
	const char *d = getenv("TEST_TMPDIR");

	snprintf(path, sizeof(path), "%s/xport_tls_test.key", d ? d : "/tmp");
	return path;
}

struct server {
	struct rd_conn *c;
	struct rd_tls_cfg cfg;
	int timeout_ms;
	int ret;
	struct rd_err err;
};

static void *server_main(void *p)
{
	struct server *s = p;

	s->ret = rd_conn_start_tls(&s->c, &s->cfg, s->timeout_ms, &s->err);
	return NULL;
}

struct session {
	struct rd_conn *a, *b;
	struct server srv;
	struct wire w;
	int cret;
	struct rd_err cerr;
};

static void start(struct session *x, const char *pass, int client_timeout)
{
	struct rd_conn_opts o = {.ctrl_depth = 16, .max_writes = 4, .timeout_ms = 5000};
	struct rd_tls_cfg cc;
	pthread_t th;

	assert_int_equal(rd_loop_pair(&x->a, &x->b, &o, hook, &x->w, NULL), 0);
	memset(&cc, 0, sizeof(cc));
	cc.role = RD_TLS_CLIENT;
	cc.auth = RD_AUTH_USER;
	cc.user = "alice";
	cc.pin = pin_any;
	assert_int_equal(rd_tls_login_key("alice", pass, strlen(pass), cc.login_key), 0);
	x->srv.c = x->b;
	x->srv.cfg.role = RD_TLS_SERVER;
	x->srv.cfg.lookup = lookup;
	x->srv.cfg.host_key_file = host_key();
	if (!x->srv.timeout_ms)
		x->srv.timeout_ms = 5000;
	assert_int_equal(pthread_create(&th, NULL, server_main, &x->srv), 0);
	if (client_timeout)
		x->cret = rd_conn_start_tls(&x->a, &cc, client_timeout, &x->cerr);
	assert_int_equal(pthread_join(th, NULL), 0);
}

/* Wait for one message on c and decode it. */
static int next_msg(struct rd_conn *c, struct rd_msg *m, uint8_t *copy)
{
	const uint8_t *p;
	size_t n;
	int i, r;

	for (i = 0; i < 200; i++) {
		r = rd_conn_recv(c, &p, &n);
		if (r < 0)
			return r;
		if (r == 1) {
			memcpy(copy, p, n);
			rd_conn_recv_done(c);
			return rd_msg_decode(copy, n, m, NULL) ? -RD_EPROTO : 0;
		}
		r = rd_conn_poll(c, 20);
		if (r < 0 && r != -RD_ETIMEOUT)
			return r;
	}
	return -RD_ETIMEOUT;
}

static int send_note(struct rd_conn *c)
{
	uint8_t buf[RD_MSG_MAX];
	struct rd_msg m;
	int n;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_NOTE;
	m.u.note.path.ptr = secret_path;
	m.u.note.path.len = (uint16_t)strlen(secret_path);
	n = rd_msg_encode(buf, sizeof(buf), &m);
	assert_true(n > 0);
	return rd_conn_send(c, buf, (size_t)n);
}

static void test_sealed_both_ways(void **state)
{
	static uint8_t copy[RD_MSG_MAX], pool[8192], src[4096];
	struct session x;
	struct rd_mr rmr, smr;
	struct rd_msg m;
	uint8_t k1[32], k2[32];
	int i;

	memset(&x, 0, sizeof(x));
	start(&x, "right", 5000);
	assert_int_equal(x.cret, 0);
	assert_int_equal(x.srv.ret, 0);
	assert_string_equal(rd_conn_transport(x.a), "tls");
	assert_string_equal(rd_tls_peer(rd_conn_tls(x.srv.c))->user, "alice");
	assert_int_equal(rd_tls_export_key(rd_conn_tls(x.a), RD_TLS_CHUNK_LABEL, k1, 32), 0);
	assert_int_equal(rd_tls_export_key(rd_conn_tls(x.srv.c), RD_TLS_CHUNK_LABEL, k2, 32), 0);
	assert_memory_equal(k1, k2, 32);
	/* A message each way. */
	assert_int_equal(send_note(x.a), 0);
	assert_int_equal(next_msg(x.srv.c, &m, copy), 0);
	assert_int_equal(m.hdr.type, RD_MSG_NOTE);
	assert_memory_equal(m.u.note.path.ptr, secret_path, strlen(secret_path));
	assert_int_equal(send_note(x.srv.c), 0);
	assert_int_equal(next_msg(x.a, &m, copy), 0);
	/* A bulk write and its sealed message. */
	for (i = 0; i < (int)sizeof(src); i++)
		src[i] = (uint8_t)i;
	assert_int_equal(rd_conn_reg(x.srv.c, pool, sizeof(pool), 1, &rmr), 0);
	assert_int_equal(rd_conn_reg(x.a, src, sizeof(src), 0, &smr), 0);
	{
		uint8_t buf[64];
		struct rd_msg e = {.hdr.type = RD_MSG_END, .u.end.nfiles = 7};
		int n = rd_msg_encode(buf, sizeof(buf), &e);
		struct rd_rkeys rk = {.n = 1, .k = {rmr.rkey}};

		assert_int_equal(rd_conn_write_send(x.a, &smr, 0, sizeof(src),
						    (uint64_t)(uintptr_t)pool + 100, &rk, buf,
						    (size_t)n, 1),
				 0);
	}
	assert_int_equal(next_msg(x.srv.c, &m, copy), 0);
	assert_int_equal(m.hdr.type, RD_MSG_END);
	assert_int_equal(m.u.end.nfiles, 7);
	assert_memory_equal(pool + 100, src, sizeof(src));
	assert_true(x.w.seen_data);
	assert_false(x.w.seen_clear);
	assert_false(x.w.seen_plain);
	rd_conn_dereg(x.srv.c, &rmr);
	rd_conn_dereg(x.a, &smr);
	rd_conn_close(x.a);
	rd_conn_close(x.srv.c);
}

static void test_tampered_record(void **state)
{
	static uint8_t copy[RD_MSG_MAX];
	struct session x;
	struct rd_msg m;

	memset(&x, 0, sizeof(x));
	x.w.tamper = 1;
	x.w.n_hs = 2; /* ClientHello, Finished + LOGIN: then the first record is flipped */
	start(&x, "right", 5000);
	assert_int_equal(x.cret, 0);
	assert_int_equal(x.srv.ret, 0);
	assert_int_equal(send_note(x.a), 0);
	assert_int_equal(next_msg(x.srv.c, &m, copy), -RD_EPROTO);
	assert_non_null(strstr(rd_conn_err(x.srv.c)->msg, "bad record"));
	rd_conn_close(x.a);
	rd_conn_close(x.srv.c);
}

/* After the handshake, a frame that is not a TLS record is refused. */
static void test_clear_after_tls(void **state)
{
	static uint8_t copy[RD_MSG_MAX];
	struct session x;
	struct rd_msg m;

	memset(&x, 0, sizeof(x));
	x.w.retype = 1;
	x.w.n_hs = 2;
	start(&x, "right", 5000);
	assert_int_equal(x.cret, 0);
	assert_int_equal(send_note(x.a), 0);
	assert_int_equal(next_msg(x.srv.c, &m, copy), -RD_EPROTO);
	assert_non_null(strstr(rd_conn_err(x.srv.c)->msg, "in clear after TLS started"));
	rd_conn_close(x.a);
	rd_conn_close(x.srv.c);
}

static void test_wrong_secret(void **state)
{
	struct session x;

	memset(&x, 0, sizeof(x));
	start(&x, "wrong", 5000);
	assert_int_equal(x.cret, -RD_EAUTH);
	assert_non_null(strstr(x.cerr.msg, "authentication failed"));
	assert_int_equal(x.srv.ret, -RD_EAUTH);
	assert_non_null(
	    strstr(x.srv.err.msg, "wrong secret or unknown user alice (the secret is wrong)"));
	/* On failure the connections are the caller's. */
	rd_conn_close(x.a);
	rd_conn_close(x.b);
}

/* A client that never starts TLS: the server gives up on time. */
static void test_silent_client(void **state)
{
	struct session x;

	memset(&x, 0, sizeof(x));
	x.srv.timeout_ms = 300;
	start(&x, "right", 0);
	assert_int_equal(x.srv.ret, -RD_ETIMEOUT);
	assert_non_null(strstr(x.srv.err.msg, "did not finish"));
	rd_conn_close(x.a);
	rd_conn_close(x.b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sealed_both_ways), cmocka_unit_test(test_tampered_record),
	    cmocka_unit_test(test_clear_after_tls),  cmocka_unit_test(test_wrong_secret),
	    cmocka_unit_test(test_silent_client),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
