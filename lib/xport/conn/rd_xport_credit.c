// SPDX-License-Identifier: MIT
/*
 * The credit layer (lib/proto/rd_proto.h, "Credits") that every transport
 * shares, so RDMA, TCP and the loopback count credits with the same code.
 * Below the transports: it calls nothing of theirs but the lower hooks in
 * c->ops (can_xmit, xmit, repost).
 */
#include "lib/xport/conn/rd_xport_impl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int rd_xc_wake_drain(struct rd_conn *c)
{
	uint64_t v;
	int fd = rd_xc_wake_fd(c), got = 0;

	if (fd < 0)
		return 0;
	/* eventfd: one read empties it; a pipe may need several */
	while (read(fd, &v, sizeof(v)) > 0)
		got = 1;
	return got;
}

int rd_xc_fail(struct rd_conn *c, int status, int errnum, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = rd_err_vset(&c->err, status, errnum, fmt, ap);
	va_end(ap);
	c->dead = 1;
	return ret;
}

void rd_xc_peer_name(char *buf, size_t len, const char *host, const char *port)
{
	int v6 = strchr(host, ':') != NULL;

	snprintf(buf, len, "%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

int rd_xc_check_rep(struct rd_conn *c, const struct rd_cm_rep *rep)
{
	if (!rd_proto_versions_overlap(rep->version, rep->version) || !rep->ctrl_depth)
		return rd_err_set(&c->err, RD_EVERSION, 0,
				  "%s chose protocol version %u, which this rdcp (%u..%u) does not "
				  "speak",
				  c->info.peer, rep->version, RD_PROTO_MIN, RD_PROTO_MAX);
	return 0;
}

int rd_xc_init(struct rd_conn *c, const struct rd_conn_opts *o)
{
	c->rq_cur = -1;
	c->rdepth = o && o->ctrl_depth ? o->ctrl_depth : RD_XC_DEFAULT_DEPTH;
	if (c->rdepth > RD_XC_DEPTH_MAX)
		c->rdepth = RD_XC_DEPTH_MAX;
	c->max_writes = o && o->max_writes ? o->max_writes : RD_XC_DEFAULT_WRITES;
	c->timeout_ms = o && o->timeout_ms ? o->timeout_ms : RD_XC_DEFAULT_TIMEOUT;
	c->stop = o ? o->stop : NULL;
	/* Untouched until a rail registers its share: only rail 0's is used
	 * without rails. */
	c->rslots = c->rdepth * (c->rails_ok ? RD_RAILS_MAX : 1);
	c->rbuf = calloc(c->rslots, RD_CTRL_MAX);
	c->rq = calloc(c->rdepth, sizeof(*c->rq));
	c->rqlen = calloc(c->rdepth, sizeof(*c->rqlen));
	if (!c->rbuf || !c->rq || !c->rqlen)
		return rd_xc_fail(c, RD_ENOMEM, ENOMEM, "control buffers");
	return 0;
}

void rd_xc_fini(struct rd_conn *c)
{
	free(c->rbuf);
	free(c->rq);
	free(c->rqlen);
	c->rbuf = NULL;
	c->rq = NULL;
	c->rqlen = NULL;
}

long rd_xc_ms_since(const struct timespec *t)
{
	struct timespec n;

	clock_gettime(CLOCK_MONOTONIC, &n);
	return (n.tv_sec - t->tv_sec) * 1000 + (n.tv_nsec - t->tv_nsec) / 1000000;
}

void rd_xc_start(struct rd_conn *c, unsigned peer_depth, unsigned version)
{
	c->peer_depth = peer_depth;
	c->credits = (int)peer_depth;
	c->info.version = version;
	if (!c->info.lanes)
		c->info.lanes = 1;
	c->established = 1;
	clock_gettime(CLOCK_MONOTONIC, &c->last_rx);
}

int rd_xc_rx(struct rd_conn *c, unsigned idx, size_t len)
{
	const uint8_t *m;
	unsigned credits, slot;

	if (idx >= c->rslots)
		return rd_xc_fail(c, RD_EPROTO, 0, "bad receive completion");
	m = rd_xc_rbuf(c, idx);
	if (len < RD_HDR_LEN || len > RD_CTRL_MAX)
		return rd_xc_fail(c, RD_EPROTO, 0, "%s sent a %zu-byte control message",
				  c->info.peer, len);
	credits = (unsigned)((m[2] << 8) | m[3]);
	if (credits > c->peer_depth || c->credits + (int)credits > (int)c->peer_depth)
		return rd_xc_fail(c, RD_EPROTO, 0, "%s returned %u credits it never had",
				  c->info.peer, credits);
	c->credits += (int)credits;
	c->recv_seen++;
	clock_gettime(CLOCK_MONOTONIC, &c->last_rx);
	if (m[0] == RD_MSG_CREDIT) {
		if (len != RD_HDR_LEN)
			return rd_xc_fail(c, RD_EPROTO, 0, "malformed CREDIT from %s",
					  c->info.peer);
		c->to_return++;
		return c->ops->repost(c, idx);
	}
	if (c->rq_count >= c->rdepth)
		return rd_xc_fail(c, RD_EPROTO, 0, "%s sent more messages than it had credits",
				  c->info.peer);
	slot = (c->rq_head + c->rq_count) % c->rdepth;
	c->rq[slot] = idx;
	c->rqlen[slot] = (uint32_t)len;
	c->rq_count++;
	return 0;
}

void rd_xc_sent(struct rd_conn *c, uint64_t cookie)
{
	c->writes_inflight--;
	if (c->sent_fn)
		c->sent_fn(c->sent_ctx, cookie);
}

int rd_xc_can_send(const struct rd_conn *c)
{
	return !c->dead && c->credits >= 2 && c->ops->can_xmit(c);
}

/* Patch the credits field and hand one message to the transport. */
static int xmit(struct rd_conn *c, const void *msg, size_t len, const struct rd_xwrite *w)
{
	uint8_t b[RD_CTRL_MAX];
	unsigned give = c->to_return > 65535 ? 65535 : c->to_return;
	int r;

	memcpy(b, msg, len);
	rd_msg_set_credits(b, (uint16_t)give);
	c->to_return -= give;
	r = c->ops->xmit(c, b, len, w);
	if (r) {
		c->to_return += give;
		return r;
	}
	c->credits--;
	return 0;
}

int rd_xc_maybe_credit(struct rd_conn *c)
{
	uint8_t b[RD_HDR_LEN];

	if (c->dead || c->to_return < c->rdepth / 4 + 1 || c->credits < 1 || !c->ops->can_xmit(c))
		return 0;
	memset(b, 0, sizeof(b));
	b[0] = RD_MSG_CREDIT;
	return xmit(c, b, sizeof(b), NULL);
}

int rd_xc_check_silence(struct rd_conn *c)
{
	long waited = rd_xc_ms_since(&c->last_rx);

	if (waited >= c->timeout_ms)
		return rd_xc_fail(c, RD_ETIMEOUT, 0, "no message from %s for %ld s; giving up",
				  c->info.peer, waited / 1000);
	return 0;
}

int rd_xc_send(struct rd_conn *c, const void *msg, size_t len)
{
	if (len < RD_HDR_LEN || len > RD_CTRL_MAX)
		return rd_err_set(&c->err, RD_EUSAGE, 0, "control message of %zu bytes", len);
	if (c->dead)
		return -c->err.status;
	if (!rd_xc_can_send(c))
		return RD_XPORT_BUSY;
	return xmit(c, msg, len, NULL);
}

int rd_xc_write_send(struct rd_conn *c, const struct rd_xwrite *w, const void *msg,
		     size_t msglen)
{
	int r;

	if (w->off > w->mr->len || w->len > w->mr->len - w->off || w->len > UINT32_MAX)
		return rd_err_set(&c->err, RD_EUSAGE, 0, "write outside the registered buffer");
	if (c->writes_inflight >= c->max_writes)
		return RD_XPORT_BUSY;
	if (!w->len) {
		/* Nothing to write (empty tail): the message alone, buffer free now. */
		r = rd_xc_send(c, msg, msglen);
		if (r == 0 && c->sent_fn)
			c->sent_fn(c->sent_ctx, w->cookie);
		return r;
	}
	if (msglen < RD_HDR_LEN || msglen > RD_CTRL_MAX)
		return rd_err_set(&c->err, RD_EUSAGE, 0, "control message of %zu bytes", msglen);
	if (c->dead)
		return -c->err.status;
	if (!rd_xc_can_send(c))
		return RD_XPORT_BUSY;
	c->writes_inflight++;
	r = xmit(c, msg, msglen, w);
	if (r)
		c->writes_inflight--;
	return r;
}

int rd_xc_recv(struct rd_conn *c, const uint8_t **msg, size_t *len)
{
	unsigned idx;

	if (c->rq_cur < 0) {
		if (!c->rq_count)
			return 0;
		c->rq_cur = (int)c->rq[c->rq_head];
	}
	idx = (unsigned)c->rq_cur;
	*msg = rd_xc_rbuf(c, idx);
	*len = c->rqlen[c->rq_head];
	return 1;
}

int rd_xc_recv_done(struct rd_conn *c)
{
	unsigned idx;
	int r;

	if (c->rq_cur < 0)
		return 0;
	idx = (unsigned)c->rq_cur;
	c->rq_cur = -1;
	c->rq_head = (c->rq_head + 1) % c->rdepth;
	c->rq_count--;
	if (c->dead || c->disconnected)
		return 0; /* nothing more will arrive; let queued messages drain */
	r = c->ops->repost(c, idx);
	if (r)
		return r;
	c->to_return++;
	return rd_xc_maybe_credit(c);
}
