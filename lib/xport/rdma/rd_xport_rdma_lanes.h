/* SPDX-License-Identifier: MIT */
/*
 * Private to the RDMA transport: lanes and rails (//lib/xport/rdma:lanes,
 * rd_xport_rdma_lanes.c and rd_xport_rdma_rails.c), above the verbs layer
 * and below connection setup (rd_xport_rdma_cm.c), which puts these in
 * its ops table.
 */
#ifndef RDCP_XPORT_RDMA_RD_XPORT_RDMA_LANES_H
#define RDCP_XPORT_RDMA_RD_XPORT_RDMA_LANES_H

#include "lib/xport/rdma/rd_xport_rdma_priv.h"

/* Rails exchange (rd_conn_ops.rails_out / rails_in; rd_xport_rdma_rails.c). */
int rd_rdma_rails_out(struct rd_conn *c, struct rd_msg_rails *m);
int rd_rdma_rails_in(struct rd_conn *c, const struct rd_msg_rails *m);
/* Client: where lane k goes (lane 0's address, or a rail of the server's),
 * in dst with lane 0's port; 1 if it is one of the server's rails. */
int rd_rdma_lane_dst(struct rd_rdma_conn *rc, unsigned k, struct sockaddr_storage *dst);
/* rd_conn_ops.join_lanes: connect (client) or take (server) the
 * lanes 1..lanes-1 with proof; rd_xport_rdma_lanes.c. */
int rd_rdma_join_lanes(struct rd_conn *c, rd_lane_proof_fn proof, void *ctx, int timeout_ms);
/* Server: accept data sent, the session now waits for its JOINs. */
int rd_lane_reg_open(struct rd_rdma_conn *rc);
void rd_lane_reg_close(struct rd_rdma_conn *rc);
/* Listener: a JOIN request arrived on id; queue it for its session or
 * reject it (unknown session, too many). Takes id either way. */
void rd_lane_route_join(struct rdma_cm_id *id, const struct rd_cm_req *creq);
/* Lanes a client asks for by default on this device: 1 on Soft-RoCE. */
unsigned rd_rdma_default_lanes(struct ibv_context *ctx);

#endif
