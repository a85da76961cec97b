// SPDX-License-Identifier: MIT
/*
 * rdcp_evil's RDMA connection cases, against rdcpd:
 *
 *   rdcp_evil join HOST PORT
 *	Extra lanes (RC QPs) that do not belong (lib/proto/rd_proto.h
 *	section 1, Lanes and Lane proofs): (1) a JOIN naming a session that
 *	does not exist; (2) a real session asking for 2 lanes, whose sid this
 *	peer learns from the accept data, and a JOIN for it with a made-up
 *	proof, sent before the session's own TLS handshake (it waits at the
 *	server), while the session then finishes TLS and joins its own lane 1
 *	with the right proof; (3) a session of 3 lanes whose JOINs this peer
 *	sends by hand, as someone who saw them on the wire would replay them:
 *	lane 2 with lane 1's proof, lane 1 from rail 1 with the proof from
 *	rail 0, then lane 1 right, lane 1 again (the same JOIN twice), lane 2
 *	right. Exit 0 only if every stranger and replay was refused as
 *	unauthenticated and the real lanes got in; 1 if a stranger or a
 *	replay got in; 2 on anything else.
 *
 *   rdcp_evil flood HOST PORT N SECONDS
 *	N well-formed connection requests that never complete: the server's
 *	accept (CONNECT_RESPONSE here) is never answered with the RTU that
 *	would establish the connection. Prints "holding N of N" once every
 *	request has its answer (accepted or refused), then how long the
 *	server held each accepted one before it gave up on it (its reject).
 *	Exit 0 if the server dropped every accepted request within SECONDS
 *	of accepting it, 1 if one was still held, 2 if none was accepted or
 *	something else failed.
 */
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <rdma/rdma_cma.h>

#include "lib/proto/rd_proto.h"
#include "tests/hostile/rdcp_evil.h"

struct join_try {
	const char *host, *port;
	uint64_t sid;
	unsigned lane, rail;
	uint8_t proof[RD_LANE_PROOF_LEN]; /* all zero: a random one */
	int status;			  /* 0: accepted (bad), else the RD_E* of the refusal */
	char msg[256];
	struct rd_conn *c; /* what got in, kept open until join_done() */
};

/* Connect as lane j->lane of session j->sid with j->proof. */
static void *join_try(void *arg)
{
	static const uint8_t zero[RD_LANE_PROOF_LEN];
	struct join_try *j = arg;
	struct rd_cm_req req;
	struct rd_cm_rep rep;
	struct rd_conn_opts co;
	struct rd_err err;

	memset(&req, 0, sizeof(req));
	memset(&co, 0, sizeof(co));
	memset(&err, 0, sizeof(err));
	req.ver_min = req.ver_max = RD_PROTO_MAX;
	req.flags = RD_CMF_JOIN | (j->rail ? RD_CMF_RAILS : 0);
	req.lanes = (uint16_t)j->lane;
	req.sid = j->sid;
	req.rail = (uint8_t)j->rail;
	memcpy(req.proof, j->proof, RD_LANE_PROOF_LEN);
	if (!memcmp(req.proof, zero, sizeof(zero)) &&
	    getrandom(req.proof, sizeof(req.proof), 0) != (ssize_t)sizeof(req.proof))
		memset(req.proof, 0x42, sizeof(req.proof));
	co.transport = RD_XPORT_RDMA;
	co.timeout_ms = CASE_TIMEOUT_S * 1000;
	/* the accept of a JOIN names the session's lanes: take any number */
	co.lanes = RD_LANES_MAX;
	if (rd_conn_connect(&j->c, j->host, j->port, &co, &req, &rep, &err)) {
		j->status = err.status ? err.status : RD_ECONN;
		snprintf(j->msg, sizeof(j->msg), "refused: %s (%s)", err.msg,
			 rd_status_name(j->status));
	} else {
		j->status = 0;
		snprintf(j->msg, sizeof(j->msg), "ACCEPTED");
	}
	return NULL;
}

static void join_done(struct join_try *j)
{
	rd_conn_close(j->c);
	j->c = NULL;
}

/* A session of `lanes` lanes as a client (lanes joined by the library
 * unless by_hand); *rep gets the accept data. */
static int session(const char *host, const char *port, unsigned lanes, int by_hand,
		   struct rd_conn **c, struct rd_cm_rep *rep)
{
	struct rd_cm_req req;
	struct rd_conn_opts co;
	struct rd_err err;

	memset(&req, 0, sizeof(req));
	memset(&co, 0, sizeof(co));
	memset(&err, 0, sizeof(err));
	req.ver_min = RD_PROTO_MIN;
	req.ver_max = RD_PROTO_MAX;
	co.transport = RD_XPORT_RDMA;
	co.timeout_ms = CASE_TIMEOUT_S * 1000;
	co.lanes = lanes;
	co.one_rail = 1;
	co.lanes_by_hand = by_hand;
	if (rd_conn_connect(c, host, port, &co, &req, rep, &err)) {
		printf("join: no session: %s (%s)\n", err.msg, rd_status_name(err.status));
		return 2;
	}
	printf("join: a session of protocol %u granted %u lanes\n", rep->version, rep->lanes);
	return rep->lanes == lanes ? 0 : 2;
}

/*
 * (3) The JOINs of a 3-lane session, replayed as an observer would: each
 * case as { lane, rail, whose proof (lane, rail), must get in }.
 */
static int replays(const char *host, const char *port)
{
	static const struct {
		const char *what;
		unsigned lane, rail, plane, prail;
		int in;
	} cs[] = {
	    {"lane 2 with lane 1's proof", 2, 0, 1, 0, 0},
	    {"lane 1 from rail 1 with the proof from rail 0", 1, 1, 1, 0, 0},
	    {"lane 1 with its proof", 1, 0, 1, 0, 1},
	    {"lane 1 again, the same JOIN (replayed)", 1, 0, 1, 0, 0},
	    {"lane 2 with its proof", 2, 0, 2, 0, 1},
	};
	struct join_try j[sizeof(cs) / sizeof(cs[0])];
	struct rd_conn *c = NULL;
	struct rd_cm_rep rep;
	struct rd_err err;
	unsigned i;
	int r, bad = 0, odd = 0;

	r = session(host, port, 3, 1, &c, &rep);
	if (r) {
		rd_conn_close(c);
		return r;
	}
	memset(&err, 0, sizeof(err));
	if (client_tls(&c, &err)) {
		printf("join: TLS failed: %s\n", err.msg);
		rd_conn_close(c);
		return 2;
	}
	memset(j, 0, sizeof(j));
	for (i = 0; i < sizeof(cs) / sizeof(cs[0]); i++) {
		j[i].host = host;
		j[i].port = port;
		j[i].sid = rep.sid;
		j[i].lane = cs[i].lane;
		j[i].rail = cs[i].rail;
		if (rd_conn_lane_proof(c, rep.sid, cs[i].plane, cs[i].prail, j[i].proof)) {
			printf("join: no proof: %s\n", rd_conn_err(c)->msg);
			odd = 1;
			break;
		}
		join_try(&j[i]);
		printf("join: replay: %s: %s\n", cs[i].what, j[i].msg);
		if (cs[i].in && j[i].status)
			odd = 1;
		if (!cs[i].in && !j[i].status)
			bad = 1;
		else if (!cs[i].in && j[i].status != RD_EAUTH)
			odd = 1;
	}
	for (i = 0; i < sizeof(cs) / sizeof(cs[0]); i++)
		join_done(&j[i]);
	rd_conn_close(c);
	return bad ? 1 : odd ? 2 : 0;
}

int evil_join(const char *host, const char *port)
{
	struct join_try j1, j2;
	struct rd_conn *c = NULL;
	struct rd_cm_rep rep;
	struct rd_err err;
	pthread_t th;
	unsigned lanes = 0;
	int r, r3, started;

	/* 1. A session that does not exist. */
	memset(&j1, 0, sizeof(j1));
	j1.host = host;
	j1.port = port;
	j1.lane = 1;
	if (getrandom(&j1.sid, sizeof(j1.sid), 0) != (ssize_t)sizeof(j1.sid))
		j1.sid = 0x5eed;
	join_try(&j1);
	join_done(&j1);
	printf("join: unknown session: %s\n", j1.msg);

	/* 2. A real session's sid with a made-up proof. */
	r = session(host, port, 2, 0, &c, &rep);
	if (r) {
		rd_conn_close(c);
		return r;
	}
	memset(&j2, 0, sizeof(j2));
	j2.host = host;
	j2.port = port;
	j2.sid = rep.sid;
	j2.lane = 1;
	started = !pthread_create(&th, NULL, join_try, &j2);
	if (started) {
		/* Let the stranger's JOIN reach the server first (not needed for
		 * the verdict: a late one is refused as well). */
		struct timespec ts = {0, 300 * 1000 * 1000};

		nanosleep(&ts, NULL);
	}
	memset(&err, 0, sizeof(err));
	r = client_tls(&c, &err);
	if (!r)
		lanes = rd_conn_info(c)->lanes;
	if (started)
		pthread_join(th, NULL);
	join_done(&j2);
	printf("join: right sid, wrong proof: %s\n", started ? j2.msg : "no thread");
	printf("join: the real session: %s, %u lanes\n", r ? err.msg : "up", lanes);
	rd_conn_close(c);

	/* 3. Replays. */
	r3 = replays(host, port);
	if (j1.status == 0 || (started && j2.status == 0) || r3 == 1)
		return 1;
	return j1.status == RD_EAUTH && started && j2.status == RD_EAUTH && !r && lanes == 2 && !r3
		   ? 0
		   : 2;
}

/* --- flood: connection requests that never complete --- */

struct flood_req {
	struct rdma_cm_id *id;
	double asked, accepted, dropped; /* when; 0: not (yet) */
	const char *end;		 /* how it ended, if it did */
};

static void flood_connect(struct flood_req *f, unsigned i)
{
	uint8_t pd[RD_CM_JOIN_RAIL_LEN];
	struct rdma_conn_param p;
	struct rd_cm_req q;

	memset(&q, 0, sizeof(q));
	q.ver_min = RD_PROTO_MIN;
	q.ver_max = RD_PROTO_MAX;
	q.ctrl_depth = 64;
	q.lanes = 1;
	memset(&p, 0, sizeof(p));
	p.private_data = pd;
	p.private_data_len = (uint8_t)rd_cm_req_encode(pd, &q);
	p.responder_resources = 1;
	p.initiator_depth = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	p.qp_num = 0x100 + i; /* there is no queue pair behind it */
	if (rdma_connect(f->id, &p))
		f->end = "rdma_connect failed";
	else
		f->asked = now_s();
}

/* One CM event of request i. */
static void flood_event(struct flood_req *f, unsigned i, enum rdma_cm_event_type t)
{
	switch (t) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(f->id, 2000))
			f->end = "route";
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		flood_connect(f, i);
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
		f->accepted = now_s(); /* and never a word more from here */
		break;
	case RDMA_CM_EVENT_REJECTED:
		if (f->accepted)
			f->dropped = now_s();
		f->end = f->accepted ? "dropped" : "refused";
		break;
	default:
		if (f->accepted && !f->dropped)
			f->dropped = now_s();
		f->end = rdma_event_str(t);
		break;
	}
}

int evil_flood(const char *host, const char *port, int n, double secs)
{
	struct addrinfo hints, *ai = NULL;
	struct rdma_event_channel *ech;
	struct rdma_cm_event *ev;
	struct flood_req *f;
	double t0 = now_s(), held, most = 0;
	int i, answered = 0, accepted = 0, dropped = 0, said = 0, ret = 2;

	if (n < 1 || n > 1024 || secs <= 0) {
		fprintf(stderr, "rdcp_evil: flood: 1..1024 requests, SECONDS > 0\n");
		return 2;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	f = calloc((size_t)n, sizeof(*f));
	ech = rdma_create_event_channel();
	if (!f || !ech || getaddrinfo(host, port, &hints, &ai)) {
		printf("flood: cannot start (no memory, RDMA CM or address)\n");
		goto out;
	}
	for (i = 0; i < n; i++)
		if (rdma_create_id(ech, &f[i].id, (void *)(intptr_t)i, RDMA_PS_TCP) ||
		    rdma_resolve_addr(f[i].id, NULL, ai->ai_addr, 2000)) {
			printf("flood: request %d: cannot resolve %s\n", i, host);
			goto out;
		}
	while (now_s() - t0 < secs + 10) {
		struct pollfd p = {.fd = ech->fd, .events = POLLIN};

		answered = accepted = dropped = 0;
		for (i = 0; i < n; i++) {
			answered += f[i].accepted || f[i].end;
			accepted += f[i].accepted != 0;
			dropped += f[i].dropped != 0;
		}
		if (answered == n && !said) {
			printf("flood: holding %d of %d (the server accepted %d, refused the rest) "
			       "after %.1f s\n",
			       accepted, n, accepted, now_s() - t0);
			said = 1;
		}
		if (said && dropped == accepted)
			break;
		if (poll(&p, 1, 100) <= 0 || rdma_get_cm_event(ech, &ev))
			continue;
		i = (int)(intptr_t)ev->id->context;
		flood_event(&f[i], (unsigned)i, ev->event);
		rdma_ack_cm_event(ev);
	}
	for (i = 0; i < n; i++) {
		if (!f[i].accepted)
			continue;
		held = (f[i].dropped ? f[i].dropped : now_s()) - f[i].accepted;
		if (held > most)
			most = held;
		printf("flood: request %d: accepted %.1f s after it was sent, %s after %.1f s\n", i,
		       f[i].accepted - f[i].asked, f[i].dropped ? "dropped" : "STILL HELD", held);
	}
	printf("flood: %d accepted, %d dropped; the longest held %.1f s (limit %.1f s)\n", accepted,
	       dropped, most, secs);
	ret = !accepted ? 2 : dropped == accepted && most <= secs ? 0 : 1;
out:
	for (i = 0; f && i < n; i++)
		if (f[i].id)
			rdma_destroy_id(f[i].id);
	if (ech)
		rdma_destroy_event_channel(ech);
	if (ai)
		freeaddrinfo(ai);
	free(f);
	return ret;
}
