// SPDX-License-Identifier: MIT
/*
 * TCP listener. Nothing a peer does before its request arrived may hold
 * up the thread that accepts (issue 27 item 1): a daemon has one such
 * thread for every client, over RDMA too, and the ssh-started rdcp one for
 * its one client.
 *
 * So a connection is accepted non-blocking and, unless the gate turns it
 * away at once (hosts allow/deny, per-host caps: before anything is read),
 * parked in a bounded set of pending connections. Their sockets sit in the
 * listener's epoll set beside the listening socket; whatever of a request
 * frame arrives is kept, and rd_listener_next() returns a connection once
 * its request is whole. Each has hello_ms to send it, and when the set is
 * full the one waiting longest makes room: a client that sends its request
 * when it connects, as rdcp does, is never kept out by sockets that stay
 * silent. Refusals (RD_TF_CM_REJ) are written non-blocking: one small frame
 * on a fresh socket, or nothing.
 *
 * accept() itself may fail for want of resources (EMFILE, ENFILE: no
 * descriptor; ENOBUFS, ENOMEM: no kernel memory; issue 27 item 2). That
 * is not the listener's end: it says so once (rd_listener_trouble), turns
 * the waiting connections away as busy through a descriptor it keeps in
 * reserve for exactly that (closed, the connection accepted with it and
 * refused, reopened), and backs off (50 ms, doubling to 1 s) before it
 * tries again; the first accept that works clears the trouble. Errors
 * that belong to one connection (ECONNABORTED, EPERM from a firewall, the
 * network errors accept(2) passes on) skip that connection.
 */
#include "lib/xport/rd_xport.h"
#include "lib/xport/conn/rd_xport_impl.h"
#include "lib/xport/tcp/rd_xport_tcp.h"
#include "lib/xport/tcp/rd_xport_tcp_priv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PEND_FRAME     (RD_TF_HDR_LEN + 64) /* the largest request frame taken */
#define BACKOFF_MIN_MS 50
#define BACKOFF_MAX_MS 1000
#define ACCEPT_BATCH   32 /* accepted per turn before the pending ones are read */
#define EVENTS	       16

struct pend {
	int fd; /* -1: a free slot */
	struct timespec t0;
	uint8_t key[16]; /* the peer's address, IPv4 as IPv4-mapped IPv6 */
	char peer[80];
	uint8_t buf[PEND_FRAME];
	size_t got;
};

struct tcp_listener {
	struct rd_listener l;
	int fd;	   /* the listening socket */
	int ep;	   /* epoll: the listening socket (data 0) and pending slot i (i + 1) */
	int spare; /* held in reserve to turn connections away without descriptors */
	struct rd_listener_pre pre;
	struct pend *pend;
	unsigned cap, n;
	int armed;	       /* the listening socket is in the epoll set */
	struct timespec retry; /* not armed: backing off until then */
	unsigned backoff_ms;
	unsigned long refused;
	char trouble[200];
};

static const struct rd_listener_ops tcp_listener_ops;

static long ms_since(const struct timespec *t)
{
	return rd_xc_ms_since(t);
}

static void addr_key(const struct sockaddr *sa, uint8_t key[16])
{
	memset(key, 0, 16);
	if (sa->sa_family == AF_INET) {
		key[10] = key[11] = 0xff;
		memcpy(key + 12, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		memcpy(key, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
	}
}

/* Turn fd away with reason, without waiting: one small frame, or nothing. */
static void reject_now(int fd, uint16_t reason)
{
	struct rd_cm_rej rej = {.reason = reason, .ver_min = RD_PROTO_MIN, .ver_max = RD_PROTO_MAX};
	uint8_t b[RD_TF_HDR_LEN + RD_CM_REJ_LEN];

	rd_tcp_frame_hdr(b, RD_TF_CM_REJ, RD_CM_REJ_LEN);
	rd_cm_rej_encode(b + RD_TF_HDR_LEN, &rej);
	if (send(fd, b, sizeof(b), MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* best effort: the peer may be gone already */
	}
	close(fd);
}

static void pend_drop(struct tcp_listener *tl, struct pend *p)
{
	if (p->fd < 0)
		return;
	close(p->fd); /* leaves the epoll set with it */
	p->fd = -1;
	tl->n--;
}

static void pend_free_all(struct tcp_listener *tl)
{
	unsigned i;

	for (i = 0; i < tl->cap; i++)
		pend_drop(tl, &tl->pend[i]);
	free(tl->pend);
	tl->pend = NULL;
	tl->cap = 0;
}

static int pend_alloc(struct tcp_listener *tl, unsigned cap)
{
	unsigned i;

	tl->pend = calloc(cap, sizeof(*tl->pend));
	if (!tl->pend)
		return -1;
	for (i = 0; i < cap; i++)
		tl->pend[i].fd = -1;
	tl->cap = cap;
	return 0;
}

static int hello_ms(const struct tcp_listener *tl)
{
	return tl->pre.hello_ms > 0 ? tl->pre.hello_ms : RD_LISTENER_HELLO_MS;
}

/* Drop the connections whose request did not come in time. */
static void expire(struct tcp_listener *tl)
{
	unsigned i;

	for (i = 0; i < tl->cap && tl->n; i++)
		if (tl->pend[i].fd >= 0 && ms_since(&tl->pend[i].t0) >= hello_ms(tl))
			pend_drop(tl, &tl->pend[i]);
}

static int listener_due(const struct tcp_listener *tl)
{
	long d = -1, left;
	unsigned i;

	for (i = 0; i < tl->cap && tl->n; i++) {
		if (tl->pend[i].fd < 0)
			continue;
		left = hello_ms(tl) - ms_since(&tl->pend[i].t0);
		if (left < 0)
			left = 0;
		if (d < 0 || left < d)
			d = left;
	}
	if (!tl->armed) {
		left = -ms_since(&tl->retry);
		if (left < 0)
			left = 0;
		if (d < 0 || left < d)
			d = left;
	}
	return (int)d;
}

static void arm(struct tcp_listener *tl, int on)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 0};

	if (on == tl->armed)
		return;
	epoll_ctl(tl->ep, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, tl->fd, &ev);
	tl->armed = on;
}

/*
 * Out of descriptors or kernel memory: say so (once), turn the waiting
 * connections away through the spare descriptor, and back off.
 */
static void starved(struct tcp_listener *tl, int e)
{
	int fd, k;

	if (!tl->trouble[0])
		snprintf(tl->trouble, sizeof(tl->trouble),
			 "cannot accept connections on %s: %s; turning them away as busy "
			 "until %s",
			 tl->l.where, strerror(e),
			 e == EMFILE || e == ENFILE ? "file descriptors free up"
						    : "the kernel has memory again");
	for (k = 0; k < ACCEPT_BATCH && (e == EMFILE || e == ENFILE) && tl->spare >= 0; k++) {
		close(tl->spare);
		fd = accept4(tl->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd >= 0) {
			reject_now(fd, RD_REJ_BUSY);
			tl->refused++;
		}
		tl->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
	}
	tl->backoff_ms = tl->backoff_ms ? tl->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (tl->backoff_ms > BACKOFF_MAX_MS)
		tl->backoff_ms = BACKOFF_MAX_MS;
	clock_gettime(CLOCK_MONOTONIC, &tl->retry);
	tl->retry.tv_nsec += (long)tl->backoff_ms * 1000000L;
	tl->retry.tv_sec += tl->retry.tv_nsec / 1000000000L;
	tl->retry.tv_nsec %= 1000000000L;
	arm(tl, 0);
}

/* accept() works again (or never failed): the trouble is over. */
static void fed(struct tcp_listener *tl)
{
	tl->trouble[0] = '\0';
	tl->backoff_ms = 0;
	if (tl->spare < 0)
		tl->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* The gate let fd in: park it until its request is whole. */
static void park(struct tcp_listener *tl, int fd, const struct sockaddr *sa, const char *peer)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP};
	struct pend *p = NULL;
	unsigned i;

	for (i = 0; i < tl->cap; i++) {
		if (tl->pend[i].fd < 0) {
			p = &tl->pend[i];
			break;
		}
		/* full: the one waiting longest makes room */
		if (!p || ms_since(&tl->pend[i].t0) > ms_since(&p->t0))
			p = &tl->pend[i];
	}
	if (!p) {
		close(fd);
		return;
	}
	pend_drop(tl, p);
	ev.data.u32 = (uint32_t)(p - tl->pend) + 1;
	if (epoll_ctl(tl->ep, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		return;
	}
	p->fd = fd;
	p->got = 0;
	clock_gettime(CLOCK_MONOTONIC, &p->t0);
	addr_key(sa, p->key);
	snprintf(p->peer, sizeof(p->peer), "%s", peer);
	tl->n++;
}

static int accept_some(struct tcp_listener *tl)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	char peer[80];
	int fd, k, why;

	for (k = 0; k < ACCEPT_BATCH; k++) {
		sl = sizeof(ss);
		fd = accept4(tl->fd, (struct sockaddr *)&ss, &sl, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			switch (errno) {
			case EAGAIN:
				fed(tl); /* a descriptor was there to take */
				return 0;
			case EMFILE:
			case ENFILE:
			case ENOBUFS:
			case ENOMEM:
				starved(tl, errno);
				return 0;
			case EINTR:
			case ECONNABORTED:
			case EPERM:
			case EPROTO:
			case ENETDOWN:
			case ENOPROTOOPT:
			case EHOSTDOWN:
			case ENONET:
			case EHOSTUNREACH:
			case EOPNOTSUPP:
			case ENETUNREACH:
			case ETIMEDOUT:
				continue; /* that connection's trouble, not the listener's */
			default:
				return rd_err_set(&tl->l.err, RD_ECONN, errno, "accept on %s",
						  tl->l.where);
			}
		}
		fed(tl);
		rd_tcp_addr_str((struct sockaddr *)&ss, peer, sizeof(peer));
		why = tl->pre.gate ? tl->pre.gate(tl->pre.ctx, (struct sockaddr *)&ss, peer) : 0;
		if (why)
			reject_now(fd, (uint16_t)why);
		else
			park(tl, fd, (struct sockaddr *)&ss, peer);
	}
	return 0;
}

/*
 * Read what slot idx's peer sent. Returns 0 with *req set once its request
 * is whole, 1 while it is not (or the connection was dropped).
 */
static int pend_read(struct tcp_listener *tl, unsigned idx, struct rd_conn_req **req,
		     struct rd_cm_req *creq)
{
	struct pend *p = &tl->pend[idx];
	struct rd_tcp_req *r;
	size_t want;
	ssize_t n;
	uint32_t len;

	if (idx >= tl->cap || p->fd < 0)
		return 1;
	for (;;) {
		want = RD_TF_HDR_LEN;
		if (p->got >= RD_TF_HDR_LEN)
			want += rd_tcp_get32(p->buf + 4);
		if (p->got == want)
			break;
		n = recv(p->fd, p->buf + p->got, want - p->got, 0);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
			return 1;
		if (n <= 0) {
			pend_drop(tl, p); /* gone before its request was whole */
			return 1;
		}
		p->got += (size_t)n;
		if (p->got != RD_TF_HDR_LEN)
			continue;
		len = rd_tcp_get32(p->buf + 4);
		if (p->buf[0] != RD_TF_CM_REQ || p->buf[1] || p->buf[2] || p->buf[3] ||
		    len > PEND_FRAME - RD_TF_HDR_LEN)
			goto bad;
	}
	/* A JOIN (an extra lane) has no place over TCP: malformed. */
	if (rd_cm_req_decode(p->buf + RD_TF_HDR_LEN, p->got - RD_TF_HDR_LEN, creq) ||
	    !creq->ctrl_depth || (creq->flags & RD_CMF_JOIN))
		goto bad;
	r = calloc(1, sizeof(*r));
	if (!r) {
		reject_now(p->fd, RD_REJ_BUSY);
		goto gone;
	}
	epoll_ctl(tl->ep, EPOLL_CTL_DEL, p->fd, NULL);
	r->r.ops = &tcp_listener_ops;
	r->fd = p->fd;
	r->r.peer_depth = creq->ctrl_depth;
	r->r.t0 = p->t0;
	snprintf(r->r.peer, sizeof(r->r.peer), "%s", p->peer);
	rd_tcp_tune(r->fd);
	*req = &r->r;
	p->fd = -1;
	tl->n--;
	return 0;
bad:
	reject_now(p->fd, RD_REJ_BADREQ);
gone:
	p->fd = -1;
	tl->n--;
	return 1;
}

static int tcp_next(struct rd_listener *l, int timeout_ms, struct rd_conn_req **req,
		    struct rd_cm_req *creq)
{
	struct tcp_listener *tl = (struct tcp_listener *)l;
	struct epoll_event ev[EVENTS];
	struct timespec t0;
	long left;
	int n, i, r, wait, due;

	*req = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		expire(tl);
		if (!tl->armed && ms_since(&tl->retry) >= 0) {
			/* the back-off is over: try again now, readable or not */
			arm(tl, 1);
			r = accept_some(tl);
			if (r < 0)
				return r;
		}
		left = timeout_ms < 0 ? -1 : timeout_ms - ms_since(&t0);
		if (timeout_ms >= 0 && left < 0)
			left = 0;
		wait = (int)left;
		due = listener_due(tl);
		if (due >= 0 && (wait < 0 || due < wait))
			wait = due;
		n = epoll_wait(tl->ep, ev, EVENTS, wait);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return rd_err_set(&l->err, RD_ECONN, errno, "waiting for connections");
		for (i = 0; i < n; i++) {
			if (!ev[i].data.u32) {
				r = accept_some(tl);
				if (r < 0)
					return r;
				continue;
			}
			/* events after this one come again: the set is level-triggered */
			if (!pend_read(tl, ev[i].data.u32 - 1, req, creq))
				return 0;
		}
		if (timeout_ms >= 0 && ms_since(&t0) >= timeout_ms)
			return 1;
	}
}

static void tcp_reject(struct rd_conn_req *req, const struct rd_cm_rej *rej)
{
	struct rd_tcp_req *r = (struct rd_tcp_req *)req;

	reject_now(r->fd, rej->reason);
	free(r);
}

static void tcp_listener_close(struct rd_listener *l)
{
	struct tcp_listener *tl = (struct tcp_listener *)l;

	pend_free_all(tl);
	if (tl->fd >= 0)
		close(tl->fd);
	if (tl->ep >= 0)
		close(tl->ep);
	if (tl->spare >= 0)
		close(tl->spare);
	free(tl);
}

static int tcp_listener_fd(const struct rd_listener *l)
{
	return ((const struct tcp_listener *)l)->ep;
}

static void tcp_set_pre(struct rd_listener *l, const struct rd_listener_pre *p)
{
	struct tcp_listener *tl = (struct tcp_listener *)l;
	unsigned cap = p->pending_max ? p->pending_max : RD_LISTENER_PENDING;

	tl->pre = *p;
	if (cap == tl->cap)
		return;
	pend_free_all(tl);
	if (pend_alloc(tl, cap))
		pend_alloc(tl, 1); /* the connections still come, one at a time */
}

static unsigned tcp_pending_from(const struct rd_listener *l, const struct sockaddr *sa)
{
	const struct tcp_listener *tl = (const struct tcp_listener *)l;
	uint8_t key[16];
	unsigned i, n = 0;

	addr_key(sa, key);
	for (i = 0; i < tl->cap; i++)
		if (tl->pend[i].fd >= 0 && !memcmp(tl->pend[i].key, key, sizeof(key)))
			n++;
	return n;
}

static const char *tcp_trouble(const struct rd_listener *l)
{
	return ((const struct tcp_listener *)l)->trouble;
}

static unsigned long tcp_refused(const struct rd_listener *l)
{
	return ((const struct tcp_listener *)l)->refused;
}

static int tcp_due(const struct rd_listener *l)
{
	return listener_due((const struct tcp_listener *)l);
}

static const struct rd_listener_ops tcp_listener_ops = {
    .name = "tcp",
    .next = tcp_next,
    .accept = rd_tcp_accept,
    .reject = tcp_reject,
    .close = tcp_listener_close,
    .fd = tcp_listener_fd,
    .set_pre = tcp_set_pre,
    .pending_from = tcp_pending_from,
    .trouble = tcp_trouble,
    .refused = tcp_refused,
    .due_ms = tcp_due,
};

int rd_tcp_listen(struct rd_listener **out, const char *addr, const char *port, int backlog,
		  struct rd_err *err)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = 0};
	struct addrinfo hints, *ai = NULL;
	struct tcp_listener *tl;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int ret = 0, gai, one = 1, zero = 0;

	*out = NULL;
	tl = calloc(1, sizeof(*tl));
	if (!tl)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "listener");
	tl->l.ops = &tcp_listener_ops;
	tl->fd = tl->ep = tl->spare = -1;
	if (pend_alloc(tl, RD_LISTENER_PENDING)) {
		ret = rd_err_set(err, RD_ENOMEM, ENOMEM, "listener");
		goto out;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = addr && *addr ? AF_UNSPEC : AF_INET6;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE;
	gai = getaddrinfo(addr && *addr ? addr : NULL, port, &hints, &ai);
	if (gai) {
		ret = rd_err_set(err, RD_EUSAGE, 0,
				 "cannot resolve listen address '%s' port '%s': %s",
				 addr ? addr : "*", port, gai_strerror(gai));
		goto out;
	}
	tl->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (tl->fd < 0 && !(addr && *addr)) {
		/* no IPv6 here: all IPv4 addresses then */
		freeaddrinfo(ai);
		ai = NULL;
		hints.ai_family = AF_INET;
		if (!getaddrinfo(NULL, port, &hints, &ai))
			tl->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	}
	if (tl->fd < 0 || !ai) {
		ret = rd_err_set(err, RD_ESYS, errno, "cannot open a TCP socket");
		goto out;
	}
	setsockopt(tl->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(tl->fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
	if (bind(tl->fd, ai->ai_addr, ai->ai_addrlen) ||
	    listen(tl->fd, backlog > 0 ? backlog : 16)) {
		ret = rd_err_set(err, errno == EADDRINUSE ? RD_EUSAGE : RD_ECONN, errno,
				 "cannot listen on %s port %s over TCP", addr ? addr : "*", port);
		goto out;
	}
	tl->ep = epoll_create1(EPOLL_CLOEXEC);
	tl->spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (tl->ep < 0 || epoll_ctl(tl->ep, EPOLL_CTL_ADD, tl->fd, &ev)) {
		ret =
		    rd_err_set(err, RD_ESYS, errno, "cannot listen on %s port %s over TCP (epoll)",
			       addr ? addr : "*", port);
		goto out;
	}
	tl->armed = 1;
	if (!getsockname(tl->fd, (struct sockaddr *)&ss, &sl)) {
		size_t n;

		tl->l.port = ss.ss_family == AF_INET6
				 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
				 : ntohs(((struct sockaddr_in *)&ss)->sin_port);
		rd_tcp_addr_str((struct sockaddr *)&ss, tl->l.where, sizeof(tl->l.where));
		n = strlen(tl->l.where);
		if (!(addr && *addr))
			snprintf(tl->l.where + n, sizeof(tl->l.where) - n, " (%s)",
				 ss.ss_family == AF_INET6 ? "IPv6 and IPv4" : "IPv4 only");
	}
	*out = &tl->l;
	tl = NULL;
out:
	if (ai)
		freeaddrinfo(ai);
	if (tl)
		tl->l.ops->close(&tl->l);
	return ret;
}

void rd_tcp_addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[64] = "?";

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)(const void *)sa;

		inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, ntohs(s->sin_port));
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)(const void *)sa;

		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, ntohs(s->sin6_port));
	} else {
		snprintf(buf, len, "?");
	}
}

/* TCP's entry points: connect (rd_xport_tcp.c) and listen (here). */
const struct rd_xport rd_xport_tcp = {
    .name = "tcp",
    .connect = rd_tcp_connect,
    .listen = rd_tcp_listen,
};
