// SPDX-License-Identifier: MIT
/*
 * RDMA transport, connection setup with the RDMA connection manager: address and route
 * resolution, connect/accept/reject with rdcp's private data, and every
 * failure turned into a sentence that names the peer and the device.
 */
#include "lib/xport/rd_xport.h"
#include "lib/xport/rdma/rd_xport_rdma.h"
#include "lib/xport/rdma/rd_xport_rdma_lanes.h"
#include "lib/xport/rdma/rd_xport_rdma_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RESOLVE_MS 5000

struct rd_rdma_listener {
	struct rd_listener l;
	struct rdma_event_channel *ech;
	struct rdma_cm_id *id;
	int wild; /* bound to every address */
};

struct rd_rdma_req {
	struct rd_conn_req r;
	struct rdma_cm_id *id;
};

static const struct rd_conn_ops rdma_conn_ops;

static int nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

static void addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	char host[64] = "?";
	unsigned port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const struct sockaddr_in *)(const void *)sa;

		inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
		port = ntohs(s->sin_port);
		snprintf(buf, len, "%s:%u", host, port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)(const void *)sa;

		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		port = ntohs(s->sin6_port);
		snprintf(buf, len, "[%s]:%u", host, port);
	} else {
		snprintf(buf, len, "?");
	}
}

static int open_cm(struct rdma_event_channel **ech, struct rd_err *err)
{
	*ech = rdma_create_event_channel();
	if (!*ech || nonblock((*ech)->fd))
		return rd_err_set(err, RD_ENODEV, errno,
				  "cannot open the RDMA connection manager (/dev/infiniband/rdma_cm); "
				  "is an RDMA device present? see rdcp --list-devices");
	return 0;
}

/*
 * Resolve host's address and route on rc (event channel and id created
 * here). Failing before any packet left (no device, no RDMA route) sets
 * *no_route.
 */
static int resolve(struct rd_rdma_conn *rc, const struct addrinfo *ai, int *no_route,
		   const struct rd_conn_opts *o)
{
	struct rd_conn *c = &rc->c;
	struct rdma_cm_event *ev;
	int ret;

	*no_route = 1;
	ret = open_cm(&rc->ech, &c->err);
	if (ret)
		return ret;
	if (rdma_create_id(rc->ech, &rc->id, rc, RDMA_PS_TCP))
		return rd_err_set(&c->err, RD_ENODEV, errno, "rdma_create_id");
	rd_conn_phase(o, "cm opened");
	if (rdma_resolve_addr(rc->id, NULL, ai->ai_addr, RESOLVE_MS))
		return rd_err_set(&c->err, RD_ECONN, errno,
				  "%s: no RDMA device can reach this address", c->info.peer);
	ret = rd_rdma_expect(rc, RDMA_CM_EVENT_ADDR_RESOLVED, RESOLVE_MS + 1000, "resolving the address",
		     &ev);
	if (ret)
		return ret;
	rdma_ack_cm_event(ev);
	rd_conn_phase(o, "address resolved");
	if (rdma_resolve_route(rc->id, RESOLVE_MS))
		return rd_err_set(&c->err, RD_ECONN, errno, "%s: route resolution", c->info.peer);
	ret = rd_rdma_expect(rc, RDMA_CM_EVENT_ROUTE_RESOLVED, RESOLVE_MS + 1000, "resolving the route",
		     &ev);
	if (ret)
		return ret;
	rdma_ack_cm_event(ev);
	rd_conn_phase(o, "route resolved");
	*no_route = 0;
	return 0;
}

static int rdma_probe(const char *host, char *dev, size_t devlen, char *why, size_t whylen)
{
	struct addrinfo hints, *ai = NULL;
	struct rd_rdma_conn *rc = rd_rdma_conn_new(&rdma_conn_ops);
	int ok = 0, no_route;

	*dev = *why = 0;
	if (!rc)
		return 0;
	rd_xc_peer_name(rc->c.info.peer, sizeof(rc->c.info.peer), host, "0");
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, NULL, &hints, &ai)) {
		snprintf(why, whylen, "cannot resolve host '%s'", host);
	} else if (resolve(rc, ai, &no_route, NULL)) {
		snprintf(why, whylen, "%s", rc->c.err.msg);
	} else {
		snprintf(dev, devlen, "%s", ibv_get_device_name(rc->id->verbs->device));
		ok = 1;
	}
	if (ai)
		freeaddrinfo(ai);
	rc->c.ops->close(&rc->c);
	return ok;
}

static int rdma_connect_(struct rd_conn **out, const char *host, const char *port,
			 const struct rd_conn_opts *o, const struct rd_cm_req *req,
			 struct rd_cm_rep *rep, int *no_route, struct rd_err *err)
{
	struct addrinfo hints, *ai = NULL;
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	uint8_t pdata[RD_CM_JOIN_RAIL_LEN]; /* any request: rd_cm_req_encode() */
	struct rd_cm_req r = *req;
	struct rd_rdma_conn *rc;
	struct rd_conn *c;
	int ret, gai;

	*out = NULL;
	*no_route = 0;
	rc = rd_rdma_conn_new(&rdma_conn_ops);
	if (!rc)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "connection");
	c = &rc->c;
	rd_xc_peer_name(c->info.peer, sizeof(c->info.peer), host, port);

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = o && o->family ? o->family : AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	gai = getaddrinfo(host, port, &hints, &ai);
	if (gai) {
		ret = rd_err_set(&c->err, RD_ECONN, 0, "cannot resolve host '%s'%s: %s", host,
				 hints.ai_family == AF_INET    ? " as IPv4 (-4)"
				 : hints.ai_family == AF_INET6 ? " as IPv6 (-6)"
							       : "",
				 gai_strerror(gai));
		goto out;
	}
	rd_conn_phase(o, "name looked up");
	ret = resolve(rc, ai, no_route, o);
	if (ret)
		goto out;

	if (o && o->rdma_devices && *o->rdma_devices) {
		const char *dev = ibv_get_device_name(rc->id->verbs->device);

		snprintf(rc->devices, sizeof(rc->devices), "%s", o->rdma_devices);
		if (!rd_rdma_devices_has(rc->devices, dev)) {
			ret = rd_err_set(&c->err, RD_EUSAGE, 0,
					 "%s: the route there goes through RDMA device %s, which "
					 "--rdma-devices %s leaves out",
					 c->info.peer, dev, rc->devices);
			goto out;
		}
	}
	/* Lanes: what was asked, else what suits the device (1 on Soft-RoCE). */
	rc->lanes = o && o->lanes ? o->lanes : rd_rdma_default_lanes(rc->id->verbs);
	if (rc->lanes > RD_LANES_MAX)
		rc->lanes = RD_LANES_MAX;
	c->info.lanes_asked = rc->lanes;
	memcpy(&rc->dst, ai->ai_addr, ai->ai_addrlen < sizeof(rc->dst) ? ai->ai_addrlen : sizeof(rc->dst));
	/* Rails: offered with lanes; the server decides (rd_proto.h 1.). */
	c->rails_ok = rc->lanes > 1 && !(o && o->one_rail) && !(r.flags & RD_CMF_JOIN);
	rc->by_hand = o && o->lanes_by_hand;
	ret = rd_rdma_setup_verbs(rc, o, 0);
	if (ret)
		goto out;
	rd_conn_phase(o, "verbs set up");
	r.ctrl_depth = (uint16_t)c->rdepth;
	/* A JOIN only comes from lanes.c, or from tests/hostile playing one. */
	if (!(r.flags & RD_CMF_JOIN))
		r.lanes = (uint16_t)rc->lanes;
	if (c->rails_ok)
		r.flags |= RD_CMF_RAILS;
	rd_rdma_conn_param(&param, pdata, (uint8_t)rd_cm_req_encode(pdata, &r));
	if (rc->lanes > 1)
		rd_rdma_lane_opts(rc->id, &param);
	if (rdma_connect(rc->id, &param)) {
		ret = rd_err_set(&c->err, RD_ECONN, errno, "%s: rdma_connect", c->info.peer);
		goto out;
	}
	ret = rd_rdma_expect(rc, RDMA_CM_EVENT_ESTABLISHED, c->timeout_ms, "connecting", &ev);
	if (ret)
		goto out;
	c->established = 1;
	if (!ev->param.conn.private_data ||
	    rd_cm_rep_decode(ev->param.conn.private_data, ev->param.conn.private_data_len, rep)) {
		rdma_ack_cm_event(ev);
		ret = rd_err_set(&c->err, RD_EPROTO, 0,
				 "%s accepted but is not an rdcp server (bad accept data)",
				 c->info.peer);
		goto out;
	}
	rdma_ack_cm_event(ev);
	ret = rd_xc_check_rep(c, rep);
	if (ret)
		goto out;
	if (rep->lanes > rc->lanes) {
		ret = rd_err_set(&c->err, RD_EPROTO, 0,
				 "%s granted %u lanes, more than the %u asked for", c->info.peer,
				 rep->lanes, rc->lanes);
		goto out;
	}
	rc->lanes = rep->lanes;
	rc->sid = rep->sid;
	rc->seq_on = rc->lanes > 1;
	rc->rails_on = c->rails_ok && rc->lanes > 1 && (rep->flags & RD_CMF_RAILS);
	c->rails_ok = rc->rails_on;
	rd_xc_start(c, rep->ctrl_depth, rep->version);
	rd_conn_phase(o, "connected");
	*out = c;
	rc = NULL;
	ret = 0;
out:
	if (ai)
		freeaddrinfo(ai);
	if (rc) {
		rd_err_copy(err, &rc->c.err);
		rc->c.ops->close(&rc->c);
	}
	return ret;
}

static const struct rd_listener_ops rdma_listener_ops;

/*
 * Bind rl->id to sa. For the IPv6 wildcard, v6only is turned off first, so
 * that one listener takes IPv4 requests too (the kernel's default follows
 * net.ipv6.bindv6only). Returns 0 or an errno value.
 */
static int bind_id(struct rd_rdma_listener *rl, const struct sockaddr *sa, int dual)
{
	int off = 0;

	if (rdma_create_id(rl->ech, &rl->id, rl, RDMA_PS_TCP))
		return errno ? errno : ENODEV;
	if (dual && rdma_set_option(rl->id, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &off,
				    sizeof(off)))
		goto fail;
	if (rdma_bind_addr(rl->id, (struct sockaddr *)(uintptr_t)sa))
		goto fail;
	return 0;
fail:
	off = errno ? errno : EINVAL;
	rdma_destroy_id(rl->id);
	rl->id = NULL;
	return off;
}

/* addr NULL or "": [::] with v6only off, or 0.0.0.0 where IPv6 is missing. */
static int rdma_listen_(struct rd_listener **out, const char *addr, const char *port,
			int backlog, struct rd_err *err)
{
	struct addrinfo hints, *ai = NULL;
	struct rd_rdma_listener *rl;
	int ret = 0, gai, e, any = !addr || !*addr;
	size_t n;

	*out = NULL;
	rl = calloc(1, sizeof(*rl));
	if (!rl)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "listener");
	rl->l.ops = &rdma_listener_ops;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICHOST;
	gai = getaddrinfo(any ? "::" : addr, port, &hints, &ai);
	if (gai) {
		ret = rd_err_set(err, RD_EUSAGE, 0, "cannot resolve listen address '%s' port '%s': %s",
				 any ? "::" : addr, port, gai_strerror(gai));
		goto out;
	}
	ret = open_cm(&rl->ech, err);
	if (ret)
		goto out;
	e = bind_id(rl, ai->ai_addr, any);
	if (e && any) {
		/* No IPv6 here (disabled, or the kernel lacks it): IPv4 alone. */
		struct sockaddr_in v4 = {.sin_family = AF_INET};

		v4.sin_port = ((struct sockaddr_in6 *)(void *)ai->ai_addr)->sin6_port;
		e = bind_id(rl, (struct sockaddr *)&v4, 0);
	}
	if (e) {
		ret = rd_err_set(err, e == EADDRINUSE ? RD_EUSAGE : RD_ENODEV, e,
				 "cannot listen on %s port %s over RDMA%s", any ? "*" : addr, port,
				 e == EADDRNOTAVAIL || e == ENODEV
					 ? " (no RDMA device has that address)"
					 : "");
		goto out;
	}
	if (rdma_listen(rl->id, backlog > 0 ? backlog : 16)) {
		ret = rd_err_set(err, RD_ECONN, errno, "rdma_listen on port %s", port);
		goto out;
	}
	rl->l.port = ntohs(rdma_get_src_port(rl->id));
	rl->wild = any;
	addr_str(rdma_get_local_addr(rl->id), rl->l.where, sizeof(rl->l.where));
	n = strlen(rl->l.where);
	if (any)
		snprintf(rl->l.where + n, sizeof(rl->l.where) - n, " (%s)",
			 rdma_get_local_addr(rl->id)->sa_family == AF_INET6
				 ? "IPv6 and IPv4"
				 : "IPv4 only: no IPv6 here");
	*out = &rl->l;
	rl = NULL;
out:
	if (ai)
		freeaddrinfo(ai);
	if (rl)
		rl->l.ops->close(&rl->l);
	return ret;
}

static int rdma_next(struct rd_listener *l, int timeout_ms, struct rd_conn_req **req,
		     struct rd_cm_req *creq)
{
	struct rd_rdma_listener *rl = (struct rd_rdma_listener *)l;
	struct rdma_cm_event *ev;
	struct rd_rdma_req *r;
	int ret;

	*req = NULL;
	for (;;) {
		ret = rd_cm_wait(rl->ech, timeout_ms, &ev);
		if (ret == -ETIMEDOUT)
			return 1;
		if (ret)
			return rd_err_set(&l->err, RD_ECONN, -ret, "waiting for connections");
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			/* Events of ids not yet migrated, or of the listener itself. */
			if (ev->event == RDMA_CM_EVENT_DEVICE_REMOVAL) {
				rdma_ack_cm_event(ev);
				return rd_err_set(&l->err, RD_ENODEV, 0, "RDMA device removed");
			}
			rdma_ack_cm_event(ev);
			continue;
		}
		r = calloc(1, sizeof(*r));
		if (!r) {
			rd_rdma_reject_id(ev->id, RD_REJ_BUSY);
			rdma_ack_cm_event(ev);
			continue;
		}
		r->r.ops = &rdma_listener_ops;
		r->id = ev->id;
		addr_str(rdma_get_peer_addr(ev->id), r->r.peer, sizeof(r->r.peer));
		if (!ev->param.conn.private_data ||
		    rd_cm_req_decode(ev->param.conn.private_data, ev->param.conn.private_data_len,
				     creq) ||
		    !creq->ctrl_depth) {
			rdma_ack_cm_event(ev);
			rd_rdma_reject_id(r->id, RD_REJ_BADREQ);
			free(r);
			continue;
		}
		rdma_ack_cm_event(ev);
		if (creq->flags & RD_CMF_JOIN) {
			/* An extra lane: its session takes it, or nobody does. */
			rd_lane_route_join(r->id, creq);
			free(r);
			continue;
		}
		r->r.peer_depth = creq->ctrl_depth;
		r->r.lanes = creq->lanes;
		r->r.flags = creq->flags;
		r->r.wild = rl->wild;
		*req = &r->r;
		return 0;
	}
}

static void rdma_reject_(struct rd_conn_req *req, const struct rd_cm_rej *rej)
{
	struct rd_rdma_req *r = (struct rd_rdma_req *)req;

	rd_rdma_reject(r->id, rej);
	free(r);
}

static int rdma_accept_(struct rd_conn_req *req, const struct rd_conn_opts *o,
			const struct rd_cm_rep *rep, struct rd_conn **out, struct rd_err *err)
{
	struct rd_rdma_req *rq = (struct rd_rdma_req *)req;
	struct rdma_conn_param param;
	struct rdma_cm_event *ev;
	uint8_t pdata[RD_CM_REP_LANES_LEN];
	struct rd_cm_rep p = *rep;
	struct rd_rdma_conn *rc;
	struct rd_conn *c;
	unsigned peer_depth = req->peer_depth, asked = req->lanes;
	int ret, wait_ms, rails = (req->flags & RD_CMF_RAILS) && req->wild && !(o && o->one_rail);

	*out = NULL;
	rc = rd_rdma_conn_new(&rdma_conn_ops);
	if (!rc) {
		struct rd_cm_rej rej = {.reason = RD_REJ_BUSY};

		rdma_reject_(req, &rej);
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "connection");
	}
	c = &rc->c;
	snprintf(c->info.peer, sizeof(c->info.peer), "%s", req->peer);
	rc->id = rq->id;
	rc->id->context = rc;
	free(rq);
	rc->ech = rdma_create_event_channel();
	if (!rc->ech || nonblock(rc->ech->fd) || rdma_migrate_id(rc->id, rc->ech)) {
		ret = rd_err_set(&c->err, RD_ENOMEM, errno, "%s: own event channel", c->info.peer);
		goto out;
	}
	/*
	 * The server decides the lanes: at most its cap, at most asked; one
	 * below version 8, whose JOIN proofs anyone who saw one could replay
	 * (lib/proto/rd_proto.h section 1, Lane proofs).
	 */
	rc->lanes = rd_lanes_grant(rep->version >= RD_PROTO_LANE_PROOF ? asked : 1,
				   o && o->lanes ? o->lanes : RD_LANES_DEFAULT_CAP);
	rc->lanes_from = o ? o->lanes_from : NULL;
	/* Rails: only asked for, with lanes, and when JOINs may come to any
	 * address of this host (a listener on one address hears only it). */
	c->rails_ok = rails && rc->lanes > 1;
	rc->rails_on = c->rails_ok;
	/* Before TLS: only what the handshake needs (issue 27 item 3). */
	ret = rd_rdma_setup_verbs(rc, o, 1);
	if (ret)
		goto out;
	p.ctrl_depth = (uint16_t)c->rdepth;
	p.lanes = (uint16_t)rc->lanes;
	p.rail = 0;
	if (rc->rails_on)
		p.flags |= RD_CMF_RAILS;
	if (rc->lanes > 1) {
		ret = rd_lane_reg_open(rc);
		if (ret)
			goto out;
		p.sid = rc->sid;
		rc->seq_on = 1;
	}
	rd_rdma_conn_param(&param, pdata, (uint8_t)rd_cm_rep_encode(pdata, &p));
	if (rc->lanes > 1)
		rd_rdma_lane_opts(rc->id, &param);
	if (rdma_accept(rc->id, &param)) {
		ret = rd_err_set(&c->err, RD_ECONN, errno, "%s: rdma_accept", c->info.peer);
		goto out;
	}
	wait_ms = o && o->accept_timeout_ms > 0 ? o->accept_timeout_ms : c->timeout_ms;
	ret = rd_cm_wait(rc->ech, wait_ms, &ev);
	if (ret || ev->event != RDMA_CM_EVENT_ESTABLISHED) {
		if (!ret)
			rdma_ack_cm_event(ev);
		ret = rd_err_set(&c->err, RD_ECONN, 0,
				 "%s: connection not established within %d.%d s of the accept",
				 c->info.peer, wait_ms / 1000, wait_ms % 1000 / 100);
		goto out;
	}
	rdma_ack_cm_event(ev);
	rd_xc_start(c, peer_depth, rep->version);
	*out = c;
	rc = NULL;
	ret = 0;
out:
	if (rc) {
		rd_err_copy(err, &rc->c.err);
		rc->c.ops->close(&rc->c);
	}
	return ret;
}

static void rdma_listener_close(struct rd_listener *l)
{
	struct rd_rdma_listener *rl = (struct rd_rdma_listener *)l;

	if (rl->id)
		rdma_destroy_id(rl->id);
	if (rl->ech)
		rdma_destroy_event_channel(rl->ech);
	free(rl);
}

static int rdma_listener_fd(const struct rd_listener *l)
{
	return ((const struct rd_rdma_listener *)l)->ech->fd;
}

static const struct rd_listener_ops rdma_listener_ops = {
	.name = "rdma",
	.fd = rdma_listener_fd,
	.next = rdma_next,
	.accept = rdma_accept_,
	.reject = rdma_reject_,
	.close = rdma_listener_close,
};

/* rd_conn_ops.close: the lanes' registration first (a server's session
 * waiting for JOINs), then the verbs. */
static void rdma_close(struct rd_conn *c)
{
	rd_lane_reg_close((struct rd_rdma_conn *)c);
	rd_rdma_close(c);
}

/*
 * The connection as the seam sees it: the data path of the verbs layer
 * (rd_xport_rdma.c), the lanes and rails above it, the credit layer below.
 */
static const struct rd_conn_ops rdma_conn_ops = {
	.name = "rdma",
	.lanes = rd_rdma_lanes,
	.join_lanes = rd_rdma_join_lanes,
	.authenticated = rd_rdma_authenticated,
	.lane_bytes = rd_rdma_lane_bytes,
	.lane_rail = rd_rdma_lane_rail,
	.rails_out = rd_rdma_rails_out,
	.rails_in = rd_rdma_rails_in,
	.poll = rd_rdma_poll,
	.send = rd_xc_send,
	.can_send = rd_xc_can_send,
	.write_send = rd_xc_write_send,
	.recv = rd_xc_recv,
	.recv_done = rd_xc_recv_done,
	.reg = rd_rdma_reg,
	.dereg = rd_rdma_dereg,
	.flush = rd_rdma_flush,
	.close = rdma_close,
	.can_xmit = rd_rdma_can_xmit,
	.xmit = rd_rdma_xmit,
	.repost = rd_rdma_post_recv,
};

const struct rd_xport rd_xport_rdma = {
	.name = "rdma",
	.connect = rdma_connect_,
	.listen = rdma_listen_,
	.probe = rdma_probe,
	.hold_devices = rd_rdma_hold_devices,
};
