// SPDX-License-Identifier: MIT
/*
 * The TCP listener before a request arrived (issue 27 items 1 and 2), on
 * 127.0.0.x: connections that never send do not hold rd_listener_next()
 * up (a real client's request comes out at once beside them); the gate is
 * asked before anything is read and its refusal reaches the peer; the
 * pending set is bounded (the one waiting longest makes room) and each
 * has its deadline; and a listener out of file descriptors keeps going,
 * turns connections away as busy, says so, and accepts again once
 * descriptors are back.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "lib/proto/rd_proto.h"
#include "lib/xport/rd_xport.h"

static long now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static struct rd_listener *listen_here(unsigned *port)
{
	struct rd_listener *l = NULL;
	struct rd_err err;

	assert_int_equal(rd_listener_open(&l, "127.0.0.1", "0", 64, RD_XPORT_TCP, &err), 0);
	*port = rd_listener_port(l);
	return l;
}

/* A socket made now (from 127.0.0.src), connected later by dial(). */
static int sock_from(int src)
{
	struct sockaddr_in me = {.sin_family = AF_INET};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	me.sin_addr.s_addr = htonl(0x7f000000u | (unsigned)src);
	assert_int_equal(bind(fd, (struct sockaddr *)&me, sizeof(me)), 0);
	return fd;
}

static void dial(int fd, unsigned port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};

	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
}

static void send_request(int fd)
{
	struct rd_cm_req r = {
	    .ver_min = RD_PROTO_MIN, .ver_max = RD_PROTO_MAX, .ctrl_depth = 64, .lanes = 1};
	uint8_t f[RD_TF_HDR_LEN + RD_CM_REQ_LEN];

	memset(f, 0, sizeof(f));
	f[0] = RD_TF_CM_REQ;
	f[7] = RD_CM_REQ_LEN;
	assert_int_equal(rd_cm_req_encode(f + RD_TF_HDR_LEN, &r), RD_CM_REQ_LEN);
	assert_int_equal(write(fd, f, sizeof(f)), (ssize_t)sizeof(f));
}

/*
 * What came back on fd within ms: the reason of a CM_REJ frame, 0 for end
 * of stream without one, -1 for nothing (still open).
 */
static int answer(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	struct rd_cm_rej rej;
	uint8_t b[RD_TF_HDR_LEN + 64];
	ssize_t n;

	if (poll(&p, 1, ms) <= 0)
		return -1;
	n = read(fd, b, sizeof(b));
	if (n <= 0)
		return 0;
	if (n < RD_TF_HDR_LEN || b[0] != RD_TF_CM_REJ ||
	    rd_cm_rej_decode(b + RD_TF_HDR_LEN, (size_t)n - RD_TF_HDR_LEN, &rej))
		return -2;
	return rej.reason;
}

/* Item 1: ten silent sockets, then a real request: out at once, not after 5 s each. */
static void test_silent_sockets_do_not_hold_the_listener(void **state)
{
	struct rd_conn_req *req = NULL;
	struct rd_cm_req creq;
	struct rd_listener *l;
	unsigned port;
	int silent[10], fd, i, r;
	long t0;

	(void)state;
	l = listen_here(&port);
	for (i = 0; i < 10; i++) {
		silent[i] = sock_from(1);
		dial(silent[i], port);
	}
	/* the listener hears them first */
	assert_int_equal(rd_listener_next(l, 200, &req, &creq), 1);
	fd = sock_from(1);
	dial(fd, port);
	send_request(fd);
	t0 = now_ms();
	r = rd_listener_next(l, 3000, &req, &creq);
	assert_int_equal(r, 0);
	assert_true(now_ms() - t0 < 1000);
	assert_int_equal(creq.ctrl_depth, 64);
	assert_true(rd_conn_req_age_ms(req) < 1000);
	rd_conn_reject(req, &(struct rd_cm_rej){.reason = RD_REJ_BUSY});
	assert_int_equal(answer(fd, 1000), RD_REJ_BUSY);
	close(fd);
	for (i = 0; i < 10; i++)
		close(silent[i]);
	rd_listener_close(l);
}

struct gate_ctx {
	struct rd_listener *l;
	int calls, deny_src, cap;
	char last[80];
};

static int gate(void *ctx, const struct sockaddr *sa, const char *peer)
{
	struct gate_ctx *g = ctx;
	const struct sockaddr_in *s = (const struct sockaddr_in *)(const void *)sa;

	g->calls++;
	snprintf(g->last, sizeof(g->last), "%s", peer);
	if (sa->sa_family == AF_INET && (ntohl(s->sin_addr.s_addr) & 0xff) == (unsigned)g->deny_src)
		return RD_REJ_AUTH;
	if (g->cap && rd_listener_pending_from(g->l, sa) >= (unsigned)g->cap)
		return RD_REJ_HOST_BUSY;
	return 0;
}

/*
 * The gate is asked as each connection is accepted, before it sent
 * anything; its refusal reaches the peer at once; the per-address count it
 * reads is the pending connections from that address.
 */
static void test_gate_before_any_read(void **state)
{
	struct gate_ctx g = {.deny_src = 9, .cap = 3};
	struct rd_listener_pre pre = {.gate = gate, .ctx = &g};
	struct rd_conn_req *req = NULL;
	struct sockaddr_in two = {.sin_family = AF_INET};
	struct rd_cm_req creq;
	unsigned port;
	int fd[6], denied, i;

	(void)state;
	g.l = listen_here(&port);
	rd_listener_set_pre(g.l, &pre);
	denied = sock_from(9);
	dial(denied, port);
	assert_int_equal(rd_listener_next(g.l, 300, &req, &creq), 1);
	assert_int_equal(g.calls, 1);
	assert_non_null(strstr(g.last, "127.0.0.9:"));
	assert_int_equal(answer(denied, 1000), RD_REJ_AUTH);
	close(denied);
	/* 127.0.0.2: three wait, the fourth is turned away by the cap */
	for (i = 0; i < 4; i++) {
		fd[i] = sock_from(2);
		dial(fd[i], port);
	}
	assert_int_equal(rd_listener_next(g.l, 300, &req, &creq), 1);
	two.sin_addr.s_addr = htonl(0x7f000002);
	assert_int_equal(rd_listener_pending_from(g.l, (struct sockaddr *)&two), 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(answer(fd[i], 50), -1);
	assert_int_equal(answer(fd[3], 1000), RD_REJ_HOST_BUSY);
	/* another address is not counted against 127.0.0.2 */
	fd[4] = sock_from(3);
	dial(fd[4], port);
	send_request(fd[4]);
	assert_int_equal(rd_listener_next(g.l, 2000, &req, &creq), 0);
	assert_non_null(strstr(rd_conn_req_peer(req), "127.0.0.3:"));
	rd_conn_reject(req, &(struct rd_cm_rej){.reason = RD_REJ_BUSY});
	/* garbage instead of a request: refused as malformed */
	assert_int_equal(write(fd[0], "GET / HTTP/1.0\r\n\r\n", 18), 18);
	assert_int_equal(rd_listener_next(g.l, 300, &req, &creq), 1);
	assert_int_equal(answer(fd[0], 1000), RD_REJ_BADREQ);
	assert_int_equal(rd_listener_pending_from(g.l, (struct sockaddr *)&two), 2);
	for (i = 0; i < 5; i++)
		close(fd[i]);
	rd_listener_close(g.l);
}

/* Bounded: the one waiting longest makes room; each has hello_ms. */
static void test_pending_bounded_and_timed(void **state)
{
	struct rd_listener_pre pre = {.pending_max = 4, .hello_ms = 400};
	struct rd_conn_req *req = NULL;
	struct sockaddr_in one = {.sin_family = AF_INET};
	struct rd_cm_req creq;
	struct rd_listener *l;
	unsigned port;
	int fd[6], i;

	(void)state;
	l = listen_here(&port);
	rd_listener_set_pre(l, &pre);
	one.sin_addr.s_addr = htonl(0x7f000001);
	for (i = 0; i < 6; i++) {
		fd[i] = sock_from(1);
		dial(fd[i], port);
		assert_int_equal(rd_listener_next(l, 30, &req, &creq), 1);
	}
	assert_int_equal(rd_listener_pending_from(l, (struct sockaddr *)&one), 4);
	/* the first two made room for the last two: closed without a word */
	assert_int_equal(answer(fd[0], 200), 0);
	assert_int_equal(answer(fd[1], 200), 0);
	assert_int_equal(answer(fd[5], 50), -1);
	/* and the rest are dropped at their deadline */
	assert_int_equal(rd_listener_next(l, 600, &req, &creq), 1);
	assert_int_equal(rd_listener_pending_from(l, (struct sockaddr *)&one), 0);
	assert_int_equal(answer(fd[5], 200), 0);
	for (i = 0; i < 6; i++)
		close(fd[i]);
	rd_listener_close(l);
}

/*
 * Item 2: out of file descriptors (the soft limit below every free
 * number), accept() fails with EMFILE. The listener keeps going: next
 * waits as usual, the connections are turned away as busy, the trouble is
 * said; with the limit back, a request comes out and the trouble is gone.
 */
static void test_out_of_descriptors(void **state)
{
	struct rd_conn_req *req = NULL;
	struct rd_cm_req creq;
	struct rd_listener *l;
	struct rlimit old, low;
	unsigned port;
	int fd[3], top, i, r;

	(void)state;
	l = listen_here(&port);
	for (i = 0; i < 3; i++)
		fd[i] = sock_from(1);
	top = fcntl(0, F_DUPFD_CLOEXEC, 0); /* the lowest free number */
	assert_true(top >= 0);
	close(top);
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = (rlim_t)top; /* every number below it is taken */
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (i = 0; i < 3; i++) {
		dial(fd[i], port);
		send_request(fd[i]);
	}
	r = rd_listener_next(l, 1500, &req, &creq);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(r, 1);
	assert_non_null(strstr(rd_listener_trouble(l), "Too many open files"));
	assert_int_equal(rd_listener_refused(l), 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(answer(fd[i], 1000), RD_REJ_BUSY);
		close(fd[i]);
	}
	fd[0] = sock_from(1);
	dial(fd[0], port);
	send_request(fd[0]);
	assert_int_equal(rd_listener_next(l, 3000, &req, &creq), 0);
	assert_string_equal(rd_listener_trouble(l), "");
	rd_conn_reject(req, &(struct rd_cm_rej){.reason = RD_REJ_BUSY});
	close(fd[0]);
	rd_listener_close(l);
}

/* Peers named as listeners name them: one address whatever the form. */
static void test_peer_addr(void **state)
{
	uint8_t a[16], b[16], want[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};

	(void)state;
	assert_int_equal(rd_peer_addr("10.0.0.1:18710", a), 0);
	assert_memory_equal(a, want, 16);
	assert_int_equal(rd_peer_addr("[::ffff:10.0.0.1]:5", b), 0);
	assert_memory_equal(b, want, 16);
	assert_int_equal(rd_peer_addr("[fe80::1]:5", a), 0);
	assert_int_equal(a[0], 0xfe);
	assert_int_equal(a[15], 1);
	assert_int_equal(rd_peer_addr("not an address:1", a), -RD_EUSAGE);
	assert_int_equal(rd_peer_addr("[::1", a), -RD_EUSAGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_peer_addr),
	    cmocka_unit_test(test_silent_sockets_do_not_hold_the_listener),
	    cmocka_unit_test(test_gate_before_any_read),
	    cmocka_unit_test(test_pending_bounded_and_timed),
	    cmocka_unit_test(test_out_of_descriptors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
