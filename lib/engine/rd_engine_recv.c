// SPDX-License-Identifier: MIT
/*
 * Receiver side of a session. Entries arrive in order (FILE); regular
 * files get a temporary file from the sink and their chunks are requested
 * (GET) into registered slots, oldest file first, as many in flight as
 * there are slots. Each DATA is verified against its digest
 * before it is written; a mismatch requests the chunk again (bounded), then
 * fails the file. A file is renamed into place only when every chunk is
 * verified and written.
 *
 * Slots are registered as the job needs them, up to the pool's size: a
 * 3-byte file pins one page, a 3 MB file about 3 MB, and only jobs with
 * many chunks in flight grow to the whole pool (rd_engine_bufs.c, shared
 * with the sender's read buffers; issue 14).
 *
 * When a regular file of the same size already exists under the final
 * name, chunk digests are compared first (GET kind SUM, the slot reserved
 * for the data in case it differs): identical files move no data.
 *
 * Resume (issue 11): the sink keeps a partial of every file in progress
 * and a record of its verified chunks. A chunk the sink says it already
 * holds (rd_sink_file_chunk_src: in a resumed partial, or in an existing
 * final file of another size that holds it whole) is asked for with GET
 * SUM, chunk by chunk; equal: kept (bytes_resumed), else its data comes.
 * SUM is a plain digest (SHA-256 for the keyed kinds) computed now by both
 * sides, inside this session's TLS: nothing from an old session's keys is
 * ever compared, so a partial written under another session key (gmac)
 * is checked as well as one written under sha256.
 *
 * Verifying and writing a chunk is a job for the worker pool
 * (rd_engine_pool.c, e->o.threads workers): its slot is SL_WORK meanwhile
 * (not free, not in flight), and the loop takes the result (retry, fail
 * the file, or mark the chunk done) when the job comes back. A file that
 * fails while jobs of it run keeps its temporary until they end.
 *
 * This file: entries (FILE, META), settle, DONE, the loop. The slots,
 * GETs, answers and jobs: rd_engine_recv_chunks.c.
 */
#include "lib/engine/rd_engine.h"
#include "lib/engine/rd_engine_priv.h"
#include "lib/engine/rd_engine_recv_priv.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* a session ending early waits this long for the chunks on workers (ms) */
#define FINISH_JOBS_MS 5000
/* --fsync: the longest a sealed file waits for its batch (ms) */
#define PUBLISH_MS    50
#define PUBLISH_FILES 32 /* a batch of sealed files is named at this many */

static uint64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

int rd_recv__proto_err(struct receiver *r, const char *what)
{
	rd_err_set(&r->e->err, RD_EPROTO, 0, "%s broke the protocol: %s",
		   rd_conn_info(r->c)->peer, what);
	rd_engine_send_error(r->c, RD_EPROTO, r->e->err.msg);
	return -RD_EPROTO;
}

/* Mark a file failed; the temporary goes away now, DONE goes out later. */
void rd_recv__fail_file(struct receiver *r, struct rfile *f, int status, const char *fmt, ...)
{
	va_list ap;

	if (f->failed)
		return;
	f->failed = 1;
	f->status = status < 0 ? -status : status;
	va_start(ap, fmt);
	vsnprintf(f->msg, sizeof(f->msg), fmt, ap);
	va_end(ap);
	if (f->working) {
		f->abort_later = 1; /* a worker still writes into it */
		return;
	}
	rd_sink_file_abort(f->f);
	f->f = NULL;
}

void rd_recv__sink_fail(struct receiver *r, struct rfile *f, int ret)
{
	rd_recv__fail_file(r, f, ret, "%s", rd_sink_err(r->sink)->msg);
}

/* A note (metadata not kept): appended to msg, which DONE carries with status 0. */
static void add_note(struct rfile *f, const char *text)
{
	size_t n = strlen(f->msg);

	if (f->failed)
		return;
	if (n && n + 2 < sizeof(f->msg)) {
		memcpy(f->msg + n, "; ", 3);
		n += 2;
	}
	snprintf(f->msg + n, sizeof(f->msg) - n, "%s", text);
}

/* The result of a sink call that may end with a note. */
static void sink_result(struct receiver *r, struct rfile *f, int ret)
{
	if (ret < 0)
		rd_recv__sink_fail(r, f, ret);
	else if (ret == RD_SINK_NOTE)
		add_note(f, rd_sink_err(r->sink)->msg);
}

/* What the last sink call changed of f (nothing when it failed), with what it changed before. */
static void took(struct receiver *r, struct rfile *f, int ret)
{
	if (ret >= 0)
		f->items |= rd_sink_items(r->sink);
}

/* The sink's root argument for an entry's wire flags (the same bits). */
_Static_assert(RD_SINK_ROOT == RD_FF_ROOT && RD_SINK_CONTENTS == RD_FF_CONTENTS,
	       "sink and wire flags differ");
static int sink_how(uint8_t flags)
{
	return flags & (RD_FF_ROOT | RD_FF_CONTENTS);
}

static void meta_of(struct rd_sink_meta *sm, const struct rd_msg_file *m)
{
	sm->mode = m->mode;
	sm->uid = m->uid;
	sm->gid = m->gid;
	sm->size = m->size;
	sm->mtime_sec = m->mtime_sec;
	sm->mtime_nsec = m->mtime_nsec;
}

/* --delete: send the reports gathered (waiting for credit): 0 or < 0. */
static int del_flush(struct receiver *r)
{
	struct rd_msg m;
	int ret;

	if (!r->del.n || r->del_ret)
		return r->del_ret;
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_DELETED;
	m.u.deleted = r->del;
	ret = rd_engine_send_msg_wait(r->c, &m, &r->e->err, -1);
	r->del.n = 0;
	r->delused = 0;
	if (ret < 0)
		r->del_ret = ret;
	return ret < 0 ? ret : 0;
}

/* rd_mirror_opts.report: counted and told here, and to the sender (DELETED). */
static void del_report(void *ctx, unsigned flags, const char *rel, size_t len, const char *text)
{
	struct receiver *r = ctx;
	size_t tl = text && (flags & (RD_DLF_FAILED | RD_DLF_OFF | RD_DLF_SKIPPED)) ? strlen(text) : 0;
	char *p;

	if (len > RD_PATH_MAX)
		len = RD_PATH_MAX;
	if (tl > RD_MSG_TEXT_MAX)
		tl = RD_MSG_TEXT_MAX;
	rd_engine_deleted(r->e, flags, rel, len, tl ? text : NULL);
	if (!r->e->o.mirror) /* --force alone: the peer did not ask to hear */
		return;
	if (r->del.n == RD_DEL_BATCH || r->delused + len + tl + 5 > RD_MSG_MAX - RD_HDR_LEN - 64)
		del_flush(r);
	if (r->del_ret)
		return;
	p = r->delbuf + r->delused;
	memcpy(p, rel, len);
	memcpy(p + len, text ? text : "", tl);
	r->del.flags[r->del.n] = (uint8_t)flags;
	r->del.path[r->del.n] = (struct rd_str){p, (uint16_t)len};
	r->del.text[r->del.n] = (struct rd_str){p + len, (uint16_t)tl};
	r->del.n++;
	r->delused += len + tl;
}

static int on_file_entry(struct receiver *r, const struct rd_msg_file *m);

/*
 * rsync's Y of a regular file: its data was "transferred" ('<'/'>') unless
 * it was kept as it was and rsync's quick check would have left it alone
 * (same size and mtime; -c: the same contents, whatever the mtime): then
 * only its attributes changed ('.'). -c: a file that was there and is
 * sent gets rsync's 'c', whether its chunks were compared or its size
 * already differed (rsync's generator: ITEM_REPORT_CHANGE on every
 * transfer under -c).
 */
static unsigned file_items(struct receiver *r, unsigned items, int keep)
{
	int sum = rd_sink_checksums(r->sink);

	if (!keep || (!sum && (items & (RD_IT_NEW | RD_IT_SIZE | RD_IT_TIME))))
		items |= RD_IT_XFER;
	if (!keep && !(items & RD_IT_NEW) && sum)
		items |= RD_IT_CHANGE;
	return items;
}

/*
 * -n -c (issue 28): a file of the same size that is there is compared
 * chunk by chunk (GET SUM) as a real run compares it, through a handle
 * that only reads it (rd_sink_file_compare): nothing is created or
 * written. The first chunk that differs ends it (reported as sent, no
 * DATA asked); every chunk equal: reported as kept (settle). 0: being
 * compared (f->dry), 1: not to compare (it would be sent whole), < 0:
 * failed (f done). Without a digest to compare (checksum none) or with
 * -I (every file rewritten) it would be sent: 1.
 */
static int dry_compare(struct receiver *r, struct rfile *f, int root)
{
	int ret;

	if (!rd_sink_checksums(r->sink) || rd_sink_rewrites(r->sink) || !r->e->dg->size ||
	    !r->e->dg->sum_size || (f->items & RD_IT_NEW))
		return 1;
	ret = rd_sink_file_compare(r->sink, f->path, f->plen, root, &f->meta, &f->f);
	if (ret < 0) {
		f->f = NULL;
		rd_recv__sink_fail(r, f, ret);
		f->state = RF_DONE;
		return ret;
	}
	if (ret)
		return 1;
	f->dry = f->check = f->all_same = 1;
	f->nchunks = rd_nchunks(f->meta.size, r->e->o.chunk_size);
	return 0;
}

/*
 * One entry; a sink failure that is the destination's rather than the
 * entry's (rd_sink_fatal) ends the session: said once, to both sides.
 */
static int on_file(struct receiver *r, const struct rd_msg_file *m)
{
	int ret = on_file_entry(r, m);

	if (ret || !r->sink || !rd_sink_fatal(r->sink)) /* a listing has no sink */
		return ret;
	rd_err_copy(&r->e->err, rd_sink_err(r->sink));
	rd_engine_send_error(r->c, -rd_sink_fatal(r->sink), r->e->err.msg);
	return rd_sink_fatal(r->sink);
}

static int on_file_entry(struct receiver *r, const struct rd_msg_file *m)
{
	struct rfile *f;
	int root = sink_how(m->flags), ret;

	if (r->end_seen)
		return rd_recv__proto_err(r, "FILE after END");
	f = win_of(r, r->next_id - 1);
	if (f && f->more)
		return rd_recv__proto_err(r, "FILE before the previous entry's META ended");
	if (m->id != r->next_id)
		return rd_recv__proto_err(r, "FILE ids out of order");
	f = &r->win[m->id % r->wn];
	if (f->state != RF_FREE)
		return rd_recv__proto_err(r, "more entries outstanding than the window allows");
	if ((m->flags & RD_FF_POST) && m->type != RD_FT_DIR)
		return rd_recv__proto_err(r, "POST flag on a non-directory");
	/* a listing's directories carry their size (RD_OF_LIST) */
	if (m->type != RD_FT_REG && m->type != RD_FT_SPECIAL && m->size &&
	    !(m->type == RD_FT_DIR && r->e->o.list))
		return rd_recv__proto_err(r, "size on a non-regular entry");
	/* hard links only as agreed (-H); link groups named only from version 10 */
	if (m->type == RD_FT_HLINK && !r->e->o.hardlinks)
		return rd_recv__proto_err(r, "hard link without -H agreed");
	if (m->type != RD_FT_DIR && (m->flags & (RD_FF_LINKED | RD_FF_LINK_LAST)) &&
	    !r->e->o.link_marks)
		return rd_recv__proto_err(r, "link group flags without -H on protocol 10");
	if (m->type == RD_FT_DIR && (m->flags & RD_FF_IMPLIED) && !r->e->o.mirror)
		return rd_recv__proto_err(r, "an implied directory's flag without --delete agreed");
	memset(f, 0, RFILE_CLEAR);
	f->msg[0] = '\0';
	f->target[0] = '\0';
	f->state = RF_ACTIVE;
	f->id = m->id;
	f->type = m->type;
	f->flags = m->flags;
	meta_of(&f->meta, m);
	if (r->e->o.chmod && m->type != RD_FT_SYMLINK)
		f->meta.mode = rd_chmod_apply(r->e->o.chmod, f->meta.mode);
	memcpy(f->path, m->path.ptr, m->path.len);
	f->path[m->path.len] = '\0';
	f->plen = m->path.len;
	f->more = !!(m->flags & RD_FF_MORE);
	r->next_id++;
	r->active++;
	r->e->st.entries++;
	if (!(m->flags & RD_FF_POST)) {
		rd_stat_add(&r->e->st.entries_announced, 1);
		if (m->type == RD_FT_REG)
			rd_stat_add(&r->e->st.bytes_announced, m->size);
	}
	rd_engine_progress(r->e);
	if (r->e->o.accept && r->e->o.accept(r->e->o.hook_ctx, m))
		return rd_recv__proto_err(r, "an entry that was not asked for");
	if (r->e->o.list) {
		/* only listing: confirmed at once (after its META, if any) */
		r->e->o.list(r->e->o.hook_ctx, m);
		if (!f->more)
			f->state = RF_DONE;
		return 0;
	}

	/* --delete: the name joins its directory's list; a POST closes one */
	if (r->mirror && (m->flags & RD_FF_POST) &&
	    rd_sink_mirror_post_seen(r->sink, m->id, f->path, f->plen, root))
		return rd_recv__proto_err(r, rd_sink_err(r->sink)->msg);
	if (r->mirror && m->type != RD_FT_DIR &&
	    rd_sink_mirror_entry(r->sink, m->id, f->path, f->plen, root, 0, 0))
		return rd_recv__proto_err(r, rd_sink_err(r->sink)->msg);

	switch (m->type) {
	case RD_FT_DIR:
		if (m->flags & RD_FF_POST)
			return 0; /* applied once it is the oldest entry */
		ret = rd_sink_mkdir(r->sink, f->path, f->plen, root, &f->meta);
		took(r, f, ret);
		if (ret)
			rd_recv__sink_fail(r, f, ret);
		/* -R's and --files-from's implied directories: nothing deleted in them */
		if (m->flags & RD_FF_IMPLIED)
			root |= (int)RD_SINK_IMPLIED;
		if (r->mirror &&
		    rd_sink_mirror_entry(r->sink, m->id, f->path, f->plen, root, 1, !ret))
			return rd_recv__proto_err(r, rd_sink_err(r->sink)->msg);
		if (!f->more) /* else done at its last META */
			f->state = RF_DONE;
		return 0;
	case RD_FT_SPECIAL:
		ret = rd_sink_special(r->sink, f->path, f->plen, root, &f->meta, m->size);
		took(r, f, ret);
		sink_result(r, f, ret);
		f->state = RF_DONE;
		return 0;
	case RD_FT_HLINK:
		/* made once every earlier entry is done (settle) */
		if (m->target.len > RD_PATH_MAX)
			return rd_recv__proto_err(r, "hard link target too long");
		memcpy(f->target, m->target.ptr, m->target.len);
		f->target[m->target.len] = '\0';
		f->tlen = m->target.len;
		return 0;
	case RD_FT_SYMLINK:
		ret = rd_sink_symlink(r->sink, f->path, f->plen, root, m->target.ptr, m->target.len,
				      &f->meta);
		took(r, f, ret);
		if (ret)
			rd_recv__sink_fail(r, f, ret);
		if (m->target.len <= RD_PATH_MAX) { /* for the report: "-> target" */
			memcpy(f->target, m->target.ptr, m->target.len);
			f->target[m->target.len] = '\0';
			f->tlen = m->target.len;
		}
		f->state = RF_DONE;
		return 0;
	case RD_FT_REG:
		if (m->flags & (RD_FF_RANGE | RD_FF_COMMIT)) {
			if (!r->e->o.ranges)
				return rd_recv__proto_err(r, "a range entry without ranges agreed");
			f->range = 1; /* its sink file comes with its META RANGE */
			return 0;
		}
		/* rsync's rules: the quick check and the transfer rules first, by stat */
		ret = rd_sink_file_check(r->sink, f->path, f->plen, root, &f->meta);
		took(r, f, ret);
		if (ret == RD_SINK_SEND && r->e->o.dry_run) {
			ret = dry_compare(r, f, root);
			if (ret <= 0)
				return 0; /* being compared, or it failed */
			/* it would be sent: nothing else happens */
			f->items = file_items(r, f->items, 0);
			ret = RD_SINK_LEAVE;
		}
		if (ret < 0 || ret == RD_SINK_SAME || ret == RD_SINK_LEAVE) {
			if (ret < 0)
				rd_recv__sink_fail(r, f, ret);
			else
				f->kept = ret == RD_SINK_SAME ? 1 : 2;
			/* a group's first file left as it is: its links name it all the same */
			if (ret >= 0 && !r->e->o.dry_run && r->e->o.hardlinks &&
			    (!r->e->o.link_marks || (m->flags & RD_FF_LINKED)))
				rd_sink_link_kept(r->sink, f->path, f->plen, root);
			if (ret == RD_SINK_SAME)
				r->e->st.files_same++;
			if (!f->more || ret < 0) /* else done at its last META */
				f->state = RF_DONE;
			return 0;
		}
		ret = rd_sink_file_begin(r->sink, f->path, f->plen, root, &f->meta, &f->f);
		if (ret) {
			f->f = NULL;
			rd_recv__sink_fail(r, f, ret);
			f->state = RF_DONE;
			return 0;
		}
		/*
		 * A link group's first file is remembered once placed: its
		 * links may name only it. A peer before protocol 10 does not say
		 * which files start groups: every one might.
		 */
		if (r->e->o.hardlinks && (!r->e->o.link_marks || (m->flags & RD_FF_LINKED)))
			rd_sink_file_link_first(f->f);
		f->nchunks = rd_nchunks(m->size, r->e->o.chunk_size);
		f->items = rd_sink_file_items(f->f);
		f->check = rd_sink_file_has_existing(f->f) && r->e->dg->size > 0;
		/* past the quick check (or -I): an equal file is written anew too */
		f->all_same = f->check && !rd_sink_rewrites(r->sink);
		/*
		 * A partial started over (the source changed): a note in its
		 * DONE, so the sender's user hears it too (a push to rdcpd).
		 */
		if (rd_sink_file_note(f->f))
			add_note(f, rd_sink_file_note(f->f));
		return 0;
	default:
		return rd_recv__proto_err(r, "unknown entry type");
	}
}

/*
 * META RANGE (rd_proto.h section 6): the entry becomes a range of its file
 * (its chunks lo..hi - 1 are asked for, nothing is renamed) or the file's
 * COMMIT (no chunk; the sink checks the sealed records cover the file).
 */
static int on_range(struct receiver *r, struct rfile *f, const struct rd_msg_meta *m)
{
	int root = sink_how(f->flags), commit = !!(f->flags & RD_FF_COMMIT), ret;
	uint32_t cs = r->e->o.chunk_size;

	if (!f->range || f->f || f->failed || f->state != RF_ACTIVE)
		return rd_recv__proto_err(r, "RANGE for an entry that is not a range, or twice");
	if (commit ? m->off || m->len != f->meta.size
		   : !m->len || m->off > f->meta.size || m->len > f->meta.size - m->off)
		return rd_recv__proto_err(r, "RANGE outside its file");
	if (!commit && !(m->flags & RD_MF_LAST))
		return rd_recv__proto_err(r, "META after a range entry's RANGE");
	if (commit)
		ret =
		    rd_sink_range_commit(r->sink, f->path, f->plen, root, &f->meta, m->job, &f->f);
	else
		ret = rd_sink_range_begin(r->sink, f->path, f->plen, root, &f->meta, m->job, m->off,
					  m->len, &f->f);
	if (ret < 0) {
		f->f = NULL;
		rd_recv__sink_fail(r, f, ret);
		f->state = RF_DONE;
		return 0;
	}
	if (ret == RD_SINK_RANGE_LEAVE) {
		/* a transfer rule left it (its links name what is there, as rsync's do) */
		took(r, f, ret);
		f->kept = 2;
		if (commit && r->e->o.hardlinks &&
		    (!r->e->o.link_marks || (f->flags & RD_FF_LINKED)))
			rd_sink_link_kept(r->sink, f->path, f->plen, root);
		if (m->flags & RD_MF_LAST)
			f->state = RF_DONE;
		return 0;
	}
	if (ret == RD_SINK_RANGE_SAME && !commit) {
		f->state = RF_DONE; /* the final file is there (quick check) */
		return 0;
	}
	if (commit) {
		/* placed like any file: its items, and a link group's first is remembered */
		f->items = rd_sink_file_items(f->f);
		if (r->e->o.hardlinks && (!r->e->o.link_marks || (f->flags & RD_FF_LINKED)))
			rd_sink_file_link_first(f->f);
	}
	if (ret == RD_SINK_RANGE_SAME) {
		f->check = f->all_same = 1; /* keep it: its metadata only */
		return 0;
	}
	if (!commit) {
		f->next = f->done = m->off / cs;
		f->nchunks = rd_nchunks(m->off + m->len, cs);
	}
	return 0;
}

/* An ACL META: onto the temporary, the directory, or (kept) the existing file. */
static int meta_acl(struct receiver *r, struct rfile *f, const struct rd_msg_meta *m, int root,
		    int kept)
{
	unsigned i;

	for (i = 0; i < m->n; i++) {
		struct rd_acl_ent a = rd_meta_acl(m, i);

		r->acl[i] = (struct rd_sink_acl){a.tag, a.perm, a.id};
	}
	if (kept)
		return rd_sink_node_acl(r->sink, f->path, f->plen, root, m->acl_type, r->acl, m->n);
	if (f->type == RD_FT_REG)
		return rd_sink_file_acl(f->f, m->acl_type, r->acl, m->n);
	return rd_sink_dir_acl(r->sink, f->path, f->plen, root, m->acl_type, r->acl, m->n);
}

/* One META item for the entry just announced (rd_proto.h, META). */
static int on_meta(struct receiver *r, const struct rd_msg_meta *m)
{
	struct rfile *f = win_of(r, m->id);
	int root, ret = 0;
	unsigned i;

	if (!f || !f->more || m->id != r->next_id - 1)
		return rd_recv__proto_err(r, "META for an entry that announced none");
	if (r->e->o.list) {
		if (m->flags & RD_MF_LAST) {
			f->more = 0;
			f->state = RF_DONE;
		}
		return 0;
	}
	root = sink_how(f->flags);
	if (f->kept) {
		/* a file left as it is: its xattrs and ACLs (SAME only), nothing to send */
		if (f->kept == 1 && !f->failed && m->kind == RD_META_XATTR)
			ret = rd_sink_node_xattr(r->sink, f->path, f->plen, root, m->name.ptr,
						 m->name.len, m->value, m->vlen);
		else if (f->kept == 1 && !f->failed && m->kind == RD_META_ACL)
			ret = meta_acl(r, f, m, root, 1);
		took(r, f, ret);
		sink_result(r, f, ret);
		if (m->flags & RD_MF_LAST) {
			f->more = 0;
			f->state = RF_DONE;
		}
		return 0;
	}
	if (f->range && !f->f && !f->failed && f->state == RF_ACTIVE && m->kind != RD_META_RANGE)
		return rd_recv__proto_err(r, "a range entry's first META is not its RANGE");
	if (m->kind == RD_META_RANGE) {
		ret = on_range(r, f, m);
		if (ret < 0)
			return ret;
	} else if (f->range && !(f->flags & RD_FF_COMMIT)) {
		return rd_recv__proto_err(r, "META other than RANGE for a range entry");
	} else if (m->kind == RD_META_SPARSE) {
		struct rd_extent last = m->n ? rd_meta_extent(m, m->n - 1u) : (struct rd_extent){0, 0};

		if (f->type != RD_FT_REG || f->has_map || last.off + last.len > f->meta.size)
			return rd_recv__proto_err(
			    r, "sparse map on a non-file, twice, or past its end");
		for (i = 0; i < m->n; i++)
			f->map[i] = rd_meta_extent(m, i);
		f->nmap = m->n;
		f->has_map = 1;
		f->check = f->all_same = 0; /* chunks are packed: no comparison */
		/*
		 * Nor can a resumed partial be checked: where the source has a
		 * hole it may hold bytes no piece covers. It starts empty (all
		 * holes), so what lands is the source's, byte for byte.
		 */
		if (!f->failed)
			ret = rd_sink_file_restart(f->f);
	} else if (f->failed || f->dry) {
		/* nothing to apply it to (a dry run sets no xattr or ACL) */
	} else if (m->kind == RD_META_XATTR) {
		if (f->type == RD_FT_REG)
			ret = rd_sink_file_xattr(f->f, m->name.ptr, m->name.len, m->value, m->vlen);
		else
			ret = rd_sink_dir_xattr(r->sink, f->path, f->plen, root, m->name.ptr,
						m->name.len, m->value, m->vlen);
		took(r, f, ret);
	} else { /* ACL */
		ret = meta_acl(r, f, m, root, 0);
		took(r, f, ret);
	}
	sink_result(r, f, ret);
	if (m->flags & RD_MF_LAST) {
		f->more = 0;
		if (f->type == RD_FT_DIR)
			f->state = RF_DONE;
	}
	return 0;
}

static int on_msg(struct receiver *r, const struct rd_msg *m)
{
	char path[RD_PATH_MAX + 1], text[RD_MSG_TEXT_MAX + 1];

	switch (m->hdr.type) {
	case RD_MSG_FILE:
		return on_file(r, &m->u.file);
	case RD_MSG_FILES:
	case RD_MSG_FILEZ: {
		struct rd_msg_file f;
		size_t off = 0;
		unsigned i;
		int ret, z = m->hdr.type == RD_MSG_FILEZ;

		if (!r->e->o.batch)
			return rd_recv__proto_err(r, "FILES without batches agreed");
		/* FILEZ exactly when wide batches were agreed (rd_proto.h) */
		if (z != !!r->e->o.wide)
			return rd_recv__proto_err(r, z ? "FILEZ without wide batches agreed"
						       : "FILES where FILEZ was agreed");
		if (z)
			rd_filez_start(&r->fz);
		for (i = 0; i < m->u.files.n; i++) {
			if (z ? rd_filez_next(&m->u.files, &off, &r->fz, &f)
			      : rd_files_next(&m->u.files, &off, &f))
				return rd_recv__proto_err(r, "bad FILES entry");
			ret = on_file(r, &f);
			if (ret)
				return ret;
		}
		return 0;
	}
	case RD_MSG_DATA:
		return rd_recv__on_data(r, &m->u.data);
	case RD_MSG_CHUNK_ERR:
		return rd_recv__on_chunk_err(r, &m->u.chunk_err);
	case RD_MSG_META:
		return on_meta(r, &m->u.meta);
	case RD_MSG_NOTE:
		/* code 0: information about an entry (metadata not read); no failure */
		if (m->u.note.code)
			r->e->st.files_failed++;
		/* a source error: --delete stops (or, --ignore-errors, spares that directory) */
		if (m->u.note.code && r->mirror)
			rd_sink_mirror_source_error(r->sink, 0);
		if (r->e->report) {
			memcpy(path, m->u.note.path.ptr, m->u.note.path.len);
			path[m->u.note.path.len] = '\0';
			snprintf(text, sizeof(text), "sender: %.*s", (int)m->u.note.text.len,
				 m->u.note.text.ptr);
			r->e->report(r->e->report_ctx, path, m->u.note.path.len,
				     !m->u.note.code		      ? 0
				     : m->u.note.code < RD_STATUS_MAX ? -(int)m->u.note.code
								      : -RD_ESYS,
				     text);
		}
		return 0;
	case RD_MSG_END:
		if (r->end_seen || m->u.end.nfiles != r->next_id - 1)
			return rd_recv__proto_err(r, "END does not match the entries sent");
		r->end_seen = 1;
		return 0;
	case RD_MSG_FIN:
		if (!r->fin_sent)
			return rd_recv__proto_err(r, "FIN before ours");
		r->fin_seen = 1;
		return 0;
	case RD_MSG_ERROR:
		return rd_engine_fail_remote(&r->e->err, &m->u.error, rd_conn_info(r->c)->peer);
	default:
		return rd_recv__proto_err(r, "unexpected message from the sender");
	}
}

static struct rd_regbuf *slot_at(void *ctx, unsigned i)
{
	return &((struct receiver *)ctx)->slots[i].rb;
}

static int slot_busy(void *ctx, unsigned i)
{
	return ((struct receiver *)ctx)->slots[i].state != SL_FREE;
}

/*
 * Rename a complete file into place (or keep the identical one): done.
 * A dry run's comparison (f->dry) only closes its handle: what it found
 * is reported as a real run would report it.
 */
static void commit(struct receiver *r, struct rfile *f, int keep)
{
	int ret = 0;

	if (f->dry)
		rd_sink_file_abort(f->f);
	else
		ret = rd_sink_file_commit(f->f, keep);
	f->items = file_items(r, f->items, keep);
	f->f = NULL;
	if (ret) {
		f->failed = 1;
		f->status = -ret;
		snprintf(f->msg, sizeof(f->msg), "%s", rd_sink_err(r->sink)->msg);
	} else if (keep) {
		r->e->st.files_same++;
	}
	f->state = RF_DONE;
}

/*
 * --fsync: the sealed files of the window get their names as one batch:
 * one syncfs for their data, the renames, one syncfs for the names; only
 * then are they reported done (rd_sink_file_seal). A failed sync fails
 * the batch (the temporaries go away, nothing was named).
 */
/* Tell the owner how the entry ended (rd_engine_entry_fn). */
static void entry_done(struct receiver *r, const struct rfile *f, int status)
{
	struct rd_engine_entry en;

	if (!r->e->entry)
		return;
	memset(&en, 0, sizeof(en));
	en.path = f->path;
	en.plen = f->plen;
	en.type = f->type;
	en.flags = f->flags;
	en.mode = f->meta.mode;
	en.uid = f->meta.uid;
	en.gid = f->meta.gid;
	en.size = f->type == RD_FT_REG ? f->meta.size : 0;
	en.mtime_sec = f->meta.mtime_sec;
	en.bytes = f->bytes;
	en.same = f->type == RD_FT_REG && f->meta.size && !f->bytes && !f->has_map;
	en.status = status;
	r->e->entry(r->e->entry_ctx, &en);
}

static void publish(struct receiver *r)
{
	uint64_t t0 = rd_engine_now_ns();
	struct rfile *f;
	unsigned k;
	int ret;

	ret = rd_sink_sync(r->sink);
	for (k = 0; k < win_span(r); k++) {
		f = win_of(r, r->oldest + k);
		if (f)
			f->batch = 0;
		if (!f || f->state != RF_SEALED)
			continue;
		if (ret) {
			rd_recv__sink_fail(r, f, ret);
			f->state = RF_DONE;
		} else {
			commit(r, f, 0);
			f->batch = 1;
		}
	}
	if (!ret)
		ret = rd_sink_sync(r->sink);
	else
		ret = 0; /* the batch failed before any name was given */
	for (k = 0; ret && k < win_span(r); k++) {
		f = win_of(r, r->oldest + k);
		/* named, but the names may not be on disk: not a success */
		if (f && f->batch && !f->failed) {
			f->failed = 1;
			f->status = -ret;
			snprintf(f->msg, sizeof(f->msg), "%s", rd_sink_err(r->sink)->msg);
		}
	}
	r->e->st.sync_ns += rd_engine_now_ns() - t0;
}

/* RD_OF_BATCH: send the confirmations gathered: 0, 1 (no credit now), or < 0. */
static int flush_dones(struct receiver *r)
{
	struct rd_msg m;
	int ret;

	if (!r->dones.n)
		return 0;
	memset(&m.hdr, 0, sizeof(m.hdr));
	m.hdr.type = RD_MSG_DONES;
	m.u.dones = r->dones;
	ret = rd_engine_send_msg(r->c, &m, &r->e->err);
	if (ret)
		return ret < 0 ? ret : 1;
	r->dones.n = 0;
	return 0;
}

/* The entry's record for the report (rd_engine.h, struct rd_item). */
static void item_done(struct receiver *r, const struct rfile *f, uint16_t status)
{
	struct rd_item it;

	memset(&it, 0, sizeof(it));
	it.path = f->path;
	it.len = f->plen;
	it.flags = f->flags;
	it.type = f->type;
	it.mode = f->meta.mode;
	it.uid = f->meta.uid;
	it.gid = f->meta.gid;
	it.size = f->meta.size;
	it.mtime_sec = f->meta.mtime_sec;
	it.mtime_nsec = f->meta.mtime_nsec;
	if (f->type == RD_FT_SYMLINK || f->type == RD_FT_HLINK) {
		it.target = f->target;
		it.tlen = f->tlen;
	}
	it.items = f->failed ? 0 : f->items;
	it.bytes = f->bytes;
	it.status = status ? -(int)status : 0;
	it.msg = f->msg[0] ? f->msg : NULL;
	it.dry_run = r->e->o.dry_run;
	r->e->item(r->e->report_ctx, &it);
}

/* Finish what can be finished, send DONEs, free window entries in order. */
static int settle(struct receiver *r)
{
	struct rd_msg m;
	struct rfile *f;
	unsigned k, busy = 0, sealed = 0;
	int ret, n = 0;

	/*
	 * Complete files: named now, or (--fsync) sealed and named in a
	 * batch once nothing else is coming or half the window waits.
	 */
	for (k = 0; k < win_span(r); k++) {
		f = win_of(r, r->oldest + k);
		if (!f)
			break;
		/* -n -c: a chunk differed (or a sparse map came): no more to compare */
		if (f->state == RF_ACTIVE && f->type == RD_FT_REG && !f->failed && !f->more &&
		    (f->done == f->nchunks || (f->dry && !f->all_same)) && !f->inflight) {
			int keep = f->check && f->all_same;

			if (!keep && !f->dry && rd_sink_wants_sync(r->sink)) {
				ret = rd_sink_file_seal(f->f);
				if (ret)
					rd_recv__sink_fail(r, f, ret);
				f->state = ret ? RF_DONE : RF_SEALED;
			} else {
				commit(r, f, keep);
			}
		}
		if (f->state == RF_SEALED)
			sealed++;
		else if (f->state == RF_ACTIVE && f->type == RD_FT_REG && !f->failed)
			busy++;
	}
	/*
	 * One sync per batch, not per file: the batch ends when nothing else
	 * is in flight and either the sender cannot send more (window full,
	 * END) or the oldest sealed file waited PUBLISH_MS; or when half the
	 * window waits. (A receiver that keeps pace with the sender would
	 * otherwise sync for every file.)
	 */
	if (!sealed) {
		r->sealed_ms = 0;
	} else {
		uint64_t now = mono_ms();

		if (!r->sealed_ms)
			r->sealed_ms = now;
		if (sealed >= PUBLISH_FILES || (!busy && (r->end_seen || r->active >= r->wn ||
							  now - r->sealed_ms >= PUBLISH_MS))) {
			publish(r);
			r->sealed_ms = 0;
			n++;
		}
	}

	for (k = 0; k < win_span(r); k++) {
		f = win_of(r, r->oldest + k);
		if (!f)
			break;
		if (f->more)
			continue; /* its META are still coming */
		if (f->state == RF_ACTIVE && f->type == RD_FT_HLINK && k == 0) {
			/* every earlier entry is done: its target is in place */
			ret = rd_sink_hardlink(r->sink, f->path, f->plen, sink_how(f->flags),
					       f->target, f->tlen, !!(f->flags & RD_FF_LINK_LAST));
			took(r, f, ret);
			if (ret)
				rd_recv__sink_fail(r, f, ret);
			f->state = RF_DONE;
		}
		if (f->state == RF_ACTIVE && f->failed && !f->inflight)
			f->state = RF_DONE;
		if (f->state == RF_ACTIVE && f->type == RD_FT_DIR && (f->flags & RD_FF_POST) &&
		    k == 0) {
			/* every entry before it is done: its extras may go (--delete) */
			if (r->mirror)
				rd_sink_mirror_post(r->sink, f->id, &f->meta);
			ret = rd_sink_dir_post(r->sink, f->path, f->plen, sink_how(f->flags),
					       &f->meta);
			took(r, f, ret);
			if (ret)
				rd_recv__sink_fail(r, f, ret);
			f->state = RF_DONE;
		}
		if (f->state != RF_DONE || k != 0)
			continue;
		/* The oldest is done: report it and free its place. */
		if (!rd_conn_can_send(r->c))
			break;
		/* the header and DONE: not the whole union (3.6 KiB) per entry */
		memset(&m.hdr, 0, sizeof(m.hdr));
		memset(&m.u.done, 0, sizeof(m.u.done));
		m.hdr.type = RD_MSG_DONE;
		m.u.done.id = f->id;
		m.u.done.status = (uint16_t)(f->failed ? (f->status ? f->status : RD_ESYS) : 0);
		m.u.done.bytes = f->bytes;
		m.u.done.text.ptr = f->msg;
		m.u.done.text.len = (uint16_t)strlen(f->msg); /* the failure, or notes */
		if (f->failed)
			f->items = 0;
		m.u.done.has_items = (uint8_t) !!r->e->o.items;
		m.u.done.items = (uint16_t)(r->e->o.items ? f->items & RD_IT_KNOWN : 0);
		if (r->e->o.batch && !m.u.done.status && !m.u.done.text.len) {
			/*
			 * batched: goes out with the others (flush_dones); a full
			 * batch goes first, and this one starts the next (not a
			 * DONE of its own: a message more per 64 entries when
			 * the receiver settles more than one FILES at a time)
			 */
			if (r->dones.n >= rd_engine_batch(r->e)) {
				ret = flush_dones(r);
				if (ret < 0)
					return ret;
				if (ret)
					break;
			}
			r->dones.has_items = m.u.done.has_items;
			r->dones.id[r->dones.n] = f->id;
			r->dones.items[r->dones.n] = m.u.done.items;
			r->dones.bytes[r->dones.n++] = f->bytes;
		} else {
			/* alone, after those gathered before it */
			ret = flush_dones(r);
			if (!ret)
				ret = rd_engine_send_msg(r->c, &m, &r->e->err);
			if (ret < 0)
				return ret;
			if (ret)
				break;
		}
		if (f->failed) {
			r->e->st.files_failed++;
			if (r->mirror)
				rd_sink_mirror_failed(r->sink, f->id);
		} else {
			r->e->st.files_ok++;
			if (f->type == RD_FT_REG)
				r->e->st.bytes_files += f->meta.size;
		}
		if (r->e->report)
			r->e->report(r->e->report_ctx, f->path, f->plen,
				     f->failed ? -m.u.done.status : 0, f->msg[0] ? f->msg : NULL);
		entry_done(r, f, f->failed ? -(int)m.u.done.status : 0);
		if (!(f->flags & RD_FF_POST))
			rd_stat_add(&r->e->st.entries_done, 1);
		if (r->e->item && !(f->flags & RD_FF_POST))
			item_done(r, f, m.u.done.status);
		f->state = RF_FREE;
		r->active--;
		r->oldest++;
		n++;
		k = (unsigned)-1; /* the next one is now the oldest: look again */
		f = win_of(r, r->oldest);
		if (f && f->type == RD_FT_REG)
			rd_engine_set_cur(r->e, f->path, f->plen, f->meta.size);
	}
	ret = flush_dones(r);
	if (!ret)
		ret = del_flush(r);
	return ret < 0 ? ret : n;
}

static int on_msg_cb(void *ctx, const struct rd_msg *m)
{
	return on_msg(ctx, m);
}

static int proto_err_cb(void *ctx, const char *why)
{
	return rd_recv__proto_err(ctx, why);
}

static int drain_msgs(struct receiver *r)
{
	return rd_engine_drain(r->e, r->c, r, on_msg_cb, proto_err_cb);
}

static int recv_loop(struct receiver *r)
{
	struct rd_msg m;
	int ret, progress;

	for (;;) {
		if (r->e->o.stop && *r->e->o.stop)
			return rd_err_set(&r->e->err, RD_ESTOPPED, 0, "stopped");
		progress = drain_msgs(r);
		if (progress < 0)
			return progress;
		ret = rd_recv__reap_jobs(r); /* inline jobs (one thread) are back already */
		if (ret < 0)
			return ret;
		progress += ret;
		ret = settle(r);
		if (ret < 0)
			return ret;
		progress += ret;
		ret = rd_recv__schedule(r);
		if (ret < 0)
			return ret;
		progress += ret;
		/* --delete-delay, -after, --max-delete: once every entry is done */
		if (r->end_seen && !r->active && r->mirror && !r->mirror_done) {
			rd_sink_mirror_finish(r->sink);
			r->mirror_done = 1;
			ret = del_flush(r);
			if (ret < 0)
				return ret;
		}
		if (r->end_seen && !r->active && !r->dones.n && !r->fin_sent &&
		    rd_conn_can_send(r->c)) {
			memset(&m, 0, sizeof(m));
			m.hdr.type = RD_MSG_FIN;
			m.u.fin.files_ok = (uint32_t)r->e->st.files_ok;
			m.u.fin.files_failed = (uint32_t)r->e->st.files_failed;
			m.u.fin.bytes = r->e->st.bytes_data;
			ret = rd_engine_send_msg(r->c, &m, &r->e->err);
			if (ret < 0)
				return ret;
			if (ret == 0)
				r->fin_sent = 1;
		}
		if (r->fin_seen)
			return 0;
		ret = rd_engine_idle_check(r->e, rd_conn_info(r->c)->peer);
		if (ret)
			return ret;
		ret = rd_conn_poll(r->c, progress	 ? 0
					 : r->pace_ms	 ? r->pace_ms
					 : r->sealed_ms ? PUBLISH_MS
							 : RD_ENGINE_IDLE_MS);
		if (ret < 0 && r->fin_sent)
			return 0; /* all committed and reported; its FIN was a courtesy */
		if (ret < 0)
			return rd_err_copy(&r->e->err, rd_conn_err(r->c));
	}
}

/*
 * The session ends early (the peer stopped, went away, a signal): the
 * chunks workers are verifying and writing now are waited for (bounded)
 * and recorded, so the partials keep everything that arrived and a rerun
 * moves it only once.
 */
static void finish_jobs(struct receiver *r)
{
	struct timespec t0, now;

	if (!r->pool)
		return;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (rd_recv__reap_jobs(r) < 0 || !rd_wpool_busy(r->pool))
			return;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 >=
		    FINISH_JOBS_MS)
			return;
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	}
}

int rd_engine_recv(struct rd_engine *e, struct rd_conn *c, struct rd_sink *sink)
{
	struct receiver *r;
	unsigned i;
	uint64_t n;
	int ret;

	ret = rd_engine_check_key(e);
	if (ret)
		return ret;
	r = calloc(1, sizeof(*r));
	if (!r)
		return rd_err_set(&e->err, RD_ENOMEM, ENOMEM, "receiver state");
	r->e = e;
	r->c = c;
	r->sink = sink;
	r->next_id = 1;
	r->oldest = 1;
	/*
	 * The window's entries: calloc'd, so only those a job reaches are
	 * ever touched (13.5 KiB each: a path, a link target, a sparse map).
	 */
	r->wn = e->o.window;
	r->win = calloc(r->wn, sizeof(*r->win));
	if (!r->win) {
		ret =
		    rd_err_set(&e->err, RD_ENOMEM, ENOMEM, "receiver window of %u entries", r->wn);
		goto out;
	}
	/*
	 * At most pool_bytes registered (two chunks at least); small chunks
	 * may have more slots in flight than pool / chunk.
	 */
	r->rs.max_bytes = e->o.pool_bytes;
	if (r->rs.max_bytes < 2ull * e->o.chunk_size)
		r->rs.max_bytes = 2ull * e->o.chunk_size;
	n = e->o.depth ? e->o.depth * 4ull : RD_ENGINE_MAX_SLOTS;
	if (n > RD_ENGINE_MAX_SLOTS)
		n = RD_ENGINE_MAX_SLOTS;
	if (n < 2)
		n = 2;
	r->nslots = (unsigned)n;
	r->rs.e = e;
	r->rs.c = c;
	r->rs.remote = 1;
	r->rs.what = "receive slot";
	r->rs.n = r->nslots;
	r->rs.buf = slot_at;
	r->rs.busy = slot_busy;
	r->rs.ctx = r;
	r->slots = calloc(r->nslots, sizeof(*r->slots));
	if (!r->slots) {
		ret = rd_err_set(&e->err, RD_ENOMEM, ENOMEM, "receiver state for %u slots",
				 r->nslots);
		goto out;
	}
	if (!sink && !e->o.list) {
		ret = rd_err_set(&e->err, RD_EUSAGE, 0, "a receiver without a destination");
		goto out;
	}
	if (sink) {
		rd_sink_set_chunking(sink, e->o.chunk_size, e->dg->name, e->dg->sum_size > 0);
		rd_sink_set_link_table(sink, e->o.link_table);
	}
	if (sink && e->o.mirror_opts) {
		struct rd_mirror_opts mo = *e->o.mirror_opts;

		mo.report = del_report;
		mo.ctx = r;
		ret = rd_sink_mirror_start(sink, &mo);
		if (ret) {
			rd_err_set(&e->err, -ret, 0, "cannot start --delete");
			goto out;
		}
		r->mirror = mo.delete;
	}
	ret = rd_wpool_start(&r->pool, e, c);
	if (ret)
		goto out;
	ret = recv_loop(r);
	if (ret < 0)
		finish_jobs(r);
	if (ret < 0)
		ret = rd_engine_conn_lost(e, c, ret);
	if (r->mirror) {
		const struct rd_mirror_stats *ms = rd_sink_mirror_stats(sink);

		e->st.del_skipped = ms->skipped;
		e->st.del_limited = ms->limited;
	}
	if (ret == 0 && e->st.files_failed)
		ret = rd_err_set(&e->err, RD_EPARTIAL, 0, "%llu of %llu entries failed",
				 (unsigned long long)e->st.files_failed,
				 (unsigned long long)(e->st.files_failed + e->st.files_ok));
	e->st.finished = 1;
	if (ret == -RD_ESTOPPED && e->o.stop_text) {
		rd_engine_send_error(c, RD_ESTOPPED, e->o.stop_text);
		rd_conn_flush(c, 1000);
	}
out:
	rd_wpool_stop(r->pool); /* no worker writes into a file or slot after this */
	for (i = 0; r->win && i < r->wn && i < r->next_id; i++) /* those reached */
		if (r->win[i].state != RF_FREE && r->win[i].f)
			rd_sink_file_abort(r->win[i].f);
	for (i = 0; r->slots && i < r->nslots; i++)
		rd_regbuf_drop(&r->rs, &r->slots[i].rb);
	free(r->slots);
	free(r->win);
	free(r);
	return ret;
}
