/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/engine: the receiver's state, shared by rd_engine_recv.c
 * (entries, META, settle, DONE) and rd_engine_recv_chunks.c (slots, GETs,
 * DATA and SUM answers, packs, the verify-and-write jobs).
 */
#ifndef RDCP_ENGINE_RD_ENGINE_RECV_PRIV_H
#define RDCP_ENGINE_RD_ENGINE_RECV_PRIV_H

#include "lib/engine/rd_engine.h"
#include "lib/engine/rd_engine_priv.h"

#include <stddef.h>

/* RF_SEALED: complete, waiting for the batch's sync (rd_sink_file_seal) */
enum rstate { RF_FREE = 0, RF_ACTIVE, RF_SEALED, RF_DONE };
enum sstate { SL_FREE = 0, SL_BUSY, SL_RETRY, SL_WORK };

struct rfile;

/* One chunk's verify-and-write; a worker reads only these and f's map. */
struct rjob {
	struct rd_job j; /* first: the pool hands this back */
	struct rfile *f;
	struct rd_sink_file *sf;
	unsigned slot;
	struct rd_chunk_ref ref;
	uint8_t *buf;
	uint32_t cs;
	int verify;
	uint8_t tag[RD_DIGEST_MAX];
	int vret, werr; /* verify: 0, -RD_ECORRUPT or < 0 (err); write: 0 or -errno */
	/*
	 * A SUM answer (resume, existing file): read our copy of the chunk
	 * (existing = 1: the final file, 0: the partial) into the slot,
	 * digest it and compare with tag; same = 1 if equal. werr: the read
	 * failed (-errno); vret: the digest failed.
	 */
	int sum, existing, same;
	struct rd_err err;
	/* a PACK (f, sf unused): its files, their sink files (NULL: failed) and sizes */
	unsigned npack;
	struct rfile *pf[RD_PACK_FILES_MAX];
	struct rd_sink_file *psf[RD_PACK_FILES_MAX];
	uint32_t plen[RD_PACK_FILES_MAX];
	int pwerr[RD_PACK_FILES_MAX];
};

struct rfile {
	enum rstate state;
	uint32_t id;
	uint8_t type, flags;
	struct rd_sink_meta meta;
	size_t plen;
	struct rd_sink_file *f;
	uint64_t nchunks;
	uint64_t next;	     /* next chunk to request (SUM or DATA) */
	uint64_t done;	     /* chunks verified and placed */
	unsigned inflight;   /* slots referring to this file */
	unsigned working;    /* of them, with a worker now */
	int abort_later;     /* failed while working: abort when they end */
	int check;	     /* comparing against an existing file of the same size */
	int all_same;	     /* every chunk so far identical */
	int dry;	     /* -n -c: compared only (rd_sink_file_compare), nothing written */
	int failed;
	int status;
	size_t tlen;	/* of target */
	unsigned items; /* RD_IT_*: what it changed here (DONE's items) */
	uint64_t bytes;
	int more;    /* RD_FF_MORE: META until RD_MF_LAST; nothing else happens */
	int kept;    /* a regular file the quick check (1) or a transfer rule (2) left */
	int batch;   /* named by the latest publish() */
	int range;   /* RD_FF_RANGE or RD_FF_COMMIT: begun at its META RANGE */
	int has_map; /* -S: only these extents move; the rest are holes */
	unsigned nmap;
	/*
	 * The buffers (13 KiB) last: a new entry clears only what is above
	 * (RFILE_CLEAR) and empties the strings. Clearing all of it cost a
	 * no-change rerun a sixth of the receiver's time (issue 28).
	 */
	char path[RD_PATH_MAX + 1];
	char msg[RD_MSG_TEXT_MAX];    /* why it failed; else notes, or "" */
	char target[RD_PATH_MAX + 1]; /* HLINK: the first of its group; SYMLINK: the target */
	struct rd_extent map[RD_SPARSE_MAX]; /* nmap of them */
};

#define RFILE_CLEAR offsetof(struct rfile, path)

struct rslot {
	enum sstate state;
	uint8_t kind;
	uint8_t src; /* SUM: RD_SINK_CHUNK_PARTIAL or _EXISTING */
	uint32_t id;
	uint64_t chunk;
	uint64_t seq; /* of the GET in flight */
	unsigned tries;
	struct rd_regbuf rb; /* registered for remote write when first used */
	struct rjob job;
};

struct receiver {
	struct rd_engine *e;
	struct rd_conn *c;
	struct rd_sink *sink;
	struct rfile *win;  /* wn entries: id N in win[N % wn] */
	unsigned wn;	    /* the window agreed (rd_engine_opts.window) */
	uint32_t next_id;   /* next FILE id expected */
	uint32_t oldest;    /* oldest id not yet finished */
	unsigned active;

	struct rslot *slots;
	unsigned nslots;
	struct rd_regset rs; /* the slots' registration: at most the pool */
	uint64_t seq;	    /* last GET's sequence number */

	int end_seen, fin_sent, fin_seen;
	uint32_t end_nfiles;
	uint64_t sealed_ms; /* since when sealed files wait for publish(), or 0 */
	int pace_ms;	    /* rd_recv__schedule() held back by pacing: poll this long */
	struct rd_msg_dones dones; /* RD_OF_BATCH: confirmations not sent yet */
	struct rd_filez fz;	   /* RD_OF_WIDE: the FILEZ being read */
	struct rd_sink_acl acl[RD_ACL_MAX];
	struct rd_wpool *pool;
	/* --delete (rd_sink_mirror.h): the sink deletes; its reports go out in DELETED */
	int mirror, mirror_done, del_ret;
	struct rd_msg_deleted del; /* not sent yet; strings in delbuf */
	size_t delused;
	char delbuf[RD_MSG_MAX];
};

/* Entries announced and not yet freed (oldest..next_id - 1): at most wn. */
static inline unsigned win_span(const struct receiver *r)
{
	return r->next_id - r->oldest;
}

static inline struct rfile *win_of(struct receiver *r, uint32_t id)
{
	struct rfile *f = &r->win[id % r->wn];

	return f->state != RF_FREE && f->id == id ? f : NULL;
}

/* rd_engine_recv.c */
int rd_recv__proto_err(struct receiver *r, const char *what);
/* Mark a file failed; the temporary goes away now, DONE goes out later. */
void rd_recv__fail_file(struct receiver *r, struct rfile *f, int status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void rd_recv__sink_fail(struct receiver *r, struct rfile *f, int ret);

/* rd_engine_recv_chunks.c */
int rd_recv__on_data(struct receiver *r, const struct rd_msg_data *d);
int rd_recv__on_chunk_err(struct receiver *r, const struct rd_msg_chunk_err *m);
/* Jobs back from the workers, each taken: how many, or < 0. */
int rd_recv__reap_jobs(struct receiver *r);
/* Issue requests: retries first, then the oldest files' next chunks. */
int rd_recv__schedule(struct receiver *r);

#endif
