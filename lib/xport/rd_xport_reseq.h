/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/xport: putting messages that came over several lanes back
 * into the order they were sent (lib/proto/rd_proto.h section 1, Lanes).
 * Each message has a 32-bit number (the SEND's immediate data), counting
 * from 0 per direction; a message that overtook earlier ones on a faster
 * lane waits here, by its receive buffer index, until they came. Pure
 * bookkeeping: no I/O, unit-tested in reseq_test.c.
 */
#ifndef RDCP_XPORT_RD_XPORT_RESEQ_H
#define RDCP_XPORT_RD_XPORT_RESEQ_H

#include <stdint.h>

struct rd_reseq {
	unsigned cap;	/* receive buffers: at most this many can wait */
	uint32_t next;	/* the number to hand up next */
	unsigned head;	/* the ring slot of next */
	uint8_t *have;	/* [cap]: ring slot (head + seq - next) % cap is taken */
	unsigned *idx;	/* [cap]: its receive buffer */
	uint32_t *len;	/* [cap]: its length */
	unsigned held;
};

/* 0, or -1 out of memory. cap: the receive buffers posted. */
int rd_reseq_init(struct rd_reseq *q, unsigned cap);
void rd_reseq_fini(struct rd_reseq *q);
/*
 * Message seq arrived in buffer idx. 0, or -1 when it cannot be one the
 * sender sent within its credits: already handed up, already waiting, or
 * cap or more ahead of the next expected (the peer broke the protocol).
 */
int rd_reseq_push(struct rd_reseq *q, uint32_t seq, unsigned idx, uint32_t len);
/* The next message in order, if it came: 1 with *idx and *len, else 0. */
int rd_reseq_pop(struct rd_reseq *q, unsigned *idx, uint32_t *len);

#endif
