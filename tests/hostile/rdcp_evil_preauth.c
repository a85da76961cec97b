// SPDX-License-Identifier: MIT
/*
 * rdcp_evil's peers that never get as far as authenticating (issue 27
 * items 1, 13, 17): what anyone who reaches a listener can do.
 *
 *   rdcp_evil silent HOST PORT SECONDS PER_SRC SRC[,SRC...] [again]
 *	TCP connections that never send a byte: PER_SRC from each source
 *	address (bound before connecting; "-": the kernel's choice), held
 *	for SECONDS. With "again", each one the server closes or turns away
 *	is made again a second later (a flood that keeps its pressure). SIGTERM
 *	ends it early, with the same report. Prints
 *	what the server did ("silent: refused: <reason>: N", "silent: closed
 *	without a word: N") and "silent: N of M held at the end"; exit 0
 *	(the test judges), 2 if the arguments are wrong.
 *
 *   rdcp_evil hello HOST PORT KIND [tcp|rdma]
 *	One connection that breaks off before authenticating. KIND garbage
 *	(TCP: bytes that are no request), badver (a request for protocol
 *	200..201 only), abort (TCP: a request, then a reset; RDMA: a
 *	connection request left as soon as the server accepts it, before it
 *	is established), silent (TCP: connect and say nothing for 20 s).
 *	Prints what came back; exit 0, or 2 if it could not even connect.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"
#include "lib/xport/rd_xport.h"
#include "tests/hostile/rdcp_evil_preauth.h"

#define SILENT_MAX 4096
#define SRCS_MAX   64
#define AGAIN_MS   1000
#define ANSWER_MS  3000

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int resolve(const char *host, const char *port, struct sockaddr_storage *ss, socklen_t *sl)
{
	struct addrinfo hints, *ai = NULL;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if (getaddrinfo(host, port, &hints, &ai) || !ai) {
		fprintf(stderr, "rdcp_evil: cannot resolve %s port %s\n", host, port);
		return -1;
	}
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*sl = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/* A socket towards ss from src ("-": any), connecting (non-blocking); -1 on failure. */
static int dial(const struct sockaddr_storage *ss, socklen_t sl, const char *src)
{
	struct sockaddr_storage me;
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(&me, 0, sizeof(me));
	if (src && strcmp(src, "-")) {
		me.ss_family = ss->ss_family;
		if (ss->ss_family == AF_INET &&
		    inet_pton(AF_INET, src, &((struct sockaddr_in *)&me)->sin_addr) == 1) {
			if (bind(fd, (struct sockaddr *)&me, sizeof(struct sockaddr_in)))
				goto fail;
		} else if (ss->ss_family == AF_INET6 &&
			   inet_pton(AF_INET6, src, &((struct sockaddr_in6 *)&me)->sin6_addr) ==
			       1) {
			if (bind(fd, (struct sockaddr *)&me, sizeof(struct sockaddr_in6)))
				goto fail;
		} else {
			errno = EINVAL;
			goto fail;
		}
	}
	if (connect(fd, (const struct sockaddr *)ss, sl) && errno != EINPROGRESS)
		goto fail;
	return fd;
fail:
	fprintf(stderr, "rdcp_evil: connect from %s: %s\n", src, strerror(errno));
	close(fd);
	return -1;
}

/*
 * What the server sent on fd (readable): the RD_REJ_* reason of a
 * CM_REJ frame, 0 for a close without one, -1 for anything else.
 */
static int what_came(int fd)
{
	struct rd_cm_rej rej;
	uint8_t b[RD_TF_HDR_LEN + 64];
	ssize_t n = recv(fd, b, sizeof(b), MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return -2; /* nothing after all */
	if (n <= 0)
		return 0;
	if (n >= RD_TF_HDR_LEN && b[0] == RD_TF_CM_REJ &&
	    !rd_cm_rej_decode(b + RD_TF_HDR_LEN, (size_t)n - RD_TF_HDR_LEN, &rej))
		return rej.reason;
	return -1;
}

static volatile sig_atomic_t silent_stop;

static void on_term(int sig)
{
	(void)sig;
	silent_stop = 1;
}

static int silent(const char *host, const char *port, const char *secs, const char *per, char *srcs,
		  int again)
{
	static int fd[SILENT_MAX];
	static double back[SILENT_MAX]; /* again: when to make it again */
	static struct pollfd p[SILENT_MAX];
	static unsigned long refused[16];
	const char *src[SRCS_MAX];
	struct sockaddr_storage ss;
	socklen_t sl;
	unsigned long closed = 0, other = 0, made = 0;
	double t0 = now_s(), limit = atof(secs);
	int nsrc = 0, n, i, k, held, r, each = atoi(per);
	char *save = NULL, *s;

	for (s = strtok_r(srcs, ",", &save); s && nsrc < SRCS_MAX; s = strtok_r(NULL, ",", &save))
		src[nsrc++] = s;
	n = each * nsrc;
	if (each < 1 || !nsrc || n > SILENT_MAX || limit <= 0)
		return 2;
	if (resolve(host, port, &ss, &sl))
		return 2;
	for (i = 0; i < n; i++) {
		fd[i] = dial(&ss, sl, src[i % nsrc]);
		made += fd[i] >= 0;
	}
	printf("silent: %lu connections from %d addresses\n", made, nsrc);
	signal(SIGTERM, on_term);
	while (now_s() - t0 < limit && !silent_stop) {
		for (i = 0; i < n; i++)
			p[i] = (struct pollfd){.fd = fd[i], .events = POLLIN};
		poll(p, (nfds_t)n, 50);
		for (i = 0; i < n; i++) {
			if (fd[i] < 0) {
				if (again && back[i] && now_s() >= back[i]) {
					fd[i] = dial(&ss, sl, src[i % nsrc]);
					made += fd[i] >= 0;
					back[i] = 0;
				}
				continue;
			}
			if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			r = what_came(fd[i]);
			if (r == -2)
				continue;
			if (r > 0 && r < 16)
				refused[r]++;
			else if (r == 0)
				closed++;
			else
				other++;
			close(fd[i]);
			fd[i] = -1;
			back[i] = now_s() + AGAIN_MS / 1000.0;
		}
	}
	for (k = 1; k < 16; k++)
		if (refused[k])
			printf("silent: refused: %s: %lu\n", rd_rej_reason_str((uint16_t)k),
			       refused[k]);
	printf("silent: closed without a word: %lu\n", closed);
	if (other)
		printf("silent: something else came back: %lu\n", other);
	for (i = 0, held = 0; i < n; i++) {
		held += fd[i] >= 0;
		if (fd[i] >= 0)
			close(fd[i]);
	}
	printf("silent: %d of %d held at the end (%lu made in all)\n", held, n, made);
	return 0;
}

static void frame(uint8_t *f, uint8_t kind, uint32_t len)
{
	memset(f, 0, RD_TF_HDR_LEN);
	f[0] = kind;
	f[4] = (uint8_t)(len >> 24);
	f[5] = (uint8_t)(len >> 16);
	f[6] = (uint8_t)(len >> 8);
	f[7] = (uint8_t)len;
}

static void say_answer(const char *kind, int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r;

	if (poll(&p, 1, ANSWER_MS) <= 0) {
		printf("hello %s: no answer within %d s\n", kind, ANSWER_MS / 1000);
		return;
	}
	r = what_came(fd);
	if (r > 0)
		printf("hello %s: refused: %s\n", kind, rd_rej_reason_str((uint16_t)r));
	else if (r == 0)
		printf("hello %s: closed without a word\n", kind);
	else
		printf("hello %s: something else came back\n", kind);
}

static int hello_tcp(const char *host, const char *port, const char *kind)
{
	struct rd_cm_req req = {
	    .ver_min = RD_PROTO_MIN, .ver_max = RD_PROTO_MAX, .ctrl_depth = 64, .lanes = 1};
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	struct pollfd p;
	struct sockaddr_storage ss;
	uint8_t f[RD_TF_HDR_LEN + RD_CM_REQ_LEN];
	socklen_t sl;
	size_t len = sizeof(f);
	int fd;

	if (resolve(host, port, &ss, &sl))
		return 2;
	fd = dial(&ss, sl, NULL);
	p = (struct pollfd){.fd = fd, .events = POLLOUT};
	if (fd < 0 || poll(&p, 1, ANSWER_MS) != 1 || (p.revents & (POLLERR | POLLHUP))) {
		printf("hello %s: no connection\n", kind);
		if (fd >= 0)
			close(fd);
		return 2;
	}
	if (!strcmp(kind, "silent")) {
		printf("hello silent: holding\n");
		sleep(20);
		close(fd);
		return 0;
	}
	if (!strcmp(kind, "garbage")) {
		memset(f, 'G', sizeof(f));
	} else {
		if (!strcmp(kind, "badver")) {
			req.ver_min = 200;
			req.ver_max = 201;
		}
		frame(f, RD_TF_CM_REQ, RD_CM_REQ_LEN);
		len = RD_TF_HDR_LEN + rd_cm_req_encode(f + RD_TF_HDR_LEN, &req);
	}
	if (send(fd, f, len, MSG_NOSIGNAL) != (ssize_t)len) {
		printf("hello %s: could not send\n", kind);
		close(fd);
		return 2;
	}
	if (!strcmp(kind, "abort")) {
		/* a reset as soon as the request is out */
		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(fd);
		printf("hello abort: request sent, connection reset\n");
		return 0;
	}
	say_answer(kind, fd);
	close(fd);
	return 0;
}

/* Wait for one CM event of ch (up to ANSWER_MS); its type, or -1. */
static int cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};

	if (poll(&p, 1, ANSWER_MS) != 1 || rdma_get_cm_event(ch, ev))
		return -1;
	return (int)(*ev)->event;
}

/*
 * A connection request with valid private data but no QP of ours: the
 * server accepts, we receive its answer (CONNECT_RESPONSE) and leave
 * instead of completing the connection: the kernel rejects for us.
 */
static int abort_rdma(const char *host, const char *port)
{
	struct rd_cm_req req = {
	    .ver_min = RD_PROTO_MIN, .ver_max = RD_PROTO_MAX, .ctrl_depth = 64, .lanes = 1};
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id = NULL;
	struct sockaddr_storage ss;
	uint8_t pd[RD_CM_REQ_LEN];
	socklen_t sl;
	int e = -1, ret = 2;

	if (!ch || resolve(host, port, &ss, &sl) || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP))
		goto out;
	if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, ANSWER_MS) ||
	    cm_event(ch, &ev) != RDMA_CM_EVENT_ADDR_RESOLVED)
		goto out;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, ANSWER_MS) || cm_event(ch, &ev) != RDMA_CM_EVENT_ROUTE_RESOLVED)
		goto out;
	rdma_ack_cm_event(ev);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = pd;
	cp.private_data_len = (uint8_t)rd_cm_req_encode(pd, &req);
	cp.responder_resources = 1;
	cp.initiator_depth = 1;
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	cp.qp_num = 0x1234;
	if (rdma_connect(id, &cp))
		goto out;
	e = cm_event(ch, &ev);
	if (e >= 0)
		rdma_ack_cm_event(ev);
	printf("hello abort (rdma): the server answered with %s; leaving now\n",
	       e >= 0 ? rdma_event_str((enum rdma_cm_event_type)e) : "nothing");
	ret = e == RDMA_CM_EVENT_CONNECT_RESPONSE ? 0 : 2;
out:
	if (ret == 2 && e != RDMA_CM_EVENT_CONNECT_RESPONSE)
		printf("hello abort (rdma): could not get that far: %s\n", strerror(errno));
	if (id)
		rdma_destroy_id(id);
	if (ch)
		rdma_destroy_event_channel(ch);
	return ret;
}

static int badver_rdma(const char *host, const char *port)
{
	struct rd_cm_req req = {.ver_min = 200, .ver_max = 201};
	struct rd_conn_opts co = {.transport = RD_XPORT_RDMA, .timeout_ms = ANSWER_MS};
	struct rd_conn *c = NULL;
	struct rd_cm_rep rep;
	struct rd_err err;

	memset(&err, 0, sizeof(err));
	if (!rd_conn_connect(&c, host, port, &co, &req, &rep, &err)) {
		printf("hello badver (rdma): ACCEPTED\n");
		rd_conn_close(c);
		return 0;
	}
	printf("hello badver (rdma): %s\n", err.msg);
	return 0;
}

int rdcp_evil_preauth(int argc, char **argv)
{
	const char *xport = argc == 6 ? argv[5] : "tcp";

	if ((argc == 7 || argc == 8) && !strcmp(argv[1], "silent"))
		return silent(argv[2], argv[3], argv[4], argv[5], argv[6],
			      argc == 8 && !strcmp(argv[7], "again"));
	if ((argc != 5 && argc != 6) || strcmp(argv[1], "hello"))
		return -1;
	if (!strcmp(xport, "tcp"))
		return hello_tcp(argv[2], argv[3], argv[4]);
	if (strcmp(xport, "rdma"))
		return 2;
	if (!strcmp(argv[4], "badver"))
		return badver_rdma(argv[2], argv[3]);
	if (!strcmp(argv[4], "abort"))
		return abort_rdma(argv[2], argv[3]);
	return 2;
}
