// SPDX-License-Identifier: MIT
/*
 * RDMA transport, what connection setup (rd_xport_rdma_cm.c) and the
 * lanes (rd_xport_rdma_lanes.c) both do with a CM id: wait for one event
 * and explain any other, the connection parameters, reject a request.
 * Below both of them: it calls only the verbs layer and librdmacm.
 */
#include "lib/xport/rdma/rd_xport_rdma_priv.h"

#include <string.h>

/* Wait for one specific CM event; anything else is an explained failure. */
int rd_rdma_expect(struct rd_rdma_conn *rc, enum rdma_cm_event_type want, int timeout_ms,
		   const char *what, struct rdma_cm_event **out)
{
	struct rd_conn *c = &rc->c;
	struct rdma_cm_event *ev;
	int r = rd_cm_wait(rc->ech, timeout_ms, &ev);

	if (r == -ETIMEDOUT)
		return rd_err_set(&c->err, RD_ECONN, 0, "%s: no answer over RDMA while %s (%d s)",
				  c->info.peer, what, timeout_ms / 1000);
	if (r)
		return rd_err_set(&c->err, RD_ECONN, -r, "%s: waiting for RDMA CM while %s",
				  c->info.peer, what);
	if (ev->event == want) {
		*out = ev;
		return 0;
	}
	r = ev->status;
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_ERROR:
		rd_err_set(&c->err, RD_ECONN, r < 0 ? -r : 0,
			   "%s: no RDMA device can reach this address (address resolution "
			   "failed; is there an RDMA-capable interface on that subnet? see "
			   "rdcp --list-devices)",
			   c->info.peer);
		break;
	case RDMA_CM_EVENT_ROUTE_ERROR:
		rd_err_set(&c->err, RD_ECONN, r < 0 ? -r : 0, "%s: no RDMA route (route resolution failed)",
			   c->info.peer);
		break;
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		rd_err_set(&c->err, RD_ECONN, 0,
			   "%s: unreachable over RDMA (no reply to the connection request; "
			   "check the address, the link, and that rdcpd runs there)",
			   c->info.peer);
		break;
	case RDMA_CM_EVENT_REJECTED: {
		struct rd_cm_rej rej;
		const void *pd = ev->param.conn.private_data;

		if (pd && !rd_cm_rej_decode(pd, ev->param.conn.private_data_len, &rej)) {
			if (rej.reason == RD_REJ_VERSION)
				rd_err_set(&c->err, RD_EVERSION, 0,
					   "%s: protocol version mismatch: peer speaks %u..%u, "
					   "this rdcp %u..%u; upgrade the older side",
					   c->info.peer, rej.ver_min, rej.ver_max, RD_PROTO_MIN,
					   RD_PROTO_MAX);
			else
				rd_err_set(&c->err, rd_rej_status(rej.reason), 0,
					   "%s refused the connection: %s", c->info.peer,
					   rd_rej_reason_str(rej.reason));
		} else {
			rd_err_set(&c->err, RD_ECONN, 0,
				   "%s: connection refused (nothing listening on that port: is "
				   "rdcpd running there, and is the port right?)",
				   c->info.peer);
		}
		break;
	}
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		rd_err_set(&c->err, RD_ECONN, 0, "RDMA device removed while %s", what);
		break;
	default:
		rd_err_set(&c->err, RD_ECONN, 0, "%s: unexpected RDMA CM event %s while %s",
			   c->info.peer, rdma_event_str(ev->event), what);
		break;
	}
	rdma_ack_cm_event(ev);
	c->dead = 1;
	return -c->err.status;
}

/* The connection parameters, the same both ways. */
void rd_rdma_conn_param(struct rdma_conn_param *p, const void *pdata, uint8_t len)
{
	memset(p, 0, sizeof(*p));
	p->private_data = pdata;
	p->private_data_len = len;
	p->responder_resources = 1;
	p->initiator_depth = 1;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

void rd_rdma_lane_opts(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	uint8_t t = RD_LANE_ACK_TIMEOUT;

	p->retry_count = RD_LANE_RETRY;
	rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof(t));
}

void rd_rdma_reject(struct rdma_cm_id *id, const struct rd_cm_rej *rej)
{
	uint8_t pd[RD_CM_REJ_LEN];

	rd_cm_rej_encode(pd, rej);
	if (rd_rdma_port_up(id))
		rdma_reject(id, pd, sizeof(pd));
	rd_rdma_retire_id(id);
}

void rd_rdma_reject_id(struct rdma_cm_id *id, uint16_t reason)
{
	struct rd_cm_rej rej = {.reason = reason, .ver_min = RD_PROTO_MIN, .ver_max = RD_PROTO_MAX};

	rd_rdma_reject(id, &rej);
}
