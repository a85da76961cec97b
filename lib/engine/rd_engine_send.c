// SPDX-License-Identifier: MIT
/*
 * Sender side of a session: walk the tree, announce entries (FILE) while
 * the receiver's window has room, answer its chunk requests (GET) in
 * order by reading into registered buffers, hashing, and RDMA-writing into
 * the slot it named, then collect per-entry results (DONE) until FIN.
 *
 * Buffers are registered as the job needs them (rd_engine_bufs.c, shared
 * with the receiver's slots), up to depth chunks in all; then reused, so
 * nothing is allocated per chunk once a job runs at its pace (a small job
 * pins little; issue 14). A GET waits in a bounded
 * queue until a buffer is free.
 *
 * The data work of a GET (read the chunk, tag it) is a job for the worker
 * pool (rd_engine_pool.c): up to one per buffer at once, on e->o.threads
 * workers. Answers still leave in the order the GETs came (a ring of the
 * jobs in that order; the head goes out once it is finished and a credit
 * is free), so the wire sees exactly what one thread would send.
 *
 * Read-ahead: while no GET waits, free buffers (at most half of them) are
 * filled with the next chunks of the oldest open files, which the receiver
 * asks for in order; a GET that finds its chunk read already only needs it
 * tagged. Same buffers, same budget: a GET that finds no free buffer takes
 * one that holds read-ahead data.
 *
 * Packs (RD_OF_PACK, issue 13): a GET kind PACK names many small files;
 * its job reads them one after the other into one buffer and tags the
 * whole; a file that cannot be read whole gets a CHUNK_ERR before the
 * pack's DATA (its bytes are zeros). Small files are not read ahead then:
 * the receiver asks for them in packs.
 *
 * Lazy opening (issue 28): the walk does not open regular files
 * (rd_tree_set_lazy); an entry is opened through its held directory when
 * the first GET, SUM or PACK of it comes (rd_send__win_open, on the loop's
 * thread, before any job of it), so a file the receiver's quick check
 * answers DONE without asking for data is never opened. One that cannot
 * be opened as the walk saw it (gone: RD_EVANISHED; replaced, changed,
 * a symlink: "changed while walking") gets a CHUNK_ERR with that status
 * for every chunk asked of it (or its file of a pack), and fails alone.
 *
 * This file: the walk, FILE and META out, GETs and DONEs in, the loop.
 * The buffers, jobs, read-ahead and answers: rd_engine_send_chunks.c.
 */
#include "lib/engine/rd_engine.h"
#include "lib/engine/rd_engine_priv.h"
#include "lib/engine/rd_engine_send_priv.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void on_sent(void *ctx, uint64_t cookie)
{
	struct sender *s = ctx;

	if (cookie < s->nbufs)
		s->bufs[cookie].busy = 0;
}

static struct rd_regbuf *buf_at(void *ctx, unsigned i)
{
	return &((struct sender *)ctx)->bufs[i].rb;
}

static int buf_busy(void *ctx, unsigned i)
{
	return ((struct sender *)ctx)->bufs[i].busy;
}

/* The bytes of w that would move: its size, or with -S its data pieces. */
static uint64_t win_data_bytes(const struct swin *w)
{
	uint64_t n = 0;
	unsigned i;

	if (w->range) {
		uint64_t a = w->lo * w->cs, b = w->hi * w->cs;

		return (b < w->size ? b : w->size) - (a < b && a < w->size ? a : 0);
	}
	if (!w->has_map)
		return w->size;
	for (i = 0; i < w->nmap; i++)
		n += w->map[i].len;
	return n;
}

int rd_send__proto_err(struct sender *s, const char *what)
{
	rd_err_set(&s->e->err, RD_EPROTO, 0, "%s broke the protocol: %s",
		   rd_conn_info(s->c)->peer, what);
	rd_engine_send_error(s->c, RD_EPROTO, s->e->err.msg);
	return -RD_EPROTO;
}

/* The entry is answered (DONE) and no job of it runs: close it. */
void rd_send__win_close(struct sender *s, struct swin *w)
{
	unsigned i;

	/* read-ahead only of a file asked for (rd_send__start_ra): none for most entries */
	for (i = 0; s->n_ra && w->asked_hi && i < s->nbufs; i++)
		if (s->bufs[i].ra && s->bufs[i].job.w == w) {
			rd_send__ra_drop(s, &s->bufs[i]); /* ready: jobs is 0 */
			s->e->st.chunks_ra_wasted++;
		}
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	rd_tree_dir_put(w->dir);
	w->dir = NULL;
	w->used = 0;
	w->done_seen = 0;
	free(w->target);
	w->target = NULL;
}

/*
 * The first request for a lazy entry's data: open it now, as the walk saw
 * it. A failure stays on the entry (ostatus, otext): its chunks are
 * answered with CHUNK_ERR (rd_send__answer_head).
 */
void rd_send__win_open(struct swin *w)
{
	struct rd_err err;

	if (!w->lazy)
		return;
	w->lazy = 0;
	rd_err_clear(&err);
	if (rd_tree_open_seen(w->dir, w->pname, &w->seen, &w->fd, &err)) {
		w->ostatus = err.status < 0 ? -err.status : err.status;
		if (!w->ostatus)
			w->ostatus = RD_ESYS;
		snprintf(w->otext, sizeof(w->otext), "%s", err.msg);
	}
}

/*
 * A GET asks us to read and hash len bytes: within the session's budget
 * (rd_proto.h section 3, Work bounds), or a protocol error. One 41-byte
 * request must not buy unbounded reading and hashing.
 */
static int work_take(struct sender *s, uint64_t len)
{
	uint64_t max =
	    RD_GET_WORK_X * s->announced + (uint64_t)RD_GET_WORK_SLACK * s->e->o.chunk_size;

	if (len > max || s->work > max - len)
		return rd_send__proto_err(s,
					  "asked for more reading than the entries announced allow "
					  "(every chunk summed and sent, each resent three times)");
	s->work += len;
	return 0;
}

/* SUM answers count as progress only in bulk: a drip of them holds no session open. */
static void sum_progress(struct sender *s, uint64_t len)
{
	s->sum_bytes += len;
	if (s->sum_bytes >= RD_SUM_PROGRESS_BYTES) {
		s->sum_bytes -= RD_SUM_PROGRESS_BYTES;
		rd_engine_progress(s->e);
	}
}

static int on_pack_get(struct sender *s, const struct rd_msg_get *g)
{
	struct swin *w;
	uint32_t sum;
	int r = rd_send__pack_files(s, g, NULL, &sum);

	if (r)
		return r;
	if (s->gq_count >= GETQ_MAX)
		return rd_send__proto_err(s, "too many outstanding GETs");
	if (g->seq <= s->last_seq)
		return rd_send__proto_err(s, "GET sequence number not increasing");
	s->last_seq = g->seq;
	r = work_take(s, sum);
	if (r)
		return r;
	for (w = win_of(s, g->id); w && w->id - g->id < g->chunk; w = win_of(s, w->id + 1))
		rd_send__win_open(w);
	w = win_of(s, g->id);
	if (w->data_hi) {
		s->e->st.chunks_retried++; /* the same pack again: not progress */
	} else {
		s->e->st.packs++;
		s->e->st.files_packed += g->chunk;
		rd_engine_progress(s->e);
	}
	for (; w && w->id - g->id < g->chunk; w = win_of(s, w->id + 1))
		w->data_hi = 1;
	s->getq[(s->gq_head + s->gq_count++) % GETQ_MAX] = *g;
	return 0;
}

static int on_done(struct sender *s, const struct rd_msg_done *d);

static int on_msg(struct sender *s, const struct rd_msg *m)
{
	struct swin *w;
	int r;

	switch (m->hdr.type) {
	case RD_MSG_GET:
		if (m->u.get.kind == RD_GET_PACK)
			return on_pack_get(s, &m->u.get);
		w = win_of(s, m->u.get.id);
		if (!w || w->type != RD_FT_REG || w->done_seen)
			return rd_send__proto_err(s, "GET for an entry that is not an open file");
		if (m->u.get.chunk >= rd_nchunks(w->size, s->e->o.chunk_size))
			return rd_send__proto_err(s, "GET beyond the end of the file");
		if (w->range && (m->u.get.chunk < w->lo || m->u.get.chunk >= w->hi))
			return rd_send__proto_err(s, "GET outside the entry's range");
		if (m->u.get.kind == RD_GET_DATA &&
		    m->u.get.len < rd_chunk_len(w->size, s->e->o.chunk_size, m->u.get.chunk))
			return rd_send__proto_err(s, "GET slot smaller than the chunk");
		if (s->gq_count >= GETQ_MAX)
			return rd_send__proto_err(s, "too many outstanding GETs");
		/* Keyed digests use seq as their nonce: never the same one twice. */
		if (m->u.get.seq <= s->last_seq)
			return rd_send__proto_err(s, "GET sequence number not increasing");
		s->last_seq = m->u.get.seq;
		/* each chunk is summed once at most, in order: a SUM again is not a resume */
		if (m->u.get.kind == RD_GET_SUM && m->u.get.chunk < w->sum_next)
			return rd_send__proto_err(s, "SUM asked again for a chunk already summed");
		r = work_take(s, rd_chunk_len(w->size, s->e->o.chunk_size, m->u.get.chunk));
		if (r)
			return r;
		rd_send__win_open(w);
		if (m->u.get.chunk >= w->asked_hi)
			w->asked_hi = m->u.get.chunk + 1;
		if (m->u.get.kind == RD_GET_SUM) {
			w->sum_next = m->u.get.chunk + 1;
			sum_progress(s, rd_chunk_len(w->size, s->e->o.chunk_size, m->u.get.chunk));
		} else if (m->u.get.chunk < w->data_hi) {
			/* Chunks are asked in order; an earlier one again is a resend. */
			s->e->st.chunks_retried++;
		} else {
			w->data_hi = m->u.get.chunk + 1;
			rd_engine_progress(s->e); /* a new request */
		}
		s->getq[(s->gq_head + s->gq_count++) % GETQ_MAX] = m->u.get;
		return 0;
	case RD_MSG_DONE:
		return on_done(s, &m->u.done);
	case RD_MSG_DONES: {
		struct rd_msg_done d;
		unsigned i;

		if (!s->e->o.batch)
			return rd_send__proto_err(s, "DONES without batches agreed");
		if (m->u.dones.n > RD_BATCH_MAX && !s->e->o.wide)
			return rd_send__proto_err(s, "DONES wider than agreed");
		memset(&d, 0, sizeof(d));
		d.has_items = m->u.dones.has_items;
		for (i = 0; i < m->u.dones.n; i++) {
			d.id = m->u.dones.id[i];
			d.bytes = m->u.dones.bytes[i];
			d.items = m->u.dones.items[i];
			r = on_done(s, &d);
			if (r)
				return r;
		}
		return 0;
	}
	case RD_MSG_DELETED: {
		char path[RD_PATH_MAX + 1], text[RD_MSG_TEXT_MAX + 1];
		unsigned i;

		if (!s->e->o.mirror)
			return rd_send__proto_err(s, "DELETED without --delete asked");
		for (i = 0; i < m->u.deleted.n; i++) {
			memcpy(path, m->u.deleted.path[i].ptr, m->u.deleted.path[i].len);
			path[m->u.deleted.path[i].len] = '\0';
			memcpy(text, m->u.deleted.text[i].ptr, m->u.deleted.text[i].len);
			text[m->u.deleted.text[i].len] = '\0';
			rd_engine_deleted(s->e, m->u.deleted.flags[i], path,
					  m->u.deleted.path[i].len, text[0] ? text : NULL);
		}
		return 0;
	}
	case RD_MSG_FIN:
		if (!s->end_sent || s->outstanding)
			return rd_send__proto_err(s, "FIN before every entry was answered");
		s->fin_seen = 1;
		return 0;
	case RD_MSG_ERROR:
		return rd_engine_fail_remote(&s->e->err, &m->u.error, rd_conn_info(s->c)->peer);
	default:
		return rd_send__proto_err(s, "unexpected message from the receiver");
	}
}

/* Tell the owner how the entry ended (rd_engine_entry_fn). */
static void entry_done(struct sender *s, const struct swin *w, const struct rd_msg_done *d)
{
	struct rd_engine_entry en;

	if (!s->e->entry)
		return;
	memset(&en, 0, sizeof(en));
	en.path = w->path;
	en.plen = w->plen;
	en.type = w->type;
	en.flags = w->flags;
	en.mode = w->mode;
	en.uid = w->uid;
	en.gid = w->gid;
	en.size = w->type == RD_FT_REG ? w->size : 0;
	en.mtime_sec = w->mtime_sec;
	en.bytes = d->bytes;
	en.same = w->type == RD_FT_REG && w->size && !d->bytes && !w->has_map &&
		  !(d->items & RD_IT_SKIPPED);
	en.status = -(int)d->status;
	s->e->entry(s->e->entry_ctx, &en);
}

/* The entry's record for the report (rd_engine.h, struct rd_item). */
static void item_done(struct sender *s, const struct swin *w, const struct rd_msg_done *d,
		      const char *msg)
{
	struct rd_item it;

	memset(&it, 0, sizeof(it));
	it.path = w->path;
	it.len = w->plen;
	it.flags = w->flags;
	it.type = w->type;
	it.mode = w->mode;
	it.uid = w->uid;
	it.gid = w->gid;
	it.size = w->size;
	it.mtime_sec = w->mtime_sec;
	it.mtime_nsec = w->mtime_nsec;
	it.target = w->target;
	it.tlen = w->target ? w->tlen : 0;
	it.items = d->status ? 0 : d->has_items ? d->items : RD_ITEM_UNKNOWN;
	it.bytes = d->bytes;
	it.status = d->status ? -(int)d->status : 0;
	it.msg = msg[0] ? msg : NULL;
	it.dry_run = s->e->o.dry_run;
	s->e->item(s->e->report_ctx, &it);
}

/*
 * --remove-source-files: the receiver confirmed w; its source goes if it
 * is still what was sent, else it stays and that is a failure, said.
 */
static void remove_source(struct sender *s, struct swin *w)
{
	struct rd_err err;

	rd_err_clear(&err);
	if (!rd_tree_remove_source(rd_tree_dir_fd(w->dir), w->pname, &w->seen, &err)) {
		s->e->st.sources_removed++;
		return;
	}
	s->e->st.files_failed++;
	if (s->e->report)
		s->e->report(s->e->report_ctx, w->path, w->plen, -RD_ESYS, err.msg);
}

/* One entry confirmed (DONE, or an entry of DONES). */
static int on_done(struct sender *s, const struct rd_msg_done *d)
{
	struct swin *w = win_of(s, d->id);
	char msg[RD_MSG_TEXT_MAX + 1];

	if (!w || w->done_seen)
		return rd_send__proto_err(s, "DONE for an unknown entry");
	if (!!d->has_items != !!s->e->o.items)
		return rd_send__proto_err(s, d->has_items ? "DONE with items not agreed"
							  : "DONE without the items agreed");
	rd_engine_progress(s->e);
	/* mostly none (DONES carry no text) */
	msg[0] = '\0';
	if (d->text.len && d->text.ptr)
		snprintf(msg, sizeof(msg), "%.*s", (int)d->text.len, d->text.ptr);
	if (d->status) {
		s->e->st.files_failed++;
		if (s->e->report)
			s->e->report(s->e->report_ctx, w->path, w->plen, -(int)d->status, msg);
	} else {
		s->e->st.files_ok++;
		if (w->type == RD_FT_REG)
			s->e->st.bytes_files += w->size;
		/*
		 * The receiver already had it: no byte of it moved. What it
		 * held already (resumed, existing prefix) did not move; with
		 * -S only the data pieces count: a hole is not "kept". A file
		 * a transfer rule left (--existing, -u, ...) is neither.
		 */
		if (w->type == RD_FT_REG && w->size && !d->bytes && !w->has_map &&
		    !(d->items & RD_IT_SKIPPED) && !s->e->o.dry_run)
			s->e->st.files_same++;
		if (w->type == RD_FT_REG && win_data_bytes(w) > d->bytes &&
		    !(d->items & RD_IT_SKIPPED) && !s->e->o.dry_run)
			rd_stat_add(&s->e->st.bytes_resumed, win_data_bytes(w) - d->bytes);
		/* status 0 with text: done, with a note (metadata not kept) */
		if (s->e->report)
			s->e->report(s->e->report_ctx, w->path, w->plen, 0, msg[0] ? msg : NULL);
	}
	/* -n: the receiver confirmed what it would do; nothing arrived */
	if (!d->status && s->e->o.remove_source && !s->e->o.dry_run && w->type != RD_FT_DIR)
		remove_source(s, w);
	entry_done(s, w, d);
	if (!(w->flags & RD_FF_POST))
		rd_stat_add(&s->e->st.entries_done, 1);
	if (s->e->item && !(w->flags & RD_FF_POST))
		item_done(s, w, d, msg);
	/* answered; its fd stays open while a read of it runs */
	s->outstanding--;
	w->done_seen = 1;
	if (!w->jobs)
		rd_send__win_close(s, w);
	return 0;
}

/*
 * After an entry's FILE: its META items (the last flagged RD_MF_LAST),
 * then its note, if reading its metadata left one (NOTE with code 0: for
 * information, nothing failed). 1 = sent one.
 */
static int emit_more(struct sender *s)
{
	struct rd_msg m;
	int r;

	memset(&m, 0, sizeof(m));
	if (s->meta_sent < s->ent.nmeta) {
		m.hdr.type = RD_MSG_META;
		m.u.meta = s->ent.meta[s->meta_sent];
		m.u.meta.id = s->ent_id;
		m.u.meta.flags = s->meta_sent + 1 == s->ent.nmeta ? RD_MF_LAST : 0;
		r = rd_engine_send_msg(s->c, &m, &s->e->err);
		if (r)
			return r < 0 ? r : 0;
		s->meta_sent++;
		return 1;
	}
	if (s->ent.note[0]) {
		m.hdr.type = RD_MSG_NOTE;
		m.u.note.code = 0;
		m.u.note.path.ptr = s->ent.path;
		m.u.note.path.len = (uint16_t)s->ent.path_len;
		m.u.note.text.ptr = s->ent.note;
		m.u.note.text.len = (uint16_t)strlen(s->ent.note);
		r = rd_engine_send_msg(s->c, &m, &s->e->err);
		if (r)
			return r < 0 ? r : 0;
		if (s->e->report)
			s->e->report(s->e->report_ctx, s->ent.path, s->ent.path_len, 0,
				     s->ent.note);
	}
	s->file_sent = 0;
	s->have_ent = 0;
	return 1;
}

/* RD_OF_BATCH: send the entries gathered as one FILES. 0, 1 (no credit now), or < 0. */
static int flush_files(struct sender *s)
{
	struct rd_msg m;
	int r;

	if (!s->fbat_n)
		return 0;
	memset(&m.hdr, 0, sizeof(m.hdr));
	m.hdr.type = s->e->o.wide ? RD_MSG_FILEZ : RD_MSG_FILES;
	m.u.files.n = (uint16_t)s->fbat_n;
	m.u.files.id = s->fz.id;
	m.u.files.raw = s->fbat;
	m.u.files.rawlen = s->fbat_len;
	r = rd_engine_send_msg(s->c, &m, &s->e->err);
	if (r)
		return r < 0 ? r : 1;
	s->fbat_n = 0;
	s->fbat_len = 0;
	rd_filez_start(&s->fz);
	return 0;
}

/* f's entry appended to the batch, FILES' or FILEZ's form: 0, or < 0 (no room). */
static int batch_put(struct sender *s, const struct rd_msg_file *f)
{
	if (s->e->o.wide)
		return rd_filez_put(&s->fz, s->fbat, sizeof(s->fbat), &s->fbat_len, f);
	return rd_files_put(s->fbat, sizeof(s->fbat), &s->fbat_len, f);
}

/* FILE f: sent now, or (batches) added to the next FILES. 0, 1 (not now), or < 0. */
static int put_file_msg(struct sender *s, struct rd_msg *m)
{
	int r;

	if (!s->e->o.batch)
		return rd_engine_send_msg(s->c, m, &s->e->err);
	if (s->fbat_n >= rd_engine_batch(s->e) || batch_put(s, &m->u.file)) {
		r = flush_files(s); /* full: that one first */
		if (r)
			return r;
		if (batch_put(s, &m->u.file))
			return rd_err_set(&s->e->err, RD_EUSAGE, 0, "cannot encode a FILE");
	}
	s->fbat_n++;
	/* its META follow the FILES it ends */
	if (m->u.file.flags & RD_FF_MORE)
		flush_files(s); /* if no credit now: emit_entry sends it first */
	return 0;
}

/* Announce the next entry if the window and a credit allow. 1 = did one. */
static int emit_entry(struct sender *s)
{
	struct rd_msg m;
	struct swin *w;
	int r;

	if (s->end_sent || !rd_conn_can_send(s->c))
		return 0;
	if (s->file_sent) {
		/* the entries gathered go before its META and note */
		r = flush_files(s);
		if (r)
			return r < 0 ? r : 0;
		return emit_more(s);
	}
	if (!s->have_ent && !s->tree_done) {
		uint64_t t0 = rd_engine_now_ns();

		r = rd_tree_next(s->t, &s->ent);
		s->e->st.walk_ns += rd_engine_now_ns() - t0;
		if (r < 0)
			return rd_err_copy(&s->e->err, rd_tree_err(s->t));
		if (r == RD_TREE_END) {
			s->tree_done = 1;
		} else {
			s->have_ent = 1;
			s->ent_skip = r == RD_TREE_SKIP || r == RD_TREE_LEFT_OUT;
			s->skip_code = r == RD_TREE_SKIP ? rd_tree_err(s->t)->status : 0;
			if (s->skip_code < 0)
				s->skip_code = -s->skip_code;
			if (r == RD_TREE_SKIP && !s->skip_code)
				s->skip_code = RD_ESYS;
			if (s->ent_skip)
				snprintf(s->skip_msg, sizeof(s->skip_msg), "%s",
					 r == RD_TREE_SKIP ? rd_tree_err(s->t)->msg : s->ent.note);
		}
	}
	/* the header and the member used: not the whole union (2 KiB) per entry */
	memset(&m.hdr, 0, sizeof(m.hdr));
	if ((s->tree_done && !s->have_ent) || s->ent_skip) {
		/* END and NOTEs come after the entries gathered */
		r = flush_files(s);
		if (r)
			return r < 0 ? r : 0;
	}
	if (s->tree_done && !s->have_ent) {
		if (s->outstanding)
			return 0; /* END after the last DONE keeps FIN simple */
		m.hdr.type = RD_MSG_END;
		memset(&m.u.end, 0, sizeof(m.u.end));
		m.u.end.nfiles = s->next_id - 1;
		r = rd_engine_send_msg(s->c, &m, &s->e->err);
		if (r)
			return r < 0 ? r : 0;
		s->end_sent = 1;
		return 1;
	}
	if (s->ent_skip) {
		/* a skip (code: why it failed) or an entry left out (code 0: a note) */
		m.hdr.type = RD_MSG_NOTE;
		memset(&m.u.note, 0, sizeof(m.u.note));
		m.u.note.code = (uint16_t)s->skip_code;
		m.u.note.path.ptr = s->ent.path;
		m.u.note.path.len = (uint16_t)(s->ent.path_len > RD_PATH_MAX ? RD_PATH_MAX
									: s->ent.path_len);
		m.u.note.text.ptr = s->skip_msg;
		m.u.note.text.len = (uint16_t)strlen(s->skip_msg);
		r = rd_engine_send_msg(s->c, &m, &s->e->err);
		if (r)
			return r < 0 ? r : 0;
		if (s->skip_code)
			s->e->st.files_failed++;
		if (s->e->report)
			s->e->report(s->e->report_ctx, s->ent.path, s->ent.path_len, -s->skip_code,
				     s->skip_msg);
		s->have_ent = 0;
		return 1;
	}
	if ((s->ent.flags & (RD_FF_RANGE | RD_FF_COMMIT)) &&
	    (!s->e->o.ranges || !s->ent.nmeta || s->ent.meta[0].kind != RD_META_RANGE))
		return rd_err_set(&s->e->err, RD_EUSAGE, 0,
				  "%s: a range entry without ranges agreed or without its RANGE",
				  s->ent.path);
	if (s->outstanding >= s->wn)
		return 0;
	w = &s->win[s->next_id % s->wn];
	if (w->used)
		return 0;
	m.hdr.type = RD_MSG_FILE;
	memset(&m.u.file, 0, sizeof(m.u.file));
	m.u.file.id = s->next_id;
	m.u.file.type = s->ent.type;
	m.u.file.flags = s->ent.flags | (s->ent.nmeta ? RD_FF_MORE : 0);
	/* link groups are named only from protocol 10 on (older peers refuse the flags) */
	if (s->ent.type == RD_FT_DIR) {
		/* RD_FF_IMPLIED (the bit of RD_FF_LINKED): only with --delete agreed */
		if (!s->e->o.mirror)
			m.u.file.flags &= (uint8_t)~RD_FF_IMPLIED;
	} else if (!s->e->o.link_marks) {
		m.u.file.flags &= (uint8_t) ~(RD_FF_LINKED | RD_FF_LINK_LAST);
	}
	m.u.file.mode = s->e->o.chmod && s->ent.type != RD_FT_SYMLINK
			    ? rd_chmod_apply(s->e->o.chmod, s->ent.mode)
			    : s->ent.mode;
	m.u.file.uid = s->ent.uid;
	m.u.file.gid = s->ent.gid;
	m.u.file.size = s->ent.type == RD_FT_REG || s->ent.type == RD_FT_SPECIAL ||
				(s->ent.type == RD_FT_DIR && s->e->o.list_sizes)
			    ? s->ent.size
			    : 0;
	m.u.file.mtime_sec = s->ent.mtime_sec;
	m.u.file.mtime_nsec = s->ent.mtime_nsec;
	m.u.file.path.ptr = s->ent.path;
	m.u.file.path.len = (uint16_t)s->ent.path_len;
	m.u.file.target.ptr = s->ent.target;
	m.u.file.target.len = (uint16_t)s->ent.target_len;
	r = put_file_msg(s, &m);
	if (r)
		return r < 0 ? r : 0;
	w->used = 1;
	w->id = s->next_id++;
	w->fd = s->ent.fd;
	w->type = s->ent.type;
	w->flags = s->ent.flags;
	w->mode = m.u.file.mode;
	w->uid = s->ent.uid;
	w->gid = s->ent.gid;
	w->target = NULL;
	w->tlen = 0;
	if (s->e->item && (w->type == RD_FT_SYMLINK || w->type == RD_FT_HLINK)) {
		/* for the report only: without memory it goes without "-> target" */
		w->target = strndup(s->ent.target, s->ent.target_len);
		w->tlen = w->target ? s->ent.target_len : 0;
	}
	w->size = m.u.file.size;
	w->mtime_sec = s->ent.mtime_sec;
	w->mtime_nsec = s->ent.mtime_nsec;
	w->data_hi = w->asked_hi = w->sum_next = 0;
	if (w->type == RD_FT_REG)
		s->announced += w->size;
	w->flags = m.u.file.flags;
	w->mode = s->ent.mode;
	memcpy(w->path, s->ent.path, s->ent.path_len);
	w->path[s->ent.path_len] = '\0';
	w->plen = s->ent.path_len;
	w->has_map = 0;
	w->jobs = 0;
	w->done_seen = 0;
	w->nchunks = w->type == RD_FT_REG ? rd_nchunks(w->size, s->e->o.chunk_size) : 0;
	w->ra_next = 0;
	w->range = 0;
	w->cs = s->e->o.chunk_size;
	if (s->ent.flags & (RD_FF_RANGE | RD_FF_COMMIT)) {
		/* the walk put its RANGE first (rd_proto.h section 6) */
		const struct rd_msg_meta *rm = &s->ent.meta[0];

		w->range = 1;
		w->lo = s->ent.flags & RD_FF_COMMIT ? 0 : rm->off / w->cs;
		w->hi = s->ent.flags & RD_FF_COMMIT ? 0 : rd_nchunks(rm->off + rm->len, w->cs);
		w->nchunks = w->hi;
		w->ra_next = w->lo;
	}
	if (w->type == RD_FT_REG && s->ent.nmeta &&
	    s->ent.meta[s->ent.nmeta - 1].kind == RD_META_SPARSE) {
		/* the walk puts the map last */
		w->has_map = 1;
		w->nmap = s->ent.meta[s->ent.nmeta - 1].n;
		memcpy(w->map, s->ent.meta[s->ent.nmeta - 1].ext, w->nmap * sizeof(w->map[0]));
	}
	s->ent.fd = -1;
	w->dir = s->ent.dir; /* lazy, --remove-source-files: owned by the window now */
	s->ent.dir = NULL;
	w->lazy = s->ent.lazy && w->type == RD_FT_REG;
	w->ostatus = 0;
	w->otext[0] = '\0';
	memcpy(w->pname, s->ent.pname, sizeof(w->pname));
	w->seen = s->ent.seen;
	s->outstanding++;
	s->e->st.entries++;
	if (!(w->flags & RD_FF_POST)) {
		rd_stat_add(&s->e->st.entries_announced, 1);
		if (w->type == RD_FT_REG)
			rd_stat_add(&s->e->st.bytes_announced, w->size);
	}
	rd_engine_progress(s->e);
	if (w->type == RD_FT_REG)
		rd_engine_set_cur(s->e, w->path, w->plen, w->size);
	if (s->ent.nmeta || s->ent.note[0]) {
		s->file_sent = 1;
		s->meta_sent = 0;
		s->ent_id = w->id;
		return 1;
	}
	s->have_ent = 0;
	return 1;
}

static int on_msg_cb(void *ctx, const struct rd_msg *m)
{
	return on_msg(ctx, m);
}

static int proto_err_cb(void *ctx, const char *why)
{
	return rd_send__proto_err(ctx, why);
}

static int drain_msgs(struct sender *s)
{
	return rd_engine_drain(s->e, s->c, s, on_msg_cb, proto_err_cb);
}

/* Run step until it has nothing more to do, counting what it did. */
static int repeat_step(struct sender *s, int (*step)(struct sender *), int *progress)
{
	int r;

	while ((r = step(s)) > 0)
		(*progress)++;
	return r < 0 ? r : 0;
}

static int send_loop(struct sender *s)
{
	struct rd_msg m;
	int r, progress;

	for (;;) {
		if (s->e->o.stop && *s->e->o.stop)
			return rd_err_set(&s->e->err, RD_ESTOPPED, 0, "stopped");
		s->pace_ms = 0;
		progress = drain_msgs(s);
		if (progress < 0)
			return progress;
		progress += rd_send__reap_jobs(s);
		if ((r = repeat_step(s, rd_send__answer_head, &progress)) ||
		    (r = repeat_step(s, rd_send__start_get, &progress)))
			return r;
		/* an inline job (one thread) is finished already */
		progress += rd_send__reap_jobs(s);
		if ((r = repeat_step(s, rd_send__answer_head, &progress)) ||
		    (r = repeat_step(s, rd_send__start_ra, &progress)) ||
		    (r = repeat_step(s, emit_entry, &progress)))
			return r;
		/* nothing more to announce now: what was gathered goes */
		r = flush_files(s);
		if (r < 0)
			return r;
		if (s->fin_seen && !s->fin_sent && rd_conn_can_send(s->c)) {
			memset(&m, 0, sizeof(m));
			m.hdr.type = RD_MSG_FIN;
			m.u.fin.files_ok = (uint32_t)s->e->st.files_ok;
			m.u.fin.files_failed = (uint32_t)s->e->st.files_failed;
			m.u.fin.bytes = s->e->st.bytes_data;
			r = rd_engine_send_msg(s->c, &m, &s->e->err);
			if (r < 0)
				return r;
			if (r == 0) {
				/*
				 * The receiver's FIN already confirmed every entry;
				 * waiting for our FIN to be acknowledged only makes
				 * its end tidy, so a disconnect now is not an error.
				 */
				s->fin_sent = 1;
				rd_conn_flush(s->c, 2000);
				return 0;
			}
		}
		r = rd_engine_idle_check(s->e, rd_conn_info(s->c)->peer);
		if (r)
			return r;
		r = rd_conn_poll(s->c, progress ? 0 : s->pace_ms ? s->pace_ms : RD_ENGINE_IDLE_MS);
		if (r < 0 && s->fin_seen)
			return 0; /* everything confirmed; the peer just left first */
		if (r < 0)
			return rd_err_copy(&s->e->err, rd_conn_err(s->c));
	}
}

int rd_engine_send(struct rd_engine *e, struct rd_conn *c, struct rd_tree *t)
{
	struct sender *s;
	unsigned i;
	int ret;

	ret = rd_engine_check_key(e);
	if (ret)
		return ret;
	s = calloc(1, sizeof(*s));
	if (!s)
		return rd_err_set(&e->err, RD_ENOMEM, ENOMEM, "sender state");
	s->e = e;
	s->c = c;
	s->t = t;
	s->next_id = 1;
	s->ent.fd = -1;
	s->ent.dir = NULL;
	s->wn = e->o.window;
	rd_tree_set_lazy(t, 1);
	rd_tree_set_link_table(t, e->o.link_table);
	s->win = calloc(s->wn, sizeof(*s->win));
	if (!s->win) {
		ret = rd_err_set(&e->err, RD_ENOMEM, ENOMEM, "sender window of %u entries", s->wn);
		goto out;
	}
	s->nbufs = e->o.depth;
	if ((uint64_t)s->nbufs * e->o.chunk_size > e->o.pool_bytes && e->o.pool_bytes)
		s->nbufs = (unsigned)(e->o.pool_bytes / e->o.chunk_size);
	if (s->nbufs < 1)
		s->nbufs = 1;
	s->rs.max_bytes = (uint64_t)s->nbufs * e->o.chunk_size;
	/* small chunks of small files: more of them in flight, same bytes */
	if (s->nbufs < e->o.depth)
		s->nbufs = e->o.depth;
#ifdef RDCP_TEST_HOOKS
	if (getenv("RDCP_TEST_CORRUPT_DATA"))
		s->corrupt_at = (unsigned)atoi(getenv("RDCP_TEST_CORRUPT_DATA"));
	s->corrupt_every = getenv("RDCP_TEST_CORRUPT_EVERY") != NULL;
#endif
	s->rs.e = e;
	s->rs.c = c;
	s->rs.what = "read buffer";
	s->rs.n = s->nbufs;
	s->rs.buf = buf_at;
	s->rs.busy = buf_busy;
	s->rs.ctx = s;
	s->bufs = calloc(s->nbufs, sizeof(*s->bufs));
	s->ring = calloc(s->nbufs, sizeof(*s->ring));
	if (!s->bufs || !s->ring) {
		ret = rd_err_set(&e->err, RD_ENOMEM, ENOMEM, "%u read buffers", s->nbufs);
		goto out;
	}
	ret = rd_wpool_start(&s->pool, e, c);
	if (ret)
		goto out;
	rd_conn_set_sent_cb(c, on_sent, s);

	ret = send_loop(s);
	if (ret == -RD_ESTOPPED && e->o.stop_text)
		rd_engine_stop_peer(c, e->o.stop_text, 2000);
	if (ret < 0)
		ret = rd_engine_conn_lost(e, c, ret);
	if (ret == 0 && e->st.files_failed)
		ret = rd_err_set(&e->err, RD_EPARTIAL, 0, "%llu of %llu entries failed",
				 (unsigned long long)e->st.files_failed,
				 (unsigned long long)(e->st.files_failed + e->st.files_ok));
	e->st.finished = 1;
out:
	rd_wpool_stop(s->pool); /* no worker reads a buffer or fd after this */
	rd_conn_set_sent_cb(c, NULL, NULL);
	for (i = 0; s->bufs && i < s->nbufs; i++)
		rd_regbuf_drop(&s->rs, &s->bufs[i].rb);
	for (i = 0; s->win && i < win_reached(s); i++) {
		if (s->win[i].used && s->win[i].fd >= 0)
			close(s->win[i].fd);
		if (s->win[i].used)
			rd_tree_dir_put(s->win[i].dir);
		free(s->win[i].target);
	}
	if (s->ent.fd >= 0)
		close(s->ent.fd);
	rd_tree_dir_put(s->ent.dir);
	free(s->bufs);
	free(s->ring);
	free(s->win);
	free(s);
	return ret;
}
