// SPDX-License-Identifier: MIT
/*
 * The sender's chunks (rd_engine_send.c says how a sender works): the
 * read buffers, the jobs that read and tag what a GET asked for (a chunk,
 * its SUM, a PACK of small files), read-ahead, and the answers (DATA,
 * CHUNK_ERR) that leave in the order the GETs came.
 */
#include "lib/engine/rd_engine.h"
#include "lib/engine/rd_engine_priv.h"
#include "lib/engine/rd_engine_send_priv.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A free buffer for len bytes (rd_regset_get): 0, 1 when none now, or < 0. */
static int buf_get(struct sender *s, uint32_t len, unsigned *out)
{
	return rd_regset_get(&s->rs, len, out);
}

void rd_send__ra_drop(struct sender *s, struct sbuf *b)
{
	b->ra = b->ra_ready = 0;
	b->busy = 0;
	s->n_ra--;
}

/* The files of a PACK GET, checked (rd_proto.h, Packs): 0, or a protocol error. */
int rd_send__pack_files(struct sender *s, const struct rd_msg_get *g, struct swin **pw,
		      uint32_t *sum)
{
	uint64_t n = 0;
	unsigned i;

	if (!s->e->o.pack)
		return rd_send__proto_err(s, "PACK request without packs agreed");
	for (i = 0; i < g->chunk; i++) {
		struct swin *w = win_of(s, g->id + i);

		if (!w || w->type != RD_FT_REG || w->done_seen)
			return rd_send__proto_err(
			    s, "PACK request for an entry that is not an open file");
		if (w->has_map || !w->size || w->size > RD_PACK_FILE_MAX ||
		    w->size > s->e->o.chunk_size)
			return rd_send__proto_err(s,
						  "PACK request for a file a pack does not carry");
		n += w->size;
		if (pw)
			pw[i] = w;
	}
	if (n > g->len || n > s->e->o.chunk_size)
		return rd_send__proto_err(s, "PACK slot smaller than its files");
	*sum = (uint32_t)n;
	return 0;
}

static int read_full(int fd, uint8_t *buf, size_t len, uint64_t off, size_t *got);

/* -S: only the data pieces of the chunk, packed in order. */
static int read_packed(const struct swin *w, uint32_t cs, uint64_t chunk, uint8_t *buf,
		       uint32_t want, size_t *got)
{
	uint64_t off, n;
	size_t at = 0, g;
	unsigned i;
	int r;

	*got = 0;
	for (i = 0; i < w->nmap && at < want; i++) {
		n = rd_sparse_piece(&w->map[i], cs, chunk, w->size, &off);
		if (!n)
			continue;
		r = read_full(w->fd, buf + at, (size_t)n, off, &g);
		if (r)
			return r;
		at += g;
		if (g != n)
			break;
	}
	*got = at;
	return 0;
}

static int read_full(int fd, uint8_t *buf, size_t len, uint64_t off, size_t *got)
{
	ssize_t n;

	*got = 0;
	while (*got < len) {
		n = pread(fd, buf + *got, len - *got, (off_t)(off + *got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		*got += (size_t)n;
	}
	return 0;
}

/*
 * Checked after every chunk is read: a file whose size or modification
 * time is no longer what was announced was written to while being sent,
 * and its chunks may come from two versions (truncated, grown, rewritten
 * in place). The chunk fails, so the file fails and nothing of it lands;
 * a change after its last chunk was read left a consistent copy. (A write
 * within the same timestamp tick as the walk's stat cannot be seen.)
 */
static int changed(const struct swin *w)
{
	struct stat st;

	if (w->type != RD_FT_REG || fstat(w->fd, &st) < 0)
		return 0;
	return (uint64_t)st.st_size != w->size || st.st_mtim.tv_sec != w->mtime_sec ||
	       (uint32_t)st.st_mtim.tv_nsec != w->mtime_nsec;
}

/*
 * A PACK: each file whole, one after the other; a file not read whole, or
 * changed since it was announced (checked after its read, as for chunks),
 * is zeros and fails alone.
 */
static void read_pack(struct sjob *j)
{
	size_t at = 0, got;
	unsigned i;

	for (i = 0; i < j->npack; i++) {
		const struct swin *w = j->pw[i];

		if (w->fd < 0)
			j->perr[i] = 2; /* could not be opened: w->ostatus */
		else
			j->perr[i] = read_full(w->fd, j->buf + at, (size_t)w->size, 0, &got);
		if (!j->perr[i] && (got != w->size || changed(w)))
			j->perr[i] = 1;
		if (j->perr[i])
			memset(j->buf + at, 0, (size_t)w->size);
		at += (size_t)w->size;
	}
	j->got = at;
}

/* A worker: read the chunk into the job's buffer and tag it. */
static void sjob_run(struct rd_job *jj, struct rd_digest *dg)
{
	struct sjob *j = (struct sjob *)jj;

	if (j->npack) {
		read_pack(j);
	} else if (j->w->fd < 0) {
		j->rerr = -EBADF; /* could not be opened: rd_send__answer_head says why */
	} else if (!j->have) {
		if (j->w->has_map)
			j->rerr = read_packed(j->w, j->cs, j->g.chunk, j->buf, j->want, &j->got);
		else
			j->rerr = read_full(j->w->fd, j->buf, j->want, j->g.chunk * j->cs, &j->got);
	}
	if (j->ra || j->rerr || j->got != j->want)
		return;
	/* a PACK's files are read whole, each at once: no chunk of two versions */
	j->changed = !j->npack && changed(j->w);
	if (j->changed)
		return;
	if (j->g.kind == RD_GET_SUM) {
		j->dlen = (uint8_t)dg->sum_size;
		j->derr = rd_digest_compute(dg, j->buf, j->want, j->tag);
	} else {
		struct rd_chunk_ref ref = {j->g.id, j->g.chunk, j->want, j->g.seq};

		j->dlen = (uint8_t)dg->size;
		j->derr = rd_digest_protect(dg, &ref, j->buf, j->want, j->tag);
	}
	if (j->derr)
		rd_err_copy(&j->err, &dg->err);
}

/*
 * The GET's chunk read ahead: 0 with *out (ready, of the right length),
 * 1 while its read runs, -1 if none.
 */
static int ra_find(struct sender *s, const struct rd_msg_get *g, uint32_t want, unsigned *out)
{
	unsigned i;

	for (i = 0; i < s->nbufs; i++) {
		struct sbuf *b = &s->bufs[i];

		if (!b->ra || b->job.g.id != g->id || b->job.g.chunk != g->chunk)
			continue;
		if (!b->ra_ready)
			return 1;
		if (b->job.want != want || b->rb.cap < want) {
			rd_send__ra_drop(s, b); /* read for another length: read again */
			s->e->st.chunks_ra_wasted++;
			return -1;
		}
		*out = i;
		return 0;
	}
	return -1;
}

/* Does a GET waiting behind the oldest one ask for this read-ahead's chunk? */
static int ra_wanted(const struct sender *s, const struct sbuf *b)
{
	unsigned k;

	for (k = 1; k < s->gq_count; k++) {
		const struct rd_msg_get *g = &s->getq[(s->gq_head + k) % GETQ_MAX];

		if (g->kind != RD_GET_PACK && g->id == b->job.g.id && g->chunk == b->job.g.chunk)
			return 1;
	}
	return 0;
}

/*
 * A GET needs a buffer and none is free: give back one read ahead. The
 * one asked for last is given back: not one a waiting GET wants (read
 * again, that was a third of a resume check's reads), and of the others
 * the furthest along, needed last. 1 = did.
 */
static int ra_reclaim(struct sender *s)
{
	struct sbuf *pick = NULL, *b;
	int pick_wanted = 1, wanted;
	unsigned i;

	for (i = 0; i < s->nbufs; i++) {
		b = &s->bufs[i];
		if (!b->ra || !b->ra_ready)
			continue;
		wanted = ra_wanted(s, b);
		if (pick && (wanted > pick_wanted ||
			     (wanted == pick_wanted && (b->job.g.id < pick->job.g.id ||
							(b->job.g.id == pick->job.g.id &&
							 b->job.g.chunk < pick->job.g.chunk)))))
			continue;
		pick = b;
		pick_wanted = wanted;
	}
	if (!pick)
		return 0;
	rd_send__ra_drop(s, pick);
	s->e->st.chunks_ra_wasted++;
	return 1;
}

/*
 * Paced (--bwlimit, max rate): chunks leave at the rate, so preparing more
 * than half a second's worth ahead only pins buffers (and registering one
 * on a loaded host stalled the loop past the chunks' turns). The most
 * buffers answers and read-ahead may hold then; all of them unpaced.
 */
static unsigned bufs_max(const struct sender *s)
{
	const struct rd_pace *p = s->e->o.pace;
	uint64_t n;

	if (!p || !p->rate)
		return s->nbufs;
	n = (p->rate / 2 + s->e->o.chunk_size - 1) / s->e->o.chunk_size;
	if (n < 2)
		n = 2;
	return n < s->nbufs ? (unsigned)n : s->nbufs;
}

/*
 * Nothing asked for now: read the next chunk of the oldest open file
 * into a free buffer, at most half of them so. 1 = started one.
 */
int rd_send__start_ra(struct sender *s)
{
	struct swin *w, *best = NULL;
	struct sjob *j;
	unsigned i, b = 0;
	uint64_t c;
	uint32_t want;
	int r;

	if (s->gq_count || s->n_ra >= bufs_max(s) / 2 || s->ring_count + s->n_ra >= bufs_max(s))
		return 0;
	for (i = 0; i < win_reached(s); i++) {
		w = &s->win[i];
		if (!w->used || w->type != RD_FT_REG || w->has_map || w->done_seen || w->fd < 0)
			continue;
		/* packs: the receiver asks for small files many at once */
		if (s->e->o.pack && w->size <= RD_PACK_FILE_MAX && w->size <= s->e->o.chunk_size)
			continue;
		/*
		 * Only once the receiver asked for some of it: a file its quick
		 * check leaves as it is must never be read (issue 28: a rerun
		 * of an unchanged tree reads no file data).
		 */
		if (!w->asked_hi)
			continue;
		/* never behind what was asked for already (a SUM too): read once */
		if (w->ra_next < w->asked_hi)
			w->ra_next = w->asked_hi;
		if (w->ra_next >= w->nchunks)
			continue;
		if (!best || w->id < best->id)
			best = w;
	}
	if (!best)
		return 0;
	w = best;
	c = w->ra_next;
	want = rd_chunk_len(w->size, s->e->o.chunk_size, c);
	r = buf_get(s, want, &b);
	if (r)
		return r < 0 ? r : 0;
	j = &s->bufs[b].job;
	memset(j, 0, sizeof(*j));
	j->j.run = sjob_run;
	j->ra = 1;
	j->g.id = w->id;
	j->g.chunk = c;
	j->w = w;
	j->buf = s->bufs[b].rb.p;
	j->cs = s->e->o.chunk_size;
	j->want = want;
	s->bufs[b].busy = 1;
	s->bufs[b].ra = 1;
	s->bufs[b].ra_ready = 0;
	s->n_ra++;
	w->jobs++;
	w->ra_next = c + 1;
	rd_wpool_submit(s->pool, &j->j);
	return 1;
}

static void job_queued(struct sender *s, unsigned b)
{
	s->bufs[b].busy = 1;
	s->ring[(s->ring_head + s->ring_count++) % s->nbufs] = b;
	s->gq_head = (s->gq_head + 1) % GETQ_MAX;
	s->gq_count--;
	rd_wpool_submit(s->pool, &s->bufs[b].job.j);
}

/* A buffer for want bytes, giving back a read-ahead one if none is free: 0, 1 (none), < 0. */
static int claim_buf(struct sender *s, uint32_t want, unsigned *b)
{
	int r = buf_get(s, want, b);

	if (r == 1 && ra_reclaim(s))
		r = buf_get(s, want, b);
	return r;
}

/* What every answer's job carries: the GET, its (first) entry, its buffer. */
static void job_fill(struct sender *s, unsigned b, const struct rd_msg_get *g, struct swin *w,
		     uint32_t want)
{
	struct sjob *j = &s->bufs[b].job;

	j->j.run = sjob_run;
	j->g = *g;
	j->w = w;
	j->buf = s->bufs[b].rb.p;
	j->cs = s->e->o.chunk_size;
	j->want = want;
}

/* The oldest waiting GET is a PACK: its job, if a buffer is free. 1 = started. */
static int start_pack(struct sender *s, const struct rd_msg_get *g)
{
	struct swin *pw[RD_PACK_FILES_MAX];
	struct sjob *j;
	unsigned b = 0, i;
	uint32_t want;
	int r;

	/* checked when it came; its files may have been answered since */
	r = rd_send__pack_files(s, g, pw, &want);
	if (r)
		return r;
	r = claim_buf(s, want, &b);
	if (r)
		return r < 0 ? r : 0;
	j = &s->bufs[b].job;
	memset(j, 0, sizeof(*j));
	job_fill(s, b, g, pw[0], want);
	j->npack = (unsigned)g->chunk;
	for (i = 0; i < j->npack; i++) {
		j->pw[i] = pw[i];
		pw[i]->jobs++;
	}
	job_queued(s, b);
	return 1;
}

/* Start the oldest waiting GET's job if a buffer is free. 1 = did one. */
int rd_send__start_get(struct sender *s)
{
	struct rd_msg_get *g;
	struct swin *w;
	struct sjob *j;
	unsigned b = 0;
	uint32_t want;
	int r;

	if (!s->gq_count || s->ring_count >= bufs_max(s))
		return 0;
	g = &s->getq[s->gq_head];
	if (g->kind == RD_GET_PACK)
		return start_pack(s, g);
	w = win_of(s, g->id);
	if (!w || w->done_seen)
		return rd_send__proto_err(s, "GET for an entry already answered");
	if (w->has_map)
		want = rd_sparse_len(w->map, w->nmap, s->e->o.chunk_size, g->chunk, w->size);
	else
		want = rd_chunk_len(w->size, s->e->o.chunk_size, g->chunk);
	r = ra_find(s, g, want, &b);
	if (r == 1)
		return 0; /* being read ahead: wait for that */
	if (r == 0) {
		size_t got = s->bufs[b].job.got;
		int rerr = s->bufs[b].job.rerr;

		rd_send__ra_drop(s, &s->bufs[b]);
		s->e->st.chunks_readahead++;
		j = &s->bufs[b].job;
		memset(j, 0, sizeof(*j));
		j->have = 1;
		j->got = got;
		j->rerr = rerr;
	} else {
		r = claim_buf(s, want, &b);
		if (r)
			return r < 0 ? r : 0;
		j = &s->bufs[b].job;
		memset(j, 0, sizeof(*j));
	}
	job_fill(s, b, g, w, want);
	w->jobs++;
	job_queued(s, b);
	return 1;
}

/* Finished jobs: marked; they leave in GET order (rd_send__answer_head). */
int rd_send__reap_jobs(struct sender *s)
{
	struct rd_job *j, *next;
	int n = 0;

	for (j = rd_wpool_reap(s->pool); j; j = next) {
		struct sjob *sj = (struct sjob *)j;

		next = j->next;
		if (sj->ra) {
			/* a read-ahead: its buffer keeps the data for the GET */
			struct sbuf *b = (struct sbuf *)((char *)sj - offsetof(struct sbuf, job));

			b->ra_ready = 1;
			if (!--sj->w->jobs && sj->w->done_seen)
				rd_send__win_close(s, sj->w);
		} else {
			sj->finished = 1;
		}
		n++;
	}
	return n;
}

static void job_end(struct sender *s, struct sjob *j)
{
	unsigned i, n = j->npack ? j->npack : 1;

	for (i = 0; i < n; i++) {
		struct swin *w = j->npack ? j->pw[i] : j->w;

		if (!--w->jobs && w->done_seen)
			rd_send__win_close(s, w);
	}
	s->ring_head = (s->ring_head + 1) % s->nbufs;
	s->ring_count--;
}

/* One chunk (or one file of a pack, chunk 0) could not be read as announced. */
static int send_chunk_err(struct sender *s, uint32_t id, uint64_t chunk, int code, const char *text)
{
	struct rd_msg m;

	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_CHUNK_ERR;
	m.u.chunk_err.id = id;
	m.u.chunk_err.chunk = chunk;
	m.u.chunk_err.code = (uint16_t)code;
	m.u.chunk_err.text.ptr = text;
	m.u.chunk_err.text.len = (uint16_t)strlen(text);
	return rd_engine_send_msg(s->c, &m, &s->e->err);
}

/* Send the answer of the oldest GET if its job is finished and a credit free. 1 = did one. */
int rd_send__answer_head(struct sender *s)
{
	struct rd_rkeys rk;
	struct rd_msg m;
	struct sjob *j;
	struct sbuf *sb;
	uint8_t enc[RD_CTRL_MAX];
	unsigned b;
	int len, r;
	char text[RD_MSG_TEXT_MAX];

	if (!s->ring_count)
		return 0;
	b = s->ring[s->ring_head];
	sb = &s->bufs[b];
	j = &sb->job;
	if (!j->finished || !rd_conn_can_send(s->c))
		return 0;
	memset(&m, 0, sizeof(m));
	if (!j->npack && j->w->ostatus) {
		/* a lazy entry that could not be opened as the walk saw it */
		r = send_chunk_err(s, j->g.id, j->g.chunk, j->w->ostatus, j->w->otext);
		if (r)
			return r < 0 ? r : 0;
		goto unused;
	}
	if (j->rerr || j->got != j->want || j->changed) {
		if (j->rerr)
			snprintf(text, sizeof(text), "reading: %s", strerror(-j->rerr));
		else if (j->got != j->want)
			snprintf(text, sizeof(text), "file shrank while being sent (%zu of %u bytes "
				 "at chunk %llu)", j->got, j->want, (unsigned long long)j->g.chunk);
		else
			snprintf(text, sizeof(text), "file changed while being sent (size or "
				 "modification time, at chunk %llu); not kept, copy it again",
				 (unsigned long long)j->g.chunk);
		r = send_chunk_err(s, j->g.id, j->g.chunk, RD_ESYS, text);
		if (r)
			return r < 0 ? r : 0;
		goto unused;
	}
	if (j->derr)
		return rd_err_copy(&s->e->err, &j->err);
	/* a pack: first the files it could not carry, each failed alone */
	for (; j->perr_next < j->npack; j->perr_next++) {
		int e = j->perr[j->perr_next];
		const struct swin *pw = j->pw[j->perr_next];

		if (!e)
			continue;
		if (e == 2)
			snprintf(text, sizeof(text), "%s", pw->otext);
		else if (e < 0)
			snprintf(text, sizeof(text), "reading: %s", strerror(-e));
		else
			snprintf(text, sizeof(text), "file changed while being sent (size or "
				 "modification time); not kept, copy it again");
		r = send_chunk_err(s, pw->id, 0, e == 2 ? pw->ostatus : RD_ESYS, text);
		if (r)
			return r < 0 ? r : 0;
	}
	memset(&m, 0, sizeof(m));
	m.hdr.type = RD_MSG_DATA;
	m.u.data.id = j->g.id;
	m.u.data.kind = j->g.kind;
	m.u.data.slot = j->g.slot;
	m.u.data.chunk = j->g.chunk;
	m.u.data.len = j->want;
	m.u.data.seq = j->g.seq;
	m.u.data.dlen = j->dlen;
	memcpy(m.u.data.digest, j->tag, j->dlen);
	len = rd_msg_encode(enc, sizeof(enc), &m);
	if (len < 0)
		return rd_err_set(&s->e->err, RD_EUSAGE, 0, "cannot encode DATA");
	if (j->g.kind == RD_GET_SUM) {
		r = rd_conn_send(s->c, enc, (size_t)len);
		if (r)
			return r < 0 ? rd_err_copy(&s->e->err, rd_conn_err(s->c)) : 0;
		goto unused;
	}
#ifdef RDCP_TEST_HOOKS
	/* Test builds only: flip one byte after hashing, as a bad link would. */
	if (!j->flipped) {
		j->flipped = 1;
		++s->data_sent;
		if (j->want &&
		    ((s->corrupt_at && s->data_sent == s->corrupt_at) || s->corrupt_every))
			j->buf[j->want / 2] ^= 0x5a;
	}
#endif
	/* --bwlimit / max rate: the chunk waits its turn (the loop polls meanwhile) */
	if ((s->pace_ms = rd_pace_wait(s->e->o.pace, j->want)))
		return 0;
	rk.n = 1 + j->g.nx;
	rk.k[0] = j->g.rkey;
	memcpy(rk.k + 1, j->g.xrkey, j->g.nx * sizeof(rk.k[0]));
	r = rd_conn_write_send(s->c, &sb->rb.mr, 0, j->want, j->g.addr, &rk, enc, (size_t)len, b);
	if (r)
		return r < 0 ? rd_err_copy(&s->e->err, rd_conn_err(s->c)) : 0;
	/* the buffer stays busy until on_sent() */
	rd_pace_charge(s->e->o.pace, j->want);
	rd_stat_add(&s->e->st.bytes_data, j->want);
	rd_stat_add(&s->e->st.cur_done, j->want);
	job_end(s, j);
	return 1;
unused:
	/* the buffer was not handed to the NIC: free now */
	sb->busy = 0;
	job_end(s, j);
	return 1;
}
