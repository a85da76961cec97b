// SPDX-License-Identifier: MIT
/*
 * RDMA transport, data path: one RC QP per connection, one PD, one CQ
 * with a completion channel so the loop can sleep in poll() and still
 * notice CM events (a peer that went away) on the same wait. Credits are
 * counted by the shared layer in rd_xport.c; this file posts and reaps.
 *
 * wr_id layout (64 bits), so completions need no lookup table:
 *   bits 63..56  kind (WR_RECV, WR_CTRL, WR_DATA)
 *   bits 55..40  buffer index (receive or send buffer)
 *   bits 39..0   caller's cookie (WR_DATA only)
 */
#include "lib/xport/rd_xport.h"
#include "lib/xport/rd_xport_rdma_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/xport/rd_xport_dev.h"

enum { WR_RECV = 1, WR_CTRL = 2, WR_DATA = 3 };

#define WR_ID(kind, idx, cookie)                                                                   \
	(((uint64_t)(kind) << 56) | ((uint64_t)(idx) << 40) | ((uint64_t)(cookie) & 0xffffffffffull))
#define WR_KIND(id)   ((unsigned)((id) >> 56))
#define WR_IDX(id)    ((unsigned)(((id) >> 40) & 0xffff))
#define WR_COOKIE(id) ((id) & 0xffffffffffull)

static struct rd_rdma_conn *rdma_of(struct rd_conn *c)
{
	return (struct rd_rdma_conn *)c;
}

static const struct rd_rdma_conn *rdma_ofc(const struct rd_conn *c)
{
	return (const struct rd_rdma_conn *)c;
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

static void fill_info(struct rd_rdma_conn *rc)
{
	struct rd_conn *c = &rc->c;
	struct ibv_port_attr pa;
	char gid[48];

	snprintf(c->info.device, sizeof(c->info.device), "%s",
		 ibv_get_device_name(rc->id->verbs->device));
	c->info.port = rc->id->port_num;
	if (!ibv_query_port(rc->id->verbs, rc->id->port_num, &pa))
		snprintf(c->info.link, sizeof(c->info.link), "%s",
			 pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand");
	if (inet_ntop(AF_INET6, rc->id->route.addr.addr.ibaddr.sgid.raw, gid, sizeof(gid)))
		snprintf(c->info.gid, sizeof(c->info.gid), "%s", gid);
}

static int post_recv(struct rd_conn *c, unsigned idx)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	struct ibv_sge sge = {
		.addr = (uintptr_t)rd_xc_rbuf(c, idx),
		.length = RD_CTRL_MAX,
		.lkey = rc->rmr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = WR_ID(WR_RECV, idx, 0), .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;
	int r = rc->srq ? ibv_post_srq_recv(rc->srq, &wr, &bad) : ibv_post_recv(rc->id->qp, &wr, &bad);

	if (r)
		return rd_xc_fail(c, RD_ECONN, r, "%s: posting a receive buffer failed",
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

struct rd_rdma_conn *rd_rdma_conn_new(void)
{
	struct rd_rdma_conn *rc = calloc(1, sizeof(*rc));

	if (rc) {
		rc->c.ops = &rd_rdma_conn_ops;
		rc->c.rq_cur = -1;
	}
	return rc;
}

/* Create PD, CQ, QP and the control buffers for rc->id. */
int rd_rdma_setup_verbs(struct rd_rdma_conn *rc, const struct rd_conn_opts *o)
{
	struct rd_conn *c = &rc->c;
	unsigned i, cqe;
	int r;

	r = rd_xc_init(c, o);
	if (r)
		return r;
	rc->sdepth = c->rdepth + 4;
	fill_info(rc);

	rc->pd = ibv_alloc_pd(rc->id->verbs);
	if (!rc->pd)
		return rd_xc_fail(c, RD_ENOMEM, errno, "%s: cannot allocate a protection domain",
				  c->info.device);
	rc->cch = ibv_create_comp_channel(rc->id->verbs);
	if (!rc->cch || set_nonblock(rc->cch->fd))
		return rd_xc_fail(c, RD_ENOMEM, errno, "%s: cannot create a completion channel",
				  c->info.device);
	cqe = c->rdepth + rc->sdepth + c->max_writes + 16;
	rc->cq = ibv_create_cq(rc->id->verbs, (int)cqe, rc, rc->cch, 0);
	if (!rc->cq)
		return rd_xc_fail(c, RD_ENOMEM, errno, "%s: cannot create a completion queue of %u",
				  c->info.device, cqe);
	if (ibv_req_notify_cq(rc->cq, 0))
		return rd_xc_fail(c, RD_ECONN, errno, "%s: ibv_req_notify_cq", c->info.device);

	if (rc->lanes > 1) {
		struct ibv_srq_init_attr sa;

		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = c->rdepth;
		sa.attr.max_sge = 1;
		rc->srq = ibv_create_srq(rc->pd, &sa);
		if (!rc->srq)
			return rd_xc_fail(c, RD_ENOMEM, errno,
					  "%s: cannot create a shared receive queue of %u for %u "
					  "lanes (try --lanes 1)",
					  c->info.device, c->rdepth, rc->lanes);
		if (rd_reseq_init(&rc->rx, c->rdepth))
			return rd_xc_fail(c, RD_ENOMEM, ENOMEM, "lanes: out of memory");
	}
	r = rd_rdma_create_qp(rc, rc->id);
	if (r)
		return r;
	rc->lane[0] = rc->id;
	rc->nlanes = 1;

	rc->sbuf = calloc(rc->sdepth, RD_CTRL_MAX);
	rc->sfree = calloc(rc->sdepth, sizeof(*rc->sfree));
	if (!rc->sbuf || !rc->sfree)
		return rd_xc_fail(c, RD_ENOMEM, ENOMEM, "control buffers");
	rc->rmr = ibv_reg_mr(rc->pd, c->rbuf, (size_t)c->rdepth * RD_CTRL_MAX,
			     IBV_ACCESS_LOCAL_WRITE);
	if (!rc->rmr) {
		c->dead = 1;
		return reg_fail(c, (size_t)c->rdepth * RD_CTRL_MAX, errno);
	}
	rc->smr = ibv_reg_mr(rc->pd, rc->sbuf, (size_t)rc->sdepth * RD_CTRL_MAX,
			     IBV_ACCESS_LOCAL_WRITE);
	if (!rc->smr) {
		c->dead = 1;
		return reg_fail(c, (size_t)rc->sdepth * RD_CTRL_MAX, errno);
	}
	c->info.reg_ctrl = (uint64_t)(c->rdepth + rc->sdepth) * RD_CTRL_MAX;
	for (i = 0; i < rc->sdepth; i++)
		rc->sfree[rc->nsfree++] = i;
	for (i = 0; i < c->rdepth; i++) {
		r = post_recv(c, i);
		if (r)
			return r;
	}
	return 0;
}

int rd_rdma_create_qp(struct rd_rdma_conn *rc, struct rdma_cm_id *id)
{
	struct rd_conn *c = &rc->c;
	struct ibv_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = rc->cq;
	qa.recv_cq = rc->cq;
	qa.srq = rc->srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = rc->sdepth + c->max_writes + 4;
	qa.cap.max_recv_wr = rc->srq ? 0 : c->rdepth;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 0;
	if (rdma_create_qp(id, rc->pd, &qa))
		return rd_xc_fail(c, RD_ENOMEM, errno,
				  "%s port %u: cannot create a queue pair (%u send, %u receive)",
				  c->info.device, c->info.port, qa.cap.max_send_wr, c->rdepth);
	return 0;
}

/* A message arrived: in order at once, or (lanes) once the earlier came. */
static int recv_wc(struct rd_rdma_conn *rc, const struct ibv_wc *wc, unsigned idx)
{
	struct rd_conn *c = &rc->c;
	uint32_t len;
	int r;

	if (!rc->seq_on)
		return rd_xc_rx(c, idx, wc->byte_len);
	if (!(wc->wc_flags & IBV_WC_WITH_IMM) ||
	    rd_reseq_push(&rc->rx, ntohl(wc->imm_data), idx, wc->byte_len))
		return rd_xc_fail(c, RD_EPROTO, 0,
				  "%s broke the protocol: a message out of its lanes' order",
				  c->info.peer);
	while (rd_reseq_pop(&rc->rx, &idx, &len)) {
		r = rd_xc_rx(c, idx, len);
		if (r)
			return r;
	}
	return 0;
}

static int handle_wc(struct rd_rdma_conn *rc, const struct ibv_wc *wc)
{
	struct rd_conn *c = &rc->c;
	unsigned kind = WR_KIND(wc->wr_id), idx = WR_IDX(wc->wr_id);

	if (wc->status != IBV_WC_SUCCESS) {
		if (wc->status == IBV_WC_WR_FLUSH_ERR && c->err.status)
			return -c->err.status;
		if (wc->status == IBV_WC_WR_FLUSH_ERR)
			return rd_xc_fail(c, RD_ECONN, 0, "%s closed the connection",
					  c->info.peer);
		return rd_xc_fail(c, RD_ECONN, 0, "RDMA connection to %s via %s port %u failed: %s",
				  c->info.peer, c->info.device, c->info.port,
				  rd_wc_status_explain(wc->status));
	}
	switch (kind) {
	case WR_RECV:
		return recv_wc(rc, wc, idx);
	case WR_CTRL:
	case WR_DATA:
		if (idx >= rc->sdepth)
			return rd_xc_fail(c, RD_EPROTO, 0, "bad send completion");
		rc->sfree[rc->nsfree++] = idx;
		if (kind == WR_DATA)
			rd_xc_sent(c, WR_COOKIE(wc->wr_id));
		return 0;
	}
	return rd_xc_fail(c, RD_EPROTO, 0, "unknown completion kind %u", kind);
}

/*
 * Reap every completion. After a failed one, the messages that arrived
 * still count (a stopping peer sends its ERROR just before it drops its
 * buffers, so our writes fail right behind it): the failure is reported
 * once they have been read (rdma_poll returns it when none is queued).
 */
static int drain_cq(struct rd_rdma_conn *rc)
{
	struct ibv_wc wc[32];
	int n, i, r, first = 0, total = 0;

	for (;;) {
		n = ibv_poll_cq(rc->cq, 32, wc);
		if (n < 0)
			return rd_xc_fail(&rc->c, RD_ECONN, 0,
					  "%s: polling the completion queue failed",
					  rc->c.info.device);
		for (i = 0; i < n; i++) {
			if (first && (wc[i].status != IBV_WC_SUCCESS ||
				      WR_KIND(wc[i].wr_id) != WR_RECV))
				continue;
			r = handle_wc(rc, &wc[i]);
			if (r && !first)
				first = r;
		}
		total += n;
		if (n < 32)
			break;
	}
	if (first && !rc->c.rq_count)
		return first;
	return total;
}

static int cm_events(struct rd_rdma_conn *rc)
{
	struct rd_conn *c = &rc->c;
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type t;

	while (!rdma_get_cm_event(rc->ech, &ev)) {
		t = ev->event;
		rdma_ack_cm_event(ev);
		if (t == RDMA_CM_EVENT_DISCONNECTED || t == RDMA_CM_EVENT_DEVICE_REMOVAL ||
		    t == RDMA_CM_EVENT_TIMEWAIT_EXIT) {
			c->disconnected = 1;
			/* Messages that arrived before the disconnect still count. */
			drain_cq(rc);
			if (!c->dead)
				rd_xc_fail(c, RD_ECONN, 0,
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

/* Reap completions and CM events, then announce credits if due. */
static int progress(struct rd_rdma_conn *rc)
{
	int n = drain_cq(rc), r;

	if (n < 0)
		return n;
	r = cm_events(rc);
	if (r)
		return r;
	r = rd_xc_maybe_credit(&rc->c);
	return r ? r : n;
}

static int rdma_poll(struct rd_conn *c, int timeout_ms)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	struct pollfd p[3];
	struct ibv_cq *ecq;
	void *ectx;
	int n, r, woken = 0;

	if (c->dead)
		return c->rq_count ? 0 : -c->err.status;
	n = progress(rc);
	if (n < 0)
		return n;
	if (n > 0 || timeout_ms == 0)
		return 0;

	p[0] = (struct pollfd){.fd = rc->cch->fd, .events = POLLIN};
	p[1] = (struct pollfd){.fd = rc->ech->fd, .events = POLLIN};
	p[2] = (struct pollfd){.fd = rd_xc_wake_fd(c), .events = POLLIN};
	r = poll(p, p[2].fd >= 0 ? 3 : 2, timeout_ms < 0 ? c->timeout_ms : timeout_ms);
	if (r < 0 && errno != EINTR)
		return rd_xc_fail(c, RD_ECONN, errno, "poll");
	if (r > 0 && p[2].fd >= 0 && p[2].revents)
		woken = rd_xc_wake_drain(c);
	if (p[0].revents) {
		if (!ibv_get_cq_event(rc->cch, &ecq, &ectx)) {
			rc->cq_unacked++;
			if (rc->cq_unacked >= 64) {
				ibv_ack_cq_events(rc->cq, rc->cq_unacked);
				rc->cq_unacked = 0;
			}
		}
		if (ibv_req_notify_cq(rc->cq, 0))
			return rd_xc_fail(c, RD_ECONN, errno, "ibv_req_notify_cq");
	}
	n = progress(rc);
	if (n < 0)
		return n;
	return n == 0 && !woken ? rd_xc_check_silence(c) : 0;
}

static int rdma_can_xmit(const struct rd_conn *c)
{
	return rdma_ofc(c)->nsfree > 0;
}

/* Post one SEND (credits already patched), preceded by an unsignaled WRITE
 * if w is set: RC ordering places the data before the message arrives. */
static int rdma_xmit(struct rd_conn *c, const uint8_t *msg, size_t len, const struct rd_xwrite *w)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	struct ibv_sge sge, dsge;
	struct ibv_send_wr wr, dwr, *bad;
	unsigned idx, lane = 0;
	uint8_t *b;
	int r;

	/* DATA (with its WRITE) takes the lanes in turn; the rest lane 0. */
	if (w && rc->nlanes > 1) {
		lane = rc->next_lane;
		rc->next_lane = (rc->next_lane + 1) % rc->nlanes;
	}
	idx = rc->sfree[--rc->nsfree];
	b = rc->sbuf + (size_t)idx * RD_CTRL_MAX;
	memcpy(b, msg, len);
	sge = (struct ibv_sge){.addr = (uintptr_t)b, .length = (uint32_t)len, .lkey = rc->smr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = w ? WR_ID(WR_DATA, idx, w->cookie) : WR_ID(WR_CTRL, idx, 0);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (rc->seq_on) {
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(rc->tx_seq);
	}
	if (w) {
		dsge = (struct ibv_sge){.addr = (uintptr_t)w->mr->addr + w->off,
					.length = (uint32_t)w->len,
					.lkey = w->mr->lkey};
		memset(&dwr, 0, sizeof(dwr));
		dwr.wr_id = WR_ID(WR_DATA, 0, w->cookie); /* unsignaled: never completes alone */
		dwr.sg_list = &dsge;
		dwr.num_sge = 1;
		dwr.opcode = IBV_WR_RDMA_WRITE;
		dwr.wr.rdma.remote_addr = w->raddr;
		dwr.wr.rdma.rkey = w->rkey;
		dwr.next = &wr;
	}
	r = ibv_post_send(rc->lane[lane]->qp, w ? &dwr : &wr, &bad);
	if (r) {
		rc->sfree[rc->nsfree++] = idx;
		return rd_xc_fail(c, RD_ECONN, r, "%s: posting a send to %s failed",
				  c->info.device, c->info.peer);
	}
	rc->tx_seq++;
	if (w)
		rc->lane_bytes[lane] += w->len;
	return 0;
}

static int rdma_reg(struct rd_conn *c, void *buf, size_t len, int remote_write, struct rd_mr *mr)
{
	struct ibv_mr *m;
	int access = IBV_ACCESS_LOCAL_WRITE | (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0);

	memset(mr, 0, sizeof(*mr));
	m = ibv_reg_mr(rdma_of(c)->pd, buf, len, access);
	if (!m)
		return reg_fail(c, len, errno);
	mr->addr = buf;
	mr->len = len;
	mr->lkey = m->lkey;
	mr->rkey = m->rkey;
	mr->priv = m;
	return 0;
}

static void rdma_dereg(struct rd_conn *c, struct rd_mr *mr)
{
	ibv_dereg_mr(mr->priv);
	mr->priv = NULL;
}

static int rdma_flush(struct rd_conn *c, int timeout_ms);

static void rdma_close(struct rd_conn *c)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	struct rdma_cm_event *ev;

	unsigned i;

	rd_lane_reg_close(rc);
	if (rc->id && c->established && !c->disconnected) {
		/*
		 * rdma_disconnect() moves the QP to the error state, which
		 * flushes sends not yet acknowledged: the last message (a
		 * report, an ERROR) would be lost and the peer would see only
		 * the disconnect. So let posted sends complete first, briefly.
		 */
		if (!c->dead)
			rdma_flush(c, 1000);
		for (i = 1; i < rc->nlanes; i++)
			rdma_disconnect(rc->lane[i]);
		rdma_disconnect(rc->id);
		/* Give the peer's DREQ/DREP a moment; never block for long. */
		if (rc->ech && !rd_cm_wait(rc->ech, 200, &ev))
			rdma_ack_cm_event(ev);
	}
	for (i = 1; i < RD_LANES_MAX; i++) {
		if (!rc->lane[i])
			continue;
		if (rc->lane[i]->qp)
			rdma_destroy_qp(rc->lane[i]);
		rdma_destroy_id(rc->lane[i]);
	}
	if (rc->id && rc->id->qp)
		rdma_destroy_qp(rc->id);
	if (rc->srq)
		ibv_destroy_srq(rc->srq);
	rd_reseq_fini(&rc->rx);
	if (rc->rmr)
		ibv_dereg_mr(rc->rmr);
	if (rc->smr)
		ibv_dereg_mr(rc->smr);
	if (rc->cq) {
		if (rc->cq_unacked)
			ibv_ack_cq_events(rc->cq, rc->cq_unacked);
		ibv_destroy_cq(rc->cq);
	}
	if (rc->cch)
		ibv_destroy_comp_channel(rc->cch);
	if (rc->pd)
		ibv_dealloc_pd(rc->pd);
	if (rc->id)
		rdma_destroy_id(rc->id);
	if (rc->ech)
		rdma_destroy_event_channel(rc->ech);
	rd_xc_fini(c);
	free(rc->sbuf);
	free(rc->sfree);
	free(rc);
}

static int rdma_flush(struct rd_conn *c, int timeout_ms)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	struct timespec t0;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (rc->nsfree < rc->sdepth) {
		if (rd_xc_ms_since(&t0) > timeout_ms)
			return rd_xc_fail(c, RD_ETIMEOUT, 0,
					  "%s did not acknowledge our last messages",
					  c->info.peer);
		r = rdma_poll(c, 50);
		if (r < 0)
			return r;
	}
	return 0;
}

static uint64_t rdma_lane_bytes(const struct rd_conn *c, unsigned i)
{
	return i < rdma_ofc(c)->nlanes ? rdma_ofc(c)->lane_bytes[i] : 0;
}

const struct rd_conn_ops rd_rdma_conn_ops = {
	.name = "rdma",
	.join_lanes = rd_rdma_join_lanes,
	.lane_bytes = rdma_lane_bytes,
	.poll = rdma_poll,
	.send = rd_xc_send,
	.can_send = rd_xc_can_send,
	.write_send = rd_xc_write_send,
	.recv = rd_xc_recv,
	.recv_done = rd_xc_recv_done,
	.reg = rdma_reg,
	.dereg = rdma_dereg,
	.flush = rdma_flush,
	.close = rdma_close,
	.can_xmit = rdma_can_xmit,
	.xmit = rdma_xmit,
	.repost = post_recv,
};
