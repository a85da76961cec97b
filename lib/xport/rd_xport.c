// SPDX-License-Identifier: MIT
/*
 * The top of lib/xport: every public rd_conn_*() and rd_listener_*() call
 * dispatches through the connection's (listener's) ops table, and a
 * transport is reached only through its entry table (struct rd_xport).
 * The credit layer every transport shares is rd_xport_credit.c, below them.
 */
#include "lib/xport/rd_xport.h"
#include "lib/xport/conn/rd_xport_impl.h"
#include "lib/xport/rdma/rd_xport_rdma.h"
#include "lib/xport/tcp/rd_xport_tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- dispatch --- */

int rd_conn_poll(struct rd_conn *c, int timeout_ms)
{
	return c->ops->poll(c, timeout_ms);
}

int rd_conn_send(struct rd_conn *c, const void *msg, size_t len)
{
	int r = c->ops->send(c, msg, len);

	if (!r)
		c->bytes_sent += len;
	return r;
}

void rd_conn_bytes(const struct rd_conn *c, uint64_t *sent, uint64_t *rcvd)
{
	*sent = c ? c->bytes_sent : 0;
	*rcvd = c ? c->bytes_rcvd : 0;
}

int rd_conn_can_send(const struct rd_conn *c)
{
	return c->ops->can_send(c);
}

int rd_conn_write_send(struct rd_conn *c, const struct rd_mr *mr, size_t off, size_t len,
		       uint64_t raddr, const struct rd_rkeys *rk, const void *msg, size_t msglen,
		       uint64_t cookie)
{
	struct rd_xwrite w = {
		.mr = mr, .off = off, .len = len, .raddr = raddr, .rk = rk, .cookie = cookie};
	int r = c->ops->write_send(c, &w, msg, msglen);

	if (!r)
		c->bytes_sent += len + msglen;
	return r;
}

int rd_conn_recv(struct rd_conn *c, const uint8_t **msg, size_t *len)
{
	int r = c->ops->recv(c, msg, len);

	if (r == 1)
		c->bytes_rcvd += *len;
	return r;
}

int rd_conn_recv_done(struct rd_conn *c)
{
	return c->ops->recv_done(c);
}

int rd_conn_reg(struct rd_conn *c, void *buf, size_t len, int remote_write, struct rd_mr *mr)
{
	return c->ops->reg(c, buf, len, remote_write, mr);
}

void rd_conn_dereg(struct rd_conn *c, struct rd_mr *mr)
{
	if (mr && mr->priv)
		c->ops->dereg(c, mr);
}

int rd_conn_flush(struct rd_conn *c, int timeout_ms)
{
	return c->ops->flush(c, timeout_ms);
}

void rd_conn_close(struct rd_conn *c)
{
	if (c)
		c->ops->close(c);
}

const struct rd_err *rd_conn_err(const struct rd_conn *c)
{
	return &c->err;
}

const struct rd_conn_info *rd_conn_info(const struct rd_conn *c)
{
	while (c->lower)
		c = c->lower;
	return &c->info;
}

const char *rd_conn_rail_names(const struct rd_conn_info *i, char *buf, size_t len)
{
	unsigned k;
	size_t n = 0;

	buf[0] = 0;
	for (k = 0; k < i->rails && k < RD_RAILS_MAX && n < len; k++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", k ? ", " : "", i->rail_dev[k]);
	return buf;
}

uint64_t rd_conn_lane_bytes(const struct rd_conn *c, unsigned i)
{
	while (c && !c->ops->lane_bytes)
		c = c->lower;
	return c ? c->ops->lane_bytes(c, i) : 0;
}

unsigned rd_conn_lane_rail(const struct rd_conn *c, unsigned i)
{
	while (c && !c->ops->lane_rail)
		c = c->lower;
	return c ? c->ops->lane_rail(c, i) : 0;
}

const char *rd_conn_transport(const struct rd_conn *c)
{
	return c->ops->name;
}

void rd_conn_set_sent_cb(struct rd_conn *c, rd_conn_sent_fn fn, void *ctx)
{
	c->sent_fn = fn;
	c->sent_ctx = ctx;
	if (c->lower)
		rd_conn_set_sent_cb(c->lower, fn, ctx);
}

void rd_conn_set_wake_fd(struct rd_conn *c, int fd)
{
	while (c->lower)
		c = c->lower;
	c->wake_fd = fd + 1;
}

void rd_conn_filter_init(struct rd_conn *f, const struct rd_conn_ops *ops, struct rd_conn *lower)
{
	f->ops = ops;
	f->lower = lower;
	f->rq_cur = -1;
	f->info = lower->info;
	f->timeout_ms = lower->timeout_ms;
	f->stop = lower->stop;
	f->established = 1;
}

int rd_listener_next(struct rd_listener *l, int timeout_ms, struct rd_conn_req **req,
		     struct rd_cm_req *creq)
{
	return l->ops->next(l, timeout_ms, req, creq);
}

unsigned rd_listener_port(const struct rd_listener *l)
{
	return l->port;
}

const char *rd_listener_where(const struct rd_listener *l)
{
	return l->where;
}

const struct rd_err *rd_listener_err(const struct rd_listener *l)
{
	return &l->err;
}

void rd_listener_close(struct rd_listener *l)
{
	if (l)
		l->ops->close(l);
}

const char *rd_conn_req_peer(const struct rd_conn_req *r)
{
	return r->peer;
}

int rd_peer_addr(const char *peer, uint8_t addr[16])
{
	char a[80];
	const char *end;
	size_t n;

	if (peer[0] == '[') {
		end = strchr(peer, ']');
		if (!end)
			return -RD_EUSAGE;
		peer++;
	} else {
		end = strrchr(peer, ':');
	}
	n = end ? (size_t)(end - peer) : strlen(peer);
	if (n >= sizeof(a))
		return -RD_EUSAGE;
	memcpy(a, peer, n);
	a[n] = '\0';
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, a, addr + 12) == 1) {
		addr[10] = addr[11] = 0xff;
		return 0;
	}
	return inet_pton(AF_INET6, a, addr) == 1 ? 0 : -RD_EUSAGE;
}

long rd_conn_req_age_ms(const struct rd_conn_req *r)
{
	if (!r->t0.tv_sec && !r->t0.tv_nsec)
		return 0;
	return rd_xc_ms_since(&r->t0);
}

void rd_listener_set_pre(struct rd_listener *l, const struct rd_listener_pre *p)
{
	if (l->ops->set_pre)
		l->ops->set_pre(l, p);
}

unsigned rd_listener_pending_from(const struct rd_listener *l, const struct sockaddr *sa)
{
	return l->ops->pending_from ? l->ops->pending_from(l, sa) : 0;
}

const char *rd_listener_trouble(const struct rd_listener *l)
{
	return l->ops->trouble ? l->ops->trouble(l) : "";
}

unsigned long rd_listener_refused(const struct rd_listener *l)
{
	return l->ops->refused ? l->ops->refused(l) : 0;
}

int rd_conn_accept(struct rd_conn_req *req, const struct rd_conn_opts *o,
		   const struct rd_cm_rep *rep, struct rd_conn **out, struct rd_err *err)
{
	int ret = req->ops->accept(req, o, rep, out, err);

	if (!ret)
		snprintf((*out)->info.transport, sizeof((*out)->info.transport), "%s",
			 (*out)->ops->name);
	return ret;
}

void rd_conn_reject(struct rd_conn_req *req, const struct rd_cm_rej *rej)
{
	if (req)
		req->ops->reject(req, rej);
}

int rd_transport_parse(const char *s)
{
	if (!strcmp(s, "auto"))
		return RD_XPORT_AUTO;
	if (!strcmp(s, "rdma"))
		return RD_XPORT_RDMA;
	if (!strcmp(s, "tcp"))
		return RD_XPORT_TCP;
	return -1;
}

const char *rd_transport_name(int t)
{
	return t == RD_XPORT_RDMA ? "rdma" : t == RD_XPORT_TCP ? "tcp" : "auto";
}

int rd_xport_probe(const char *host, char *dev, size_t devlen, char *why, size_t whylen)
{
	return rd_xport_rdma.probe(host, dev, devlen, why, whylen) ? RD_XPORT_RDMA : RD_XPORT_TCP;
}

int rd_conn_connect(struct rd_conn **out, const char *host, const char *port,
		    const struct rd_conn_opts *o, const struct rd_cm_req *req,
		    struct rd_cm_rep *rep, struct rd_err *err)
{
	int t = o ? o->transport : RD_XPORT_AUTO, no_route = 0, ret;
	struct rd_err rerr;

	if (t == RD_XPORT_TCP) {
		ret = rd_xport_tcp.connect(out, host, port, o, req, rep, &no_route, err);
		goto out;
	}
	rd_err_clear(&rerr);
	ret = rd_xport_rdma.connect(out, host, port, o, req, rep, &no_route, &rerr);
	if (!ret || t == RD_XPORT_RDMA || !no_route) {
		if (ret)
			rd_err_copy(err, &rerr);
		goto out;
	}
	/* auto, and no RDMA device reaches host: TCP, and say so */
	ret = rd_xport_tcp.connect(out, host, port, o, req, rep, &no_route, err);
	if (!ret) {
		snprintf((*out)->info.note, sizeof((*out)->info.note),
			 "rdcp: no RDMA route to %s (%s); using TCP", host,
			 rerr.status == RD_ENODEV ? "no RDMA device here" : rerr.msg);
		(*out)->info.note_quiet = rerr.status == RD_ENODEV;
	} else {
		struct rd_err terr = *err;

		rd_err_set(err, terr.status, 0, "%s (over TCP: there is no RDMA route: %s)",
			   terr.msg, rerr.msg);
	}
out:
	if (!ret)
		snprintf((*out)->info.transport, sizeof((*out)->info.transport), "%s",
			 (*out)->ops->name);
	return ret;
}

/*
 * Auto listens on both: a listener over the RDMA and the TCP one, waiting
 * on both fds; a request keeps the ops of the listener it came from.
 */
struct multi_listener {
	struct rd_listener l;
	struct rd_listener *sub[2];
	unsigned nsub, turn;
};

/* How soon sub-listener l wants its next call even if its fd stays quiet. */
static int sub_due(const struct rd_listener *l, int timeout_ms)
{
	int d = l->ops->due_ms ? l->ops->due_ms(l) : -1;

	if (d < 0)
		return timeout_ms;
	return timeout_ms < 0 || d < timeout_ms ? d : timeout_ms;
}

static int multi_next(struct rd_listener *l, int timeout_ms, struct rd_conn_req **req,
		      struct rd_cm_req *creq)
{
	struct multi_listener *m = (struct multi_listener *)l;
	struct timespec t0;
	struct pollfd p[2];
	unsigned i, k;
	int r, wait;
	long left;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		left = timeout_ms < 0 ? -1 : timeout_ms - rd_xc_ms_since(&t0);
		if (timeout_ms >= 0 && left < 0)
			left = 0;
		wait = (int)left;
		for (i = 0; i < m->nsub; i++) {
			p[i] = (struct pollfd){.fd = m->sub[i]->ops->fd(m->sub[i]), .events = POLLIN};
			wait = sub_due(m->sub[i], wait);
		}
		r = poll(p, m->nsub, wait);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return rd_err_set(&l->err, RD_ECONN, errno, "waiting for connections");
		for (k = 0; k < m->nsub; k++) {
			i = (m->turn + k) % m->nsub; /* take turns: neither starves */
			/* readable, or due (a deadline or a back-off ends) */
			if (!p[i].revents && sub_due(m->sub[i], -1) != 0)
				continue;
			r = m->sub[i]->ops->next(m->sub[i], 0, req, creq);
			if (r == 1)
				continue;
			m->turn = i + 1;
			if (r < 0)
				rd_err_copy(&l->err, &m->sub[i]->err);
			return r;
		}
		/* a sub-listener may have read part of a request: not one yet */
		if (timeout_ms >= 0 && rd_xc_ms_since(&t0) >= timeout_ms)
			return 1;
	}
}

static void multi_close(struct rd_listener *l)
{
	struct multi_listener *m = (struct multi_listener *)l;
	unsigned i;

	for (i = 0; i < m->nsub; i++)
		rd_listener_close(m->sub[i]);
	free(m);
}

static void multi_set_pre(struct rd_listener *l, const struct rd_listener_pre *p)
{
	struct multi_listener *m = (struct multi_listener *)l;
	unsigned i;

	for (i = 0; i < m->nsub; i++)
		rd_listener_set_pre(m->sub[i], p);
}

static unsigned multi_pending_from(const struct rd_listener *l, const struct sockaddr *sa)
{
	const struct multi_listener *m = (const struct multi_listener *)l;
	unsigned i, n = 0;

	for (i = 0; i < m->nsub; i++)
		n += rd_listener_pending_from(m->sub[i], sa);
	return n;
}

static const char *multi_trouble(const struct rd_listener *l)
{
	const struct multi_listener *m = (const struct multi_listener *)l;
	unsigned i;

	for (i = 0; i < m->nsub; i++)
		if (*rd_listener_trouble(m->sub[i]))
			return rd_listener_trouble(m->sub[i]);
	return "";
}

static unsigned long multi_refused(const struct rd_listener *l)
{
	const struct multi_listener *m = (const struct multi_listener *)l;
	unsigned long n = 0;
	unsigned i;

	for (i = 0; i < m->nsub; i++)
		n += rd_listener_refused(m->sub[i]);
	return n;
}

static int multi_due(const struct rd_listener *l)
{
	const struct multi_listener *m = (const struct multi_listener *)l;
	unsigned i;
	int d = -1;

	for (i = 0; i < m->nsub; i++)
		d = sub_due(m->sub[i], d);
	return d;
}

static const struct rd_listener_ops multi_ops = {
    .name = "auto",
    .next = multi_next,
    .close = multi_close,
    .set_pre = multi_set_pre,
    .pending_from = multi_pending_from,
    .trouble = multi_trouble,
    .refused = multi_refused,
    .due_ms = multi_due,
};

static int listen_both(struct rd_listener **out, const char *addr, const char *port, int backlog,
		       struct rd_err *err)
{
	struct multi_listener *m;
	struct rd_listener *r = NULL, *t = NULL;
	struct rd_err rerr;
	char p[16];
	int ret, tries;

	for (tries = 0; tries < 8; tries++) {
		rd_err_clear(&rerr);
		ret = rd_xport_rdma.listen(&r, addr, port, backlog, &rerr);
		if (ret)
			break; /* no RDMA here: TCP alone */
		snprintf(p, sizeof(p), "%u", r->port);
		ret = rd_xport_tcp.listen(&t, addr, p, backlog, err);
		if (!ret)
			break;
		rd_listener_close(r);
		r = NULL;
		if (strcmp(port, "0"))
			return ret; /* that TCP port is taken */
		/* port 0: the number RDMA got is taken over TCP; draw again */
	}
	if (!r)
		ret = rd_xport_tcp.listen(&t, addr, port, backlog, err);
	if (ret)
		return ret;
	m = calloc(1, sizeof(*m));
	if (!m) {
		rd_listener_close(r);
		rd_listener_close(t);
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "listener");
	}
	m->l.ops = &multi_ops;
	m->l.port = t->port;
	snprintf(m->l.where, sizeof(m->l.where), "%s over %s", t->where,
		 r ? "RDMA and TCP" : "TCP");
	if (r)
		m->sub[m->nsub++] = r;
	else
		snprintf(m->l.note, sizeof(m->l.note), "listening on TCP only: %s", rerr.msg);
	m->sub[m->nsub++] = t;
	*out = &m->l;
	return 0;
}

int rd_listener_open(struct rd_listener **out, const char *addr, const char *port, int backlog,
		     int transport, struct rd_err *err)
{
	*out = NULL;
	if (transport != RD_XPORT_TCP)
		rd_xport_rdma.hold_devices();
	if (transport == RD_XPORT_RDMA)
		return rd_xport_rdma.listen(out, addr, port, backlog, err);
	if (transport == RD_XPORT_TCP)
		return rd_xport_tcp.listen(out, addr, port, backlog, err);
	return listen_both(out, addr, port, backlog, err);
}

const char *rd_listener_note(const struct rd_listener *l)
{
	return l->note;
}

uint64_t rd_xport_session_pin(uint64_t pool, unsigned ctrl_depth, unsigned rails,
			      uint64_t *charged)
{
	uint64_t d = ctrl_depth ? ctrl_depth : RD_XC_DEFAULT_DEPTH, one, pinned;

	if (d > RD_XC_DEPTH_MAX)
		d = RD_XC_DEPTH_MAX;
	if (rails < 1)
		rails = 1;
	if (rails > RD_RAILS_MAX)
		rails = RD_RAILS_MAX;
	/* rail 0: receives, sends and the pool, as rd_rdma_setup_verbs() registers them */
	one = pool + RD_XC_RAIL_CTRL_BYTES(d);
	/* every further rail: its own receives (more pages), the rest again (same pages) */
	pinned = one + (uint64_t)(rails - 1) * d * RD_CTRL_MAX;
	if (charged)
		*charged = (uint64_t)rails * one;
	return pinned;
}
