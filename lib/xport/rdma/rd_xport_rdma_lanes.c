// SPDX-License-Identifier: MIT
/*
 * RDMA transport, lanes (lib/proto/rd_proto.h section 1, Lanes): the
 * extra RC QPs of one session. The client connects them to the same
 * listener after TLS, each with a JOIN request naming the session (sid)
 * and carrying a proof exported from that TLS session for that lane and
 * rail (Lane proofs); the server's listener hands a JOIN to the session it
 * names, and the session accepts it only with the right proof, once per
 * lane. Until then a JOIN holds nothing but its connection id: no queue
 * pair, no registered memory.
 */
#include "lib/xport/rd_xport.h"
#include "lib/xport/rdma/rd_xport_rdma_lanes.h"
#include "lib/xport/rdma/rd_xport_rdma_priv.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define RESOLVE_MS 5000
#define RAIL_MS	   3000 /* connecting a lane to one of the server's rails */

struct rd_lane_pend {
	struct rdma_cm_id *id;
	uint16_t lane;
	uint8_t rail; /* the client's rail of that lane */
	uint8_t proof[RD_LANE_PROOF_LEN];
};

/* One session waiting for its lanes. The listener's thread touches only
 * these fields, under reg_mu, never the connection. */
struct rd_lane_reg {
	struct rd_lane_reg *next;
	uint64_t sid;
	struct rdma_event_channel *ech; /* the session's: JOINs move there */
	unsigned npend;
	struct rd_lane_pend pend[RD_LANES_MAX];
};

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static struct rd_lane_reg *regs;

unsigned rd_rdma_default_lanes(struct ibv_context *ctx)
{
	struct ibv_device_attr a;
	const char *name = ibv_get_device_name(ctx->device);

	/* Soft-RoCE (rxe, vendor id 0xffffff) and soft iWARP: the CPU is the
	 * NIC, more QPs only add work. Hardware: two. */
	if (!strncmp(name, "rxe", 3) || !strncmp(name, "siw", 3))
		return 1;
	if (!ibv_query_device(ctx, &a) && a.vendor_id == 0xffffff)
		return 1;
	return 2;
}

static struct rd_lane_reg *find_locked(uint64_t sid)
{
	struct rd_lane_reg *e;

	for (e = regs; e; e = e->next)
		if (e->sid == sid)
			return e;
	return NULL;
}

int rd_lane_reg_open(struct rd_rdma_conn *rc)
{
	struct rd_lane_reg *e = calloc(1, sizeof(*e));
	uint64_t sid = 0;

	if (!e)
		return rd_xc_fail(&rc->c, RD_ENOMEM, ENOMEM, "lanes: out of memory");
	e->ech = rc->ech;
	pthread_mutex_lock(&reg_mu);
	do {
		if (getrandom(&sid, sizeof(sid), 0) != (ssize_t)sizeof(sid)) {
			pthread_mutex_unlock(&reg_mu);
			free(e);
			return rd_xc_fail(&rc->c, RD_ESYS, errno, "lanes: no random session id");
		}
	} while (!sid || find_locked(sid));
	e->sid = sid;
	e->next = regs;
	regs = e;
	pthread_mutex_unlock(&reg_mu);
	rc->reg = e;
	rc->sid = sid;
	return 0;
}

/* Take the JOINs that came for rc (at most RD_LANES_MAX). */
static unsigned take_pending(struct rd_rdma_conn *rc, struct rd_lane_pend *out)
{
	unsigned n;

	pthread_mutex_lock(&reg_mu);
	n = rc->reg->npend;
	memcpy(out, rc->reg->pend, n * sizeof(*out));
	rc->reg->npend = 0;
	pthread_mutex_unlock(&reg_mu);
	return n;
}

void rd_lane_reg_close(struct rd_rdma_conn *rc)
{
	struct rd_lane_reg **pp, *e = rc->reg;
	struct rd_lane_pend p[RD_LANES_MAX];
	unsigned i, n;

	if (!e)
		return;
	n = take_pending(rc, p);
	pthread_mutex_lock(&reg_mu);
	for (pp = &regs; *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			break;
		}
	/* A JOIN routed between take_pending and the unlink. */
	for (i = 0; i < e->npend && n < RD_LANES_MAX; i++)
		p[n++] = e->pend[i];
	pthread_mutex_unlock(&reg_mu);
	for (i = 0; i < n; i++)
		rd_rdma_reject_id(p[i].id, RD_REJ_LANE);
	free(e);
	rc->reg = NULL;
}

void rd_lane_route_join(struct rdma_cm_id *id, const struct rd_cm_req *creq)
{
	struct rd_lane_reg *e;
	struct rd_lane_pend *p;

	pthread_mutex_lock(&reg_mu);
	e = find_locked(creq->sid);
	if (e && e->npend < RD_LANES_MAX && !rdma_migrate_id(id, e->ech)) {
		p = &e->pend[e->npend++];
		p->id = id;
		p->lane = creq->lanes;
		p->rail = creq->rail;
		memcpy(p->proof, creq->proof, RD_LANE_PROOF_LEN);
		id = NULL;
	}
	pthread_mutex_unlock(&reg_mu);
	/* No such session waiting, or too many JOINs for it: refused. */
	if (id)
		rd_rdma_reject_id(id, RD_REJ_LANE);
}

/* The proof for lane k from rail r, with the reason on c if it fails. */
static int get_proof(struct rd_rdma_conn *rc, rd_lane_proof_fn proof, void *ctx, unsigned k,
		     unsigned r, uint8_t *out)
{
	if (proof(ctx, rc->sid, k, r, out))
		return rd_xc_fail(&rc->c, RD_EUSAGE, 0,
				  "lanes: the proof of lane %u cannot be made", k);
	return 0;
}

static int same_proof(const uint8_t *a, const uint8_t *b)
{
	unsigned i, d = 0;

	for (i = 0; i < RD_LANE_PROOF_LEN; i++)
		d |= (unsigned)(a[i] ^ b[i]);
	return d == 0;
}

static long ms_since(const struct timespec *t0)
{
	return rd_xc_ms_since(t0);
}

/*
 * Both sides, once lane k's id is bound to a device: the lane runs over
 * that device's rail (opened now if it is a new one and rails are on),
 * then gets its QP.
 */
static int lane_qp(struct rd_rdma_conn *rc, struct rdma_cm_id *id, unsigned k)
{
	int r = rd_rdma_rail_of(rc, id->verbs);

	if (r < 0)
		return r;
	rc->lane_rail[k] = (uint8_t)r;
	return rd_rdma_create_qp(rc, id, (unsigned)r);
}

/*
 * Both sides, after rdma_accept/rdma_connect of lane k: wait for it to be
 * established. The client (rep not NULL) also checks that the accept
 * names its session.
 */
static int lane_established(struct rd_rdma_conn *rc, unsigned k, int timeout_ms,
			    struct rd_cm_rep *rep)
{
	struct rd_conn *c = &rc->c;
	struct rdma_cm_event *ev;
	int r;

	r = rd_rdma_expect(rc, RDMA_CM_EVENT_ESTABLISHED, timeout_ms,
			   rep ? "connecting a lane" : "accepting a lane", &ev);
	if (r)
		return r;
	if (rep &&
	    (!ev->param.conn.private_data ||
	     rd_cm_rep_decode(ev->param.conn.private_data, ev->param.conn.private_data_len, rep) ||
	     rep->sid != rc->sid))
		r = rd_xc_fail(c, RD_EPROTO, 0, "%s: bad accept data for lane %u", c->info.peer, k);
	rdma_ack_cm_event(ev);
	if (!r) {
		rc->nlanes++;
		rc->nlive++;
	}
	return r;
}

/* Server: accept a proven JOIN as lane k. */
static int accept_lane(struct rd_rdma_conn *rc, struct rdma_cm_id *id, unsigned k, unsigned prail,
		       int timeout_ms)
{
	struct rd_conn *c = &rc->c;
	struct rdma_conn_param param;
	struct rd_cm_rep p;
	uint8_t pdata[RD_CM_REP_LANES_LEN];
	int r;

	rc->lane[k] = id;
	id->context = rc;
	rc->lane_prail[k] = (uint8_t)(rc->rails_on ? prail : 0);
	r = lane_qp(rc, id, k);
	if (r)
		return r;
	memset(&p, 0, sizeof(p));
	p.version = (uint16_t)c->info.version;
	p.ctrl_depth = (uint16_t)c->rdepth;
	p.lanes = (uint16_t)rc->lanes;
	p.rail = rc->lane_rail[k];
	p.sid = rc->sid;
	rd_rdma_conn_param(&param, pdata, (uint8_t)rd_cm_rep_encode(pdata, &p));
	rd_rdma_lane_opts(id, &param);
	if (rdma_accept(id, &param))
		return rd_xc_fail(c, RD_ECONN, errno, "%s: accepting lane %u", c->info.peer, k);
	return lane_established(rc, k, timeout_ms, NULL);
}

static int server_join(struct rd_rdma_conn *rc, rd_lane_proof_fn proof, void *ctx, int timeout_ms)
{
	struct rd_conn *c = &rc->c;
	struct rd_lane_pend p[RD_LANES_MAX];
	uint8_t want[RD_LANE_PROOF_LEN];
	struct rd_conn_req *req;
	struct rd_cm_req creq;
	struct rd_cm_rej rej;
	struct timespec t0;
	unsigned i, n;
	int r = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (rc->nlanes < rc->lanes) {
		n = take_pending(rc, p);
		for (i = 0; i < n; i++) {
			unsigned k = p[i].lane;

			/*
			 * Only this session's peer can know the proof, and it
			 * is good for lane k from that rail alone, once: a
			 * lane that joined takes no JOIN again (a replay).
			 */
			if (!r && k > 0 && k < rc->lanes && !rc->lane[k])
				r = get_proof(rc, proof, ctx, k, p[i].rail, want);
			if (r || k == 0 || k >= rc->lanes || rc->lane[k] ||
			    !same_proof(p[i].proof, want)) {
				rd_rdma_reject_id(p[i].id, RD_REJ_LANE);
				continue;
			}
			r = accept_lane(rc, p[i].id, k, p[i].rail, timeout_ms);
		}
		if (r)
			break;
		if (rc->nlanes == rc->lanes)
			break;
		if (ms_since(&t0) > timeout_ms) {
			r = rd_xc_fail(c, RD_ETIMEOUT, 0,
				       "%s: only %u of the %u lanes agreed joined within %d s",
				       c->info.peer, rc->nlanes, rc->lanes, timeout_ms / 1000);
			break;
		}
		if (rc->lanes_from) {
			/* Nobody else reads this listener: JOINs come through here. */
			r = rc->lanes_from->ops->next(rc->lanes_from, 20, &req, &creq);
			if (r == 0) {
				memset(&rej, 0, sizeof(rej));
				rej.reason = RD_REJ_BUSY;
				rej.ver_min = RD_PROTO_MIN;
				rej.ver_max = RD_PROTO_MAX;
				req->ops->reject(req, &rej);
			}
			r = 0;
		} else {
			struct timespec nap = {0, 5 * 1000 * 1000};

			nanosleep(&nap, NULL);
		}
	}
	rd_lane_reg_close(rc);
	memset(want, 0, sizeof(want));
	return r;
}

/* Client: resolve address and route of lane k's id to dst (from src). */
static int lane_route(struct rd_rdma_conn *rc, struct rdma_cm_id *id, unsigned k,
		      struct sockaddr *src, struct sockaddr *dst, int ms)
{
	struct rd_conn *c = &rc->c;
	struct rdma_cm_event *ev;
	int r;

	if (rdma_resolve_addr(id, src, dst, ms))
		return rd_xc_fail(c, RD_ECONN, errno, "%s: resolving lane %u", c->info.peer, k);
	r = rd_rdma_expect(rc, RDMA_CM_EVENT_ADDR_RESOLVED, ms + 1000, "resolving a lane's address",
			   &ev);
	if (r)
		return r;
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(id, ms))
		return rd_xc_fail(c, RD_ECONN, errno, "%s: lane %u route", c->info.peer, k);
	r = rd_rdma_expect(rc, RDMA_CM_EVENT_ROUTE_RESOLVED, ms + 1000, "resolving a lane's route",
			   &ev);
	if (r)
		return r;
	rdma_ack_cm_event(ev);
	return 0;
}

/* Client: lane k could not use the server's rail: say why; the caller
 * connects it to lane 0's address instead. */
static int rail_unusable(struct rd_rdma_conn *rc, struct rdma_cm_id *id, unsigned k)
{
	struct rd_conn *c = &rc->c;

	snprintf(c->info.rails_note, sizeof(c->info.rails_note),
		 "lane %u: the server's rail was unusable from here, so it runs beside lane 0 "
		 "(%.100s)",
		 k, c->err.msg);
	memset(&c->err, 0, sizeof(c->err));
	c->dead = 0;
	if (id->qp)
		rdma_destroy_qp(id);
	rd_rdma_retire_id(id);
	rc->lane[k] = NULL;
	return 1;
}

/*
 * Client: connect lane k, to the server's rail the lane falls on (from
 * whichever device the route picks), else to where lane 0 went, from the
 * same address. Returns 1 when a rail of the server's could not be used
 * before anything was sent there (the caller tries lane 0's address).
 */
static int connect_lane(struct rd_rdma_conn *rc, unsigned k, rd_lane_proof_fn proof, void *ctx,
			int timeout_ms, int to_rail)
{
	struct rd_conn *c = &rc->c;
	struct sockaddr_storage src, dst;
	struct rdma_conn_param param;
	struct rdma_cm_id *id;
	struct rd_cm_req q;
	struct rd_cm_rep rep;
	uint8_t pdata[RD_CM_JOIN_RAIL_LEN];
	int r;

	if (rdma_create_id(rc->ech, &id, rc, RDMA_PS_TCP))
		return rd_xc_fail(c, RD_ENODEV, errno, "rdma_create_id (lane %u)", k);
	rc->lane[k] = id;
	if (to_rail && rd_rdma_lane_dst(rc, k, &dst)) {
		r = lane_route(rc, id, k, NULL, (struct sockaddr *)&dst, RAIL_MS / 2);
		if (r == 0 && !rd_rdma_devices_has(rc->devices,
						   ibv_get_device_name(id->verbs->device)))
			r = rd_xc_fail(c, RD_EUSAGE, 0, "its route goes through %s, not --rdma-devices",
				       ibv_get_device_name(id->verbs->device));
		if (r == 0)
			r = lane_qp(rc, id, k);
		if (r)
			return rail_unusable(rc, id, k);
	} else {
		memcpy(&src, rdma_get_local_addr(rc->id), sizeof(src));
		if (src.ss_family == AF_INET)
			((struct sockaddr_in *)(void *)&src)->sin_port = 0;
		else
			((struct sockaddr_in6 *)(void *)&src)->sin6_port = 0;
		r = lane_route(rc, id, k, (struct sockaddr *)&src, (struct sockaddr *)&rc->dst,
			       RESOLVE_MS);
		if (r == 0)
			r = lane_qp(rc, id, k);
		if (r)
			return r;
	}
	memset(&q, 0, sizeof(q));
	q.ver_min = q.ver_max = (uint16_t)c->info.version;
	q.flags = RD_CMF_JOIN | (rc->rails_on ? RD_CMF_RAILS : 0);
	q.ctrl_depth = (uint16_t)c->rdepth;
	q.lanes = (uint16_t)k;
	q.sid = rc->sid;
	q.rail = rc->lane_rail[k];
	/* the rail the server reads: the JOIN carries it only with RAILS */
	r = get_proof(rc, proof, ctx, k, rc->rails_on ? q.rail : 0, q.proof);
	if (r)
		return r;
	rd_rdma_conn_param(&param, pdata, (uint8_t)rd_cm_req_encode(pdata, &q));
	rd_rdma_lane_opts(id, &param);
	r = rdma_connect(id, &param) ? rd_xc_fail(c, RD_ECONN, errno, "%s: connecting lane %u",
						  c->info.peer, k)
				     : lane_established(rc, k, to_rail ? RAIL_MS : timeout_ms, &rep);
	if (r && to_rail && !c->disconnected)
		return rail_unusable(rc, id, k);
	if (r)
		return r;
	rc->lane_prail[k] = (uint8_t)(rc->rails_on ? rep.rail : 0);
	return 0;
}

int rd_rdma_join_lanes(struct rd_conn *c, rd_lane_proof_fn proof, void *ctx, int timeout_ms)
{
	struct rd_rdma_conn *rc = (struct rd_rdma_conn *)c;
	unsigned k;
	int r = 0;

	if (rc->lanes <= 1 || rc->by_hand)
		return 0;
	if (rc->reg) {
		r = server_join(rc, proof, ctx, timeout_ms);
	} else {
		for (k = 1; k < rc->lanes && !r; k++) {
			r = connect_lane(rc, k, proof, ctx, timeout_ms, 1);
			if (r == 1)
				r = connect_lane(rc, k, proof, ctx, timeout_ms, 0);
		}
	}
	if (r) {
		/* rd_rdma_expect() leaves the reason in c->err; say which step. */
		c->dead = 1;
		return r < 0 ? r : -RD_ECONN;
	}
	c->info.lanes = rc->nlanes;
	return 0;
}
