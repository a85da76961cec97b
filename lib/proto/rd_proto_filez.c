// SPDX-License-Identifier: MIT
/*
 * FILEZ (rd_proto.h section 2, Wide batches): FILE entries that keep what
 * the previous entry of the same message had, its own file so the codec
 * and its state stay together. rd_proto.c checks decoded messages here.
 */
#include "lib/proto/rd_proto.h"
#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto_buf.h"
#include "lib/proto/rd_proto_filez.h"

#include <string.h>

void rd_filez_start(struct rd_filez *z)
{
	z->n = 0;
	z->id = 0;
	z->plen = 0;
}

static uint16_t common_prefix(const struct rd_filez *z, const struct rd_msg_file *f)
{
	size_t n = z->plen < f->path.len ? z->plen : f->path.len;
	size_t i = 0;

	while (i < n && z->path[i] == f->path.ptr[i])
		i++;
	return (uint16_t)i;
}

int rd_filez_put(struct rd_filez *z, uint8_t *buf, size_t cap, size_t *len,
		 const struct rd_msg_file *f)
{
	struct rd_wcur w;
	struct rd_str rest;
	uint8_t have = 0;
	uint16_t keep = 0;

	if (*len > cap || z->n >= RD_BATCH_WIDE || rd_proto__file_check(f))
		return -RD_EUSAGE;
	/* ids consecutive, never past UINT32_MAX (z->id + z->n would wrap to 0) */
	if (z->n && (z->id > UINT32_MAX - z->n || f->id != z->id + z->n))
		return -RD_EUSAGE;
	if (!z->n)
		have = RD_FZ_FIRST;
	else {
		have |= f->mode != z->mode ? RD_FZ_MODE : 0;
		have |= f->uid != z->uid ? RD_FZ_UID : 0;
		have |= f->gid != z->gid ? RD_FZ_GID : 0;
		have |= f->mtime_sec != z->mtime_sec ? RD_FZ_SEC : 0;
		keep = common_prefix(z, f);
	}
	have |= f->mtime_nsec ? RD_FZ_NSEC : 0;
	if (f->size > UINT32_MAX)
		have |= RD_FZ_SIZE64;
	else if (f->size)
		have |= RD_FZ_SIZE32;
	have |= f->target.len ? RD_FZ_TARGET : 0;
	rest.ptr = f->path.ptr + keep;
	rest.len = (uint16_t)(f->path.len - keep);

	rd_wcur_init(&w, buf + *len, cap - *len);
	rd_put_u8(&w, f->type);
	rd_put_u8(&w, f->flags);
	rd_put_u8(&w, have);
	if (have & RD_FZ_MODE)
		rd_put_u32(&w, f->mode);
	if (have & RD_FZ_UID)
		rd_put_u32(&w, f->uid);
	if (have & RD_FZ_GID)
		rd_put_u32(&w, f->gid);
	if (have & RD_FZ_SEC)
		rd_put_u64(&w, (uint64_t)f->mtime_sec);
	if (have & RD_FZ_NSEC)
		rd_put_u32(&w, f->mtime_nsec);
	if (have & RD_FZ_SIZE32)
		rd_put_u32(&w, (uint32_t)f->size);
	if (have & RD_FZ_SIZE64)
		rd_put_u64(&w, f->size);
	rd_put_u16(&w, keep);
	rd_put_str(&w, &rest);
	if (have & RD_FZ_TARGET)
		rd_put_str(&w, &f->target);
	if (w.full)
		return -RD_EUSAGE;

	*len += w.off;
	if (!z->n)
		z->id = f->id;
	z->n++;
	z->mode = f->mode;
	z->uid = f->uid;
	z->gid = f->gid;
	z->mtime_sec = f->mtime_sec;
	memcpy(z->path + keep, rest.ptr, rest.len);
	z->plen = f->path.len;
	return 0;
}

/* One entry at r into f, its path rebuilt in z; r->why says what was wrong. */
static void get_entry(struct rd_rcur *r, struct rd_filez *z, uint32_t first,
		      struct rd_msg_file *f)
{
	struct rd_str rest;
	uint16_t keep;
	uint8_t have;

	memset(f, 0, sizeof(*f));
	f->id = first + z->n;
	f->type = rd_get_u8(r);
	f->flags = rd_get_u8(r);
	have = rd_get_u8(r);
	if (r->why)
		return;
	if (!z->n && (have & RD_FZ_FIRST) != RD_FZ_FIRST) {
		rd_rcur_fail(r, "first compact entry without its fields");
		return;
	}
	if ((have & RD_FZ_SIZE32) && (have & RD_FZ_SIZE64)) {
		rd_rcur_fail(r, "compact entry with two sizes");
		return;
	}
	f->mode = have & RD_FZ_MODE ? rd_get_u32(r) : z->mode;
	f->uid = have & RD_FZ_UID ? rd_get_u32(r) : z->uid;
	f->gid = have & RD_FZ_GID ? rd_get_u32(r) : z->gid;
	f->mtime_sec = have & RD_FZ_SEC ? (int64_t)rd_get_u64(r) : z->mtime_sec;
	f->mtime_nsec = have & RD_FZ_NSEC ? rd_get_u32(r) : 0;
	if (have & RD_FZ_SIZE32)
		f->size = rd_get_u32(r);
	else if (have & RD_FZ_SIZE64)
		f->size = rd_get_u64(r);
	keep = rd_get_u16(r);
	rd_get_str(r, &rest, RD_PATH_MAX, "path too long");
	if (have & RD_FZ_TARGET)
		rd_get_str(r, &f->target, RD_PATH_MAX, "symlink target too long");
	if (r->why)
		return;
	if (keep > z->plen || (size_t)keep + rest.len > RD_PATH_MAX) {
		rd_rcur_fail(r, keep > z->plen ? "compact path keeps more than there was"
					       : "path too long");
		return;
	}
	if (rest.len)
		memcpy(z->path + keep, rest.ptr, rest.len);
	z->plen = (uint16_t)(keep + rest.len);
	f->path.ptr = z->path;
	f->path.len = z->plen;
	z->mode = f->mode;
	z->uid = f->uid;
	z->gid = f->gid;
	z->mtime_sec = f->mtime_sec;
	z->n++;
}

int rd_filez_next(const struct rd_msg_files *m, size_t *off, struct rd_filez *z,
		  struct rd_msg_file *f)
{
	struct rd_rcur r;

	if (*off > m->rawlen || z->n >= m->n)
		return -RD_EPROTO;
	rd_rcur_init(&r, m->raw + *off, m->rawlen - *off);
	get_entry(&r, z, m->id, f);
	if (r.why || rd_proto__file_check(f))
		return -RD_EPROTO;
	*off += r.off;
	return 0;
}

const char *rd_proto__filez_check(const struct rd_msg_files *m)
{
	struct rd_msg_file f;
	struct rd_filez z;
	struct rd_rcur r;
	const char *why;
	unsigned i;

	if (m->n == 0 || m->n > RD_BATCH_WIDE)
		return "bad batch entry count";
	if (m->id > UINT32_MAX - (m->n - 1u))
		return "entry ids past the last";
	if (!m->raw && m->rawlen)
		return "batch without entries";
	rd_filez_start(&z);
	rd_rcur_init(&r, m->raw, m->rawlen);
	for (i = 0; i < m->n; i++) {
		get_entry(&r, &z, m->id, &f);
		if (r.why)
			return r.why;
		why = rd_proto__file_check(&f);
		if (why)
			return why;
		if ((f.flags & RD_FF_MORE) && i + 1 < m->n)
			return "metadata announced before the end of a batch";
	}
	return rd_rcur_left(&r) ? "trailing bytes after payload" : NULL;
}
