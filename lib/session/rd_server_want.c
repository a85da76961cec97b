// SPDX-License-Identifier: MIT
/*
 * The server of a ranged pull (rd_proto.h section 6, rdcp-mpi): after
 * OPEN_OK it reads the client's list (WANT ... RD_WF_END), bounded by
 * RD_WANT_ITEMS_MAX items and RD_WANT_BYTES_MAX bytes of paths, then sends
 * those entries in that order as a list (rd_tree_open_list) beneath the
 * base directory, which was opened beneath the module like any path.
 */
#include "lib/session/rd_session.h"
#include "lib/base/rd_be.h"
#include "lib/session/rd_session_priv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/tree/rd_tree.h"

#define ITEM_HDR 39 /* kind, off, len, size, mtime_sec, mtime_nsec, path length */

struct rd_want_list {
	int basefd; /* borrowed */
	uint64_t job;
	uint8_t *buf;
	size_t len, cap, at;
	unsigned n;
	char path[RD_PATH_MAX + 1];
};

static int add(struct rd_want_list *l, const struct rd_want_item *it)
{
	size_t need = ITEM_HDR + it->path.len;
	uint8_t *p;

	if (l->len + need > l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 65536;

		while (cap < l->len + need)
			cap *= 2;
		p = realloc(l->buf, cap);
		if (!p)
			return -RD_ENOMEM;
		l->buf = p;
		l->cap = cap;
	}
	p = l->buf + l->len;
	p[0] = it->kind;
	rd_be_put64(p + 1, it->off);
	rd_be_put64(p + 9, it->len);
	rd_be_put64(p + 17, it->size);
	rd_be_put64(p + 25, (uint64_t)it->mtime_sec);
	rd_be_put32(p + 33, it->mtime_nsec);
	p[37] = (uint8_t)(it->path.len >> 8);
	p[38] = (uint8_t)it->path.len;
	memcpy(p + ITEM_HDR, it->path.ptr, it->path.len);
	l->len += need;
	l->n++;
	return 0;
}

static int next(void *ctx, struct rd_tree_item *it)
{
	struct rd_want_list *l = ctx;
	const uint8_t *p;
	size_t pl;

	if (l->at >= l->len)
		return 0;
	p = l->buf + l->at;
	pl = (size_t)p[37] << 8 | p[38];
	memcpy(l->path, p + ITEM_HDR, pl);
	l->path[pl] = '\0';
	l->at += ITEM_HDR + pl;
	it->dirfd = l->basefd;
	it->rel = l->path;
	it->wire = l->path;
	it->kind = p[0] == RD_WANT_RANGE ? RD_TREE_ITEM_RANGE : RD_TREE_ITEM_NODE;
	it->regular = 1;
	it->job = l->job;
	it->off = rd_be_get64(p + 1);
	it->len = rd_be_get64(p + 9);
	it->size = rd_be_get64(p + 17);
	it->mtime_sec = (int64_t)rd_be_get64(p + 25);
	it->mtime_nsec =
	    (uint32_t)p[33] << 24 | (uint32_t)p[34] << 16 | (uint32_t)p[35] << 8 | p[36];
	return 1;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int rd_server__wants(struct rd_conn *c, int basefd, int timeout_ms, volatile int *stop,
		     struct rd_want_list **out, struct rd_err *err)
{
	struct rd_want_list *l = calloc(1, sizeof(*l));
	const uint8_t *buf;
	struct rd_want_item it;
	struct rd_msg m;
	const char *why;
	double t0 = now_s();
	size_t len, off, bytes = 0;
	int ret = 0, end = 0;
	unsigned i;

	*out = NULL;
	if (!l)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "wanted list");
	l->basefd = basefd;
	while (!end && !ret) {
		if (rd_conn_recv(c, &buf, &len) == 1) {
			if (rd_msg_decode(buf, len, &m, &why)) {
				ret = rd_err_set(err, RD_EPROTO, 0, "%s sent a bad WANT: %s",
						 rd_conn_info(c)->peer, why);
			} else if (m.hdr.type == RD_MSG_ERROR) {
				ret = rd_engine_fail_remote(err, &m.u.error, rd_conn_info(c)->peer);
			} else if (m.hdr.type != RD_MSG_WANT) {
				ret =
				    rd_err_set(err, RD_EPROTO, 0, "%s sent %s where WANT was due",
					       rd_conn_info(c)->peer, rd_msg_type_name(m.hdr.type));
			} else {
				l->job = m.u.want.job;
				end = !!(m.u.want.flags & RD_WF_END);
				for (off = 0, i = 0; !ret && i < m.u.want.n; i++) {
					if (rd_want_next(&m.u.want, &off, &it))
						ret =
						    rd_err_set(err, RD_EPROTO, 0, "bad WANT item");
					else if (l->n >= RD_WANT_ITEMS_MAX ||
						 (bytes += it.path.len) > RD_WANT_BYTES_MAX)
						ret = rd_err_set(
						    err, RD_EUSAGE, 0,
						    "a list of more than %u entries or "
						    "%u bytes; send it in several sessions",
						    RD_WANT_ITEMS_MAX, RD_WANT_BYTES_MAX);
					else
						ret = add(l, &it);
				}
			}
			rd_conn_recv_done(c);
			continue;
		}
		if (stop && *stop)
			ret = rd_err_set(err, RD_ESTOPPED, 0, "the server is shutting down");
		else if ((now_s() - t0) * 1000 > (timeout_ms > 0 ? timeout_ms : 30000))
			ret = rd_err_set(err, RD_ETIMEOUT, 0, "%s sent no complete list in time",
					 rd_conn_info(c)->peer);
		else if (rd_conn_poll(c, 200) < 0)
			ret = rd_err_copy(err, rd_conn_err(c));
	}
	if (ret) {
		rd_server__wants_free(l);
		return ret < 0 ? ret : -ret;
	}
	*out = l;
	return 0;
}

int rd_server__want_tree(struct rd_want_list *l, unsigned flags, struct rd_tree **t,
			 struct rd_err *err)
{
	return rd_tree_open_list(t, next, l, flags, err);
}

void rd_server__wants_free(struct rd_want_list *l)
{
	if (!l)
		return;
	free(l->buf);
	free(l);
}
