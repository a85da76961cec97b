// SPDX-License-Identifier: MIT
/*
 * WANT (rd_proto.h section 6): the list of a ranged pull, its own file so
 * the sections grow apart. rd_proto.c's encoder and decoder call these.
 */
#include "lib/proto/rd_proto.h"
#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto_buf.h"
#include "lib/proto/rd_proto_want.h"

#include <string.h>

static void get_item(struct rd_rcur *r, struct rd_want_item *it)
{
	it->kind = rd_get_u8(r);
	it->off = rd_get_u64(r);
	it->len = rd_get_u64(r);
	it->size = rd_get_u64(r);
	it->mtime_sec = (int64_t)rd_get_u64(r);
	it->mtime_nsec = rd_get_u32(r);
	rd_get_str(r, &it->path, RD_PATH_MAX, "path too long");
}

static const char *item_check(const struct rd_want_item *it)
{
	const char *why;

	if (it->kind != RD_WANT_WHOLE && it->kind != RD_WANT_RANGE)
		return "bad WANT kind";
	if (it->kind == RD_WANT_RANGE &&
	    (!it->len || it->off > it->size || it->len > it->size - it->off))
		return "WANT range outside its file";
	if (it->kind == RD_WANT_WHOLE && (it->off || it->len))
		return "WANT of a whole file with a range";
	if (it->mtime_nsec >= 1000000000u)
		return "mtime nanoseconds out of range";
	if (rd_path_check(it->path.ptr, it->path.len, &why))
		return why;
	return NULL;
}

const char *rd_proto__want_check(const struct rd_msg_want *m)
{
	struct rd_want_item it;
	struct rd_rcur r;
	const char *why;
	unsigned i;

	if (m->flags & ~RD_WF_END)
		return "unknown WANT flags";
	if (m->n > RD_WANT_BATCH || (!m->n && !(m->flags & RD_WF_END)))
		return "bad WANT entry count";
	if (!m->raw && m->rawlen)
		return "WANT without entries";
	rd_rcur_init(&r, m->raw, m->rawlen);
	for (i = 0; i < m->n; i++) {
		get_item(&r, &it);
		if (r.why)
			return r.why;
		why = item_check(&it);
		if (why)
			return why;
	}
	return rd_rcur_left(&r) ? "trailing bytes after payload" : NULL;
}

void rd_proto__want_put(struct rd_wcur *w, const struct rd_msg_want *m)
{
	rd_put_u64(w, m->job);
	rd_put_u8(w, m->flags);
	rd_put_u16(w, m->n);
	rd_put_bytes(w, m->raw, m->rawlen);
}

void rd_proto__want_get(struct rd_rcur *r, struct rd_msg_want *m)
{
	m->job = rd_get_u64(r);
	m->flags = rd_get_u8(r);
	m->n = rd_get_u16(r);
	m->rawlen = r->why ? 0 : rd_rcur_left(r);
	m->raw = rd_rcur_take(r, m->rawlen); /* checked in rd_proto__want_check */
}

int rd_want_put(uint8_t *buf, size_t cap, size_t *len, const struct rd_want_item *it)
{
	struct rd_wcur w;

	if (*len > cap || item_check(it))
		return -RD_EUSAGE;
	rd_wcur_init(&w, buf + *len, cap - *len);
	rd_put_u8(&w, it->kind);
	rd_put_u64(&w, it->off);
	rd_put_u64(&w, it->len);
	rd_put_u64(&w, it->size);
	rd_put_u64(&w, (uint64_t)it->mtime_sec);
	rd_put_u32(&w, it->mtime_nsec);
	rd_put_str(&w, &it->path);
	if (w.full)
		return -RD_EUSAGE;
	*len += w.off;
	return 0;
}

int rd_want_next(const struct rd_msg_want *m, size_t *off, struct rd_want_item *it)
{
	struct rd_rcur r;

	if (*off > m->rawlen)
		return -RD_EPROTO;
	rd_rcur_init(&r, m->raw + *off, m->rawlen - *off);
	get_item(&r, it);
	if (r.why || item_check(it))
		return -RD_EPROTO;
	*off += r.off;
	return 0;
}
