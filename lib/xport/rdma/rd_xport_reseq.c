// SPDX-License-Identifier: MIT
/* Message order across lanes: see rd_xport_reseq.h. */
#include "lib/xport/rdma/rd_xport_reseq.h"

#include <stdlib.h>
#include <string.h>

int rd_reseq_init(struct rd_reseq *q, unsigned cap)
{
	memset(q, 0, sizeof(*q));
	q->cap = cap;
	q->have = calloc(cap, 1);
	q->idx = calloc(cap, sizeof(*q->idx));
	q->len = calloc(cap, sizeof(*q->len));
	if (!cap || !q->have || !q->idx || !q->len) {
		rd_reseq_fini(q);
		return -1;
	}
	return 0;
}

void rd_reseq_fini(struct rd_reseq *q)
{
	free(q->have);
	free(q->idx);
	free(q->len);
	memset(q, 0, sizeof(*q));
}

int rd_reseq_push(struct rd_reseq *q, uint32_t seq, unsigned idx, uint32_t len)
{
	uint32_t ahead = seq - q->next; /* modulo 2^32: numbers wrap */
	unsigned s;

	if (!q->cap)
		return -1;
	/* Already handed up (behind next, by half the number space at most):
	 * a copy a failed-over lane sent again. */
	if (ahead >= q->cap)
		return q->next - seq < 0x80000000u ? 1 : -1;
	s = (q->head + ahead) % q->cap;
	if (q->have[s])
		return 1; /* a copy of one still waiting */
	q->have[s] = 1;
	q->idx[s] = idx;
	q->len[s] = len;
	q->held++;
	return 0;
}

int rd_reseq_pop(struct rd_reseq *q, unsigned *idx, uint32_t *len)
{
	unsigned s;

	if (!q->cap)
		return 0;
	s = q->head;
	if (!q->have[s])
		return 0;
	q->have[s] = 0;
	*idx = q->idx[s];
	*len = q->len[s];
	q->held--;
	q->next++;
	q->head = (q->head + 1) % q->cap;
	return 1;
}

void rd_whist_add(struct rd_whist *h, uint64_t raddr, uint32_t seq)
{
	h->e[h->n % RD_WHIST].raddr = raddr;
	h->e[h->n % RD_WHIST].seq = seq;
	h->n++;
}

int rd_whist_since(const struct rd_whist *h, uint64_t raddr, uint32_t seq)
{
	uint64_t i, n = h->n < RD_WHIST ? h->n : RD_WHIST;
	unsigned s;

	for (i = 1; i <= n; i++) {
		s = (unsigned)((h->n - i) % RD_WHIST);
		if ((int32_t)(h->e[s].seq - seq) <= 0)
			return 0; /* back at seq itself: nothing later wrote raddr */
		if (h->e[s].raddr == raddr)
			return 1;
	}
	return -1;
}
