/* SPDX-License-Identifier: MIT */
/* Private to lib/xport: the RDMA connection object. */
#ifndef RDCP_XPORT_RD_XPORT_PRIV_H
#define RDCP_XPORT_RD_XPORT_PRIV_H

#include <arpa/inet.h>
#include <stdint.h>
#include <time.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/xport/rd_xport.h"

struct rd_conn {
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	unsigned cq_unacked;

	unsigned rdepth;	/* receive buffers posted */
	uint8_t *rbuf;
	struct ibv_mr *rmr;
	unsigned *rq;		/* completed receives, in arrival order */
	uint32_t *rqlen;
	unsigned rq_head, rq_count;
	int rq_cur;		/* buffer handed out by rd_conn_recv, or -1 */

	unsigned sdepth;	/* send buffers */
	uint8_t *sbuf;
	struct ibv_mr *smr;
	unsigned *sfree;
	unsigned nsfree;

	int credits;		/* messages we may still send */
	unsigned peer_depth;	/* the peer's posted receives */
	unsigned to_return;	/* re-posted receives not yet announced */
	uint64_t recv_seen;

	unsigned max_writes, writes_inflight;
	int timeout_ms;
	struct timespec last_rx;

	rd_conn_sent_fn sent_fn;
	void *sent_ctx;

	int established, disconnected, dead;
	struct rd_conn_info info;
	struct rd_err err;
};

struct rd_listener {
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	unsigned port;
	char where[96];
	struct rd_err err;
};

struct rd_conn_req {
	struct rdma_cm_id *id;
	unsigned peer_depth;
	char peer[80];
};

int rd_conn_setup_verbs(struct rd_conn *c, const struct rd_conn_opts *o);
int rd_cm_wait(struct rdma_event_channel *ch, int timeout_ms, struct rdma_cm_event **ev);
const char *rd_wc_status_explain(int status);

#endif
