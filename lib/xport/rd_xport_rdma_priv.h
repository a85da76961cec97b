/* SPDX-License-Identifier: MIT */
/* Private to the RDMA transport (lib/xport/rd_xport_rdma*.c). */
#ifndef RDCP_XPORT_RD_XPORT_RDMA_PRIV_H
#define RDCP_XPORT_RD_XPORT_RDMA_PRIV_H

#include <arpa/inet.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "lib/xport/rd_xport_impl.h"

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

extern const struct rd_conn_ops rd_rdma_conn_ops;

struct rd_rdma_conn *rd_rdma_conn_new(void);
int rd_rdma_setup_verbs(struct rd_rdma_conn *rc, const struct rd_conn_opts *o);
int rd_cm_wait(struct rdma_event_channel *ch, int timeout_ms, struct rdma_cm_event **ev);
const char *rd_wc_status_explain(int status);

#endif
