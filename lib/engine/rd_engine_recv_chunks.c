// SPDX-License-Identifier: MIT
/*
 * The receiver's chunks (rd_engine_recv.c says how a receiver works):
 * the slots, the requests that fill them (GET DATA, SUM, PACK), the
 * answers that come back into them, and the jobs that verify and write
 * them (or, for a SUM, compare our copy) on the worker pool.
 */
#include "lib/engine/rd_engine.h"
#include "lib/engine/rd_engine_priv.h"
#include "lib/engine/rd_engine_recv_priv.h"

#include <stddef.h>
#include <string.h>

static struct rslot *slot_for(struct receiver *r, uint32_t slot, uint32_t id, uint64_t chunk)
{
	struct rslot *s;

	if (slot >= r->nslots)
		return NULL;
	s = &r->slots[slot];
	if (s->state != SL_BUSY || s->id != id || s->chunk != chunk)
		return NULL;
	return s;
}

static void slot_release(struct receiver *r, struct rslot *s, struct rfile *f)
{
	s->state = SL_FREE;
	if (f)
		f->inflight--;
}

/* A chunk we held was equal to the sender's: counted as kept, not moved. */
static void kept(struct receiver *r, struct rfile *f, uint32_t len)
{
	f->done++;
	rd_stat_add(&r->e->st.bytes_resumed, len);
	if (f->id == r->oldest)
		rd_stat_add(&r->e->st.cur_done, len);
}

static void rjob_run(struct rd_job *jj, struct rd_digest *dg);

/* The job for the answer d in slot s, one chunk of f (npack 0); the caller says what to do. */
static struct rjob *chunk_job(struct receiver *r, struct rslot *s, struct rfile *f,
			      const struct rd_msg_data *d, uint32_t want)
{
	struct rjob *j = &s->job;

	memset(j, 0, offsetof(struct rjob, pf));
	j->j.run = rjob_run;
	j->f = f;
	j->sf = f->f;
	j->slot = (unsigned)(s - r->slots);
	j->ref = (struct rd_chunk_ref){d->id, d->chunk, want, d->seq};
	j->buf = s->rb.p;
	j->cs = r->e->o.chunk_size;
	memcpy(j->tag, d->digest, d->dlen); /* d points into a receive buffer */
	return j;
}

/* Hand the job to a worker: its slot is SL_WORK until it comes back. */
static void job_submit(struct receiver *r, struct rslot *s, struct rfile *f, struct rjob *j)
{
	s->state = SL_WORK;
	f->working++;
	rd_wpool_submit(r->pool, &j->j);
}

/* A file that failed while jobs of it ran: its temporary goes once the last ends. */
static void abort_if_idle(struct rfile *f)
{
	if (!f->working && f->abort_later) {
		f->abort_later = 0;
		rd_sink_file_abort(f->f);
		f->f = NULL;
	}
}

/*
 * A SUM answer: the comparison (read our copy, digest it) is a job for a
 * worker, so that with several slots in flight the receiver's digests
 * run beside the sender's instead of one by one on the loop; the slot's
 * buffer, reserved for the data in case it differs, holds our copy.
 */
static int on_sum(struct receiver *r, struct rfile *f, struct rslot *s,
		  const struct rd_msg_data *d)
{
	uint32_t want = rd_chunk_len(f->meta.size, r->e->o.chunk_size, d->chunk);
	struct rjob *j = &s->job;
	uint64_t c;

	/* Answers come in the order of the GETs: the oldest SUM in flight. */
	for (c = 0; c < r->nslots; c++) {
		const struct rslot *o = &r->slots[c];

		if (o->state == SL_BUSY && o->kind == RD_GET_SUM && o->id == f->id &&
		    o->chunk < d->chunk)
			return rd_recv__proto_err(r, "SUM answer out of order");
	}
	if (d->len != want || d->dlen != r->e->dg->sum_size)
		return rd_recv__proto_err(r, "SUM answer out of order or of the wrong size");
	if (want > s->rb.cap)
		return rd_recv__proto_err(r, "SUM answer longer than its slot");
	chunk_job(r, s, f, d, want);
	j->sum = 1;
	j->existing = s->src != RD_SINK_CHUNK_PARTIAL;
	job_submit(r, s, f, j);
	return 0;
}

/* Is chunk of f still being compared (its SUM asked for or on a worker)? */
static int sum_pending(const struct receiver *r, const struct rfile *f, uint64_t chunk)
{
	unsigned i;

	for (i = 0; i < r->nslots; i++) {
		const struct rslot *o = &r->slots[i];

		if ((o->state == SL_BUSY || o->state == SL_WORK) && o->kind == RD_GET_SUM &&
		    o->id == f->id && o->chunk == chunk)
			return 1;
	}
	return 0;
}

/*
 * The first chunk of an existing file that differs (f->all_same ends):
 * the chunks found equal so far were only counted, so copy them into the
 * temporary now. Comparisons end out of order on several workers, so
 * those are every chunk asked for so far but this one and the ones still
 * being compared, whose own answers will copy or send them.
 */
static int copy_settled(struct receiver *r, struct rfile *f, uint64_t chunk)
{
	uint64_t cs = r->e->o.chunk_size, c, start = 0, end;
	int ret = 0;

	for (c = 0; c <= f->next && !ret; c++) {
		if (c < f->next && c != chunk && !sum_pending(r, f, c))
			continue;
		end = c * cs < f->meta.size ? c * cs : f->meta.size;
		if (end > start * cs)
			ret = rd_sink_file_copy_existing(f->f, start * cs, end - start * cs);
		for (; !ret && start < c; start++)
			rd_sink_file_chunk_done(f->f, start, 1);
		start = c + 1;
	}
	return ret;
}

/* A SUM comparison came back: keep the chunk, or ask for its data. */
static int sum_done(struct receiver *r, struct rjob *j)
{
	struct rslot *s = &r->slots[j->slot];
	struct rfile *f = j->f;
	uint64_t chunk = j->ref.chunk, off = chunk * j->cs;
	uint32_t want = j->ref.len;
	int ret = 0;

	f->working--;
	s->state = SL_BUSY;
	if (f->failed) {
		slot_release(r, s, f);
		goto out;
	}
	if (j->vret) {
		ret = rd_err_copy(&r->e->err, &j->err);
		goto out;
	}
	if (j->werr) {
		rd_recv__sink_fail(r, f, rd_sink_file_read_error(f->f, j->existing, -j->werr));
		slot_release(r, s, f);
		goto out;
	}
	if (j->same) {
		/* Same chunk: nothing to move; copy it only once the file differs (a real run). */
		if (!f->all_same && j->existing && !f->dry)
			ret = rd_sink_file_copy_existing(f->f, off, want);
		if (ret) {
			rd_recv__sink_fail(r, f, ret);
			ret = 0;
		} else {
			if (!f->all_same)
				rd_sink_file_chunk_done(f->f, chunk, 1);
			kept(r, f, want);
		}
		slot_release(r, s, f);
		goto out;
	}
	if (f->dry) {
		/* -n -c: it would be sent; nothing more is asked (settle) */
		f->all_same = 0;
		slot_release(r, s, f);
		goto out;
	}
	if (!j->existing)
		rd_sink_file_chunk_done(f->f, chunk, 0);
	if (f->all_same) {
		f->all_same = 0;
		ret = copy_settled(r, f, chunk);
		if (ret) {
			rd_recv__sink_fail(r, f, ret);
			slot_release(r, s, f);
			ret = 0;
			goto out;
		}
	}
	/* Differs: the reserved slot now asks for the data. */
	s->kind = RD_GET_DATA;
	s->state = SL_RETRY;
out:
	abort_if_idle(f);
	return ret;
}

/*
 * -S: each data piece of the chunk at its offset; holes stay unwritten.
 * On a worker: 0 or -errno (rd_sink_file_pwrite).
 */
static int write_packed(const struct rfile *f, struct rd_sink_file *sf, uint32_t cs,
			const uint8_t *buf, uint64_t chunk)
{
	uint64_t off, n;
	size_t at = 0;
	unsigned i;
	int ret;

	for (i = 0; i < f->nmap; i++) {
		n = rd_sparse_piece(&f->map[i], cs, chunk, f->meta.size, &off);
		if (!n)
			continue;
		ret = rd_sink_file_pwrite(sf, buf + at, (size_t)n, off);
		if (ret)
			return ret;
		at += (size_t)n;
	}
	return 0;
}

/* A worker: verify the chunk in its slot, then write it where it belongs. */
static void rjob_run(struct rd_job *jj, struct rd_digest *dg)
{
	struct rjob *j = (struct rjob *)jj;
	uint8_t mine[RD_DIGEST_MAX];

	if (j->sum) {
		j->werr = rd_sink_file_pread(j->sf, j->existing, j->buf, j->ref.len,
					     j->ref.chunk * j->cs);
		if (j->werr)
			return;
		j->vret = rd_digest_compute(dg, j->buf, j->ref.len, mine);
		if (j->vret)
			rd_err_copy(&j->err, &dg->err);
		else
			j->same = !memcmp(mine, j->tag, dg->sum_size);
		return;
	}
	if (j->verify) {
		j->vret = rd_digest_verify(dg, &j->ref, j->buf, j->ref.len, j->tag);
		if (j->vret && j->vret != -RD_ECORRUPT)
			rd_err_copy(&j->err, &dg->err);
		if (j->vret)
			return;
	}
	if (j->npack) {
		size_t at = 0;
		unsigned i;

		for (i = 0; i < j->npack; i++) {
			if (j->psf[i])
				j->pwerr[i] = rd_sink_file_pwrite(j->psf[i], j->buf + at, j->plen[i], 0);
			at += j->plen[i];
		}
	} else if (j->f->has_map)
		j->werr = write_packed(j->f, j->sf, j->cs, j->buf, j->ref.chunk);
	else
		j->werr = rd_sink_file_pwrite(j->sf, j->buf, j->ref.len, j->ref.chunk * j->cs);
}

/* A pack's slot is free again: none of its files waits for it. */
static void pack_release(struct receiver *r, struct rslot *s)
{
	uint64_t i;

	s->state = SL_FREE;
	for (i = 0; i < s->chunk; i++) {
		struct rfile *f = win_of(r, s->id + (uint32_t)i);

		if (f)
			f->inflight--;
	}
}

/* DATA of a PACK: verify it whole, then write each of its live files (a worker). */
static int on_pack(struct receiver *r, struct rslot *s, const struct rd_msg_data *d)
{
	struct rjob *j = &s->job;
	unsigned i, live = 0;
	uint64_t want = 0;

	for (i = 0; i < s->chunk; i++)
		want += win_of(r, d->id + i)->meta.size; /* held by inflight */
	if (d->len != want)
		return rd_recv__proto_err(r, "PACK DATA of the wrong length");
	if (d->dlen != r->e->dg->size)
		return rd_recv__proto_err(r, "DATA digest of the wrong length");
	if (want > s->rb.cap)
		return rd_recv__proto_err(r, "DATA longer than its slot");
	memset(j, 0, offsetof(struct rjob, pf));
	j->npack = (unsigned)s->chunk;
	for (i = 0; i < j->npack; i++) {
		struct rfile *f = win_of(r, d->id + i);

		j->pf[i] = f;
		j->psf[i] = f->failed ? NULL : f->f;
		j->plen[i] = (uint32_t)f->meta.size;
		j->pwerr[i] = 0;
		if (!f->failed) {
			f->working++;
			live++;
		}
	}
	if (!live) {
		pack_release(r, s);
		return 0;
	}
	j->j.run = rjob_run;
	j->slot = (unsigned)(s - r->slots);
	j->ref = (struct rd_chunk_ref){d->id, d->chunk, (uint32_t)want, d->seq};
	j->buf = s->rb.p;
	j->cs = r->e->o.chunk_size;
	j->verify = r->e->dg->size > 0;
	memcpy(j->tag, d->digest, d->dlen);
	s->state = SL_WORK;
	rd_wpool_submit(r->pool, &j->j);
	return 0;
}

/* A pack's job came back: every live file written and done, or the pack asked again. */
static int pack_done(struct receiver *r, struct rjob *j)
{
	struct rslot *s = &r->slots[j->slot];
	unsigned i;
	int ret = 0, again = 0;

	s->state = SL_BUSY;
	for (i = 0; i < j->npack; i++)
		if (j->psf[i])
			j->pf[i]->working--;
	if (j->vret == -RD_ECORRUPT) {
		r->e->st.chunks_retried++;
		again = ++s->tries <= r->e->o.max_retries;
	} else if (j->vret) {
		ret = rd_err_copy(&r->e->err, &j->err);
	}
	for (i = 0; !ret && !again && i < j->npack; i++) {
		struct rfile *f = j->pf[i];

		if (!j->psf[i] || f->failed)
			continue;
		if (j->vret) {
			rd_recv__fail_file(
			    r, f, RD_ECORRUPT,
			    "pack of %u files failed %s verification %u times; giving up", j->npack,
			    r->e->dg->name, s->tries);
		} else if (j->pwerr[i]) {
			rd_recv__sink_fail(r, f, rd_sink_file_write_error(f->f, -j->pwerr[i]));
		} else {
			rd_sink_file_chunk_done(f->f, 0, 1);
			f->done++;
			f->bytes += j->plen[i];
			rd_stat_add(&r->e->st.bytes_data, j->plen[i]);
			if (f->id == r->oldest)
				rd_stat_add(&r->e->st.cur_done, j->plen[i]);
		}
	}
	if (again) {
		s->state = SL_RETRY; /* asked again by rd_recv__schedule() */
	} else if (!ret) {
		if (!j->vret) {
			r->e->st.packs++;
			r->e->st.files_packed += j->npack;
		}
		pack_release(r, s);
	}
	for (i = 0; i < j->npack; i++) {
		struct rfile *f = j->pf[i];

		if (j->psf[i])
			abort_if_idle(f);
	}
	return ret;
}

int rd_recv__on_data(struct receiver *r, const struct rd_msg_data *d)
{
	struct rslot *s = slot_for(r, d->slot, d->id, d->chunk);
	struct rfile *f;
	struct rjob *j;
	uint32_t want;

	if (!s || s->kind != d->kind || s->seq != d->seq)
		return rd_recv__proto_err(r, "DATA for a slot that was not requested");
	rd_engine_progress(r->e); /* an answer to one of our requests */
	if (d->kind == RD_GET_PACK)
		return on_pack(r, s, d);
	f = win_of(r, d->id);
	if (!f || f->type != RD_FT_REG)
		return rd_recv__proto_err(r, "DATA for an unknown file");
	if (f->failed) {
		slot_release(r, s, f);
		return 0;
	}
	if (d->kind == RD_GET_SUM)
		return on_sum(r, f, s, d);
	want = f->has_map ? rd_sparse_len(f->map, f->nmap, r->e->o.chunk_size, d->chunk,
					  f->meta.size)
			  : rd_chunk_len(f->meta.size, r->e->o.chunk_size, d->chunk);
	if (d->len != want) {
		rd_recv__fail_file(r, f, RD_ESYS, "size changed on the sender while copying");
		slot_release(r, s, f);
		return 0;
	}
	if (d->dlen != r->e->dg->size)
		return rd_recv__proto_err(r, "DATA digest of the wrong length");
	if (want > s->rb.cap)
		return rd_recv__proto_err(r, "DATA longer than its slot");
	j = chunk_job(r, s, f, d, want);
	j->verify = r->e->dg->size > 0;
	job_submit(r, s, f, j);
	return 0;
}

/* A job came back: its slot's chunk is good and written, or not. */
static int job_done(struct receiver *r, struct rjob *j)
{
	struct rslot *s = &r->slots[j->slot];
	struct rfile *f = j->f;
	uint32_t want = j->ref.len;
	int ret = 0;

	f->working--;
	s->state = SL_BUSY;
	if (f->failed) {
		slot_release(r, s, f);
	} else if (j->vret == -RD_ECORRUPT) {
		r->e->st.chunks_retried++;
		if (++s->tries > r->e->o.max_retries) {
			rd_recv__fail_file(r, f, RD_ECORRUPT,
					   "chunk %llu failed %s verification %u times; giving up",
					   (unsigned long long)j->ref.chunk, r->e->dg->name,
					   s->tries);
			slot_release(r, s, f);
		} else {
			s->state = SL_RETRY; /* asked again by rd_recv__schedule() */
		}
	} else if (j->vret) {
		ret = rd_err_copy(&r->e->err, &j->err);
	} else if (j->werr) {
		rd_recv__sink_fail(r, f, rd_sink_file_write_error(f->f, -j->werr));
		slot_release(r, s, f);
	} else {
		rd_sink_file_chunk_done(f->f, j->ref.chunk, 1);
		f->done++;
		f->bytes += want;
		rd_stat_add(&r->e->st.bytes_data, want);
		if (f->id == r->oldest)
			rd_stat_add(&r->e->st.cur_done, want);
		slot_release(r, s, f);
	}
	abort_if_idle(f);
	return ret;
}

int rd_recv__reap_jobs(struct receiver *r)
{
	struct rd_job *j, *next;
	int n = 0, ret = 0;

	for (j = rd_wpool_reap(r->pool); j; j = next) {
		struct rjob *rj = (struct rjob *)j;

		next = j->next;
		if (!ret)
			ret = rj->npack ? pack_done(r, rj)
			      : rj->sum ? sum_done(r, rj)
					: job_done(r, rj);
		n++;
	}
	return ret < 0 ? ret : n;
}

int rd_recv__on_chunk_err(struct receiver *r, const struct rd_msg_chunk_err *m)
{
	struct rfile *f = win_of(r, m->id);
	unsigned i;

	if (!f || f->type != RD_FT_REG)
		return rd_recv__proto_err(r, "CHUNK_ERR for an unknown file");
	for (i = 0; i < r->nslots; i++) {
		struct rslot *s = &r->slots[i];

		if (s->state == SL_BUSY && s->id == m->id && s->chunk == m->chunk) {
			if (r->mirror)
				rd_sink_mirror_source_error(r->sink, 1);
			slot_release(r, s, f);
			rd_recv__fail_file(r, f, m->code ? m->code : RD_ESYS, "sender: %.*s",
					   (int)m->text.len, m->text.ptr);
			return 0;
		}
	}
	/* a file of a pack in flight: it fails alone; the pack's DATA follows */
	for (i = 0; !m->chunk && i < r->nslots; i++) {
		struct rslot *s = &r->slots[i];

		if (s->state == SL_BUSY && s->kind == RD_GET_PACK && m->id - s->id < s->chunk) {
			if (r->mirror)
				rd_sink_mirror_source_error(r->sink, 1);
			rd_recv__fail_file(r, f, m->code ? m->code : RD_ESYS, "sender: %.*s",
					   (int)m->text.len, m->text.ptr);
			return 0;
		}
	}
	return rd_recv__proto_err(r, "CHUNK_ERR for a chunk that was not requested");
}

static int send_get(struct receiver *r, unsigned slot, struct rslot *s)
{
	struct rd_msg m;

	memset(&m.hdr, 0, sizeof(m.hdr));
	memset(&m.u.get, 0, sizeof(m.u.get));
	m.hdr.type = RD_MSG_GET;
	m.u.get.id = s->id;
	m.u.get.kind = s->kind;
	m.u.get.slot = slot;
	m.u.get.chunk = s->chunk;
	m.u.get.addr = (uint64_t)(uintptr_t)s->rb.p;
	m.u.get.rkey = s->rb.mr.rkey;
	/* over several rails (RDMA), the slot's key on each */
	m.u.get.nx = (uint8_t)(s->rb.mr.nx < RD_RAILS_MAX ? s->rb.mr.nx : 0);
	memcpy(m.u.get.xrkey, s->rb.mr.xrkey, m.u.get.nx * sizeof(m.u.get.xrkey[0]));
	m.u.get.len = s->rb.cap;
	m.u.get.seq = ++r->seq;
	s->seq = m.u.get.seq;
	return rd_engine_send_msg(r->c, &m, &r->e->err);
}

/* A free slot for a chunk of len bytes (rd_regset_get): 0, 1, or < 0. */
static int slot_get(struct receiver *r, uint32_t len, unsigned *out)
{
	return rd_regset_get(&r->rs, len, out);
}

/* Can f travel in a pack (RD_OF_PACK; rd_proto.h, Packs)? Its one chunk, unasked. */
static int packable(struct receiver *r, const struct rfile *f)
{
	return f && f->state == RF_ACTIVE && f->type == RD_FT_REG && !f->failed && !f->more &&
	       !f->range && !f->check && !f->has_map && f->next == 0 && f->nchunks == 1 &&
	       f->meta.size <= RD_PACK_FILE_MAX &&
	       rd_sink_file_chunk_src(f->f, 0) == RD_SINK_CHUNK_NONE;
}

/*
 * The run of packable files from window position k on, as one GET PACK
 * (at least two; as many as fit a chunk). 1 = sent, 0 = no pack here,
 * 2 = no slot free now, or < 0.
 */
static int send_pack(struct receiver *r, unsigned k)
{
	uint64_t sum = 0;
	unsigned n = 0, i, slot;
	struct rslot *s;
	int ret;

	while (k + n < win_span(r) && n < RD_PACK_FILES_MAX) {
		struct rfile *f = win_of(r, r->oldest + k + n);

		if (!packable(r, f) || sum + f->meta.size > r->e->o.chunk_size)
			break;
		sum += f->meta.size;
		n++;
	}
	if (n < 2)
		return 0;
	ret = slot_get(r, (uint32_t)sum, &slot);
	if (ret)
		return ret < 0 ? ret : 2;
	s = &r->slots[slot];
	s->id = r->oldest + k;
	s->chunk = n;
	s->kind = RD_GET_PACK;
	s->src = RD_SINK_CHUNK_NONE;
	s->tries = 0;
	ret = send_get(r, slot, s);
	if (ret)
		return ret < 0 ? ret : 2;
	rd_pace_charge(r->e->o.pace, sum);
	s->state = SL_BUSY;
	for (i = 0; i < n; i++) {
		struct rfile *f = win_of(r, s->id + i);

		f->inflight++;
		f->next = 1;
	}
	return 1;
}

/* Issue requests: retries first, then the oldest files' next chunks. */
int rd_recv__schedule(struct receiver *r)
{
	unsigned i, k, n = 0;
	int ret;

	r->pace_ms = 0;
	for (i = 0; i < r->nslots; i++) {
		struct rslot *s = &r->slots[i];

		if (s->state != SL_RETRY)
			continue;
		if (s->kind != RD_GET_SUM && (r->pace_ms = rd_pace_wait(r->e->o.pace, s->rb.cap)))
			return (int)n;
		ret = send_get(r, i, s);
		if (ret)
			return ret < 0 ? ret : (int)n;
		if (s->kind != RD_GET_SUM)
			rd_pace_charge(r->e->o.pace, s->rb.cap);
		s->state = SL_BUSY;
		n++;
	}
	for (k = 0; k < win_span(r); k++) {
		struct rfile *f = win_of(r, r->oldest + k);

		if (!f || f->state != RF_ACTIVE || f->type != RD_FT_REG || f->failed || f->more ||
		    (f->dry && !f->all_same))
			continue;
		/* --bwlimit / max rate: the next chunk waits its turn */
		if ((r->pace_ms = rd_pace_wait(r->e->o.pace, r->e->o.chunk_size)))
			return (int)n;
		if (r->e->o.pack && packable(r, f)) {
			ret = send_pack(r, k);
			if (ret < 0)
				return ret;
			if (ret == 2)
				return (int)n; /* oldest first: wait for a slot */
			if (ret == 1) {
				n++;
				continue;
			}
		}
		while (f->next < f->nchunks) {
			struct rslot *s;
			int src = rd_sink_file_chunk_src(f->f, f->next);

			if (src == RD_SINK_CHUNK_TRUSTED) {
				/* --trust-partial with checksum none: kept unasked */
				kept(r, f, rd_chunk_len(f->meta.size, r->e->o.chunk_size, f->next));
				f->next++;
				n++;
				continue;
			}
			/*
			 * Nothing to compare without a digest; nor for -S, whose
			 * chunks carry only their data pieces: a SUM of those is
			 * not a SUM of our chunk, and where the source has a hole
			 * our copy may hold data a comparison would not see. Its
			 * data pieces are asked for again (the holes never move).
			 */
			if (!r->e->dg->sum_size || f->has_map)
				src = RD_SINK_CHUNK_NONE;

			if (f->has_map && !rd_sparse_len(f->map, f->nmap, r->e->o.chunk_size, f->next,
							 f->meta.size)) {
				f->next++; /* all hole: nothing to ask for */
				f->done++;
				n++; /* progress: settle may commit it now */
				continue;
			}
			ret = slot_get(r, rd_chunk_len(f->meta.size, r->e->o.chunk_size, f->next),
				       &i);
			if (ret < 0)
				return ret;
			if (ret)
				return (int)n; /* oldest first: wait for a slot */
			s = &r->slots[i];
			s->id = f->id;
			s->chunk = f->next;
			s->kind = f->check || src != RD_SINK_CHUNK_NONE ? RD_GET_SUM : RD_GET_DATA;
			s->src = (uint8_t)(f->check ? RD_SINK_CHUNK_EXISTING : src);
			s->tries = 0;
			ret = send_get(r, i, s);
			if (ret)
				return ret < 0 ? ret : (int)n;
			if (s->kind == RD_GET_DATA) {
				/* the chunk's bytes (a slot may be larger than its chunk) */
				rd_pace_charge(
				    r->e->o.pace,
				    rd_chunk_len(f->meta.size, r->e->o.chunk_size, f->next));
				if ((r->pace_ms = rd_pace_wait(r->e->o.pace, r->e->o.chunk_size))) {
					s->state = SL_BUSY;
					f->inflight++;
					f->next++;
					return (int)n + 1;
				}
			}
			s->state = SL_BUSY;
			f->inflight++;
			f->next++;
			n++;
		}
	}
	return (int)n;
}
