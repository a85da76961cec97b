// SPDX-License-Identifier: MIT
/*
 * The TCP transport on 127.0.0.1: bulk writes land byte-exact in the
 * granted region before the message behind them; a write's "sent" callback
 * comes from rd_conn_poll(), never from inside rd_conn_write_send() (the
 * engine frees the buffer there; a callback inside the send made it hand
 * out a buffer still in flight); a write outside the granted region is
 * refused by the receiver, like a NIC would.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/xport/rd_xport.h"

#define N_WRITES 48
#define WLEN (1u << 20) /* each write has its own place: 48 MiB in all */

struct side {
	const char *port;
	struct rd_conn *c;
	int ret;
	int inside, cb_inside, ncb;
	int bad_rkey;
};

static void on_sent(void *ctx, uint64_t cookie)
{
	struct side *s = ctx;

	s->ncb++;
	if (s->inside)
		s->cb_inside++;
}

static uint8_t *pattern(size_t len, unsigned seed)
{
	uint8_t *b = malloc(len);
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = (uint8_t)(i * 131 + seed);
	return b;
}

/* The sender: N_WRITES writes of WLEN into the peer's slot, each with a message. */
static void *sender_main(void *arg)
{
	struct side *s = arg;
	struct rd_cm_req req = {.ver_min = RD_PROTO_MIN, .ver_max = RD_PROTO_MAX};
	struct rd_conn_opts co = {.transport = RD_XPORT_TCP, .timeout_ms = 10000};
	struct rd_cm_rep rep;
	struct rd_err err;
	struct rd_mr mr;
	uint8_t msg[RD_HDR_LEN + 12] = {RD_MSG_NOTE, 0, 0, 0, 0, 0, 0, 12};
	uint8_t *buf = pattern(WLEN, 7);
	uint64_t raddr;
	uint32_t rkey;
	const uint8_t *m;
	size_t len;
	int i, r;

	s->ret = rd_conn_connect(&s->c, "127.0.0.1", s->port, &co, &req, &rep, &err);
	if (s->ret)
		goto out;
	rd_conn_reg(s->c, buf, WLEN, 0, &mr);
	rd_conn_set_sent_cb(s->c, on_sent, s);
	/* the receiver's first message names its slot */
	while (rd_conn_recv(s->c, &m, &len) != 1)
		if ((s->ret = rd_conn_poll(s->c, 100)) < 0)
			goto out;
	memcpy(&raddr, m + RD_HDR_LEN, 8);
	memcpy(&rkey, m + RD_HDR_LEN + 8, 4);
	rd_conn_recv_done(s->c);
	if (s->bad_rkey)
		rkey ^= 0x55;
	for (i = 0; i < N_WRITES;) {
		s->inside = 1;
		r = rd_conn_write_send(s->c, &mr, 0, WLEN, raddr + (uint64_t)i * WLEN, rkey, msg,
				       sizeof(msg), (uint64_t)i);
		s->inside = 0;
		if (r < 0) {
			s->ret = r;
			goto out;
		}
		if (r == 0)
			i++;
		if (rd_conn_poll(s->c, r ? 20 : 0) < 0)
			break;
	}
	s->ret = rd_conn_flush(s->c, 10000);
	while (s->ncb < N_WRITES && rd_conn_poll(s->c, 100) >= 0)
		;
	rd_conn_dereg(s->c, &mr);
out:
	rd_conn_close(s->c);
	free(buf);
	return NULL;
}

static void run(int bad_rkey, int *got, int *exact, int *recv_ret, struct side *s)
{
	struct rd_listener *l = NULL;
	struct rd_conn_req *req;
	struct rd_cm_req creq;
	struct rd_cm_rep rep = {.version = RD_PROTO_MAX};
	struct rd_conn_opts co = {.transport = RD_XPORT_TCP, .timeout_ms = 10000};
	struct rd_conn *c = NULL;
	struct rd_err err;
	struct rd_mr mr;
	char port[16];
	uint8_t *slot = calloc(N_WRITES, WLEN), *want = pattern(WLEN, 7);
	uint8_t first[RD_HDR_LEN + 12] = {RD_MSG_NOTE, 0, 0, 0, 0, 0, 0, 12};
	uint64_t raddr = (uint64_t)(uintptr_t)slot;
	const uint8_t *m;
	size_t len;
	pthread_t th;
	int r;

	memset(s, 0, sizeof(*s));
	s->bad_rkey = bad_rkey;
	*got = 0;
	*exact = 1;
	assert_int_equal(rd_listener_open(&l, "127.0.0.1", "0", 4, RD_XPORT_TCP, &err), 0);
	snprintf(port, sizeof(port), "%u", rd_listener_port(l));
	s->port = port;
	assert_int_equal(pthread_create(&th, NULL, sender_main, s), 0);
	assert_int_equal(rd_listener_next(l, 5000, &req, &creq), 0);
	assert_int_equal(rd_conn_accept(req, &co, &rep, &c, &err), 0);
	assert_int_equal(rd_conn_reg(c, slot, (size_t)N_WRITES * WLEN, 1, &mr), 0);
	memcpy(first + RD_HDR_LEN, &raddr, 8);
	memcpy(first + RD_HDR_LEN + 8, &mr.rkey, 4);
	assert_int_equal(rd_conn_send(c, first, sizeof(first)), 0);
	*recv_ret = 0;
	while (*got < N_WRITES) {
		if (rd_conn_recv(c, &m, &len) == 1) {
			/* the write ahead of message k is in place when k is seen */
			if (memcmp(slot + (size_t)*got * WLEN, want, WLEN))
				*exact = 0;
			usleep(2000); /* a slow receiver: the sender's socket fills */
			rd_conn_recv_done(c);
			(*got)++;
			continue;
		}
		r = rd_conn_poll(c, 1000);
		if (r < 0) {
			*recv_ret = r;
			break;
		}
	}
	rd_conn_dereg(c, &mr);
	rd_conn_close(c);
	pthread_join(th, NULL);
	rd_listener_close(l);
	free(slot);
	free(want);
}

static void test_writes_exact_and_callbacks_from_poll(void **state)
{
	struct side s;
	int got, exact, rr;

	run(0, &got, &exact, &rr, &s);
	assert_int_equal(s.ret, 0);
	assert_int_equal(rr, 0);
	assert_int_equal(got, N_WRITES);
	assert_true(exact);
	assert_int_equal(s.ncb, N_WRITES);
	assert_int_equal(s.cb_inside, 0);
}

static void test_write_outside_the_grant_is_refused(void **state)
{
	struct side s;
	int got, exact, rr;

	run(1, &got, &exact, &rr, &s);
	assert_int_equal(got, 0);
	assert_int_equal(rr, -RD_EPROTO);
}

struct lanes_client {
	const char *port;
	unsigned want;
	uint32_t flags;
	int ret;
	struct rd_cm_rep rep;
	unsigned lanes;
};

static void *lanes_client_main(void *arg)
{
	struct lanes_client *lc = arg;
	struct rd_cm_req req = {.ver_min = RD_PROTO_MIN, .ver_max = RD_PROTO_MAX};
	struct rd_conn_opts co = {.transport = RD_XPORT_TCP, .timeout_ms = 5000};
	struct rd_conn *c = NULL;
	struct rd_err err;

	co.lanes = lc->want;
	req.flags = lc->flags;
	req.sid = 77;
	req.lanes = 1;
	lc->ret = rd_conn_connect(&c, "127.0.0.1", lc->port, &co, &req, &lc->rep, &err);
	if (!lc->ret)
		lc->lanes = rd_conn_info(c)->lanes;
	rd_conn_close(c);
	return NULL;
}

/*
 * Lanes over TCP (lib/proto/rd_proto.h section 1): a client that asks for
 * four gets one, whatever the server's cap; a JOIN (an extra lane) is
 * never a connection over TCP.
 */
static void test_lanes_over_tcp_are_one(void **state)
{
	struct rd_conn_opts co = {.transport = RD_XPORT_TCP, .timeout_ms = 5000, .lanes = 8};
	struct lanes_client lc;
	struct rd_listener *l;
	struct rd_conn_req *req;
	struct rd_cm_req creq;
	struct rd_cm_rep rep = {.version = RD_PROTO_MAX};
	struct rd_conn *c = NULL;
	struct rd_err err;
	char port[16];
	pthread_t th;

	(void)state;
	assert_int_equal(rd_listener_open(&l, "127.0.0.1", "0", 4, RD_XPORT_TCP, &err), 0);
	snprintf(port, sizeof(port), "%u", rd_listener_port(l));
	memset(&lc, 0, sizeof(lc));
	lc.port = port;
	lc.want = 4;
	assert_int_equal(pthread_create(&th, NULL, lanes_client_main, &lc), 0);
	assert_int_equal(rd_listener_next(l, 5000, &req, &creq), 0);
	assert_int_equal(creq.flags & RD_CMF_JOIN, 0);
	assert_int_equal(rd_conn_accept(req, &co, &rep, &c, &err), 0);
	assert_int_equal(rd_conn_info(c)->lanes, 1);
	pthread_join(th, NULL);
	assert_int_equal(lc.ret, 0);
	assert_int_equal(lc.rep.lanes, 1);
	assert_int_equal(lc.lanes, 1);
	rd_conn_close(c);

	/* A JOIN frame, as a hostile client would write it: refused by the
	 * listener itself (rd_listener_next never returns it). */
	{
		struct rd_cm_req j = {.ver_min = RD_PROTO_MIN, .ver_max = RD_PROTO_MAX};
		struct sockaddr_in sa = {.sin_family = AF_INET};
		uint8_t f[RD_TF_HDR_LEN + RD_CM_JOIN_LEN], back[RD_TF_HDR_LEN + 64];
		int fd = socket(AF_INET, SOCK_STREAM, 0);
		ssize_t n;

		j.flags = RD_CMF_JOIN;
		j.ctrl_depth = 64;
		j.lanes = 1;
		j.sid = 77;
		memset(f, 0, sizeof(f));
		f[0] = RD_TF_CM_REQ;
		f[7] = RD_CM_JOIN_LEN;
		assert_int_equal(rd_cm_req_encode(f + RD_TF_HDR_LEN, &j), RD_CM_JOIN_LEN);
		sa.sin_port = htons((uint16_t)rd_listener_port(l));
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		assert_true(fd >= 0);
		assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(write(fd, f, sizeof(f)), (ssize_t)sizeof(f));
		assert_int_equal(rd_listener_next(l, 1000, &req, &creq), 1);
		n = read(fd, back, sizeof(back));
		assert_true(n >= RD_TF_HDR_LEN);
		assert_int_equal(back[0], RD_TF_CM_REJ);
		close(fd);
	}
	rd_listener_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writes_exact_and_callbacks_from_poll),
		cmocka_unit_test(test_write_outside_the_grant_is_refused),
		cmocka_unit_test(test_lanes_over_tcp_are_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
