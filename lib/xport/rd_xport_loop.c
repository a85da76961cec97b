// SPDX-License-Identifier: MIT
/*
 * Loopback transport (tests only): see rd_xport_loop.h.
 *
 * One mutex and one condition variable per pair. Each end owns its
 * receive buffers and its list of finished writes (touched only by the
 * thread using that end); what crosses between the ends (the incoming
 * queues, the registered regions the peer may write into, the closed and
 * cut flags) is touched only with the lock held, so the memory a write
 * fills is published to the peer by the same lock that publishes the
 * message behind it.
 */
#include "lib/xport/rd_xport_loop.h"
#include "lib/xport/conn/rd_xport_impl.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOOP_MAX_REGIONS 1040 /* the engine registers each receive slot apart: <= 1024 */

struct lframe {
	struct lframe *next;
	struct timespec due;
	size_t len;
	uint8_t msg[];
};

struct lregion {
	uint8_t *addr;
	size_t len;
	uint32_t rkey; /* 0: slot free */
};

struct lpair;

struct lconn {
	struct rd_conn c;
	struct lpair *p;
	int side;

	/* shared: under p->mu */
	struct lframe *qh, *qt; /* arriving at this end */
	struct lframe *held;	/* sent by this end, held back (RD_LOOP_HOLD) */
	struct lregion regs[LOOP_MAX_REGIONS];
	uint64_t *done; /* writes whose message left, cookies */
	unsigned ndone;
	int closed;

	/* this end's thread only */
	unsigned *rfree;
	unsigned nrfree;
	uint32_t next_rkey;
};

struct lpair {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct lconn *end[2];
	unsigned sent[2];
	int cut, refs;
	rd_loop_hook_fn hook;
	void *ctx;
};

static struct lconn *lc_of(struct rd_conn *c)
{
	return (struct lconn *)c;
}

static char local_only_marker;

static void frames_free(struct lframe *f)
{
	struct lframe *n;

	for (; f; f = n) {
		n = f->next;
		free(f);
	}
}

static void enqueue(struct lconn *to, struct lframe *f)
{
	f->next = NULL;
	if (to->qt)
		to->qt->next = f;
	else
		to->qh = f;
	to->qt = f;
}

static int due(const struct lframe *f, const struct timespec *now)
{
	return f->due.tv_sec < now->tv_sec ||
	       (f->due.tv_sec == now->tv_sec && f->due.tv_nsec <= now->tv_nsec);
}

static int ts_le(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec <= b->tv_nsec);
}

static struct lregion *region_for(struct lconn *peer, uint64_t raddr, uint32_t rkey, size_t len)
{
	unsigned i;

	for (i = 0; i < LOOP_MAX_REGIONS; i++) {
		struct lregion *g = &peer->regs[i];
		uint64_t base = (uint64_t)(uintptr_t)g->addr;

		if (g->rkey && g->rkey == rkey && raddr >= base && len <= g->len &&
		    raddr - base <= g->len - len)
			return g;
	}
	return NULL;
}

static int loop_can_xmit(const struct rd_conn *c)
{
	return 1;
}

static int loop_xmit(struct rd_conn *c, const uint8_t *msg, size_t len, const struct rd_xwrite *w)
{
	struct lconn *lc = lc_of(c);
	struct lpair *p = lc->p;
	struct lconn *peer;
	struct lframe *f;
	struct lregion *g;
	struct rd_loop_event ev;
	enum rd_loop_action act = RD_LOOP_PASS;
	int ret = 0;

	f = malloc(sizeof(*f) + len);
	if (!f)
		return rd_xc_fail(c, RD_ENOMEM, ENOMEM, "loopback message");
	memcpy(f->msg, msg, len);
	f->len = len;
	clock_gettime(CLOCK_MONOTONIC, &f->due);
	memset(&ev, 0, sizeof(ev));

	pthread_mutex_lock(&p->mu);
	peer = p->end[!lc->side];
	if (p->cut || !peer || peer->closed) {
		ret = rd_xc_fail(c, RD_ECONN, 0, "%s closed the connection", c->info.peer);
		goto out_free;
	}
	if (w) {
		g = region_for(peer, w->raddr, w->rk->k[0], w->len);
		if (!g) {
			ret = rd_xc_fail(c, RD_ECONN, 0,
					 "loopback to %s failed: the peer refused a write (remote "
					 "access error: wrong key, address or length)",
					 c->info.peer);
			p->cut = 1;
			goto out_free;
		}
		ev.data = g->addr + (w->raddr - (uint64_t)(uintptr_t)g->addr);
		ev.dlen = w->len;
		memcpy(ev.data, (const uint8_t *)w->mr->addr + w->off, w->len);
	}
	ev.side = lc->side;
	ev.n = ++p->sent[lc->side];
	ev.type = f->msg[0];
	ev.msg = f->msg;
	ev.len = len;
	if (p->hook)
		act = p->hook(p->ctx, &ev);
	switch (act) {
	case RD_LOOP_DROP:
		free(f);
		break;
	case RD_LOOP_CUT:
		free(f);
		p->cut = 1;
		break;
	case RD_LOOP_HOLD:
		if (lc->held)
			enqueue(peer, lc->held);
		lc->held = f;
		break;
	case RD_LOOP_DELAY:
		f->due.tv_sec += ev.delay_ms / 1000;
		f->due.tv_nsec += (long)(ev.delay_ms % 1000) * 1000000;
		if (f->due.tv_nsec >= 1000000000) {
			f->due.tv_sec++;
			f->due.tv_nsec -= 1000000000;
		}
		/* fall through */
	case RD_LOOP_PASS:
	default:
		enqueue(peer, f);
		if (lc->held) {
			enqueue(peer, lc->held);
			lc->held = NULL;
		}
		break;
	}
	if (w)
		lc->done[lc->ndone++] = w->cookie;
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	return 0;
out_free:
	pthread_cond_broadcast(&p->cv);
	pthread_mutex_unlock(&p->mu);
	free(f);
	return ret;
}

static int loop_repost(struct rd_conn *c, unsigned idx)
{
	struct lconn *lc = lc_of(c);

	lc->rfree[lc->nrfree++] = idx;
	return 0;
}

/*
 * Move what has arrived into receive buffers and report finished writes.
 * Returns the number of events, or a negative status.
 */
static int reap(struct lconn *lc)
{
	struct rd_conn *c = &lc->c;
	struct lpair *p = lc->p;
	uint64_t done[RD_XC_DEFAULT_WRITES * 16];
	struct lframe *got = NULL, **tail = &got, *f;
	struct timespec now;
	unsigned ndone, i;
	int n = 0, r, overrun = 0, gone;

	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&p->mu);
	ndone = lc->ndone;
	if (ndone > sizeof(done) / sizeof(done[0]))
		ndone = sizeof(done) / sizeof(done[0]);
	memcpy(done, lc->done, ndone * sizeof(done[0]));
	memmove(lc->done, lc->done + ndone, (lc->ndone - ndone) * sizeof(done[0]));
	lc->ndone -= ndone;
	for (i = 0; lc->qh && due(lc->qh, &now); i++) {
		if (i >= lc->nrfree) {
			overrun = 1;
			break;
		}
		f = lc->qh;
		lc->qh = f->next;
		if (!lc->qh)
			lc->qt = NULL;
		f->next = NULL;
		*tail = f;
		tail = &f->next;
	}
	gone = !lc->qh && (p->cut || !p->end[!lc->side] || p->end[!lc->side]->closed);
	pthread_mutex_unlock(&p->mu);

	for (i = 0; i < ndone; i++, n++)
		rd_xc_sent(c, done[i]);
	for (f = got; f; f = got) {
		unsigned idx = lc->rfree[--lc->nrfree];

		got = f->next;
		memcpy(rd_xc_rbuf(c, idx), f->msg, f->len);
		r = rd_xc_rx(c, idx, f->len);
		free(f);
		n++;
		if (r) {
			frames_free(got);
			return r;
		}
	}
	if (overrun)
		return rd_xc_fail(c, RD_EPROTO, 0, "%s sent more messages than it had credits",
				  c->info.peer);
	if (gone && !c->disconnected) {
		c->disconnected = 1;
		if (!c->dead)
			rd_xc_fail(c, RD_ECONN, 0,
				   "%s closed the connection (the peer process ended or was killed)",
				   c->info.peer);
	}
	return n;
}

/*
 * Wait on the pair's condition variable until dl; with a wake fd set
 * (rd_conn_set_wake_fd), in slices of 1 ms, looking at the fd between
 * them: the loopback is for tests, and a condition variable cannot wait
 * on an fd. 1 if the wake fd was readable (and is now drained).
 */
static int wait_or_wake(struct rd_conn *c, struct lpair *p, const struct timespec *dl)
{
	struct pollfd w = {.fd = rd_xc_wake_fd(c), .events = POLLIN};
	struct timespec now, slice;

	if (w.fd < 0) {
		pthread_cond_timedwait(&p->cv, &p->mu, dl);
		return 0;
	}
	for (;;) {
		if (poll(&w, 1, 0) > 0)
			return rd_xc_wake_drain(c);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (ts_le(dl, &now))
			return 0;
		slice = now;
		slice.tv_nsec += 1000000;
		if (slice.tv_nsec >= 1000000000) {
			slice.tv_sec++;
			slice.tv_nsec -= 1000000000;
		}
		if (ts_le(dl, &slice))
			slice = *dl;
		if (pthread_cond_timedwait(&p->cv, &p->mu, &slice) != ETIMEDOUT)
			return 0; /* signalled: something arrived */
	}
}

static int loop_poll(struct rd_conn *c, int timeout_ms)
{
	struct lconn *lc = lc_of(c);
	struct lpair *p = lc->p;
	struct timespec dl;
	int n, r, woken = 0;

	if (c->dead)
		return c->rq_count ? 0 : -c->err.status;
	n = reap(lc);
	if (n < 0)
		return n;
	if (c->dead)
		return c->rq_count ? 0 : -c->err.status;
	r = rd_xc_maybe_credit(c);
	if (r)
		return r;
	if (n > 0 || timeout_ms == 0)
		return 0;

	if (timeout_ms < 0)
		timeout_ms = c->timeout_ms;
	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += timeout_ms / 1000;
	dl.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&p->mu);
	/* Sleep unless something is waiting; a delayed message wakes us when due. */
	if (!lc->ndone && (lc->qh || (!p->cut && p->end[!lc->side]))) {
		if (lc->qh && due(lc->qh, &dl))
			dl = lc->qh->due;
		woken = wait_or_wake(c, p, &dl);
	}
	pthread_mutex_unlock(&p->mu);

	n = reap(lc);
	if (n < 0)
		return n;
	if (c->dead)
		return c->rq_count ? 0 : -c->err.status;
	r = rd_xc_maybe_credit(c);
	if (r)
		return r;
	return n == 0 && !woken ? rd_xc_check_silence(c) : 0;
}

static int loop_flush(struct rd_conn *c, int timeout_ms)
{
	int r = reap(lc_of(c));

	return r < 0 ? r : 0;
}

static int loop_reg(struct rd_conn *c, void *buf, size_t len, int remote_write, struct rd_mr *mr)
{
	struct lconn *lc = lc_of(c);
	unsigned i;
	int ret = 0;

	memset(mr, 0, sizeof(*mr));
	mr->addr = buf;
	mr->len = len;
	if (!remote_write) {
		mr->priv = &local_only_marker;
		return 0;
	}
	pthread_mutex_lock(&lc->p->mu);
	for (i = 0; i < LOOP_MAX_REGIONS && lc->regs[i].rkey; i++)
		;
	if (i == LOOP_MAX_REGIONS) {
		ret = rd_err_set(&c->err, RD_ENOMEM, 0, "loopback: more than %d regions",
				 LOOP_MAX_REGIONS);
	} else {
		lc->next_rkey = lc->next_rkey * 2654435761u + 0x1000193u;
		lc->regs[i].addr = buf;
		lc->regs[i].len = len;
		lc->regs[i].rkey = lc->next_rkey | 1u;
		mr->rkey = lc->regs[i].rkey;
		mr->priv = &lc->regs[i];
	}
	pthread_mutex_unlock(&lc->p->mu);
	return ret;
}

static void loop_dereg(struct rd_conn *c, struct rd_mr *mr)
{
	struct lconn *lc = lc_of(c);
	struct lregion *g = mr->priv;

	if (mr->priv != &local_only_marker) {
		pthread_mutex_lock(&lc->p->mu);
		memset(g, 0, sizeof(*g));
		pthread_mutex_unlock(&lc->p->mu);
	}
	mr->priv = NULL;
}

static void loop_close(struct rd_conn *c)
{
	struct lconn *lc = lc_of(c);
	struct lpair *p = lc->p;
	int last;

	if (p) {
		pthread_mutex_lock(&p->mu);
		lc->closed = 1;
		p->end[lc->side] = NULL;
		frames_free(lc->qh);
		frames_free(lc->held);
		last = --p->refs == 0;
		pthread_cond_broadcast(&p->cv);
		pthread_mutex_unlock(&p->mu);
		if (last) {
			pthread_cond_destroy(&p->cv);
			pthread_mutex_destroy(&p->mu);
			free(p);
		}
	}
	rd_xc_fini(c);
	free(lc->rfree);
	free(lc->done);
	free(lc);
}

static const struct rd_conn_ops loop_ops = {
	.name = "loop",
	.poll = loop_poll,
	.send = rd_xc_send,
	.can_send = rd_xc_can_send,
	.write_send = rd_xc_write_send,
	.recv = rd_xc_recv,
	.recv_done = rd_xc_recv_done,
	.reg = loop_reg,
	.dereg = loop_dereg,
	.flush = loop_flush,
	.close = loop_close,
	.can_xmit = loop_can_xmit,
	.xmit = loop_xmit,
	.repost = loop_repost,
};

static struct lconn *end_new(struct lpair *p, int side, const struct rd_conn_opts *o)
{
	struct lconn *lc = calloc(1, sizeof(*lc));
	unsigned i;

	if (!lc)
		return NULL;
	lc->c.ops = &loop_ops;
	lc->p = p;
	lc->side = side;
	lc->next_rkey = 0x5eed0000u + (unsigned)side;
	if (rd_xc_init(&lc->c, o))
		goto fail;
	lc->rfree = calloc(lc->c.rdepth, sizeof(*lc->rfree));
	lc->done = calloc(lc->c.max_writes + 1, sizeof(*lc->done));
	if (!lc->rfree || !lc->done)
		goto fail;
	for (i = 0; i < lc->c.rdepth; i++)
		lc->rfree[lc->nrfree++] = lc->c.rdepth - 1 - i;
	snprintf(lc->c.info.peer, sizeof(lc->c.info.peer), "loopback peer %d", !side);
	snprintf(lc->c.info.device, sizeof(lc->c.info.device), "loop");
	snprintf(lc->c.info.link, sizeof(lc->c.info.link), "memory");
	return lc;
fail:
	rd_xc_fini(&lc->c);
	free(lc->rfree);
	free(lc->done);
	free(lc);
	return NULL;
}

int rd_loop_pair(struct rd_conn **a, struct rd_conn **b, const struct rd_conn_opts *o,
		 rd_loop_hook_fn hook, void *ctx, struct rd_err *err)
{
	struct lpair *p = calloc(1, sizeof(*p));
	struct lconn *x = NULL, *y = NULL;
	pthread_condattr_t ca;

	*a = *b = NULL;
	if (!p)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "loopback pair");
	x = end_new(p, 0, o);
	y = end_new(p, 1, o);
	if (!x || !y) {
		if (x)
			x->p = NULL;
		if (y)
			y->p = NULL;
		rd_conn_close(x ? &x->c : NULL);
		rd_conn_close(y ? &y->c : NULL);
		free(p);
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "loopback pair");
	}
	pthread_mutex_init(&p->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&p->cv, &ca);
	pthread_condattr_destroy(&ca);
	p->end[0] = x;
	p->end[1] = y;
	p->refs = 2;
	p->hook = hook;
	p->ctx = ctx;
	rd_xc_start(&x->c, y->c.rdepth, RD_PROTO_MAX);
	rd_xc_start(&y->c, x->c.rdepth, RD_PROTO_MAX);
	*a = &x->c;
	*b = &y->c;
	return 0;
}

void rd_loop_name_peer(struct rd_conn *c, const char *name)
{
	snprintf(c->info.peer, sizeof(c->info.peer), "%s", name);
}
