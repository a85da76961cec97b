/* SPDX-License-Identifier: MIT */
/*
 * A distributed work queue (libcircle's idea, our own code on MPI point to
 * point): each rank keeps a stack of items; a rank that runs dry asks a
 * random other rank for work and gets half of its stack (the oldest
 * items: near the top of a tree, so the most work behind them); the end
 * is found by a token passed round the ring (Dijkstra, Feijen and van
 * Gasteren): a rank that gave work away is black until the token next
 * leaves it, a rank passes the token only while it has no work and no
 * request out, and rank 0 ends the queue when a white token comes back to
 * a white, idle rank 0.
 */
#ifndef RDCP_MPI_RD_MPI_WQ_H
#define RDCP_MPI_RD_MPI_WQ_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#define RD_WQ_ITEM_MAX 4200	    /* bytes in one item */
#define RD_WQ_GIVE_MAX (256u << 10) /* bytes of items in one answer */

struct rd_wq;

/* Process one item; may push more. 0, or < 0 to stop the queue on this rank (an error). */
typedef int (*rd_wq_fn)(void *ctx, struct rd_wq *q, const void *item, size_t len);

struct rd_wq_stats {
	uint64_t items, given, taken, requests;
};

/*
 * Run the queue on comm until every rank is out of work. seeds: items
 * rank 0 starts with (others pass none). Returns 0 or a negative RD_E*.
 */
int rd_wq_run(MPI_Comm comm, rd_wq_fn fn, void *ctx, const void *const *seeds, const size_t *lens,
	      int nseeds, struct rd_wq_stats *st);
int rd_wq_push(struct rd_wq *q, const void *item, size_t len);

#endif
