/* SPDX-License-Identifier: MIT */
/* Private to the RDMA transport (lib/xport/rd_xport_rdma*.c). */
#ifndef RDCP_XPORT_RD_XPORT_RDMA_PRIV_H
#define RDCP_XPORT_RD_XPORT_RDMA_PRIV_H

#include <arpa/inet.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/xport/rd_xport_impl.h"
#include "lib/xport/rd_xport_reseq.h"

struct rd_lane_reg;

struct rd_rdma_conn {
	struct rd_conn c; /* first: the common head */
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	unsigned cq_unacked;
	struct ibv_mr *rmr; /* over c.rbuf */

	unsigned sdepth; /* send buffers */
	uint8_t *sbuf;
	struct ibv_mr *smr;
	unsigned *sfree;
	unsigned nsfree;

	/*
	 * Lanes (lib/proto/rd_proto.h section 1): lane[0] is id; the others
	 * join after TLS. With an SRQ every lane's receives come from one
	 * queue, so credits count as over one QP; with seq_on every SEND
	 * carries its number and arrivals are put back in order.
	 */
	struct rdma_cm_id *lane[RD_LANES_MAX];
	unsigned nlanes;       /* connected QPs (lane[0..nlanes-1]) */
	unsigned lanes;	       /* agreed in the connect exchange */
	unsigned next_lane;    /* the lane of the next DATA */
	struct ibv_srq *srq;   /* lanes wanted or granted: shared receives */
	int seq_on;	       /* lanes > 1: numbered SENDs, resequenced */
	uint32_t tx_seq;
	struct rd_reseq rx;
	uint64_t sid;	       /* the session's id (accept data) */
	struct sockaddr_storage dst; /* client: where lanes connect */
	struct rd_lane_reg *reg;     /* server: waiting for JOINs */
	struct rd_listener *lanes_from; /* server: read it for JOINs (ssh mode) */
	uint64_t lane_bytes[RD_LANES_MAX]; /* RDMA WRITE bytes per lane */
};

struct rd_rdma_listener {
	struct rd_listener l;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
};

struct rd_rdma_req {
	struct rd_conn_req r;
	struct rdma_cm_id *id;
};

/* Queue pair attributes for one more lane on rc (shared CQ, SRQ, PD). */
int rd_rdma_create_qp(struct rd_rdma_conn *rc, struct rdma_cm_id *id);
/* rd_rdma_conn_ops.join_lanes: connect (client) or take (server) the
 * lanes 1..lanes-1 with proof; rd_xport_rdma_lanes.c. */
int rd_rdma_join_lanes(struct rd_conn *c, const uint8_t *proof, int timeout_ms);
/* Server: accept data sent, the session now waits for its JOINs. */
int rd_lane_reg_open(struct rd_rdma_conn *rc);
void rd_lane_reg_close(struct rd_rdma_conn *rc);
/* Listener: a JOIN request arrived on id; queue it for its session or
 * reject it (unknown session, too many). Takes id either way. */
void rd_lane_route_join(struct rdma_cm_id *id, const struct rd_cm_req *creq);
/* Lanes a client asks for by default on this device: 1 on Soft-RoCE. */
unsigned rd_rdma_default_lanes(struct ibv_context *ctx);
/* Reject and destroy a connect request's id. */
void rd_rdma_reject_id(struct rdma_cm_id *id, uint16_t reason);
/* Wait for one event on rc's channel (the connection's own). */
int rd_rdma_expect(struct rd_rdma_conn *rc, enum rdma_cm_event_type want, int timeout_ms,
		   const char *what, struct rdma_cm_event **out);
void rd_rdma_conn_param(struct rdma_conn_param *p, const void *pdata, uint8_t len);

extern const struct rd_conn_ops rd_rdma_conn_ops;

struct rd_rdma_conn *rd_rdma_conn_new(void);
int rd_rdma_setup_verbs(struct rd_rdma_conn *rc, const struct rd_conn_opts *o);
int rd_cm_wait(struct rdma_event_channel *ch, int timeout_ms, struct rdma_cm_event **ev);
const char *rd_wc_status_explain(int status);

#endif
