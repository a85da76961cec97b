// SPDX-License-Identifier: MIT
/*
 * RDMA transport, data path: one RC QP per connection, one PD, one CQ
 * with a completion channel so the loop can sleep in poll() and still
 * notice CM events (a peer that went away) on the same wait. Credits are
 * counted by the shared layer in rd_xport_credit.c; this file posts and
 * reaps. The bottom of the RDMA transport: it calls nothing of the lanes
 * (rd_xport_rdma_lanes.c) or of connection setup (rd_xport_rdma_cm.c), whose
 * ops table (rd_rdma_conn_ops) points at the rd_rdma_* functions here.
 *
 * wr_id layout (64 bits), so completions need no lookup table:
 *   bits 63..56  kind (WR_RECV, WR_CTRL, WR_DATA; WR_WRITE: the unsignaled
 *                WRITE before a DATA, seen only when it fails)
 *   bits 55..40  buffer index (receive or send buffer; WR_WRITE: its SEND's)
 *   bits 39..0   caller's cookie (WR_DATA, WR_WRITE)
 */
#include "lib/xport/rd_xport.h"
#include "lib/xport/rdma/rd_xport_rdma_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/xport/rd_xport_dev.h"

enum { WR_RECV = 1, WR_CTRL = 2, WR_DATA = 3, WR_WRITE = 4 };

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
	snprintf(c->info.rail_dev[0], sizeof(c->info.rail_dev[0]), "%s", c->info.device);
	c->info.rails = 1;
	c->info.port = rc->id->port_num;
	if (!ibv_query_port(rc->id->verbs, rc->id->port_num, &pa))
		snprintf(c->info.link, sizeof(c->info.link), "%s",
			 pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand");
	if (inet_ntop(AF_INET6, rc->id->route.addr.addr.ibaddr.sgid.raw, gid, sizeof(gid)))
		snprintf(c->info.gid, sizeof(c->info.gid), "%s", gid);
}

/* Receive buffer idx goes back to its rail's queue (idx / rdepth). */
int rd_rdma_post_recv(struct rd_conn *c, unsigned idx)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	struct rd_rail *ra = &rc->rail[idx / c->rdepth];
	struct ibv_sge sge = {
		.addr = (uintptr_t)rd_xc_rbuf(c, idx),
		.length = RD_CTRL_MAX,
		.lkey = ra->rmr->lkey,
	};
	struct ibv_recv_wr wr = {.wr_id = WR_ID(WR_RECV, idx, 0), .sg_list = &sge, .num_sge = 1};
	struct ibv_recv_wr *bad;
	int r = ra->srq ? ibv_post_srq_recv(ra->srq, &wr, &bad) : ibv_post_recv(rc->id->qp, &wr, &bad);

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

struct rd_rdma_conn *rd_rdma_conn_new(const struct rd_conn_ops *ops)
{
	struct rd_rdma_conn *rc = calloc(1, sizeof(*rc));

	if (rc) {
		rc->c.ops = ops;
		rc->c.rq_cur = -1;
	}
	return rc;
}

/*
 * Register rail r's receive buffers and the send buffers on its PD: the
 * first n of each (a server before its peer authenticated: rc->pre), or
 * all of them (n = 0). An earlier, smaller registration stays (receives
 * posted with its key may still be out) until the rail closes.
 */
static int reg_ctrl(struct rd_rdma_conn *rc, unsigned r, unsigned n)
{
	struct rd_conn *c = &rc->c;
	struct rd_rail *ra = &rc->rail[r];
	size_t rlen = (size_t)(n ? n : c->rdepth) * RD_CTRL_MAX;
	size_t slen = (size_t)(n ? n : rc->sdepth) * RD_CTRL_MAX;
	struct ibv_mr *rmr, *smr;

	rmr = ibv_reg_mr(ra->pd, rd_xc_rbuf(c, r * c->rdepth), rlen, IBV_ACCESS_LOCAL_WRITE);
	if (!rmr) {
		c->dead = 1;
		return reg_fail(c, rlen, errno);
	}
	smr = ibv_reg_mr(ra->pd, rc->sbuf, slen, IBV_ACCESS_LOCAL_WRITE);
	if (!smr) {
		int e = errno;

		ibv_dereg_mr(rmr);
		c->dead = 1;
		return reg_fail(c, slen, e);
	}
	ra->rmr_pre = ra->rmr;
	ra->smr_pre = ra->smr;
	ra->rmr = rmr;
	ra->smr = smr;
	return 0;
}

/*
 * Open rail r on device verbs: protection domain, completion channel and
 * queue, the shared receive queue (lanes), and the control buffers
 * registered on it (rc->pre of them before the peer authenticated).
 * Receives are posted by post_rail().
 */
static int open_rail(struct rd_rdma_conn *rc, unsigned r, struct ibv_context *verbs)
{
	struct rd_conn *c = &rc->c;
	struct rd_rail *ra = &rc->rail[r];
	const char *dev = ibv_get_device_name(verbs->device);
	unsigned cqe = c->rdepth + rc->sdepth + c->max_writes + 16;
	int ret;

	ra->verbs = verbs;
	ra->pd = ibv_alloc_pd(verbs);
	if (!ra->pd)
		return rd_xc_fail(c, RD_ENOMEM, errno, "%s: cannot allocate a protection domain",
				  dev);
	ra->cch = ibv_create_comp_channel(verbs);
	if (!ra->cch || set_nonblock(ra->cch->fd))
		return rd_xc_fail(c, RD_ENOMEM, errno, "%s: cannot create a completion channel",
				  dev);
	ra->cq = ibv_create_cq(verbs, (int)cqe, rc, ra->cch, 0);
	if (!ra->cq)
		return rd_xc_fail(c, RD_ENOMEM, errno, "%s: cannot create a completion queue of %u",
				  dev, cqe);
	if (ibv_req_notify_cq(ra->cq, 0))
		return rd_xc_fail(c, RD_ECONN, errno, "%s: ibv_req_notify_cq", dev);
	if (rc->lanes > 1) {
		struct ibv_srq_init_attr sa;

		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = c->rdepth;
		sa.attr.max_sge = 1;
		ra->srq = ibv_create_srq(ra->pd, &sa);
		if (!ra->srq)
			return rd_xc_fail(c, RD_ENOMEM, errno,
					  "%s: cannot create a shared receive queue of %u for %u "
					  "lanes (try --lanes 1)",
					  dev, c->rdepth, rc->lanes);
	}
	ret = reg_ctrl(rc, r, rc->pre);
	if (ret)
		return ret;
	if (r)
		snprintf(c->info.rail_dev[r], sizeof(c->info.rail_dev[r]), "%s", dev);
	return 0;
}

/* Post rail r's receive buffers from..to-1 (of its rdepth). */
static int post_rail(struct rd_rdma_conn *rc, unsigned r, unsigned from, unsigned to)
{
	unsigned i;
	int ret = 0;

	for (i = from; i < to && i < rc->c.rdepth && !ret; i++)
		ret = rd_rdma_post_recv(&rc->c, r * rc->c.rdepth + i);
	return ret;
}

/* Free rail r's resources (those it got: a rail may be half open). */
static void close_rail(struct rd_rail *ra)
{
	if (ra->srq)
		ibv_destroy_srq(ra->srq);
	if (ra->rmr)
		ibv_dereg_mr(ra->rmr);
	if (ra->smr)
		ibv_dereg_mr(ra->smr);
	if (ra->rmr_pre)
		ibv_dereg_mr(ra->rmr_pre);
	if (ra->smr_pre)
		ibv_dereg_mr(ra->smr_pre);
	if (ra->cq) {
		if (ra->cq_unacked)
			ibv_ack_cq_events(ra->cq, ra->cq_unacked);
		ibv_destroy_cq(ra->cq);
	}
	if (ra->cch)
		ibv_destroy_comp_channel(ra->cch);
	if (ra->pd)
		ibv_dealloc_pd(ra->pd);
	memset(ra, 0, sizeof(*ra));
}

int rd_rdma_rail_of(struct rd_rdma_conn *rc, struct ibv_context *verbs)
{
	struct rd_conn *c = &rc->c;
	unsigned r;
	int ret;

	for (r = 0; r < rc->nrails; r++)
		if (rc->rail[r].verbs == verbs)
			return (int)r;
	if (!c->rails_ok || rc->nrails >= RD_RAILS_MAX || rc->nregions)
		return rd_xc_fail(c, RD_ECONN, 0,
				  "%s: a lane arrived on device %s, lane 0 is on %s (this session "
				  "runs on one device)",
				  c->info.peer, ibv_get_device_name(verbs->device), c->info.device);
	r = rc->nrails;
	ret = open_rail(rc, r, verbs);
	if (!ret)
		ret = post_rail(rc, r, 0, rc->pre ? rc->pre : c->rdepth);
	if (ret) {
		/* not a rail of this session: nothing of it stays (no QP uses it) */
		close_rail(&rc->rail[r]);
		return ret;
	}
	rc->nrails = r + 1;
	c->info.rails = rc->nrails;
	c->info.reg_ctrl += RD_XC_RAIL_CTRL_BYTES(c->rdepth);
	return (int)r;
}

/*
 * Create rail 0 (PD, CQ, QP) and the control buffers for rc->id. A server
 * that waits for its peer to authenticate (pre) registers and posts only
 * RD_XC_PREAUTH_DEPTH of them; rd_rdma_authenticated() adds the rest.
 */
int rd_rdma_setup_verbs(struct rd_rdma_conn *rc, const struct rd_conn_opts *o, int pre)
{
	struct rd_conn *c = &rc->c;
	unsigned i;
	int r;

	r = rd_xc_init(c, o);
	if (r)
		return r;
	rc->sdepth = c->rdepth + RD_XC_SEND_EXTRA;
	rc->pre = pre && RD_XC_PREAUTH_DEPTH < c->rdepth ? RD_XC_PREAUTH_DEPTH : 0;
	rc->sbufs = rc->pre ? rc->pre : rc->sdepth;
	fill_info(rc);
	rc->sbuf = calloc(rc->sdepth, RD_CTRL_MAX);
	rc->sfree = calloc(rc->sdepth, sizeof(*rc->sfree));
	rc->sent = calloc(rc->sdepth, sizeof(*rc->sent));
	if (rc->lanes > 1)
		rc->whist = calloc(1, sizeof(*rc->whist));
	if (!rc->sbuf || !rc->sfree || !rc->sent || (rc->lanes > 1 && !rc->whist))
		return rd_xc_fail(c, RD_ENOMEM, ENOMEM, "control buffers");
	for (i = 0; i < rc->sbufs; i++)
		rc->sfree[rc->nsfree++] = i;
	if (rc->lanes > 1 && rd_reseq_init(&rc->rx, c->rdepth))
		return rd_xc_fail(c, RD_ENOMEM, ENOMEM, "lanes: out of memory");
	rc->nrails = 1;
	r = open_rail(rc, 0, rc->id->verbs);
	if (r)
		return r;
	c->info.reg_ctrl = rc->pre ? (uint64_t)2 * rc->pre * RD_CTRL_MAX
				   : RD_XC_RAIL_CTRL_BYTES(c->rdepth);
	r = rd_rdma_create_qp(rc, rc->id, 0);
	if (r)
		return r;
	rc->lane[0] = rc->id;
	rc->nlanes = 1;
	rc->nlive = 1;
	return post_rail(rc, 0, 0, rc->pre ? rc->pre : c->rdepth);
}

/*
 * rd_conn_ops.authenticated: the peer proved who it is (the server's TLS
 * handshake is done). The control buffers held back until now are
 * registered on every rail open so far and their receives posted; the
 * send buffers beyond the first RD_XC_PREAUTH_DEPTH become usable.
 */
int rd_rdma_authenticated(struct rd_conn *c)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	unsigned r, i;
	int ret = 0;

	if (!rc->pre)
		return 0;
	for (r = 0; r < rc->nrails && !ret; r++) {
		ret = reg_ctrl(rc, r, 0);
		if (!ret)
			ret = post_rail(rc, r, rc->pre, c->rdepth);
	}
	if (ret)
		return ret;
	for (i = rc->pre; i < rc->sdepth; i++)
		rc->sfree[rc->nsfree++] = i;
	rc->sbufs = rc->sdepth;
	rc->pre = 0;
	c->info.reg_ctrl = RD_XC_RAIL_CTRL_BYTES(c->rdepth) * rc->nrails;
	return 0;
}

int rd_rdma_create_qp(struct rd_rdma_conn *rc, struct rdma_cm_id *id, unsigned r)
{
	struct rd_conn *c = &rc->c;
	struct ibv_qp_init_attr qa;

	memset(&qa, 0, sizeof(qa));
	qa.send_cq = rc->rail[r].cq;
	qa.recv_cq = rc->rail[r].cq;
	qa.srq = rc->rail[r].srq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = rc->sdepth + c->max_writes + 4;
	qa.cap.max_recv_wr = qa.srq ? 0 : c->rdepth;
	qa.cap.max_send_sge = 1;
	qa.cap.max_recv_sge = 1;
	qa.sq_sig_all = 0;
	if (rdma_create_qp(id, rc->rail[r].pd, &qa))
		return rd_xc_fail(c, RD_ENOMEM, errno,
				  "%s port %u: cannot create a queue pair (%u send, %u receive)",
				  ibv_get_device_name(id->verbs->device), id->port_num,
				  qa.cap.max_send_wr, c->rdepth);
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
	r = wc->wc_flags & IBV_WC_WITH_IMM
		? rd_reseq_push(&rc->rx, ntohl(wc->imm_data), idx, wc->byte_len)
		: -1;
	if (r < 0)
		return rd_xc_fail(c, RD_EPROTO, 0,
				  "%s broke the protocol: a message out of its lanes' order",
				  c->info.peer);
	if (r == 1) /* a copy from a failed-over lane: already had it */
		return rd_rdma_post_recv(c, idx);
	while (rd_reseq_pop(&rc->rx, &idx, &len)) {
		r = rd_xc_rx(c, idx, len);
		if (r)
			return r;
	}
	return 0;
}

static int resend(struct rd_rdma_conn *rc, unsigned idx);

/* The lane whose QP is qpn on rail ra (numbers are per device), or RD_LANES_MAX. */
static unsigned lane_of_qp(const struct rd_rdma_conn *rc, unsigned ra, uint32_t qpn)
{
	unsigned k;

	for (k = 0; k < rc->nlanes; k++)
		if (rc->lane_rail[k] == ra && rc->lane[k] && rc->lane[k]->qp &&
		    rc->lane[k]->qp->qp_num == qpn)
			return k;
	return RD_LANES_MAX;
}

/* Lane k is given up while others go on: say which, and why. */
static void lane_dies(struct rd_rdma_conn *rc, unsigned k, const char *how, const char *why)
{
	struct rd_conn *c = &rc->c;

	rc->lane_dead[k] = 1;
	rc->nlive--;
	c->info.failovers++;
	snprintf(c->info.rails_note, sizeof(c->info.rails_note),
		 "lane %u over %s %s (%s); %u lane%s went on", k,
		 c->info.rail_dev[rc->lane_rail[k]], how, why, rc->nlive, rc->nlive == 1 ? "" : "s");
}

/*
 * Failover: a lane whose peer stopped acknowledging (its rail was cut)
 * while another lane lives is closed alone, and what it had in flight goes
 * out again on a live lane (lib/proto/rd_proto.h section 1, Rails). 1 if
 * wc belongs to such a lane (and was dealt with: *ret), else 0.
 */
static int fail_over(struct rd_rdma_conn *rc, unsigned ra, const struct ibv_wc *wc, int *ret)
{
	unsigned k = lane_of_qp(rc, ra, wc->qp_num), kind = WR_KIND(wc->wr_id);

	if (!rc->seq_on || k >= rc->nlanes)
		return 0;
	if (!rc->lane_dead[k]) {
		if (wc->status != IBV_WC_RETRY_EXC_ERR || rc->nlive < 2)
			return 0;
		lane_dies(rc, k, "failed", "the peer stopped acknowledging");
	} else if (wc->status != IBV_WC_RETRY_EXC_ERR && wc->status != IBV_WC_WR_FLUSH_ERR) {
		return 0;
	}
	/* The WRITE goes again with its SEND, whose completion follows. */
	*ret = kind == WR_CTRL || kind == WR_DATA ? resend(rc, WR_IDX(wc->wr_id)) : 0;
	return 1;
}

/* One completion from rail ra's queue. */
static int handle_wc(struct rd_rdma_conn *rc, unsigned ra, const struct ibv_wc *wc)
{
	struct rd_conn *c = &rc->c;
	unsigned kind = WR_KIND(wc->wr_id), idx = WR_IDX(wc->wr_id);
	int r;

	if (wc->status != IBV_WC_SUCCESS) {
		if (fail_over(rc, ra, wc, &r))
			return r;
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
	case WR_WRITE: /* unsignaled: only an error completes one */
		return 0;
	}
	return rd_xc_fail(c, RD_EPROTO, 0, "unknown completion kind %u", kind);
}

/*
 * Reap every completion. After a failed one, the messages that arrived
 * still count (a stopping peer sends its ERROR just before it drops its
 * buffers, so our writes fail right behind it): the failure is reported
 * once they have been read (rd_rdma_poll returns it when none is queued).
 */
static int drain_cq(struct rd_rdma_conn *rc)
{
	struct ibv_wc wc[32];
	unsigned ri;
	int n, i, r, first = 0, total = 0;

	for (ri = 0; ri < rc->nrails && rc->rail[ri].cq; ri++) {
		do {
			n = ibv_poll_cq(rc->rail[ri].cq, 32, wc);
			if (n < 0)
				return rd_xc_fail(&rc->c, RD_ECONN, 0,
						  "%s: polling the completion queue failed",
						  rc->c.info.rail_dev[ri]);
			for (i = 0; i < n; i++) {
				if (first && (wc[i].status != IBV_WC_SUCCESS ||
					      WR_KIND(wc[i].wr_id) != WR_RECV))
					continue;
				r = handle_wc(rc, ri, &wc[i]);
				if (r && !first)
					first = r;
			}
			total += n;
		} while (n == 32);
	}
	if (first && !rc->c.rq_count)
		return first;
	return total;
}

/*
 * A lane's connection ended (its own disconnect, not the session's): with
 * another lane alive it fails over alone. 1 if it did (or was dead).
 */
static int lane_ended(struct rd_rdma_conn *rc, struct rdma_cm_id *id,
		      enum rdma_cm_event_type t)
{
	unsigned k;

	for (k = 0; k < rc->nlanes && rc->lane[k] != id; k++)
		;
	if (!rc->seq_on || k >= rc->nlanes)
		return 0;
	if (rc->lane_dead[k])
		return 1;
	if (rc->nlive < 2)
		return 0;
	lane_dies(rc, k, "ended", rdma_event_str(t));
	/* Its QP to the error state: what it had in flight flushes and goes
	 * out again on a live lane (fail_over). Not while its port is down
	 * (the DREQ would jam the CM: rd_xport_rdma_retire.c); close retires it. */
	if (rd_rdma_port_up(id))
		rdma_disconnect(id);
	return 1;
}

static int cm_events(struct rd_rdma_conn *rc)
{
	struct rd_conn *c = &rc->c;
	struct rdma_cm_event *ev;
	enum rdma_cm_event_type t;
	struct rdma_cm_id *id;

	while (!rdma_get_cm_event(rc->ech, &ev)) {
		t = ev->event;
		id = ev->id;
		rdma_ack_cm_event(ev);
		if ((t == RDMA_CM_EVENT_DISCONNECTED || t == RDMA_CM_EVENT_TIMEWAIT_EXIT) &&
		    !c->disconnected && lane_ended(rc, id, t))
			continue;
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

int rd_rdma_poll(struct rd_conn *c, int timeout_ms)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	struct pollfd p[RD_RAILS_MAX + 2];
	struct ibv_cq *ecq;
	unsigned i, np;
	void *ectx;
	int n, r, woken = 0;

	if (c->dead)
		return c->rq_count ? 0 : -c->err.status;
	n = progress(rc);
	if (n < 0)
		return n;
	if (n > 0 || timeout_ms == 0)
		return 0;

	/* every rail's completion channel, the CM events, the wake fd */
	for (i = 0; i < rc->nrails; i++)
		p[i] = (struct pollfd){.fd = rc->rail[i].cch->fd, .events = POLLIN};
	np = rc->nrails;
	p[np++] = (struct pollfd){.fd = rc->ech->fd, .events = POLLIN};
	p[np] = (struct pollfd){.fd = rd_xc_wake_fd(c), .events = POLLIN};
	if (p[np].fd >= 0)
		np++;
	r = poll(p, np, timeout_ms < 0 ? c->timeout_ms : timeout_ms);
	if (r < 0 && errno != EINTR)
		return rd_xc_fail(c, RD_ECONN, errno, "poll");
	if (r > 0 && np > rc->nrails + 1 && p[np - 1].revents)
		woken = rd_xc_wake_drain(c);
	for (i = 0; r > 0 && i < rc->nrails; i++) {
		struct rd_rail *ra = &rc->rail[i];

		if (!p[i].revents)
			continue;
		if (!ibv_get_cq_event(ra->cch, &ecq, &ectx)) {
			ra->cq_unacked++;
			if (ra->cq_unacked >= 64) {
				ibv_ack_cq_events(ra->cq, ra->cq_unacked);
				ra->cq_unacked = 0;
			}
		}
		if (ibv_req_notify_cq(ra->cq, 0))
			return rd_xc_fail(c, RD_ECONN, errno, "%s: ibv_req_notify_cq",
					  c->info.rail_dev[i]);
	}
	n = progress(rc);
	if (n < 0)
		return n;
	return n == 0 && !woken ? rd_xc_check_silence(c) : 0;
}

int rd_rdma_can_xmit(const struct rd_conn *c)
{
	return rdma_ofc(c)->nsfree > 0;
}

/* The next live lane after lane `from` (round robin), or lane 0's stand-in. */
static unsigned live_lane(const struct rd_rdma_conn *rc, unsigned from)
{
	unsigned i, k;

	for (i = 0; i < rc->nlanes; i++) {
		k = (from + i) % rc->nlanes;
		if (!rc->lane_dead[k])
			return k;
	}
	return 0;
}

/*
 * Post send buffer idx as rc->sent[idx] describes it, on lane: the SEND,
 * after its WRITE if it has one, with the keys of that lane's rail here
 * and of the peer's rail at the other end.
 */
static int post_sent(struct rd_rdma_conn *rc, unsigned idx, unsigned lane)
{
	struct rd_conn *c = &rc->c;
	struct rd_rdma_sent *t = &rc->sent[idx];
	const struct rd_xwrite *w = t->write ? &t->w : NULL;
	unsigned ra = rc->lane_rail[lane], pr = rc->lane_prail[lane];
	uint8_t *b = rc->sbuf + (size_t)idx * RD_CTRL_MAX;
	struct ibv_sge sge, dsge;
	struct ibv_send_wr wr, dwr, *bad;
	int r;

	if (w && (pr >= w->rk->n || ra > w->mr->nx))
		return rd_xc_fail(c, RD_EPROTO, 0,
				  "%s: lane %u runs over rail %u (%s here, %u there), but the "
				  "write has keys for %u of the peer's rails",
				  c->info.peer, lane, ra, c->info.rail_dev[ra], pr, w->rk->n);
	sge = (struct ibv_sge){
	    .addr = (uintptr_t)b, .length = t->len, .lkey = rc->rail[ra].smr->lkey};
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = w ? WR_ID(WR_DATA, idx, w->cookie) : WR_ID(WR_CTRL, idx, 0);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	if (rc->seq_on) {
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl(t->seq);
	}
	if (w) {
		dsge = (struct ibv_sge){.addr = (uintptr_t)w->mr->addr + w->off,
					.length = (uint32_t)w->len,
					.lkey = ra ? w->mr->xlkey[ra - 1] : w->mr->lkey};
		memset(&dwr, 0, sizeof(dwr));
		dwr.wr_id = WR_ID(WR_WRITE, idx, w->cookie); /* unsignaled */
		dwr.sg_list = &dsge;
		dwr.num_sge = 1;
		dwr.opcode = IBV_WR_RDMA_WRITE;
		dwr.wr.rdma.remote_addr = w->raddr;
		dwr.wr.rdma.rkey = w->rk->k[pr];
		dwr.next = &wr;
	}
	r = ibv_post_send(rc->lane[lane]->qp, w ? &dwr : &wr, &bad);
	if (r)
		return rd_xc_fail(c, RD_ECONN, r, "%s: posting a send to %s failed",
				  c->info.rail_dev[ra], c->info.peer);
	t->lane = (uint8_t)lane;
	if (w)
		rc->lane_bytes[lane] += w->len;
	return 0;
}

/*
 * A failed lane's SEND idx (and its WRITE) goes out again on a live lane,
 * with its message number (the receiver drops a copy it already has).
 * Not when its slot was written again since: the receiver asks a slot
 * again only once the DATA arrived, and the old bytes would overwrite the
 * new chunk (which --checksum-choice none would not catch).
 */
static int resend(struct rd_rdma_conn *rc, unsigned idx)
{
	struct rd_conn *c = &rc->c;
	struct rd_rdma_sent *t;
	int since;

	if (idx >= rc->sdepth)
		return rd_xc_fail(c, RD_EPROTO, 0, "bad send completion");
	t = &rc->sent[idx];
	since = t->write ? rd_whist_since(rc->whist, t->w.raddr, t->seq) : 0;
	if (since == 1) {
		rc->sfree[rc->nsfree++] = idx;
		rd_xc_sent(c, t->w.cookie);
		return 0;
	}
	if (since < 0)
		return rd_xc_fail(c, RD_ECONN, 0,
				  "%s: a lane failed and too much was written since to send its "
				  "data again safely",
				  c->info.peer);
	return post_sent(rc, idx, live_lane(rc, t->lane + 1u));
}

/* Post one SEND (credits already patched), preceded by an unsignaled WRITE
 * if w is set: RC ordering places the data before the message arrives. */
int rd_rdma_xmit(struct rd_conn *c, const uint8_t *msg, size_t len, const struct rd_xwrite *w)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	struct rd_rdma_sent *t;
	unsigned idx, lane;
	int r;

	/* DATA (with its WRITE) takes the live lanes in turn; the rest the
	 * first live lane (lane 0 unless it failed). */
	if (w && rc->nlanes > 1) {
		lane = live_lane(rc, rc->next_lane);
		rc->next_lane = (lane + 1) % rc->nlanes;
	} else {
		lane = live_lane(rc, 0);
	}
	idx = rc->sfree[--rc->nsfree];
	t = &rc->sent[idx];
	memcpy(rc->sbuf + (size_t)idx * RD_CTRL_MAX, msg, len);
	t->seq = rc->tx_seq;
	t->len = (uint32_t)len;
	t->write = w != NULL;
	if (w) {
		t->w = *w;
		t->rk = *w->rk;
		t->w.rk = &t->rk;
	}
	r = post_sent(rc, idx, lane);
	if (r) {
		rc->sfree[rc->nsfree++] = idx;
		return r;
	}
	rc->tx_seq++;
	if (w && rc->whist)
		rd_whist_add(rc->whist, w->raddr, t->seq);
	return 0;
}

/* Register on every rail: the keys of rails 1.. go in mr->x*. */
int rd_rdma_reg(struct rd_conn *c, void *buf, size_t len, int remote_write, struct rd_mr *mr)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	struct ibv_mr *m;
	int access = IBV_ACCESS_LOCAL_WRITE | (remote_write ? IBV_ACCESS_REMOTE_WRITE : 0);
	unsigned r;

	memset(mr, 0, sizeof(*mr));
	mr->addr = buf;
	mr->len = len;
	for (r = 0; r < rc->nrails; r++) {
		m = ibv_reg_mr(rc->rail[r].pd, buf, len, access);
		if (!m) {
			int e = errno;

			rd_rdma_dereg(c, mr);
			return reg_fail(c, len, e);
		}
		if (r == 0) {
			mr->lkey = m->lkey;
			mr->rkey = m->rkey;
			mr->priv = m;
		} else {
			mr->xlkey[r - 1] = m->lkey;
			mr->xrkey[r - 1] = m->rkey;
			mr->xpriv[r - 1] = m;
			mr->nx = r;
		}
	}
	rc->nregions++;
	return 0;
}

void rd_rdma_dereg(struct rd_conn *c, struct rd_mr *mr)
{
	unsigned r;

	(void)c;
	for (r = 0; r < mr->nx; r++) {
		ibv_dereg_mr(mr->xpriv[r]);
		mr->xpriv[r] = NULL;
	}
	mr->nx = 0;
	if (mr->priv)
		ibv_dereg_mr(mr->priv);
	mr->priv = NULL;
}

void rd_rdma_close(struct rd_conn *c)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	struct rdma_cm_event *ev;
	unsigned i;

	if (rc->id && c->established && !c->disconnected && rd_rdma_port_up(rc->id)) {
		/*
		 * rdma_disconnect() moves the QP to the error state, which
		 * flushes sends not yet acknowledged: the last message (a
		 * report, an ERROR) would be lost and the peer would see only
		 * the disconnect. So let posted sends complete first, briefly.
		 * Not while the port is down: its DREQ would jam the host's CM
		 * (rd_xport_rdma_retire.c); the ids are retired below.
		 */
		if (!c->dead)
			rd_rdma_flush(c, 1000);
		for (i = 1; i < rc->nlanes; i++)
			if (rd_rdma_port_up(rc->lane[i]))
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
		rd_rdma_retire_id(rc->lane[i]);
	}
	if (rc->id && rc->id->qp)
		rdma_destroy_qp(rc->id);
	rd_reseq_fini(&rc->rx);
	for (i = 0; i < RD_RAILS_MAX; i++)
		close_rail(&rc->rail[i]);
	rd_rdma_retire_id(rc->id);
	if (rc->ech)
		rdma_destroy_event_channel(rc->ech);
	rd_xc_fini(c);
	free(rc->sbuf);
	free(rc->sfree);
	free(rc->sent);
	free(rc->whist);
	free(rc);
}

int rd_rdma_flush(struct rd_conn *c, int timeout_ms)
{
	struct rd_rdma_conn *rc = rdma_of(c);
	struct timespec t0;
	int r;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (rc->nsfree < rc->sbufs) {
		if (rd_xc_ms_since(&t0) > timeout_ms)
			return rd_xc_fail(c, RD_ETIMEOUT, 0,
					  "%s did not acknowledge our last messages",
					  c->info.peer);
		r = rd_rdma_poll(c, 50);
		if (r < 0)
			return r;
	}
	return 0;
}

unsigned rd_rdma_lanes(const struct rd_conn *c)
{
	return rdma_ofc(c)->lanes;
}

uint64_t rd_rdma_lane_bytes(const struct rd_conn *c, unsigned i)
{
	return i < rdma_ofc(c)->nlanes ? rdma_ofc(c)->lane_bytes[i] : 0;
}

unsigned rd_rdma_lane_rail(const struct rd_conn *c, unsigned i)
{
	return i < rdma_ofc(c)->nlanes ? rdma_ofc(c)->lane_rail[i] : 0;
}
