// SPDX-License-Identifier: MIT
/*
 * TCP transport: the same protocol above the seam, for hosts and links
 * without RDMA. Framing is in lib/proto/rd_proto.h, section 4.
 *
 * One non-blocking socket per connection. Output is a ring of frames:
 * control messages are copied into one of sdepth send buffers (as over
 * RDMA, a free send buffer is what can_xmit means); the payload of a
 * WRITE is not copied but sent from the caller's registered buffer, whose
 * cookie comes back through rd_xc_sent() once the kernel has all of it.
 * Input is read straight into place: a message into a free receive
 * buffer, a WRITE's payload into the registered region it names, after
 * checking key and bounds like a NIC. Stream order then gives what RC
 * ordering gives over RDMA: the payload is in place before the DATA that
 * follows it is seen.
 *
 * With bulk_thread (rd_conn_opts), a payload of TCP_BULK_MIN bytes or
 * more is moved by a thread of the connection's own, one per direction,
 * created at the first such payload: the loop hands it the socket's
 * direction for that payload, leaves that direction alone until the
 * thread says it is done (an eventfd in the poll), and meanwhile goes on
 * with everything else. The stream's order is the same as without it.
 */
#include "lib/xport/rd_xport.h"
#include "lib/xport/conn/rd_xport_impl.h"
#include "lib/xport/tcp/rd_xport_tcp_priv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define TCP_SOCKBUF	 (4 << 20)
#define TCP_MAX_REGIONS	 1040 /* the engine registers each receive slot apart: <= 1024 */
#define TCP_IOV		 64
#define TCP_BULK_MIN	 (256u << 10) /* a payload from this size on moves on the bulk thread */

struct tregion {
	uint8_t *addr;
	size_t len;
	uint32_t rkey; /* 0: free */
};

struct tout {
	uint8_t hdr[RD_TF_HDR_LEN + RD_TF_WRITE_LEN];
	size_t hlen;
	const uint8_t *body;
	size_t blen;
	size_t done; /* of hlen + blen */
	int sbuf;    /* send buffer to free afterwards, or -1 */
	int has_cookie;
	uint64_t cookie;
};

enum { IN_HDR, IN_WHDR, IN_WPAY, IN_MPAY, IN_BULK };

/*
 * One direction's bulk mover. The loop fills in a job and signals; the
 * thread moves len bytes between fd and ptr, then sets finished (under
 * mu: the bytes it wrote are then visible to the loop) and writes the
 * connection's done eventfd.
 */
struct tbulk {
	pthread_t th;
	int started;
	int out; /* 1: send from ptr; 0: receive into ptr */
	int fd, done_fd, stop_fd;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* under mu */
	int job, finished, stop;
	uint8_t *ptr;
	size_t len, moved;
	int err; /* 0, an errno, or -1: the peer closed (receive) */
	/* the loop's own */
	int busy;
};

struct tcp_conn {
	struct rd_conn c;
	int fd;

	/* output */
	unsigned sdepth;
	uint8_t *sbuf;
	unsigned *sfree, nsfree;
	struct tout *out;
	unsigned ocap, ohead, ocount;
	/* writes whose payload the kernel has: reported from poll, never from
	 * inside a send (the caller may not expect its callback there) */
	uint64_t *done;
	unsigned ndone;

	/* input */
	int in_state;
	uint8_t ihdr[RD_TF_HDR_LEN + RD_TF_WRITE_LEN];
	size_t igot, iwant;
	uint8_t *idst;
	unsigned iidx;
	unsigned *rfree, nrfree;
	int eof;

	/* input stopped inside a payload (its memory was taken back) */
	int in_dead;

	/* bulk payloads on threads of their own (bulk_thread) */
	int bulk_ok;
	int bulk_done_fd, bulk_stop_fd;
	struct tbulk bin, bout;

	struct tregion regs[TCP_MAX_REGIONS];
	uint32_t next_rkey;
};

static struct tcp_conn *tc_of(struct rd_conn *c)
{
	return (struct tcp_conn *)c;
}

static const struct tcp_conn *tc_ofc(const struct rd_conn *c)
{
	return (const struct tcp_conn *)c;
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

uint32_t rd_tcp_get32(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

void rd_tcp_frame_hdr(uint8_t *h, uint8_t kind, uint32_t len)
{
	h[0] = kind;
	h[1] = 0;
	h[2] = 0;
	h[3] = 0;
	put32(h + 4, len);
}

void rd_tcp_tune(int fd)
{
	int one = 1, sz = TCP_SOCKBUF;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/* Blocking-with-deadline helpers for the handshake only. */
static int io_full(int fd, void *buf, size_t len, int timeout_ms, int out)
{
	struct timespec t0;
	struct pollfd p = {.fd = fd, .events = out ? POLLOUT : POLLIN};
	size_t got = 0;
	ssize_t n;
	long left;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < len) {
		n = out ? send(fd, (uint8_t *)buf + got, len - got, MSG_NOSIGNAL)
			: recv(fd, (uint8_t *)buf + got, len - got, 0);
		if (n > 0) {
			got += (size_t)n;
			continue;
		}
		if (n == 0)
			return -ECONNRESET;
		if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		left = timeout_ms - rd_xc_ms_since(&t0);
		if (left <= 0)
			return -ETIMEDOUT;
		if (poll(&p, 1, (int)left) < 0 && errno != EINTR)
			return -errno;
	}
	return 0;
}

/* Read one handshake frame of the kinds allowed; returns its kind or -errno. */
static int read_hello(int fd, uint8_t *body, size_t cap, size_t *len, int timeout_ms)
{
	uint8_t h[RD_TF_HDR_LEN];
	uint32_t n;
	int r = io_full(fd, h, sizeof(h), timeout_ms, 0);

	if (r)
		return r;
	n = rd_tcp_get32(h + 4);
	if (h[0] < RD_TF_CM_REQ || h[0] > RD_TF_CM_REJ || h[1] || h[2] || h[3] || n > cap)
		return -EPROTO;
	r = io_full(fd, body, n, timeout_ms, 0);
	if (r)
		return r;
	*len = n;
	return h[0];
}

static int send_hello(int fd, uint8_t kind, const uint8_t *body, size_t len, int timeout_ms)
{
	uint8_t b[RD_TF_HDR_LEN + 64];

	rd_tcp_frame_hdr(b, kind, (uint32_t)len);
	memcpy(b + RD_TF_HDR_LEN, body, len);
	return io_full(fd, b, RD_TF_HDR_LEN + len, timeout_ms, 1);
}

/* --- data path --- */

static int tcp_can_xmit(const struct rd_conn *c)
{
	const struct tcp_conn *t = tc_ofc(c);

	return t->nsfree > 0 && t->ocount + 2 <= t->ocap;
}

static struct tout *out_push(struct tcp_conn *t)
{
	struct tout *o = &t->out[(t->ohead + t->ocount++) % t->ocap];

	memset(o, 0, sizeof(*o));
	o->sbuf = -1;
	return o;
}

static int tcp_lost(struct tcp_conn *t, int errnum)
{
	if (errnum == ECONNRESET || errnum == EPIPE)
		return rd_xc_fail(&t->c, RD_ECONN, 0,
				  "%s closed the connection (reset: the peer process ended or "
				  "was killed)",
				  t->c.info.peer);
	return rd_xc_fail(&t->c, RD_ECONN, errnum, "TCP connection to %s failed",
			  t->c.info.peer);
}

/* The head frame is all out: free its send buffer, note its cookie. */
static void out_pop(struct tcp_conn *t, int *n)
{
	struct tout *o = &t->out[t->ohead];

	if (o->sbuf >= 0)
		t->sfree[t->nsfree++] = (unsigned)o->sbuf;
	t->ohead = (t->ohead + 1) % t->ocap;
	t->ocount--;
	(*n)++;
	if (o->has_cookie)
		t->done[t->ndone++] = o->cookie;
}

/* --- bulk payloads on their own threads --- */

/* Move b->len bytes; 0, an errno, -1 (the peer closed), or ECANCELED. */
static int bulk_move(struct tbulk *b, uint8_t *ptr, size_t len, size_t *moved)
{
	struct pollfd p[2];
	ssize_t r;

	while (*moved < len) {
		if (b->out)
			r = send(b->fd, ptr + *moved, len - *moved, MSG_NOSIGNAL);
		else
			r = recv(b->fd, ptr + *moved, len - *moved, 0);
		if (r > 0) {
			*moved += (size_t)r;
			continue;
		}
		if (r == 0)
			return -1;
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return errno;
		p[0] = (struct pollfd){.fd = b->fd, .events = b->out ? POLLOUT : POLLIN};
		p[1] = (struct pollfd){.fd = b->stop_fd, .events = POLLIN};
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			return errno;
		if (p[1].revents)
			return ECANCELED;
	}
	return 0;
}

static void *bulk_main(void *arg)
{
	struct tbulk *b = arg;
	uint64_t one = 1;
	size_t len, moved;
	uint8_t *ptr;
	int err;

	pthread_mutex_lock(&b->mu);
	for (;;) {
		while (!b->job && !b->stop)
			pthread_cond_wait(&b->cv, &b->mu);
		if (b->stop)
			break;
		ptr = b->ptr;
		len = b->len;
		pthread_mutex_unlock(&b->mu);
		moved = 0;
		err = bulk_move(b, ptr, len, &moved);
		pthread_mutex_lock(&b->mu);
		b->moved = moved;
		b->err = err;
		b->job = 0;
		b->finished = 1;
		if (write(b->done_fd, &one, sizeof(one)) < 0) {
			/* an eventfd counter does not fill up in practice */
		}
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

/* Give b one payload; 0, or -1 if no thread could be had (then the loop
 * moves it, and every later one, itself). */
static int bulk_give(struct tcp_conn *t, struct tbulk *b, uint8_t *ptr, size_t len)
{
	if (!t->bulk_ok)
		return -1;
	if (t->bulk_done_fd < 0) {
		t->bulk_done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		t->bulk_stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (t->bulk_done_fd < 0 || t->bulk_stop_fd < 0) {
			t->bulk_ok = 0;
			return -1;
		}
	}
	if (!b->started) {
		b->fd = t->fd;
		b->done_fd = t->bulk_done_fd;
		b->stop_fd = t->bulk_stop_fd;
		if (pthread_create(&b->th, NULL, bulk_main, b)) {
			t->bulk_ok = 0;
			return -1;
		}
		b->started = 1;
		pthread_setname_np(b->th, b->out ? "rdcp-bulk-out" : "rdcp-bulk-in");
	}
	pthread_mutex_lock(&b->mu);
	b->ptr = ptr;
	b->len = len;
	b->moved = 0;
	b->err = 0;
	b->finished = 0;
	b->job = 1;
	pthread_cond_signal(&b->cv);
	pthread_mutex_unlock(&b->mu);
	b->busy = 1;
	return 0;
}

/* Has b finished its payload? 1 (with its result in *err and *moved), or 0. */
static int bulk_reap(struct tbulk *b, int *err, size_t *moved)
{
	int fin;

	if (!b->busy)
		return 0;
	pthread_mutex_lock(&b->mu);
	fin = b->finished;
	*err = b->err;
	*moved = b->moved;
	b->finished = 0;
	pthread_mutex_unlock(&b->mu);
	if (fin)
		b->busy = 0;
	return fin;
}

/* Stop both threads; a payload they were moving is where *moved says. */
static void bulk_stop(struct tcp_conn *t)
{
	struct tbulk *bs[2] = {&t->bin, &t->bout};
	uint64_t one = 1;
	unsigned i;

	if (t->bulk_stop_fd >= 0 && write(t->bulk_stop_fd, &one, sizeof(one)) < 0) {
		/* the threads also see stop under their mutex */
	}
	for (i = 0; i < 2; i++) {
		if (!bs[i]->started)
			continue;
		pthread_mutex_lock(&bs[i]->mu);
		bs[i]->stop = 1;
		pthread_cond_signal(&bs[i]->cv);
		pthread_mutex_unlock(&bs[i]->mu);
		pthread_join(bs[i]->th, NULL);
		bs[i]->started = 0;
	}
	t->bulk_ok = 0;
}

/*
 * Stop both threads for good (they are joined when this returns) and take
 * back what they held: a payload being sent counts what went out, so the
 * loop can finish it; a payload being received that did not complete
 * leaves the stream inside it, so nothing more is read (in_dead).
 */
static void bulk_abandon(struct tcp_conn *t)
{
	int n = 0;

	if (!t->bin.started && !t->bout.started)
		return;
	bulk_stop(t); /* joined: moved and err are the loop's to read */
	if (t->bout.busy) {
		struct tout *o = &t->out[t->ohead]; /* the frame it was sending */

		t->bout.busy = 0;
		o->done += t->bout.moved;
		if (o->done == o->hlen + o->blen)
			out_pop(t, &n);
	}
	if (t->bin.busy) {
		t->bin.busy = 0;
		if (!t->bin.err && t->bin.moved == t->iwant - t->igot) {
			t->in_state = IN_HDR;
			t->igot = 0;
		} else {
			t->in_dead = 1;
		}
	}
}

/* Write what the socket takes; 0 or a negative status. *n counts events. */
static int out_flush(struct tcp_conn *t, int *n)
{
	struct iovec iov[TCP_IOV];
	struct msghdr mh;
	unsigned i, k, ni;
	ssize_t w;
	size_t left;

	if (t->bout.busy)
		return 0; /* the stream's next bytes are the bulk thread's */
	while (t->ocount) {
		struct tout *h = &t->out[t->ohead];
		size_t hoff = h->done - h->hlen; /* of the body, once the header is out */

		/* a big body whose header is out: to the bulk thread */
		if (t->bulk_ok && h->done >= h->hlen && h->blen - hoff >= TCP_BULK_MIN &&
		    !bulk_give(t, &t->bout, (uint8_t *)(uintptr_t)(h->body + hoff), h->blen - hoff))
			return 0;
		for (i = 0, ni = 0; i < t->ocount && ni + 2 <= TCP_IOV; i++) {
			struct tout *o = &t->out[(t->ohead + i) % t->ocap];

			if (o->done < o->hlen) {
				iov[ni].iov_base = o->hdr + o->done;
				iov[ni++].iov_len = o->hlen - o->done;
			}
			if (o->blen) {
				size_t off = o->done > o->hlen ? o->done - o->hlen : 0;

				if (t->bulk_ok && o->blen - off >= TCP_BULK_MIN) {
					i++; /* its header only: the body goes on its own */
					break;
				}
				iov[ni].iov_base = (void *)(uintptr_t)(o->body + off);
				iov[ni++].iov_len = o->blen - off;
			}
		}
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = iov;
		mh.msg_iovlen = ni;
		w = sendmsg(t->fd, &mh, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
				return 0;
			return tcp_lost(t, errno);
		}
		left = (size_t)w;
		for (k = 0; k < i && left; k++) {
			struct tout *o = &t->out[t->ohead];
			size_t rest = o->hlen + o->blen - o->done;

			if (left < rest) {
				o->done += left;
				break;
			}
			left -= rest;
			out_pop(t, n);
		}
	}
	return 0;
}

static int tcp_xmit(struct rd_conn *c, const uint8_t *msg, size_t len, const struct rd_xwrite *w)
{
	struct tcp_conn *t = tc_of(c);
	struct tout *o;
	unsigned idx;
	uint8_t *b;
	int n = 0;

	if (t->eof)
		return rd_xc_fail(c, RD_ECONN, 0, "%s closed the connection", c->info.peer);
	if (w) {
		o = out_push(t);
		rd_tcp_frame_hdr(o->hdr, RD_TF_WRITE, (uint32_t)(RD_TF_WRITE_LEN + w->len));
		put32(o->hdr + 8, (uint32_t)(w->raddr >> 32));
		put32(o->hdr + 12, (uint32_t)w->raddr);
		put32(o->hdr + 16, w->rk->k[0]);
		put32(o->hdr + 20, 0);
		o->hlen = RD_TF_HDR_LEN + RD_TF_WRITE_LEN;
		o->body = (const uint8_t *)w->mr->addr + w->off;
		o->blen = w->len;
		o->has_cookie = 1;
		o->cookie = w->cookie;
	}
	idx = t->sfree[--t->nsfree];
	b = t->sbuf + (size_t)idx * RD_CTRL_MAX;
	memcpy(b, msg, len);
	o = out_push(t);
	rd_tcp_frame_hdr(o->hdr, RD_TF_MSG, (uint32_t)len);
	o->hlen = RD_TF_HDR_LEN;
	o->body = b;
	o->blen = len;
	o->sbuf = (int)idx;
	return out_flush(t, &n);
}

static int tcp_repost(struct rd_conn *c, unsigned idx)
{
	struct tcp_conn *t = tc_of(c);

	t->rfree[t->nrfree++] = idx;
	return 0;
}

static struct tregion *region_for(struct tcp_conn *t, uint64_t raddr, uint32_t rkey, size_t len)
{
	unsigned i;

	for (i = 0; i < TCP_MAX_REGIONS; i++) {
		struct tregion *g = &t->regs[i];
		uint64_t base = (uint64_t)(uintptr_t)g->addr;

		if (g->rkey && g->rkey == rkey && raddr >= base && len <= g->len &&
		    raddr - base <= g->len - len)
			return g;
	}
	return NULL;
}

/* A frame header is complete: decide where its body goes. */
static int in_header(struct tcp_conn *t)
{
	struct rd_conn *c = &t->c;
	uint32_t len = rd_tcp_get32(t->ihdr + 4);

	if (t->ihdr[1] || t->ihdr[2] || t->ihdr[3])
		return rd_xc_fail(c, RD_EPROTO, 0, "%s sent a malformed frame", c->info.peer);
	switch (t->ihdr[0]) {
	case RD_TF_MSG:
		if (len < RD_HDR_LEN || len > RD_CTRL_MAX)
			return rd_xc_fail(c, RD_EPROTO, 0, "%s sent a %u-byte control message",
					  c->info.peer, len);
		if (!t->nrfree)
			return rd_xc_fail(c, RD_EPROTO, 0,
					  "%s sent more messages than it had credits",
					  c->info.peer);
		t->iidx = t->rfree[--t->nrfree];
		t->idst = rd_xc_rbuf(c, t->iidx);
		t->iwant = len;
		t->in_state = IN_MPAY;
		return 0;
	case RD_TF_WRITE:
		if (len < RD_TF_WRITE_LEN || len - RD_TF_WRITE_LEN > RD_CHUNK_MAX)
			return rd_xc_fail(c, RD_EPROTO, 0, "%s sent a write frame of %u bytes",
					  c->info.peer, len);
		t->iwant = len - RD_TF_WRITE_LEN;
		t->in_state = IN_WHDR;
		return 0;
	default:
		return rd_xc_fail(c, RD_EPROTO, 0, "%s sent an unknown frame kind %u",
				  c->info.peer, t->ihdr[0]);
	}
}

static int in_write_header(struct tcp_conn *t)
{
	const uint8_t *h = t->ihdr + RD_TF_HDR_LEN;
	uint64_t raddr = ((uint64_t)rd_tcp_get32(h) << 32) | rd_tcp_get32(h + 4);
	uint32_t rkey = rd_tcp_get32(h + 8);
	struct tregion *g;

	if (rd_tcp_get32(h + 12))
		return rd_xc_fail(&t->c, RD_EPROTO, 0, "%s sent a malformed write frame",
				  t->c.info.peer);
	g = region_for(t, raddr, rkey, t->iwant);
	if (!g)
		return rd_xc_fail(&t->c, RD_EPROTO, 0,
				  "%s wrote outside what was granted (%zu bytes at 0x%llx, key "
				  "0x%x): refused, as a NIC would",
				  t->c.info.peer, t->iwant, (unsigned long long)raddr, rkey);
	t->idst = g->addr + (raddr - (uint64_t)(uintptr_t)g->addr);
	t->in_state = IN_WPAY;
	return 0;
}

/* Read what is there; *n counts messages. 0 or a negative status. */
static int in_read(struct tcp_conn *t, int *n)
{
	struct rd_conn *c = &t->c;
	uint8_t *dst;
	size_t want;
	ssize_t r;
	int ret;

	if (t->in_dead)
		return 0;
	for (;;) {
		switch (t->in_state) {
		case IN_BULK:
			return 0; /* the stream's next bytes are the bulk thread's */
		case IN_HDR:
			dst = t->ihdr + t->igot;
			want = RD_TF_HDR_LEN - t->igot;
			break;
		case IN_WHDR:
			dst = t->ihdr + t->igot;
			want = RD_TF_HDR_LEN + RD_TF_WRITE_LEN - t->igot;
			break;
		case IN_WPAY:
			dst = t->idst + t->igot;
			want = t->iwant - t->igot;
			if (want >= TCP_BULK_MIN && !bulk_give(t, &t->bin, dst, want)) {
				t->in_state = IN_BULK;
				return 0;
			}
			break;
		default:
			dst = t->idst + t->igot;
			want = t->iwant - t->igot;
			break;
		}
		if (want) {
			r = recv(t->fd, dst, want, 0);
			if (r == 0) {
				t->eof = 1;
				return 0;
			}
			if (r < 0) {
				if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
					return 0;
				return tcp_lost(t, errno);
			}
			t->igot += (size_t)r;
			if ((size_t)r < want)
				continue;
		}
		switch (t->in_state) {
		case IN_HDR:
			ret = in_header(t);
			if (ret)
				return ret;
			if (t->in_state == IN_MPAY)
				t->igot = 0;
			break;
		case IN_WHDR:
			ret = in_write_header(t);
			if (ret)
				return ret;
			t->igot = 0;
			break;
		case IN_WPAY:
			t->in_state = IN_HDR;
			t->igot = 0;
			break;
		case IN_MPAY:
			t->in_state = IN_HDR;
			t->igot = 0;
			(*n)++;
			ret = rd_xc_rx(c, t->iidx, t->iwant);
			if (ret)
				return ret;
			break;
		}
	}
}

/* Take what the bulk threads finished; 0 or a negative status. */
static int bulk_collect(struct tcp_conn *t, int *n)
{
	size_t moved;
	int err;

	if (bulk_reap(&t->bin, &err, &moved)) {
		if (err == -1)
			t->eof = 1; /* progress() reports it */
		else if (err)
			return tcp_lost(t, err);
		t->in_state = IN_HDR;
		t->igot = 0;
		(*n)++;
	}
	if (bulk_reap(&t->bout, &err, &moved)) {
		if (err)
			return tcp_lost(t, err);
		out_pop(t, n);
	}
	return 0;
}

static int progress(struct tcp_conn *t)
{
	struct rd_conn *c = &t->c;
	unsigned i, nd;
	int n = 0, r;

	r = bulk_collect(t, &n);
	if (!r)
		r = out_flush(t, &n);
	nd = t->ndone;
	t->ndone = 0;
	for (i = 0; i < nd; i++)
		rd_xc_sent(c, t->done[i]);
	if (!r)
		r = in_read(t, &n);
	if (r)
		return r;
	if (t->eof && !c->disconnected) {
		c->disconnected = 1;
		if (!c->dead)
			rd_xc_fail(c, RD_ECONN, 0,
				   "%s closed the connection (the peer process ended or was killed)",
				   c->info.peer);
	}
	if (c->dead)
		return c->rq_count ? n : -c->err.status;
	r = rd_xc_maybe_credit(c);
	return r ? r : n;
}

static int tcp_poll(struct rd_conn *c, int timeout_ms)
{
	struct tcp_conn *t = tc_of(c);
	struct pollfd p[3];
	uint64_t cnt;
	short ev;
	int n, r, woken = 0;

	if (c->dead)
		return c->rq_count ? 0 : -c->err.status;
	n = progress(t);
	if (n < 0)
		return n;
	if (n > 0 || timeout_ms == 0)
		return 0;
	/* a direction the bulk thread holds is not ours to wait on */
	ev = (short)((t->in_state == IN_BULK ? 0 : POLLIN) |
		     (t->ocount && !t->bout.busy ? POLLOUT : 0));
	p[0] = (struct pollfd){.fd = ev ? t->fd : -1, .events = ev};
	p[1] = (struct pollfd){.fd = rd_xc_wake_fd(c), .events = POLLIN};
	p[2] = (struct pollfd){.fd = t->bulk_done_fd, .events = POLLIN};
	r = poll(p, 3, timeout_ms < 0 ? c->timeout_ms : timeout_ms);
	if (r < 0 && errno != EINTR)
		return rd_xc_fail(c, RD_ECONN, errno, "poll");
	if (r > 0 && p[1].fd >= 0 && p[1].revents)
		woken = rd_xc_wake_drain(c);
	if (r > 0 && p[2].fd >= 0 && p[2].revents && read(p[2].fd, &cnt, sizeof(cnt)) < 0) {
		/* drained by another wake-up: nothing lost, bulk_collect looks */
	}
	n = progress(t);
	if (n < 0)
		return n;
	return n == 0 && !woken && !c->dead ? rd_xc_check_silence(c) : 0;
}

static int tcp_flush(struct rd_conn *c, int timeout_ms)
{
	struct tcp_conn *t = tc_of(c);
	struct timespec t0;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (t->ocount) {
		if (rd_xc_ms_since(&t0) > timeout_ms)
			return rd_xc_fail(c, RD_ETIMEOUT, 0,
					  "%s did not take our last messages", c->info.peer);
		r = tcp_poll(c, 50);
		if (r < 0)
			return r;
	}
	return 0;
}

static char local_only; /* priv of a buffer registered for local use only */

static int tcp_reg(struct rd_conn *c, void *buf, size_t len, int remote_write, struct rd_mr *mr)
{
	struct tcp_conn *t = tc_of(c);
	unsigned i;

	memset(mr, 0, sizeof(*mr));
	mr->addr = buf;
	mr->len = len;
	if (!remote_write) {
		mr->priv = &local_only;
		return 0;
	}
	for (i = 0; i < TCP_MAX_REGIONS && t->regs[i].rkey; i++)
		;
	if (i == TCP_MAX_REGIONS)
		return rd_err_set(&c->err, RD_ENOMEM, 0, "more than %d registered regions",
				  TCP_MAX_REGIONS);
	t->next_rkey = t->next_rkey * 2654435761u + 0x9e3779b9u;
	t->regs[i].addr = buf;
	t->regs[i].len = len;
	t->regs[i].rkey = t->next_rkey | 1u;
	mr->rkey = t->regs[i].rkey;
	mr->priv = &t->regs[i];
	return 0;
}

static void tcp_dereg(struct rd_conn *c, struct rd_mr *mr)
{
	struct tcp_conn *t = tc_of(c);
	struct tregion *g = mr->priv;

	if (mr->priv != &local_only) {
		/*
		 * A payload still landing here: its GET was answered long ago
		 * (the engine frees a slot only after the DATA behind its
		 * payload), so only a hostile or broken peer gets here. Its
		 * memory is about to be freed: stop writing into it, for good,
		 * before this returns, and refuse the peer as a NIC would.
		 */
		if (g && (t->in_state == IN_WPAY || t->in_state == IN_BULK) &&
		    t->idst < g->addr + g->len && g->addr < t->idst + t->iwant) {
			bulk_abandon(t);
			t->in_dead = 1;
			rd_xc_fail(c, RD_EPROTO, 0,
				   "%s was still writing into memory taken back from it: refused, "
				   "as a NIC would",
				   c->info.peer);
		}
		memset(g, 0, sizeof(*g));
	}
	mr->priv = NULL;
}

static void tcp_close(struct rd_conn *c)
{
	struct tcp_conn *t = tc_of(c);
	uint8_t junk[4096];
	struct pollfd p;
	struct timespec t0;

	bulk_abandon(t);
	if (t->bulk_done_fd >= 0)
		close(t->bulk_done_fd);
	if (t->bulk_stop_fd >= 0)
		close(t->bulk_stop_fd);
	if (t->fd >= 0) {
		if (c->established && !t->eof) {
			int n = 0;

			/* Hand over what is queued, then wait briefly for the peer's end so
			 * unread input does not turn our close into a reset. */
			out_flush(t, &n);
			shutdown(t->fd, SHUT_WR);
			clock_gettime(CLOCK_MONOTONIC, &t0);
			p = (struct pollfd){.fd = t->fd, .events = POLLIN};
			while (rd_xc_ms_since(&t0) < 200 && poll(&p, 1, 50) >= 0) {
				ssize_t r = recv(t->fd, junk, sizeof(junk), 0);

				if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
					break;
			}
		}
		close(t->fd);
	}
	rd_xc_fini(c);
	pthread_mutex_destroy(&t->bin.mu);
	pthread_cond_destroy(&t->bin.cv);
	pthread_mutex_destroy(&t->bout.mu);
	pthread_cond_destroy(&t->bout.cv);
	free(t->sbuf);
	free(t->sfree);
	free(t->out);
	free(t->rfree);
	free(t->done);
	free(t);
}

static const struct rd_conn_ops tcp_ops = {
	.name = "tcp",
	.poll = tcp_poll,
	.send = rd_xc_send,
	.can_send = rd_xc_can_send,
	.write_send = rd_xc_write_send,
	.recv = rd_xc_recv,
	.recv_done = rd_xc_recv_done,
	.reg = tcp_reg,
	.dereg = tcp_dereg,
	.flush = tcp_flush,
	.close = tcp_close,
	.can_xmit = tcp_can_xmit,
	.xmit = tcp_xmit,
	.repost = tcp_repost,
};

static struct tcp_conn *conn_new(int fd, const struct rd_conn_opts *o)
{
	struct tcp_conn *t = calloc(1, sizeof(*t));
	unsigned i;

	if (!t)
		return NULL;
	t->c.ops = &tcp_ops;
	t->fd = fd;
	t->bulk_done_fd = t->bulk_stop_fd = -1;
	pthread_mutex_init(&t->bin.mu, NULL);
	pthread_cond_init(&t->bin.cv, NULL);
	pthread_mutex_init(&t->bout.mu, NULL);
	pthread_cond_init(&t->bout.cv, NULL);
	t->bout.out = 1;
	t->bulk_ok = o && o->bulk_thread;
	t->next_rkey = (uint32_t)(uintptr_t)t ^ (uint32_t)time(NULL);
	if (rd_xc_init(&t->c, o))
		goto fail;
	t->sdepth = t->c.rdepth + 4;
	t->ocap = t->sdepth + t->c.max_writes + 4;
	t->sbuf = calloc(t->sdepth, RD_CTRL_MAX);
	t->sfree = calloc(t->sdepth, sizeof(*t->sfree));
	t->out = calloc(t->ocap, sizeof(*t->out));
	t->rfree = calloc(t->c.rdepth, sizeof(*t->rfree));
	t->done = calloc(t->ocap, sizeof(*t->done));
	if (!t->sbuf || !t->sfree || !t->out || !t->rfree || !t->done)
		goto fail;
	for (i = 0; i < t->sdepth; i++)
		t->sfree[t->nsfree++] = i;
	for (i = 0; i < t->c.rdepth; i++)
		t->rfree[t->nrfree++] = t->c.rdepth - 1 - i;
	snprintf(t->c.info.device, sizeof(t->c.info.device), "tcp");
	snprintf(t->c.info.link, sizeof(t->c.info.link), "TCP");
	return t;
fail:
	t->fd = -1;
	tcp_close(&t->c);
	return NULL;
}

/* --- connection setup --- */

static int connect_one(const struct addrinfo *a, int timeout_ms, int *fdp)
{
	struct pollfd p;
	socklen_t sl = sizeof(int);
	int fd, r, soerr = 0;

	fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
	if (fd < 0)
		return -errno;
	rd_tcp_tune(fd);
	if (set_nonblock(fd)) {
		r = -errno;
		goto fail;
	}
	if (connect(fd, a->ai_addr, a->ai_addrlen) && errno != EINPROGRESS) {
		r = -errno;
		goto fail;
	}
	p = (struct pollfd){.fd = fd, .events = POLLOUT};
	do {
		r = poll(&p, 1, timeout_ms);
	} while (r < 0 && errno == EINTR);
	if (r == 0) {
		r = -ETIMEDOUT;
		goto fail;
	}
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
		r = -(soerr ? soerr : errno);
		goto fail;
	}
	*fdp = fd;
	return 0;
fail:
	close(fd);
	return r;
}

int rd_tcp_connect(struct rd_conn **out, const char *host, const char *port,
		   const struct rd_conn_opts *o, const struct rd_cm_req *req, struct rd_cm_rep *rep,
		   int *no_route, struct rd_err *err)
{
	struct addrinfo hints, *ai = NULL, *a;
	struct tcp_conn *t = NULL;
	struct rd_cm_req r = *req;
	struct rd_cm_rej rej;
	uint8_t pdata[64];
	char peer[80];
	size_t len = 0;
	int ret, gai, fd = -1, tmo = o && o->timeout_ms ? o->timeout_ms : RD_XC_DEFAULT_TIMEOUT;

	*out = NULL;
	*no_route = 0; /* TCP needs no device: every failure is the network's */
	rd_xc_peer_name(peer, sizeof(peer), host, port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = o && o->family ? o->family : AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	gai = getaddrinfo(host, port, &hints, &ai);
	if (gai)
		return rd_err_set(err, RD_ECONN, 0, "cannot resolve host '%s'%s: %s", host,
				  hints.ai_family == AF_INET    ? " as IPv4 (-4)"
				  : hints.ai_family == AF_INET6 ? " as IPv6 (-6)"
								: "",
				  gai_strerror(gai));
	rd_conn_phase(o, "name looked up");
	ret = -ECONNREFUSED;
	for (a = ai; a; a = a->ai_next) {
		ret = connect_one(a, tmo, &fd);
		if (!ret)
			break;
	}
	freeaddrinfo(ai);
	if (ret) {
		if (ret == -ECONNREFUSED)
			return rd_err_set(err, RD_ECONN, -ret,
					  "%s: connection refused over TCP (nothing listening on "
					  "that port: is rdcpd running there, and is the port right?)",
					  peer);
		return rd_err_set(err, RD_ECONN, -ret, "%s: cannot connect over TCP", peer);
	}
	t = conn_new(fd, o);
	if (!t) {
		close(fd);
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "connection");
	}
	snprintf(t->c.info.peer, sizeof(t->c.info.peer), "%s", peer);
	r.ctrl_depth = (uint16_t)t->c.rdepth;
	r.flags &= ~RD_CMF_JOIN;
	r.lanes = 1; /* lanes are RDMA's: over TCP one stream */
	rd_cm_req_encode(pdata, &r);
	ret = send_hello(fd, RD_TF_CM_REQ, pdata, RD_CM_REQ_LEN, tmo);
	if (!ret)
		ret = read_hello(fd, pdata, sizeof(pdata), &len, tmo);
	if (ret == RD_TF_CM_REJ && !rd_cm_rej_decode(pdata, len, &rej)) {
		if (rej.reason == RD_REJ_VERSION)
			ret = rd_err_set(&t->c.err, RD_EVERSION, 0,
					 "%s: protocol version mismatch: peer speaks %u..%u, "
					 "this rdcp %u..%u; upgrade the older side",
					 peer, rej.ver_min, rej.ver_max, RD_PROTO_MIN, RD_PROTO_MAX);
		else
			ret = rd_err_set(&t->c.err, rd_rej_status(rej.reason), 0,
					 "%s refused the connection: %s", peer,
					 rd_rej_reason_str(rej.reason));
		goto out;
	}
	if (ret != RD_TF_CM_REP || rd_cm_rep_decode(pdata, len, rep)) {
		ret = rd_err_set(&t->c.err, ret == -ETIMEDOUT ? RD_ETIMEOUT : RD_EPROTO,
				 ret < 0 ? -ret : 0,
				 "%s answered over TCP but is not an rdcp server (bad accept data)",
				 peer);
		goto out;
	}
	ret = rd_xc_check_rep(&t->c, rep);
	if (ret)
		goto out;
	rd_xc_start(&t->c, rep->ctrl_depth, rep->version);
	rd_conn_phase(o, "connected");
	*out = &t->c;
	t = NULL;
out:
	if (t) {
		rd_err_copy(err, &t->c.err);
		t->c.ops->close(&t->c);
	}
	return ret;
}

/* --- accepting (the listener is in rd_xport_tcp_listen.c) --- */

int rd_tcp_accept(struct rd_conn_req *req, const struct rd_conn_opts *o,
		  const struct rd_cm_rep *rep, struct rd_conn **out, struct rd_err *err)
{
	struct rd_tcp_req *rq = (struct rd_tcp_req *)req;
	struct rd_cm_rep p = *rep;
	uint8_t pdata[RD_CM_REP_LEN];
	unsigned peer_depth = req->peer_depth;
	struct tcp_conn *t;
	int ret;

	*out = NULL;
	t = conn_new(rq->fd, o);
	if (!t) {
		struct rd_cm_rej rej = {.reason = RD_REJ_BUSY};

		req->ops->reject(req, &rej);
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "connection");
	}
	snprintf(t->c.info.peer, sizeof(t->c.info.peer), "%s", req->peer);
	free(rq);
	p.ctrl_depth = (uint16_t)t->c.rdepth;
	p.lanes = 1; /* whatever was asked: one stream over TCP */
	p.sid = 0;
	rd_cm_rep_encode(pdata, &p);
	ret = send_hello(t->fd, RD_TF_CM_REP, pdata, sizeof(pdata), t->c.timeout_ms);
	if (ret) {
		rd_err_set(err, RD_ECONN, -ret, "%s: connection lost while accepting", t->c.info.peer);
		t->c.established = 0;
		t->c.ops->close(&t->c);
		return -RD_ECONN;
	}
	rd_xc_start(&t->c, peer_depth, rep->version);
	*out = &t->c;
	return 0;
}
