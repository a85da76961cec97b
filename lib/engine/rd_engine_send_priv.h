/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/engine: the sender's state, shared by rd_engine_send.c
 * (the walk, FILE and META out, GETs and DONEs in) and
 * rd_engine_send_chunks.c (read buffers, read and tag jobs, read-ahead,
 * packs, the DATA answers).
 */
#ifndef RDCP_ENGINE_RD_ENGINE_SEND_PRIV_H
#define RDCP_ENGINE_RD_ENGINE_SEND_PRIV_H

#include "lib/engine/rd_engine.h"
#include "lib/engine/rd_engine_priv.h"

#define GETQ_MAX 1024 /* more outstanding requests than this: protocol error */

struct swin {
	uint32_t id;
	int used;
	int fd;
	uint8_t type, flags;
	uint32_t mode, uid, gid; /* as announced: for the report (rd_item, rd_engine_entry) */
	char *target;		 /* SYMLINK, HLINK: as announced (allocated), or NULL */
	size_t tlen;
	uint64_t size;
	int64_t mtime_sec; /* as announced: a change while it is sent fails it */
	uint32_t mtime_nsec;
	uint64_t data_hi; /* highest chunk asked for with GET DATA, + 1 */
	uint64_t asked_hi; /* highest chunk asked for by any GET (DATA, SUM), + 1 */
	uint64_t sum_next; /* a SUM may ask only this chunk or a later one (once each) */
	char path[RD_PATH_MAX + 1];
	size_t plen;
	unsigned nmap; /* -S: data extents; chunks carry only these bytes */
	int has_map;
	struct rd_extent map[RD_SPARSE_MAX];
	unsigned jobs; /* with a worker now: fd and map stay until they end */
	uint64_t nchunks, ra_next; /* read-ahead: the next chunk to read */
	int done_seen; /* DONE came while jobs ran: closed when they end */
	int range;     /* rd_proto.h section 6: only chunks lo..hi - 1 may be asked */
	uint32_t cs;
	uint64_t lo, hi;
	/*
	 * The entry's held directory, name there and what the walk saw: to
	 * open a lazy entry, and for --remove-source-files
	 */
	struct rd_tree_dir *dir;
	char pname[256];
	struct rd_tree_seen seen;
	int lazy;		     /* not opened yet (fd -1) */
	int ostatus;		     /* opening it failed: the RD_E* status, else 0 */
	char otext[RD_MSG_TEXT_MAX]; /* and why */
};

/* One GET's data work; a worker reads only these fields and w's fd/map. */
struct sjob {
	struct rd_job j; /* first: the pool hands this back */
	struct rd_msg_get g;
	struct swin *w;
	uint8_t *buf;
	uint32_t cs, want;
	size_t got;
	int rerr, derr; /* read: 0 or -errno; digest: 0 or < 0 (err says) */
	int changed;	/* the file changed while being sent (changed()) */
	uint8_t dlen;
	int finished, flipped;
	int ra;	  /* a read-ahead: read only, no GET yet */
	int have; /* the data was read ahead: tag only */
	unsigned npack;	/* a PACK: its files (pw; w is pw[0]) */
	unsigned perr_next; /* CHUNK_ERRs of the pack sent so far (rd_send__answer_head) */
	struct swin *pw[RD_PACK_FILES_MAX];
	int perr[RD_PACK_FILES_MAX]; /* 0, -errno, or 1: the file shrank */
	uint8_t tag[RD_DIGEST_MAX];
	struct rd_err err;
};

struct sender {
	int pace_ms; /* rd_send__answer_head() held back by pacing: poll this long */
	struct rd_engine *e;
	struct rd_conn *c;
	struct rd_tree *t;
	struct swin *win; /* wn entries: id N in win[N % wn] */
	unsigned wn;	  /* the window agreed (rd_engine_opts.window) */
	unsigned outstanding;
	uint32_t next_id;

	struct rd_msg_get getq[GETQ_MAX];
	unsigned gq_head, gq_count;

	struct sbuf {
		struct rd_regbuf rb; /* registered when first needed */
		int busy;   /* a job's, or handed to the NIC until on_sent() */
		struct sjob job;
		int ra;	      /* holds (or is reading) read-ahead data: job.g.id, .chunk */
		int ra_ready; /* that read finished */
	} *bufs;
	unsigned nbufs;
	unsigned *ring; /* buffers whose jobs answer the GETs, in GET order */
	unsigned ring_head, ring_count;
	unsigned n_ra; /* buffers holding read-ahead data */
	struct rd_wpool *pool;
	struct rd_regset rs; /* the buffers' registration (rd_engine_bufs.c) */

	struct rd_tree_entry ent;
	int have_ent;	 /* ent fetched, not yet sent */
	int file_sent;	 /* its FILE went out; META items / note still to send */
	unsigned meta_sent;
	uint32_t ent_id;
	int ent_skip; /* ent is a skip notice (skip_code: failed; 0: left out, a note) */
	int skip_code;
	char skip_msg[RD_MSG_TEXT_MAX];
	int tree_done, end_sent, fin_seen, fin_sent;
	uint64_t last_seq;   /* last GET's seq: each must be greater */
	/*
	 * Work bounds (rd_proto.h section 3): bytes of regular files
	 * announced, bytes GETs asked us to read, SUM bytes not yet counted
	 * as progress.
	 */
	uint64_t announced, work, sum_bytes;
	unsigned corrupt_at; /* test hook: DATA number to corrupt, 0 = never */
	int corrupt_every;   /* test hook: corrupt every DATA */
	unsigned data_sent;
	/* RD_OF_BATCH: FILE payloads not sent yet (one FILES) */
	uint8_t fbat[RD_MSG_MAX - RD_HDR_LEN - 6];
	size_t fbat_len;
	unsigned fbat_n;
	struct rd_filez fz; /* RD_OF_WIDE: what the next FILEZ entry may keep */
};

/*
 * The window entries a job has reached: ids start at 1 in their own
 * slots, so a small job never touches the rest (an entry's fd is valid
 * only while it is used).
 */
static inline unsigned win_reached(const struct sender *s)
{
	return s->next_id < s->wn ? s->next_id : s->wn;
}

static inline struct swin *win_of(struct sender *s, uint32_t id)
{
	struct swin *w = &s->win[id % s->wn];

	return w->used && w->id == id ? w : NULL;
}

/* rd_engine_send.c */
int rd_send__proto_err(struct sender *s, const char *what);
/* The entry is answered (DONE) and no job of it runs: close it. */
void rd_send__win_close(struct sender *s, struct swin *w);
/* A lazy entry's first request for its data: open it now, as the walk saw it. */
void rd_send__win_open(struct swin *w);

/* rd_engine_send_chunks.c */
/* A read-ahead buffer given back (free again). */
void rd_send__ra_drop(struct sender *s, struct sbuf *b);
/* The files of a PACK GET, checked (rd_proto.h, Packs): 0, or a protocol error. */
int rd_send__pack_files(struct sender *s, const struct rd_msg_get *g, struct swin **pw,
			uint32_t *sum);
/* Nothing asked for now: read the next chunk of the oldest open file. 1 = started one. */
int rd_send__start_ra(struct sender *s);
/* Start the oldest waiting GET's job if a buffer is free. 1 = did one. */
int rd_send__start_get(struct sender *s);
/* Finished jobs: marked; they leave in GET order (rd_send__answer_head). */
int rd_send__reap_jobs(struct sender *s);
/* Send the answer of the oldest GET if its job is finished and a credit free. 1 = did one. */
int rd_send__answer_head(struct sender *s);

#endif
