/* SPDX-License-Identifier: MIT */
/*
 * Private to the RDMA transport (lib/xport/rdma/): its connection and the
 * verbs layer's functions (//lib/xport/rdma:verbs), which the lanes and
 * connection setup above it use. Nothing here names a function of theirs.
 */
#ifndef RDCP_XPORT_RD_XPORT_RDMA_PRIV_H
#define RDCP_XPORT_RD_XPORT_RDMA_PRIV_H

#include <arpa/inet.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/xport/conn/rd_xport_impl.h"
#include "lib/xport/rdma/rd_xport_reseq.h"

struct rd_lane_reg;

/*
 * One device the session runs over (lib/proto/rd_proto.h section 1,
 * Rails): rail 0 is lane 0's. Each has its own protection domain, CQ
 * (with a completion channel in the poll) and, with lanes, an SRQ holding
 * rdepth receives in its own share of c.rbuf (slots r*rdepth..).
 */
struct rd_rail {
	struct ibv_context *verbs;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	unsigned cq_unacked;
	struct ibv_srq *srq; /* lanes wanted or granted: shared receives */
	struct ibv_mr *rmr;  /* over this rail's share of c.rbuf */
	struct ibv_mr *smr;  /* over every send buffer */
	/* Before the peer authenticated, rmr and smr covered only the first
	 * RD_XC_PREAUTH_DEPTH buffers; those registrations stay until close. */
	struct ibv_mr *rmr_pre, *smr_pre;
};

/*
 * A posted SEND (send buffer idx), kept until it completes, so that a lane
 * that fails can have its messages posted again on another (failover).
 */
struct rd_rdma_sent {
	uint32_t seq;	  /* its message number (lanes) */
	uint32_t len;	  /* message bytes in its send buffer */
	uint8_t lane;	  /* where it was posted */
	uint8_t write;	  /* an RDMA WRITE (w) goes before it */
	struct rd_xwrite w; /* w.rk points to rk */
	struct rd_rkeys rk;
};

struct rd_rdma_conn {
	struct rd_conn c; /* first: the common head */
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct rd_rail rail[RD_RAILS_MAX];
	unsigned nrails;
	unsigned nregions; /* registered by rd_conn_reg: no rail may join after */

	unsigned sdepth; /* send buffers */
	/*
	 * A server before its peer authenticated: the receives posted and
	 * send buffers registered per rail (RD_XC_PREAUTH_DEPTH); 0 once
	 * all of them are (rdma_authenticated). sbufs: send buffers in use.
	 */
	unsigned pre, sbufs;
	uint8_t *sbuf;
	unsigned *sfree;
	unsigned nsfree;
	struct rd_rdma_sent *sent; /* [sdepth] */
	struct rd_whist *whist;	   /* recent writes (lanes only: failover) */

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
	uint8_t lane_rail[RD_LANES_MAX];  /* lane k's rail here */
	uint8_t lane_dead[RD_LANES_MAX];  /* failed: its messages went elsewhere */
	unsigned nlive;			  /* lanes not dead */
	uint8_t lane_prail[RD_LANES_MAX]; /* and at the peer (from JOIN / accept) */
	int rails_on;	       /* RAILS agreed: the server's list comes in TLS */
	int wild;	       /* server: its listener takes every address */
	struct rd_msg_rails peer_rails; /* client: the server's other rails */
	char devices[256];	       /* client: --rdma-devices, "" for any */
	int seq_on;	       /* lanes > 1: numbered SENDs, resequenced */
	uint32_t tx_seq;
	struct rd_reseq rx;
	uint64_t sid;	       /* the session's id (accept data) */
	struct sockaddr_storage dst; /* client: where lanes connect */
	struct rd_lane_reg *reg;     /* server: waiting for JOINs */
	struct rd_listener *lanes_from; /* server: read it for JOINs (ssh mode) */
	int by_hand;			/* client (tests): rd_conn_opts.lanes_by_hand */
	uint64_t lane_bytes[RD_LANES_MAX]; /* RDMA WRITE bytes per lane */
};

/* Queue pair for one more lane on rail r of rc (its CQ, SRQ, PD). */
int rd_rdma_create_qp(struct rd_rdma_conn *rc, struct rdma_cm_id *id, unsigned r);
/* The rail of device verbs: found, or opened (1..) when rails are allowed
 * and no region is registered yet. Returns its index or a negative status. */
int rd_rdma_rail_of(struct rd_rdma_conn *rc, struct ibv_context *verbs);
/* Reject and destroy a connect request's id (retired instead while its
 * port is down: the REJ goes when the port is back); rd_xport_rdma_id.c. */
void rd_rdma_reject(struct rdma_cm_id *id, const struct rd_cm_rej *rej);
/* The same with a bare reason and this rdcp's versions. */
void rd_rdma_reject_id(struct rdma_cm_id *id, uint16_t reason);
/*
 * Is the port of id ACTIVE (or id bound to no port yet)? While it is not,
 * nothing may make the kernel's CM send for it: no rdma_disconnect, no
 * rdma_reject, no rdma_destroy_id of a connected id (rd_xport_rdma_retire.c
 * says why).
 */
int rd_rdma_port_up(const struct rdma_cm_id *id);
/* Destroy id (its QP destroyed first), or, while its port is down, keep it
 * until the port is ACTIVE again and destroy it then. */
void rd_rdma_retire_id(struct rdma_cm_id *id);
/* Wait for one event on rc's channel (the connection's own). */
int rd_rdma_expect(struct rd_rdma_conn *rc, enum rdma_cm_event_type want, int timeout_ms,
		   const char *what, struct rdma_cm_event **out);
void rd_rdma_conn_param(struct rdma_conn_param *p, const void *pdata, uint8_t len);
/*
 * With lanes, each QP's local ACK timeout (4.096 us x 2^RD_LANE_ACK_TIMEOUT,
 * ~268 ms) and RD_LANE_RETRY retries: a lane whose rail was cut fails in
 * about 2 s and its messages move to another. Not 7 retries: Soft-RoCE
 * takes 7 as "retry forever" and a cut lane would hang, not fail.
 * The timeout is best effort: without it, the device's default.
 */
#define RD_LANE_ACK_TIMEOUT 16
#define RD_LANE_RETRY	    6
void rd_rdma_lane_opts(struct rdma_cm_id *id, struct rdma_conn_param *p);

/*
 * The verbs layer (rd_xport_rdma.c): a connection with ops (connection
 * setup's table), its buffers and queues, and the data path that table
 * points at.
 */
struct rd_rdma_conn *rd_rdma_conn_new(const struct rd_conn_ops *ops);
int rd_rdma_setup_verbs(struct rd_rdma_conn *rc, const struct rd_conn_opts *o, int pre);
/* Open every RDMA device's context now, for good (rd_xport_rdma_dev.c). */
void rd_rdma_hold_devices(void);
int rd_cm_wait(struct rdma_event_channel *ch, int timeout_ms, struct rdma_cm_event **ev);
const char *rd_wc_status_explain(int status);
int rd_rdma_poll(struct rd_conn *c, int timeout_ms);
int rd_rdma_can_xmit(const struct rd_conn *c);
int rd_rdma_xmit(struct rd_conn *c, const uint8_t *msg, size_t len, const struct rd_xwrite *w);
int rd_rdma_post_recv(struct rd_conn *c, unsigned idx);
int rd_rdma_reg(struct rd_conn *c, void *buf, size_t len, int remote_write, struct rd_mr *mr);
void rd_rdma_dereg(struct rd_conn *c, struct rd_mr *mr);
int rd_rdma_flush(struct rd_conn *c, int timeout_ms);
int rd_rdma_authenticated(struct rd_conn *c);
unsigned rd_rdma_lanes(const struct rd_conn *c);
uint64_t rd_rdma_lane_bytes(const struct rd_conn *c, unsigned i);
unsigned rd_rdma_lane_rail(const struct rd_conn *c, unsigned i);
/* The verbs' share of closing: QPs, ids, rails, buffers (the lanes'
 * registration is gone already). */
void rd_rdma_close(struct rd_conn *c);

#endif
