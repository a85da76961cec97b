// SPDX-License-Identifier: MIT
/*
 * RDMA transport: librdmacm for addressing and connection setup, one RC
 * QP per connection, one PD, one CQ with a completion channel so the
 * loop can sleep in poll() and still notice CM events (a peer that went
 * away) on the same wait.
 *
 * wr_id layout (64 bits), so completions need no lookup table:
 *   bits 63..56  kind (WR_RECV, WR_CTRL, WR_DATA)
 *   bits 55..40  buffer index (receive or send buffer)
 *   bits 39..0   caller's cookie (WR_DATA only)
 */
#include "lib/xport/rd_xport.h"
#include "lib/xport/rd_xport_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/rdmadev/rd_dev.h"

enum { WR_RECV = 1, WR_CTRL = 2, WR_DATA = 3 };

#define WR_ID(kind, idx, cookie)                                                                   \
	(((uint64_t)(kind) << 56) | ((uint64_t)(idx) << 40) | ((uint64_t)(cookie) & 0xffffffffffull))
#define WR_KIND(id)   ((unsigned)((id) >> 56))
#define WR_IDX(id)    ((unsigned)(((id) >> 40) & 0xffff))
#define WR_COOKIE(id) ((id) & 0xffffffffffull)

#define DEFAULT_DEPTH	  64
#define DEFAULT_WRITES	  64
#define DEFAULT_TIMEOUT	  30000
#define RESOLVE_TIMEOUT	  5000

static int conn_fail(struct rd_conn *c, int status, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int conn_fail(struct rd_conn *c, int status, int errnum, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = rd_err_vset(&c->err, status, errnum, fmt, ap);
	va_end(ap);
	c->dead = 1;
	return ret;
}

const char *rd_wc_status_explain(int status)
{
	switch (status) {
	case IBV_WC_RETRY_EXC_ERR:
		return "the peer stopped acknowledging (transport retry count exceeded): "
		       "the peer process died, or the link or route is down";
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return "the peer had no receive buffer posted (RNR retry exceeded)";
	case IBV_WC_REM_ACCESS_ERR:
		return "the peer refused an RDMA write (remote access error: wrong rkey, "
		       "address or permissions)";
	case IBV_WC_REM_INV_REQ_ERR:
		return "the peer found a request invalid (remote invalid request)";
	case IBV_WC_LOC_LEN_ERR:
		return "a message was longer than the posted buffer (local length error)";
	case IBV_WC_LOC_PROT_ERR:
		return "a buffer was not registered for this use (local protection error)";
	case IBV_WC_WR_FLUSH_ERR:
		return "the connection was already in error (work request flushed)";
	case IBV_WC_REM_OP_ERR:
		return "the peer could not complete an operation (remote operation error)";
	default:
		return ibv_wc_status_str(status);
	}
}

static int wait_fd(int fd, int timeout_ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	int r;

	do {
		r = poll(&p, 1, timeout_ms);
	} while (r < 0 && errno == EINTR);
	return r;
}

/* Wait for the next CM event on ch; returns 0 with *ev, or -errno/-ETIMEDOUT. */
int rd_cm_wait(struct rdma_event_channel *ch, int timeout_ms, struct rdma_cm_event **ev)
{
	int r;

	for (;;) {
		if (!rdma_get_cm_event(ch, ev))
			return 0;
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return -errno;
		r = wait_fd(ch->fd, timeout_ms);
		if (r == 0)
			return -ETIMEDOUT;
		if (r < 0)
			return -errno;
	}
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void fill_info(struct rd_conn *c)
{
	struct ibv_port_attr pa;
	char gid[48];

	snprintf(c->info.device, sizeof(c->info.device), "%s",
		 ibv_get_device_name(c->id->verbs->device));
	c->info.port = c->id->port_num;
	if (!ibv_query_port(c->id->verbs, c->id->port_num, &pa))
		snprintf(c->info.link, sizeof(c->info.link), "%s",
			 pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand");
	if (inet_ntop(AF_INET6, c->id->route.addr.addr.ibaddr.sgid.raw, gid, sizeof(gid)))
		snprintf(c->info.gid, sizeof(c->info.gid), "%s", gid);
}

static int post_recv(struct rd_conn *c, unsigned idx)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(c->rbuf + (size_t)idx * RD_CTRL_MAX),
		.length = RD_CTRL_MAX,
		.lkey = c->rmr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = WR_ID(WR_RECV, idx, 0), .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;
	int r = ibv_post_recv(c->id->qp, &wr, &bad);

	if (r)
		return conn_fail(c, RD_ECONN, r, "%s: posting a receive buffer failed",
				 c->info.device);
	return 0;
}

static int reg_fail(struct rd_conn *c, size_t len, int errnum)
{
	struct rd_memlock m;
	char hint[512] = "";

	if ((errnum == ENOMEM || errnum == EPERM || errnum == EAGAIN) && !rd_memlock_query(&m) &&
	    !rd_memlock_enough(&m, len + (64u << 20), hint, sizeof(hint)))
		return rd_err_set(&c->err, RD_EMEMLOCK, errnum, "cannot register %zu KiB on %s: %s",
				  len / 1024, c->info.device, hint);
	return rd_err_set(&c->err, errnum == ENOMEM ? RD_EMEMLOCK : RD_ENOMEM, errnum,
			  "cannot register %zu KiB of memory on %s%s", len / 1024, c->info.device,
			  errnum == ENOMEM ? " (raise the locked-memory limit: ulimit -l)" : "");
}

/* Create PD, CQ, QP and the control buffers for c->id. */
int rd_conn_setup_verbs(struct rd_conn *c, const struct rd_conn_opts *o)
{
	struct ibv_qp_init_attr qa;
	unsigned i, cqe;
	int r;

	c->rdepth = o && o->ctrl_depth ? o->ctrl_depth : DEFAULT_DEPTH;
	if (c->rdepth > 1024)
		c->rdepth = 1024;
	c->sdepth = c->rdepth + 4;
	c->max_writes = o && o->max_writes ? o->max_writes : DEFAULT_WRITES;
	c->timeout_ms = o && o->timeout_ms ? o->timeout_ms : DEFAULT_TIMEOUT;
	fill_info(c);

	c->pd = ibv_alloc_pd(c->id->verbs);
	if (!c->pd)
		return conn_fail(c, RD_ENOMEM, errno, "%s: cannot allocate a protection domain",
				 c->info.device);
	c->cch = ibv_create_comp_channel(c->id->verbs);
	if (!c->cch || set_nonblock(c->cch->fd))
		return conn_fail(c, RD_ENOMEM, errno, "%s: cannot create a completion channel",
				 c->info.device);
	cqe = c->rdepth + c->sdepth + c->max_writes + 16;
	c->cq = ibv_create_cq(c->id->verbs, (int)cqe, c, c->cch, 0);
	if (!c->cq)
		return conn_fail(c, RD_ENOMEM, errno, "%s: cannot create a completion queue of %u",
				 c->info.device, cqe);
	if (ibv_req_notify_cq(c->cq, 0))
		return conn_fail(c, RD_ECONN, errno, "%s: ibv_req_notify_cq", c->info.device);

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = c->sdepth + c->max_writes + 4;
	qa.cap.max_recv_wr = c->rdepth;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 0;
	r = rdma_create_qp(c->id, c->pd, &qa);
	if (r)
		return conn_fail(c, RD_ENOMEM, errno,
				 "%s port %u: cannot create a queue pair (%u send, %u receive)",
				 c->info.device, c->info.port, qa.cap.max_send_wr, c->rdepth);

	c->rbuf = calloc(c->rdepth, RD_CTRL_MAX);
	c->sbuf = calloc(c->sdepth, RD_CTRL_MAX);
	c->sfree = calloc(c->sdepth, sizeof(*c->sfree));
	c->rq = calloc(c->rdepth, sizeof(*c->rq));
	c->rqlen = calloc(c->rdepth, sizeof(*c->rqlen));
	if (!c->rbuf || !c->sbuf || !c->sfree || !c->rq || !c->rqlen)
		return conn_fail(c, RD_ENOMEM, ENOMEM, "control buffers");
	c->rmr = ibv_reg_mr(c->pd, c->rbuf, (size_t)c->rdepth * RD_CTRL_MAX, IBV_ACCESS_LOCAL_WRITE);
	if (!c->rmr) {
		c->dead = 1;
		return reg_fail(c, (size_t)c->rdepth * RD_CTRL_MAX, errno);
	}
	c->smr = ibv_reg_mr(c->pd, c->sbuf, (size_t)c->sdepth * RD_CTRL_MAX, IBV_ACCESS_LOCAL_WRITE);
	if (!c->smr) {
		c->dead = 1;
		return reg_fail(c, (size_t)c->sdepth * RD_CTRL_MAX, errno);
	}
	for (i = 0; i < c->sdepth; i++)
		c->sfree[c->nsfree++] = i;
	for (i = 0; i < c->rdepth; i++) {
		r = post_recv(c, i);
		if (r)
			return r;
	}
	c->rq_cur = -1;
	return 0;
}

static void now(struct timespec *t)
{
	clock_gettime(CLOCK_MONOTONIC, t);
}

static long ms_since(const struct timespec *t)
{
	struct timespec n;

	now(&n);
	return (n.tv_sec - t->tv_sec) * 1000 + (n.tv_nsec - t->tv_nsec) / 1000000;
}

static int handle_wc(struct rd_conn *c, const struct ibv_wc *wc)
{
	unsigned kind = WR_KIND(wc->wr_id), idx = WR_IDX(wc->wr_id);
	struct rd_hdr h;
	const uint8_t *m;

	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status == IBV_WC_WR_FLUSH_ERR && c->err.status)
			return -c->err.status;
		if (wc->status == IBV_WC_WR_FLUSH_ERR)
			return conn_fail(c, RD_ECONN, 0, "%s closed the connection",
					 c->info.peer);
		return conn_fail(c, RD_ECONN, 0, "RDMA connection to %s via %s port %u failed: %s",
				 c->info.peer, c->info.device, c->info.port,
				 rd_wc_status_explain(wc->status));
	}
	switch (kind) {
	case WR_RECV:
		if (idx >= c->rdepth)
			return conn_fail(c, RD_EPROTO, 0, "bad receive completion");
		m = c->rbuf + (size_t)idx * RD_CTRL_MAX;
		if (wc->byte_len < RD_HDR_LEN)
			return conn_fail(c, RD_EPROTO, 0, "%s sent a %u-byte control message",
					 c->info.peer, wc->byte_len);
		h.type = m[0];
		h.credits = (uint16_t)((m[2] << 8) | m[3]);
		if (h.credits > c->sdepth || c->credits + h.credits > (int)c->peer_depth)
			return conn_fail(c, RD_EPROTO, 0, "%s returned %u credits it never had",
					 c->info.peer, h.credits);
		c->credits += h.credits;
		c->recv_seen++;
		now(&c->last_rx);
		if (h.type == RD_MSG_CREDIT) {
			if (wc->byte_len != RD_HDR_LEN)
				return conn_fail(c, RD_EPROTO, 0, "malformed CREDIT from %s",
						 c->info.peer);
			c->to_return++;
			return post_recv(c, idx);
		}
		c->rq[(c->rq_head + c->rq_count) % c->rdepth] = idx;
		c->rqlen[(c->rq_head + c->rq_count) % c->rdepth] = wc->byte_len;
		c->rq_count++;
		return 0;
	case WR_CTRL:
	case WR_DATA:
		if (idx >= c->sdepth)
			return conn_fail(c, RD_EPROTO, 0, "bad send completion");
		c->sfree[c->nsfree++] = idx;
		if (kind == WR_DATA) {
			c->writes_inflight--;
			if (c->sent_fn)
				c->sent_fn(c->sent_ctx, WR_COOKIE(wc->wr_id));
		}
		return 0;
	}
	return conn_fail(c, RD_EPROTO, 0, "unknown completion kind %u", kind);
}

static int drain_cq(struct rd_conn *c)
{
	struct ibv_wc wc[32];
	int n, i, r, total = 0;

	for (;;) {
		n = ibv_poll_cq(c->cq, 32, wc);
		if (n < 0)
			return conn_fail(c, RD_ECONN, 0, "%s: polling the completion queue failed",
					 c->info.device);
		for (i = 0; i < n; i++) {
			r = handle_wc(c, &wc[i]);
			if (r)
				return r;
		}
		total += n;
		if (n < 32)
			return total;
	}
}

static int cm_events(struct rd_conn *c)
{
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type t;

	while (!rdma_get_cm_event(c->ech, &ev)) {
		t = ev->event;
		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_DISCONNECTED || t == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    t == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			c->disconnected = 1;
			/* Messages that arrived before the disconnect still count. */
			drain_cq(c);
			if (!c->dead)
				conn_fail(c, RD_ECONN, 0,
					  t == RDMA_CM_EVENT_DEVICE_REMOVAL
						  ? "RDMA device %s was removed"
						  : "%s closed the connection%s",
					  t == RDMA_CM_EVENT_DEVICE_REMOVAL ? c->info.device
									    : c->info.peer,
					  t == RDMA_CM_EVENT_DEVICE_REMOVAL
						  ? ""
						  : " (the peer process ended or was killed)");
		}
	}
	return c->dead && !c->rq_count ? -c->err.status : 0;
}

/* Send a CREDIT message if enough receive buffers wait to be announced. */
static int maybe_credit(struct rd_conn *c)
{
	uint8_t *b;
	unsigned idx;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	int r;

	if (c->to_return < c->rdepth / 4 + 1 || c->credits < 1 || !c->nsfree)
		return 0;
	idx = c->sfree[--c->nsfree];
	b = c->sbuf + (size_t)idx * RD_CTRL_MAX;
	memset(b, 0, RD_HDR_LEN);
	b[0] = RD_MSG_CREDIT;
	rd_msg_set_credits(b, (uint16_t)c->to_return);
	c->to_return = 0;
	sge = (struct ibv_sge){.addr = (uintptr_t)b, .length = RD_HDR_LEN, .lkey = c->smr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WR_ID(WR_CTRL, idx, 0);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	r = ibv_post_send(c->id->qp, &wr, &bad);
	if (r)
		return conn_fail(c, RD_ECONN, r, "%s: posting a send failed", c->info.device);
	c->credits--;
	return 0;
}

int rd_conn_poll(struct rd_conn *c, int timeout_ms)
{
	struct pollfd p[2];
	struct ibv_cq *ecq;
	void *ectx;
	int n, r;
	long waited;

	if (c->dead)
		return c->rq_count ? 0 : -c->err.status;
	n = drain_cq(c);
	if (n < 0)
		return n;
	r = cm_events(c);
	if (r)
		return r;
	r = maybe_credit(c);
	if (r)
		return r;
	if (n > 0 || timeout_ms == 0)
		return 0;

	p[0] = (struct pollfd){.fd = c->cch->fd, .events = POLLIN};
	p[1] = (struct pollfd){.fd = c->ech->fd, .events = POLLIN};
	r = poll(p, 2, timeout_ms < 0 ? c->timeout_ms : timeout_ms);
	if (r < 0 && errno != EINTR)
		return conn_fail(c, RD_ECONN, errno, "poll");
	if (p[0].revents) {
		if (!ibv_get_cq_event(c->cch, &ecq, &ectx)) {
			c->cq_unacked++;
			if (c->cq_unacked >= 64) {
				ibv_ack_cq_events(c->cq, c->cq_unacked);
				c->cq_unacked = 0;
			}
		}
		if (ibv_req_notify_cq(c->cq, 0))
			return conn_fail(c, RD_ECONN, errno, "ibv_req_notify_cq");
	}
	n = drain_cq(c);
	if (n < 0)
		return n;
	r = cm_events(c);
	if (r)
		return r;
	r = maybe_credit(c);
	if (r)
		return r;
	waited = ms_since(&c->last_rx);
	if (n == 0 && waited >= c->timeout_ms)
		return conn_fail(c, RD_ETIMEOUT, 0, "no message from %s for %ld s; giving up",
				 c->info.peer, waited / 1000);
	return 0;
}

int rd_conn_can_send(const struct rd_conn *c)
{
	return !c->dead && c->credits >= 2 && c->nsfree > 0;
}

static int post_ctrl(struct rd_conn *c, const void *msg, size_t len, struct ibv_send_wr *first,
		     uint64_t wr_id_kind, uint64_t cookie)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	unsigned idx;
	uint8_t *b;
	int r;

	if (len < RD_HDR_LEN || len > RD_CTRL_MAX)
		return rd_err_set(&c->err, RD_EUSAGE, 0, "control message of %zu bytes", len);
	if (c->dead)
		return -c->err.status;
	if (!rd_conn_can_send(c))
		return RD_XPORT_BUSY;
	idx = c->sfree[--c->nsfree];
	b = c->sbuf + (size_t)idx * RD_CTRL_MAX;
	memcpy(b, msg, len);
	rd_msg_set_credits(b, (uint16_t)(c->to_return > 65535 ? 65535 : c->to_return));
	c->to_return -= c->to_return > 65535 ? 65535 : c->to_return;
	sge = (struct ibv_sge){.addr = (uintptr_t)b, .length = (uint32_t)len, .lkey = c->smr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WR_ID(wr_id_kind, idx, cookie);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (first)
		first->next = &wr;
	r = ibv_post_send(c->id->qp, first ? first : &wr, &bad);
	if (r) {
		c->sfree[c->nsfree++] = idx;
		return conn_fail(c, RD_ECONN, r, "%s: posting a send to %s failed", c->info.device,
				 c->info.peer);
	}
	c->credits--;
	return 0;
}

int rd_conn_send(struct rd_conn *c, const void *msg, size_t len)
{
	return post_ctrl(c, msg, len, NULL, WR_CTRL, 0);
}

int rd_conn_write_send(struct rd_conn *c, const struct rd_mr *mr, size_t off, size_t len,
		       uint64_t raddr, uint32_t rkey, const void *msg, size_t msglen,
		       uint64_t cookie)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	int r;

	if (off > mr->len || len > mr->len - off || len > UINT32_MAX)
		return rd_err_set(&c->err, RD_EUSAGE, 0, "write outside the registered buffer");
	if (c->writes_inflight >= c->max_writes)
		return RD_XPORT_BUSY;
	if (!len) {
		/* Nothing to write (empty tail): the message alone, buffer free now. */
		r = rd_conn_send(c, msg, msglen);
		if (r == 0 && c->sent_fn)
			c->sent_fn(c->sent_ctx, cookie);
		return r;
	}
	sge = (struct ibv_sge){
		.addr = (uintptr_t)mr->addr + off, .length = (uint32_t)len, .lkey = mr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = WR_ID(WR_DATA, 0, cookie); /* unsignaled: never completes alone */
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	r = post_ctrl(c, msg, msglen, &wr, WR_DATA, cookie);
	if (r == 0)
		c->writes_inflight++;
	return r;
}

int rd_conn_recv(struct rd_conn *c, const uint8_t **msg, size_t *len)
{
	unsigned idx;

	if (c->rq_cur >= 0) {
		idx = (unsigned)c->rq_cur;
		*msg = c->rbuf + (size_t)idx * RD_CTRL_MAX;
		*len = c->rqlen[c->rq_head];
		return 1;
	}
	if (!c->rq_count)
		return 0;
	idx = c->rq[c->rq_head];
	c->rq_cur = (int)idx;
	*msg = c->rbuf + (size_t)idx * RD_CTRL_MAX;
	*len = c->rqlen[c->rq_head];
	return 1;
}

int rd_conn_recv_done(struct rd_conn *c)
{
	unsigned idx;
	int r;

	if (c->rq_cur < 0)
		return 0;
	idx = (unsigned)c->rq_cur;
	c->rq_cur = -1;
	c->rq_head = (c->rq_head + 1) % c->rdepth;
	c->rq_count--;
	if (c->dead || c->disconnected)
		return 0; /* nothing more will arrive; let queued messages drain */
	r = post_recv(c, idx);
	if (r)
		return r;
	c->to_return++;
	return maybe_credit(c);
}

int rd_conn_reg(struct rd_conn *c, void *buf, size_t len, int remote_write, struct rd_mr *mr)
{
	struct ibv_mr *m;
	int access = IBV_ACCESS_LOCAL_WRITE | (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0);

	memset(mr, 0, sizeof(*mr));
	m = ibv_reg_mr(c->pd, buf, len, access);
	if (!m)
		return reg_fail(c, len, errno);
	mr->addr = buf;
	mr->len = len;
	mr->lkey = m->lkey;
	mr->rkey = m->rkey;
	mr->priv = m;
	return 0;
}

void rd_conn_dereg(struct rd_conn *c, struct rd_mr *mr)
{
	if (mr && mr->priv) {
		ibv_dereg_mr(mr->priv);
		mr->priv = NULL;
	}
}

const struct rd_err *rd_conn_err(const struct rd_conn *c)
{
	return &c->err;
}

const struct rd_conn_info *rd_conn_info(const struct rd_conn *c)
{
	return &c->info;
}

void rd_conn_set_sent_cb(struct rd_conn *c, rd_conn_sent_fn fn, void *ctx)
{
	c->sent_fn = fn;
	c->sent_ctx = ctx;
}

void rd_conn_close(struct rd_conn *c)
{
	struct rdma_cm_event *ev;

	if (!c)
		return;
	if (c->id && c->established && !c->disconnected) {
		rdma_disconnect(c->id);
		/* Give the peer's DREQ/DREP a moment; never block for long. */
		if (c->ech && !rd_cm_wait(c->ech, 200, &ev))
			rdma_ack_cm_event(ev);
	}
	if (c->id && c->id->qp)
		rdma_destroy_qp(c->id);
	if (c->rmr)
		ibv_dereg_mr(c->rmr);
	if (c->smr)
		ibv_dereg_mr(c->smr);
	if (c->cq) {
		if (c->cq_unacked)
			ibv_ack_cq_events(c->cq, c->cq_unacked);
		ibv_destroy_cq(c->cq);
	}
	if (c->cch)
		ibv_destroy_comp_channel(c->cch);
	if (c->pd)
		ibv_dealloc_pd(c->pd);
	if (c->id)
		rdma_destroy_id(c->id);
	if (c->ech)
		rdma_destroy_event_channel(c->ech);
	free(c->rbuf);
	free(c->sbuf);
	free(c->sfree);
	free(c->rq);
	free(c->rqlen);
	free(c);
}

int rd_conn_flush(struct rd_conn *c, int timeout_ms)
{
	struct timespec t0;
	int r;

	now(&t0);
	while (c->nsfree < c->sdepth) {
		if (ms_since(&t0) > timeout_ms)
			return conn_fail(c, RD_ETIMEOUT, 0, "%s did not acknowledge our last messages",
					 c->info.peer);
		r = rd_conn_poll(c, 50);
		if (r < 0)
			return r;
	}
	return 0;
}
