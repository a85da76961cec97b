// SPDX-License-Identifier: MIT
/*
 * The TCP transport on 127.0.0.1: bulk writes land byte-exact in the
 * granted region before the message behind them; a write's "sent" callback
 * comes from rd_conn_poll(), never from inside rd_conn_write_send() (the
 * engine frees the buffer there; a callback inside the send made it hand
 * out a buffer still in flight); a write outside the granted region is
 * refused by the receiver, like a NIC would. All of it again with
 * bulk_thread (issue 12): payloads moved by the connection's own threads
 * on both sides, which must exist while it runs; and a peer that stops
 * in the middle of a payload the receiver's bulk thread is reading is a
 * closed connection, not a hang.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
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
	int bulk;     /* bulk_thread on both sides */
	int bulk_out; /* the sender saw its rdcp-bulk-out thread */
};

/* Is a thread of this process named name? */
static int have_thread(const char *name)
{
	char path[64], comm[32];
	struct dirent *e;
	int found = 0;
	DIR *d = opendir("/proc/self/task");

	while (d && !found && (e = readdir(d))) {
		ssize_t n;
		int fd;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/comm", e->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		if (n > 0) {
			comm[n] = 0;
			comm[strcspn(comm, "\n")] = 0;
			found = !strcmp(comm, name);
		}
	}
	if (d)
		closedir(d);
	return found;
}

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
	struct rd_conn_opts co = {
	    .transport = RD_XPORT_TCP, .timeout_ms = 10000, .bulk_thread = s->bulk};
	struct rd_cm_rep rep;
	struct rd_err err;
	struct rd_mr mr;
	uint8_t msg[RD_HDR_LEN + 12] = {RD_MSG_NOTE, 0, 0, 0, 0, 0, 0, 12};
	uint8_t *buf = pattern(WLEN, 7);
	uint64_t raddr;
	uint32_t rkey;
	struct rd_rkeys rk;
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
	rk.n = 1;
	rk.k[0] = rkey;
	for (i = 0; i < N_WRITES;) {
		s->inside = 1;
		r = rd_conn_write_send(s->c, &mr, 0, WLEN, raddr + (uint64_t)i * WLEN, &rk, msg,
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
	s->bulk_out = have_thread("rdcp-bulk-out");
	rd_conn_dereg(s->c, &mr);
out:
	rd_conn_close(s->c);
	free(buf);
	return NULL;
}

static void run(int bad_rkey, int bulk, int *got, int *exact, int *recv_ret, int *bulk_in,
		struct side *s)
{
	struct rd_listener *l = NULL;
	struct rd_conn_req *req;
	struct rd_cm_req creq;
	struct rd_cm_rep rep = {.version = RD_PROTO_MAX};
	struct rd_conn_opts co = {
	    .transport = RD_XPORT_TCP, .timeout_ms = 10000, .bulk_thread = bulk};
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
	s->bulk = bulk;
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
	*bulk_in = have_thread("rdcp-bulk-in");
	rd_conn_dereg(c, &mr);
	rd_conn_close(c);
	pthread_join(th, NULL);
	rd_listener_close(l);
	free(slot);
	free(want);
}

/* Every write exact and in order, callbacks only from poll; with bulk, the
 * payloads moved through both sides' threads, and without, through none. */
static void exact_case(int bulk)
{
	struct side s;
	int got, exact, rr, bin;

	run(0, bulk, &got, &exact, &rr, &bin, &s);
	assert_int_equal(s.ret, 0);
	assert_int_equal(rr, 0);
	assert_int_equal(got, N_WRITES);
	assert_true(exact);
	assert_int_equal(s.ncb, N_WRITES);
	assert_int_equal(s.cb_inside, 0);
	assert_int_equal(bin, bulk);	    /* the receiver's payloads: its thread */
	assert_int_equal(s.bulk_out, bulk); /* the sender's: its own */
}

static void test_writes_exact_and_callbacks_from_poll(void **state)
{
	(void)state;
	exact_case(0);
}

static void test_bulk_threads_exact_and_in_order(void **state)
{
	(void)state;
	exact_case(1);
}

static void test_bulk_write_outside_the_grant_is_refused(void **state)
{
	struct side s;
	int got, exact, rr, bin;

	(void)state;
	run(1, 1, &got, &exact, &rr, &bin, &s);
	assert_int_equal(got, 0);
	assert_int_equal(rr, -RD_EPROTO);
	assert_false(bin); /* refused on its header: no thread ever read it */
}

/* A raw client: the hello, then a write frame into a granted region that
 * stops after half its payload, and the connection closed. */
struct half_writer {
	const char *port;
	uint64_t raddr;
	uint32_t rkey;
	int go; /* set once raddr/rkey are known (under mu) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int ok; /* it got as far as writing half the payload */
	/* rest: after half, wait for go2 and write the other half */
	int rest, half_out, go2;
};

static void *half_writer_main(void *arg)
{
	struct half_writer *h = arg;
	struct rd_cm_req req = {
	    .ver_min = RD_PROTO_MIN, .ver_max = RD_PROTO_MAX, .ctrl_depth = 64, .lanes = 1};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	uint8_t f[RD_TF_HDR_LEN + RD_TF_WRITE_LEN], back[RD_TF_HDR_LEN + 64];
	uint8_t *half = pattern(WLEN / 2, 3);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	uint32_t v;

	sa.sin_port = htons((uint16_t)atoi(h->port));
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		goto out;
	memset(f, 0, sizeof(f));
	f[0] = RD_TF_CM_REQ;
	f[7] = RD_CM_REQ_LEN;
	if (rd_cm_req_encode(f + RD_TF_HDR_LEN, &req) != RD_CM_REQ_LEN ||
	    write(fd, f, RD_TF_HDR_LEN + RD_CM_REQ_LEN) != RD_TF_HDR_LEN + RD_CM_REQ_LEN ||
	    read(fd, back, sizeof(back)) < RD_TF_HDR_LEN || back[0] != RD_TF_CM_REP)
		goto out;
	pthread_mutex_lock(&h->mu);
	while (!h->go)
		pthread_cond_wait(&h->cv, &h->mu);
	pthread_mutex_unlock(&h->mu);
	/* a write frame for WLEN bytes (lib/proto/rd_proto.h section 4) */
	memset(f, 0, sizeof(f));
	f[0] = RD_TF_WRITE;
	v = htonl(RD_TF_WRITE_LEN + WLEN);
	memcpy(f + 4, &v, 4);
	v = htonl((uint32_t)(h->raddr >> 32));
	memcpy(f + 8, &v, 4);
	v = htonl((uint32_t)h->raddr);
	memcpy(f + 12, &v, 4);
	v = htonl(h->rkey);
	memcpy(f + 16, &v, 4);
	if (write(fd, f, sizeof(f)) != (ssize_t)sizeof(f))
		goto out;
	usleep(100000); /* the receiver's bulk thread is reading by now */
	if (write(fd, half, WLEN / 2) != (ssize_t)(WLEN / 2))
		goto out;
	if (h->rest) {
		pthread_mutex_lock(&h->mu);
		h->half_out = 1;
		pthread_cond_signal(&h->cv);
		while (!h->go2)
			pthread_cond_wait(&h->cv, &h->mu);
		pthread_mutex_unlock(&h->mu);
		/* the receiver may have shut us out: a failed write is fine */
		if (write(fd, half, WLEN / 2) != (ssize_t)(WLEN / 2)) {
		}
	}
	usleep(100000);
	h->ok = 1;
out:
	if (fd >= 0)
		close(fd); /* the rest never comes */
	free(half);
	return NULL;
}

/* Listen, start the raw writer h, accept it with co and grant it slot. */
static void half_start(struct half_writer *h, const struct rd_conn_opts *co, uint8_t *slot,
		       struct rd_listener **l, struct rd_conn **c, struct rd_mr *mr, pthread_t *th,
		       char *port, size_t portlen)
{
	struct rd_cm_rep rep = {.version = RD_PROTO_MAX};
	struct rd_conn_req *req;
	struct rd_cm_req creq;
	struct rd_err err;

	assert_int_equal(rd_listener_open(l, "127.0.0.1", "0", 4, RD_XPORT_TCP, &err), 0);
	snprintf(port, portlen, "%u", rd_listener_port(*l));
	h->port = port;
	assert_int_equal(pthread_create(th, NULL, half_writer_main, h), 0);
	assert_int_equal(rd_listener_next(*l, 5000, &req, &creq), 0);
	assert_int_equal(rd_conn_accept(req, co, &rep, c, &err), 0);
	assert_int_equal(rd_conn_reg(*c, slot, WLEN, 1, mr), 0);
	pthread_mutex_lock(&h->mu);
	h->raddr = (uint64_t)(uintptr_t)slot;
	h->rkey = mr->rkey;
	h->go = 1;
	pthread_cond_signal(&h->cv);
	pthread_mutex_unlock(&h->mu);
}

static void test_bulk_peer_gone_mid_payload(void **state)
{
	struct rd_conn_opts co = {.transport = RD_XPORT_TCP, .timeout_ms = 5000, .bulk_thread = 1};
	struct half_writer h = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
	struct rd_listener *l;
	struct rd_conn *c = NULL;
	struct rd_mr mr;
	char port[16];
	uint8_t *slot = calloc(1, WLEN);
	const uint8_t *m;
	size_t len;
	pthread_t th;
	int r = 0, i;

	(void)state;
	half_start(&h, &co, slot, &l, &c, &mr, &th, port, sizeof(port));
	/* within the 5 s silence timeout: the loss is seen, not waited out */
	for (i = 0; i < 40 && r >= 0; i++) {
		if (rd_conn_recv(c, &m, &len) == 1) {
			rd_conn_recv_done(c);
			continue;
		}
		r = rd_conn_poll(c, 100);
	}
	assert_true(r < 0);
	assert_int_not_equal(r, -RD_ETIMEOUT);
	assert_true(have_thread("rdcp-bulk-in")); /* the payload was its to read */
	pthread_join(th, NULL);
	assert_true(h.ok);
	rd_conn_dereg(c, &mr);
	rd_conn_close(c);
	rd_listener_close(l);
	free(slot);
}

/*
 * The receiver takes back a region while a payload is still landing in it
 * (the engine drops a free slot; only a hostile peer writes into a free
 * slot): the rest of the payload must not be written there, with or
 * without the bulk thread, and the peer is refused.
 */
static void taken_back_case(int bulk)
{
	struct rd_conn_opts co = {.transport = RD_XPORT_TCP, .timeout_ms = 5000, .bulk_thread = bulk};
	struct half_writer h = {.mu = PTHREAD_MUTEX_INITIALIZER,
				.cv = PTHREAD_COND_INITIALIZER,
				.rest = 1};
	struct rd_listener *l;
	struct rd_conn *c = NULL;
	struct rd_mr mr;
	char port[16];
	uint8_t *slot = calloc(1, WLEN);
	size_t i, bad = 0;
	pthread_t th;
	int r = 0, k;

	half_start(&h, &co, slot, &l, &c, &mr, &th, port, sizeof(port));
	pthread_mutex_lock(&h.mu);
	while (!h.half_out)
		pthread_cond_wait(&h.cv, &h.mu);
	pthread_mutex_unlock(&h.mu);
	for (k = 0; k < 5; k++) /* the first half is read (or being read) */
		rd_conn_poll(c, 50);
	rd_conn_dereg(c, &mr);
	memset(slot, 0xee, WLEN); /* "freed": nothing may land here any more */
	pthread_mutex_lock(&h.mu);
	h.go2 = 1;
	pthread_cond_signal(&h.cv);
	pthread_mutex_unlock(&h.mu);
	for (k = 0; k < 10 && r >= 0; k++)
		r = rd_conn_poll(c, 50);
	pthread_join(th, NULL);
	usleep(50000);
	for (i = 0; i < WLEN; i++)
		bad += slot[i] != 0xee;
	assert_int_equal(bad, 0);
	assert_int_equal(r, -RD_EPROTO);
	assert_non_null(strstr(rd_conn_err(c)->msg, "taken back"));
	rd_conn_close(c);
	rd_listener_close(l);
	free(slot);
}

static void test_region_taken_back_mid_payload(void **state)
{
	(void)state;
	taken_back_case(0);
}

static void test_bulk_region_taken_back_mid_payload(void **state)
{
	(void)state;
	taken_back_case(1);
}

static void test_write_outside_the_grant_is_refused(void **state)
{
	struct side s;
	int got, exact, rr, bin;

	run(1, 0, &got, &exact, &rr, &bin, &s);
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
		cmocka_unit_test(test_bulk_threads_exact_and_in_order),
		cmocka_unit_test(test_bulk_write_outside_the_grant_is_refused),
		cmocka_unit_test(test_bulk_peer_gone_mid_payload),
		cmocka_unit_test(test_region_taken_back_mid_payload),
		cmocka_unit_test(test_bulk_region_taken_back_mid_payload),
		cmocka_unit_test(test_lanes_over_tcp_are_one),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
