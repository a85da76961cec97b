/* SPDX-License-Identifier: MIT */
/* Private to lib/engine. */
#ifndef RDCP_ENGINE_RD_ENGINE_PRIV_H
#define RDCP_ENGINE_RD_ENGINE_PRIV_H

#include "lib/engine/rd_engine.h"

uint64_t rd_nchunks(uint64_t size, uint32_t chunk);
/* CLOCK_MONOTONIC in ns (the walk and sync timers of rd_engine_stats). */
uint64_t rd_engine_now_ns(void);
/* Entries in one FILES/FILEZ or DONES as agreed: half the window with RD_OF_WIDE. */
unsigned rd_engine_batch(const struct rd_engine *e);
/*
 * Memory to register: page-aligned and zeroed, so that a peer can only
 * ever see bytes it sent itself, never what the heap held before (another
 * session's data; issue 7 item 7). NULL if out of memory; free() it.
 */
void *rd_engine_pool_alloc(size_t len);
/* Count delta bytes of data buffers registered (negative: deregistered). */
void rd_engine_reg_account(struct rd_engine *e, int64_t delta);
/*
 * Data buffers registered as the job needs them (rd_engine_bufs.c), one
 * helper for the sender's read buffers and the receiver's slots. The
 * owner keeps n buffers in its own array: buf(ctx, i) is buffer i,
 * busy(ctx, i) says whether the owner uses it now.
 */
struct rd_regbuf {
	uint8_t *p;   /* registered memory; NULL until first used */
	uint32_t cap; /* its length */
	struct rd_mr mr;
};

struct rd_regset {
	struct rd_engine *e;
	struct rd_conn *c;
	int remote;	    /* registered for the peer's RDMA WRITE */
	const char *what;   /* one buffer, in messages: "receive slot" */
	uint64_t reg_bytes; /* registered now */
	uint64_t max_bytes; /* at most this many (lowered if registering fails) */
	unsigned n;
	struct rd_regbuf *(*buf)(void *ctx, unsigned i);
	int (*busy)(void *ctx, unsigned i);
	void *ctx;
};

/*
 * A free buffer for len bytes: the smallest free one that holds them,
 * else a new one while there is room, else a free smaller one made
 * larger. 0 with *out set, 1 when none is free now, or < 0 (e->err).
 */
int rd_regset_get(struct rd_regset *rs, uint32_t len, unsigned *out);
/* Deregister and free one (a buffer never used is left as it is). */
void rd_regbuf_drop(struct rd_regset *rs, struct rd_regbuf *b);

uint32_t rd_chunk_len(uint64_t size, uint32_t chunk, uint64_t idx);
void rd_engine_set_cur(struct rd_engine *e, const char *path, size_t len, uint64_t size);

/*
 * Sparse files (-S, META SPARSE in rd_proto.h): piece i of chunk idx is
 * where data extent i meets the chunk. rd_sparse_piece() gives its file
 * offset and length (0: none); rd_sparse_len() the chunk's packed length.
 */
static inline uint64_t rd_sparse_piece(const struct rd_extent *x, uint32_t chunk, uint64_t idx,
				       uint64_t size, uint64_t *off)
{
	uint64_t lo = idx * chunk, hi = lo + chunk, a, b;

	if (hi > size)
		hi = size;
	a = x->off > lo ? x->off : lo;
	b = x->off + x->len < hi ? x->off + x->len : hi;
	*off = a;
	return b > a ? b - a : 0;
}

uint32_t rd_sparse_len(const struct rd_extent *x, unsigned n, uint32_t chunk, uint64_t idx,
		       uint64_t size);

/*
 * Decode and hand every waiting message to on_msg, re-posting each buffer
 * after it; a message that does not decode goes to proto_err. Returns the
 * number handled or a negative status.
 */
/* A transport failure ret: prefer the reason in a queued ERROR from the peer. */
int rd_engine_conn_lost(struct rd_engine *e, struct rd_conn *c, int ret);
int rd_engine_drain(struct rd_engine *e, struct rd_conn *c, void *ctx,
		    int (*on_msg)(void *ctx, const struct rd_msg *m),
		    int (*proto_err)(void *ctx, const char *why));

/* Something moved: a chunk, an entry, a request, a confirmation. */
static inline void rd_engine_progress(struct rd_engine *e)
{
	e->progress++;
}

/*
 * The idle timeout (o.idle_ms): 0, or -RD_ETIMEOUT (e->err says so) when
 * nothing counted as progress for o.idle_ms. Called once per loop turn.
 */
int rd_engine_idle_check(struct rd_engine *e, const char *peer);

/*
 * The worker pool (rd_engine_pool.c). A job is embedded in the caller's
 * own struct; run() does the data work with the worker's digest context
 * and must touch nothing the loop uses meanwhile (no connection, no
 * shared counters). Results come back through rd_wpool_reap(), in
 * completion order, on the loop's thread.
 */
struct rd_digest;
struct rd_job {
	struct rd_job *next;
	void (*run)(struct rd_job *j, struct rd_digest *dg);
};
struct rd_wpool;

/* Workers per e->o.threads (none for 1: jobs then run inline); 0 or < 0. */
int rd_wpool_start(struct rd_wpool **out, struct rd_engine *e, struct rd_conn *c);
unsigned rd_wpool_workers(const struct rd_wpool *p);
void rd_wpool_submit(struct rd_wpool *p, struct rd_job *j);
/* Every finished job (linked by next), or NULL. */
struct rd_job *rd_wpool_reap(struct rd_wpool *p);
/* Jobs submitted and not yet reaped. */
unsigned rd_wpool_busy(const struct rd_wpool *p);
/* Join the workers (jobs not started are dropped); accepts NULL. */
void rd_wpool_stop(struct rd_wpool *p);

/* How long the loop sleeps when it has nothing to do (ms); the transport's
 * own timeout decides when a silent peer is dead. */
#define RD_ENGINE_IDLE_MS 1000

/* --delete: count one report (RD_DLF_*) and tell the owner (e->deleted). */
void rd_engine_deleted(struct rd_engine *e, unsigned flags, const char *path, size_t len,
		       const char *text);

#endif
