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
 * Message seq arrived in buffer idx. 0; 1 when it is a copy of one already
 * handed up or waiting (a lane failed and the sender posted its messages
 * again on another: the copy's buffer goes back, the copy is not counted);
 * -1 when it cannot be one the sender sent within its credits: cap or
 * more ahead of the next expected (the peer broke the protocol).
 */
int rd_reseq_push(struct rd_reseq *q, uint32_t seq, unsigned idx, uint32_t len);
/* The next message in order, if it came: 1 with *idx and *len, else 0. */
int rd_reseq_pop(struct rd_reseq *q, unsigned *idx, uint32_t *len);

/*
 * The sender's side of a failover: recent bulk writes (slot address and
 * the number of the message they went with), newest last, RD_WHIST of
 * them. A write lost with a failed lane is not posted again over a later
 * write to the same slot.
 */
#define RD_WHIST 2048
struct rd_whist {
	uint64_t n; /* writes recorded */
	struct {
		uint64_t raddr;
		uint32_t seq;
	} e[RD_WHIST];
};

void rd_whist_add(struct rd_whist *h, uint64_t raddr, uint32_t seq);
/*
 * Was slot raddr written after message seq (itself recorded)? 1 yes, 0 no,
 * -1 cannot tell: more than RD_WHIST writes since.
 */
int rd_whist_since(const struct rd_whist *h, uint64_t raddr, uint32_t seq);

#endif
