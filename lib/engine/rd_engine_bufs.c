// SPDX-License-Identifier: MIT
/*
 * Data buffers registered as the job needs them (issue 14): the sender's
 * read buffers and the receiver's slots. Each is registered when first
 * needed, as large as the chunk it is first used for (whole pages, at most
 * a chunk), until max_bytes are registered in all: a 3-byte copy pins one
 * page, a 3 MB copy about 3 MB, and only a large job grows to the pool.
 * A free buffer is reused best-fit; a free one too small is replaced when
 * nothing else can be had. If registering more fails (locked memory), the
 * set stays at what it has.
 */
#include <errno.h>
#include <stdlib.h>

#include "lib/engine/rd_engine_priv.h"

void rd_regbuf_drop(struct rd_regset *rs, struct rd_regbuf *b)
{
	if (b->mr.priv)
		rd_conn_dereg(rs->c, &b->mr);
	free(b->p);
	b->p = NULL;
	rs->reg_bytes -= b->cap;
	rd_engine_reg_account(rs->e, -(int64_t)b->cap);
	b->cap = 0;
}

/* Give free buffer b cap registered bytes: 0, 1 (no memory now), or < 0. */
static int regbuf_fill(struct rd_regset *rs, struct rd_regbuf *b, uint32_t cap)
{
	b->p = rd_engine_pool_alloc(cap);
	if (b->p && !rd_conn_reg(rs->c, b->p, cap, rs->remote, &b->mr)) {
		b->cap = cap;
		rs->reg_bytes += cap;
		rd_engine_reg_account(rs->e, cap);
		return 0;
	}
	free(b->p);
	b->p = NULL;
	if (rs->reg_bytes) {
		rs->max_bytes = rs->reg_bytes; /* keep what works: the set ends here */
		return 1;
	}
	if (!rd_conn_err(rs->c)->status)
		return rd_err_set(&rs->e->err, RD_ENOMEM, ENOMEM, "%s of %u bytes", rs->what, cap);
	return rd_err_copy(&rs->e->err, rd_conn_err(rs->c));
}

int rd_regset_get(struct rd_regset *rs, uint32_t len, unsigned *out)
{
	uint32_t cap = len < RD_CHUNK_MIN ? RD_CHUNK_MIN : (len + 4095u) & ~4095u;
	unsigned i, n = rs->n, best = n, empty = n, small = n;
	struct rd_regbuf *b;
	int ret;

	if (cap > rs->e->o.chunk_size)
		cap = rs->e->o.chunk_size;
	for (i = 0; i < n; i++) {
		if (rs->busy(rs->ctx, i))
			continue;
		b = rs->buf(rs->ctx, i);
		if (!b->cap) {
			if (empty == n)
				empty = i;
		} else if (b->cap >= len) {
			if (best == n || b->cap < rs->buf(rs->ctx, best)->cap)
				best = i;
		} else if (small == n) {
			small = i;
		}
	}
	if (best < n) {
		*out = best;
		return 0;
	}
	/* a free one too small makes room when nothing else can */
	if (small < n && (empty == n || rs->reg_bytes + cap > rs->max_bytes)) {
		rd_regbuf_drop(rs, rs->buf(rs->ctx, small));
		empty = small;
	}
	/* with nothing registered, one buffer whatever the limit says */
	if (empty == n || (rs->reg_bytes && rs->reg_bytes + cap > rs->max_bytes))
		return 1;
	ret = regbuf_fill(rs, rs->buf(rs->ctx, empty), cap);
	if (!ret)
		*out = empty;
	return ret;
}
