// SPDX-License-Identifier: MIT
/*
 * The TLS layer: a filter connection (rd_xport_impl.h) on top of any
 * transport. rd_conn_start_tls() runs the TLS 1.3 handshake in RD_MSG_TLS
 * frames over the lower connection, then every message the layers above
 * send is sealed into one record in one TLS frame, and every frame that
 * arrives must be one such record (section 4 of lib/proto/rd_proto.h).
 * Bulk writes pass through untouched: their integrity is the chunk tag's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "lib/tls/rd_tls.h"
#include "lib/xport/conn/rd_xport_impl.h"

struct tls_conn {
	struct rd_conn c; /* first: the filter head */
	struct rd_tls *t;
	uint8_t frame[RD_CTRL_MAX];
	uint8_t plain[RD_MSG_MAX];
	size_t plain_len;
	int have_plain;
	/* Lane proofs (version 8): the server's nonce for this session. */
	int lane_bound;
	uint8_t lane_nonce[RD_LANE_NONCE_LEN];
};

static void put_hdr(uint8_t *f, size_t payload)
{
	f[0] = RD_MSG_TLS;
	f[1] = 0;
	f[2] = 0;
	f[3] = 0;
	f[4] = (uint8_t)(payload >> 24);
	f[5] = (uint8_t)(payload >> 16);
	f[6] = (uint8_t)(payload >> 8);
	f[7] = (uint8_t)payload;
}

/* Fail the filter with the lower connection's or the TLS layer's reason. */
static int fail_from(struct tls_conn *tc, const struct rd_err *e, int r)
{
	rd_err_copy(&tc->c.err, e);
	tc->c.dead = 1;
	return r < 0 ? r : -RD_ECONN;
}

/* Seal msg and hand the frame to lower: by then lower must take it. */
static int seal(struct tls_conn *tc, const void *msg, size_t len, size_t *flen)
{
	size_t n;
	int r;

	if (len < RD_HDR_LEN || len > RD_MSG_MAX)
		return rd_err_set(&tc->c.err, RD_EUSAGE, 0, "control message of %zu bytes", len);
	r = rd_tls_seal(tc->t, msg, len);
	if (r)
		return fail_from(tc, rd_tls_err(tc->t), r);
	n = rd_tls_out(tc->t, tc->frame + RD_HDR_LEN, sizeof(tc->frame) - RD_HDR_LEN);
	if (!n || rd_tls_out_pending(tc->t))
		return rd_err_set(&tc->c.err, RD_EUSAGE, 0, "sealed message does not fit a frame");
	put_hdr(tc->frame, n);
	*flen = RD_HDR_LEN + n;
	return 0;
}

static int tls_can_send(const struct rd_conn *c)
{
	return !c->dead && rd_conn_can_send(c->lower);
}

static int tls_send(struct rd_conn *c, const void *msg, size_t len)
{
	struct tls_conn *tc = (struct tls_conn *)c;
	size_t flen;
	int r;

	if (c->dead)
		return -c->err.status;
	if (!rd_conn_can_send(c->lower))
		return RD_XPORT_BUSY;
	r = seal(tc, msg, len, &flen);
	if (r)
		return r;
	r = rd_conn_send(c->lower, tc->frame, flen);
	/* A sealed record cannot be taken back: busy here would desync TLS. */
	return r ? fail_from(tc, rd_conn_err(c->lower), r == RD_XPORT_BUSY ? -RD_ECONN : r) : 0;
}

static int tls_write_send(struct rd_conn *c, const struct rd_xwrite *w, const void *msg,
			  size_t msglen)
{
	struct tls_conn *tc = (struct tls_conn *)c;
	struct rd_conn *lo = c->lower;
	size_t flen;
	int r;

	if (c->dead)
		return -c->err.status;
	if (!rd_conn_can_send(lo) || (w->len && lo->writes_inflight >= lo->max_writes))
		return RD_XPORT_BUSY;
	r = seal(tc, msg, msglen, &flen);
	if (r)
		return r;
	r = rd_conn_write_send(lo, w->mr, w->off, w->len, w->raddr, w->rk, tc->frame, flen,
			       w->cookie);
	return r ? fail_from(tc, rd_conn_err(lo), r == RD_XPORT_BUSY ? -RD_ECONN : r) : 0;
}

static int tls_recv(struct rd_conn *c, const uint8_t **msg, size_t *len)
{
	struct tls_conn *tc = (struct tls_conn *)c;
	const uint8_t *m;
	size_t l;
	int r;

	if (tc->have_plain) {
		*msg = tc->plain;
		*len = tc->plain_len;
		return 1;
	}
	r = rd_conn_recv(c->lower, &m, &l);
	if (r <= 0)
		return r;
	if (l < RD_HDR_LEN || m[0] != RD_MSG_TLS) {
		rd_conn_recv_done(c->lower);
		c->dead = 1;
		return rd_err_set(&c->err, RD_EPROTO, 0,
				  "%s broke the protocol: a message in clear after TLS started",
				  c->info.peer);
	}
	r = rd_tls_open(tc->t, m + RD_HDR_LEN, l - RD_HDR_LEN, tc->plain, sizeof(tc->plain),
			&tc->plain_len);
	rd_conn_recv_done(c->lower);
	if (r)
		return fail_from(tc, rd_tls_err(tc->t), r);
	tc->have_plain = 1;
	*msg = tc->plain;
	*len = tc->plain_len;
	return 1;
}

static int tls_recv_done(struct rd_conn *c)
{
	((struct tls_conn *)c)->have_plain = 0;
	return 0;
}

static int tls_poll(struct rd_conn *c, int timeout_ms)
{
	int r = rd_conn_poll(c->lower, timeout_ms);

	return r < 0 ? fail_from((struct tls_conn *)c, rd_conn_err(c->lower), r) : r;
}

static int tls_reg(struct rd_conn *c, void *buf, size_t len, int remote_write, struct rd_mr *mr)
{
	int r = rd_conn_reg(c->lower, buf, len, remote_write, mr);

	if (r)
		rd_err_copy(&c->err, rd_conn_err(c->lower));
	return r;
}

static void tls_dereg(struct rd_conn *c, struct rd_mr *mr)
{
	rd_conn_dereg(c->lower, mr);
}

static int tls_flush(struct rd_conn *c, int timeout_ms)
{
	int r = rd_conn_flush(c->lower, timeout_ms);

	if (r < 0)
		rd_err_copy(&c->err, rd_conn_err(c->lower));
	return r;
}

static void tls_close(struct rd_conn *c)
{
	struct tls_conn *tc = (struct tls_conn *)c;

	rd_tls_free(tc->t);
	rd_conn_close(c->lower);
	free(tc);
}

static const struct rd_conn_ops tls_ops = {
    .name = "tls",
    .poll = tls_poll,
    .send = tls_send,
    .can_send = tls_can_send,
    .write_send = tls_write_send,
    .recv = tls_recv,
    .recv_done = tls_recv_done,
    .reg = tls_reg,
    .dereg = tls_dereg,
    .flush = tls_flush,
    .close = tls_close,
};

static long ms_left(const struct timespec *start, int timeout_ms)
{
	return timeout_ms < 0 ? 1000 : timeout_ms - rd_xc_ms_since(start);
}

/* Send what the handshake produced, frame by frame. */
static int hs_flush(struct tls_conn *tc, struct rd_conn *lo, const struct timespec *t0,
		    int timeout_ms)
{
	size_t n;
	int r;

	while (rd_tls_out_pending(tc->t)) {
		if (!rd_conn_can_send(lo)) {
			if (ms_left(t0, timeout_ms) <= 0)
				return -RD_ETIMEOUT;
			r = rd_conn_poll(lo, 50);
			if (r < 0 && r != -RD_ETIMEOUT)
				return r;
			continue;
		}
		n = rd_tls_out(tc->t, tc->frame + RD_HDR_LEN, sizeof(tc->frame) - RD_HDR_LEN);
		put_hdr(tc->frame, n);
		r = rd_conn_send(lo, tc->frame, RD_HDR_LEN + n);
		if (r)
			return r < 0 ? r : -RD_ECONN;
	}
	return 0;
}

/* Feed arriving frames to the handshake until it is done (1) or fails. */
static int hs_feed(struct tls_conn *tc, struct rd_conn *lo)
{
	const uint8_t *m;
	size_t l;
	int r = 0;

	while (r == 0 && rd_conn_recv(lo, &m, &l) == 1) {
		if (l < RD_HDR_LEN || m[0] != RD_MSG_TLS) {
			rd_conn_recv_done(lo);
			return rd_err_set(&tc->c.err, RD_EPROTO, 0,
					  "%s broke the protocol: %s before the TLS handshake "
					  "finished (an rdcp older than protocol %d?)",
					  lo->info.peer, rd_msg_type_name(m[0]), RD_PROTO_MIN);
		}
		r = rd_tls_handshake(tc->t, m + RD_HDR_LEN, l - RD_HDR_LEN);
		rd_conn_recv_done(lo);
		if (r < 0)
			return rd_err_copy(&tc->c.err, rd_tls_err(tc->t));
	}
	return r;
}

/* Seal and send m (a RAILS or LANES message, before the session's first). */
static int send_early(struct tls_conn *tc, struct rd_conn *lo, struct rd_msg *m)
{
	struct rd_conn *c = &tc->c;
	uint8_t buf[RD_HDR_LEN + 1 + 17 * RD_RAILS_MAX + RD_LANE_NONCE_LEN];
	int n, r;

	n = rd_msg_encode(buf, sizeof(buf), m);
	if (n < 0)
		return rd_err_set(&c->err, RD_EUSAGE, 0, "%s message does not encode",
				  rd_msg_type_name(m->hdr.type));
	r = tls_send(c, buf, (size_t)n);
	if (r)
		return r < 0 ? r
			     : rd_err_set(&c->err, RD_ECONN, 0, "%s: no credit for %s",
					  lo->info.peer, rd_msg_type_name(m->hdr.type));
	return 0;
}

/* Wait for the message of type `type` (RAILS, LANES) into *m: nothing else may come first. */
static int await_early(struct tls_conn *tc, struct rd_conn *lo, const struct timespec *t0,
		       int timeout_ms, uint8_t type, struct rd_msg *m)
{
	struct rd_conn *c = &tc->c;
	const uint8_t *in;
	const char *why = NULL;
	size_t len;
	int r;

	while ((r = tls_recv(c, &in, &len)) == 0) {
		if (ms_left(t0, timeout_ms) <= 0)
			return rd_err_set(&c->err, RD_ETIMEOUT, 0, "%s sent no %s within %d s",
					  lo->info.peer, rd_msg_type_name(type), timeout_ms / 1000);
		r = rd_conn_poll(lo, 100);
		if (r < 0 && r != -RD_ETIMEOUT)
			return fail_from(tc, rd_conn_err(lo), r);
	}
	if (r < 0)
		return r;
	r = 0;
	if (rd_msg_decode(in, len, m, &why) || m->hdr.type != type)
		r = rd_err_set(&c->err, RD_EPROTO, 0,
			       "%s broke the protocol: %s where %s was due%s%s", lo->info.peer,
			       why ? "a bad message" : rd_msg_type_name(in[0]),
			       rd_msg_type_name(type), why ? ": " : "", why ? why : "");
	tls_recv_done(c);
	return r;
}

/*
 * Rails (RDMA; lib/proto/rd_proto.h section 1): the server's other
 * devices' addresses, as the first sealed message, before any lane joins.
 */
static int rails_exchange(struct tls_conn *tc, struct rd_conn *lo, const struct timespec *t0,
			  int timeout_ms)
{
	struct rd_msg m;
	int r;

	memset(&m, 0, sizeof(m));
	if (lo->ops->rails_out && lo->ops->rails_out(lo, &m.u.rails) == 1) {
		m.hdr.type = RD_MSG_RAILS;
		r = send_early(tc, lo, &m);
		if (r)
			return r;
	}
	if (!lo->ops->rails_in || lo->ops->rails_in(lo, NULL) != 1)
		return 0;
	r = await_early(tc, lo, t0, timeout_ms, RD_MSG_RAILS, &m);
	return r ? r : lo->ops->rails_in(lo, &m.u.rails);
}

/*
 * Lane proofs (version 8; lib/proto/rd_proto.h section 1): with more than
 * one lane, the server's nonce for this session's JOINs, sealed, after
 * RAILS and before any lane joins.
 */
static int lanes_exchange(struct tls_conn *tc, struct rd_conn *lo, int server,
			  const struct timespec *t0, int timeout_ms)
{
	struct rd_msg m;
	int r;

	if (lo->info.version < RD_PROTO_LANE_PROOF || !lo->ops->lanes || lo->ops->lanes(lo) < 2)
		return 0;
	memset(&m, 0, sizeof(m));
	if (server) {
		if (getrandom(tc->lane_nonce, RD_LANE_NONCE_LEN, 0) != RD_LANE_NONCE_LEN)
			return rd_err_set(&tc->c.err, RD_ESYS, errno, "lanes: no random nonce");
		m.hdr.type = RD_MSG_LANES;
		memcpy(m.u.lanes.nonce, tc->lane_nonce, RD_LANE_NONCE_LEN);
		r = send_early(tc, lo, &m);
	} else {
		r = await_early(tc, lo, t0, timeout_ms, RD_MSG_LANES, &m);
		if (!r)
			memcpy(tc->lane_nonce, m.u.lanes.nonce, RD_LANE_NONCE_LEN);
	}
	if (!r)
		tc->lane_bound = 1;
	return r;
}

/* rd_lane_proof_fn of this TLS session (lib/proto/rd_proto.h 1., Lane proofs). */
static int lane_proof(void *ctx, uint64_t sid, unsigned lane, unsigned rail,
		      uint8_t out[RD_LANE_PROOF_LEN])
{
	struct tls_conn *tc = ctx;
	uint8_t pc[RD_LANE_PROOF_CTX_LEN];

	if (!tc->lane_bound) /* a server of version 7 or older */
		return rd_tls_export_key(tc->t, RD_TLS_LANE_LABEL, out, RD_LANE_PROOF_LEN);
	rd_lane_proof_ctx(pc, tc->lane_nonce, sid, lane, rail);
	return rd_tls_export_ctx(tc->t, RD_TLS_LANE_PROOF_LABEL, pc, sizeof(pc), out,
				 RD_LANE_PROOF_LEN);
}

/*
 * The extra lanes (RDMA; lib/proto/rd_proto.h section 1) join now: the
 * proof that each belongs to this session comes from its TLS exporter.
 */
static int join_lanes(struct tls_conn *tc, struct rd_conn *lo, int server,
		      const struct timespec *t0, int timeout_ms)
{
	long left = ms_left(t0, timeout_ms);
	int r;

	if (!lo->ops->join_lanes)
		return 0;
	r = rails_exchange(tc, lo, t0, timeout_ms);
	if (r < 0)
		return r;
	r = lanes_exchange(tc, lo, server, t0, timeout_ms);
	if (r < 0)
		return r;
	r = lo->ops->join_lanes(lo, lane_proof, tc, left < 5000 ? 5000 : (int)left);
	if (r < 0)
		return rd_err_copy(&tc->c.err, rd_conn_err(lo));
	return 0;
}

int rd_conn_lane_proof(struct rd_conn *c, uint64_t sid, unsigned lane, unsigned rail,
		       uint8_t out[RD_LANE_PROOF_LEN])
{
	if (c->ops != &tls_ops)
		return rd_err_set(&c->err, RD_EUSAGE, 0, "lane proofs come from TLS");
	return lane_proof(c, sid, lane, rail, out);
}

int rd_conn_start_tls(struct rd_conn **cp, const struct rd_tls_cfg *cfg, int timeout_ms,
		      struct rd_err *err)
{
	struct rd_conn *lo = *cp;
	struct tls_conn *tc;
	struct timespec t0;
	int r, done = 0;

	tc = calloc(1, sizeof(*tc));
	if (!tc)
		return rd_err_set(err, RD_ENOMEM, 0, "TLS state: out of memory");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rd_conn_filter_init(&tc->c, &tls_ops, lo);
	r = rd_tls_new(&tc->t, cfg, lo->info.peer, &tc->c.err);
	if (r)
		goto fail;
	if (cfg->role == RD_TLS_CLIENT) {
		r = rd_tls_handshake(tc->t, NULL, 0);
		if (r < 0) {
			rd_err_copy(&tc->c.err, rd_tls_err(tc->t));
			goto fail;
		}
	}
	for (;;) {
		r = hs_flush(tc, lo, &t0, timeout_ms);
		if (r)
			break;
		if (done)
			break;
		r = hs_feed(tc, lo);
		if (r < 0)
			break;
		if (r == 1) {
			done = 1;
			continue; /* send our last flight (client Finished) */
		}
		/*
		 * What a flight just produced goes out now, not after the next
		 * poll's timeout: a server answering a ClientHello would
		 * otherwise wait 100 ms for nothing (issue 14).
		 */
		if (rd_tls_out_pending(tc->t))
			continue;
		if (ms_left(&t0, timeout_ms) <= 0) {
			r = -RD_ETIMEOUT;
			break;
		}
		if (lo->stop && __atomic_load_n(lo->stop, __ATOMIC_ACQUIRE)) {
			r = rd_err_set(&tc->c.err, RD_ESTOPPED, 0,
				       "TLS handshake with %s given up: the server stopped waiting",
				       lo->info.peer);
			break;
		}
		r = rd_conn_poll(
		    lo, (int)(ms_left(&t0, timeout_ms) < 100 ? ms_left(&t0, timeout_ms) : 100));
		if (r < 0 && r != -RD_ETIMEOUT)
			break;
	}
	if (r == -RD_ETIMEOUT && !tc->c.err.status)
		rd_err_set(&tc->c.err, RD_ETIMEOUT, 0,
			   "TLS handshake with %s did not finish within %d s", lo->info.peer,
			   timeout_ms / 1000);
	else if (r < 0 && !tc->c.err.status)
		rd_err_copy(&tc->c.err, rd_conn_err(lo));
	if (r < 0)
		goto fail;
	/* The peer is authenticated: what the server held back is set up now. */
	if (cfg->role == RD_TLS_SERVER && lo->ops->authenticated) {
		r = lo->ops->authenticated(lo);
		if (r < 0) {
			rd_err_copy(&tc->c.err, rd_conn_err(lo));
			goto fail;
		}
	}
	r = join_lanes(tc, lo, cfg->role == RD_TLS_SERVER, &t0, timeout_ms);
	if (r < 0)
		goto fail;
	*cp = &tc->c;
	return 0;
fail:
	/* Let the peer hear why (the alert), best effort, briefly. */
	if (tc->t && rd_tls_out_pending(tc->t)) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		hs_flush(tc, lo, &t0, 500);
		rd_conn_flush(lo, 500);
	}
	if (err)
		rd_err_copy(err, &tc->c.err);
	r = tc->c.err.status ? -tc->c.err.status : (r < 0 ? r : -RD_EAUTH);
	rd_tls_free(tc->t);
	free(tc);
	return r;
}

struct rd_tls *rd_conn_tls(const struct rd_conn *c)
{
	return c->ops == &tls_ops ? ((const struct tls_conn *)c)->t : NULL;
}
