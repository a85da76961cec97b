// SPDX-License-Identifier: MIT
/*
 * The work queue of rd_mpi_wq.h. Messages (on a private duplicate of the
 * caller's communicator, so nothing else can match them):
 *	REQ	empty: "give me work"; always answered by one WORK
 *	WORK	the answer: items packed as u32 length + bytes, or empty
 *	TOKEN	one int, the token's colour
 *	TERM	empty, from rank 0: the queue is done
 * After TERM every rank keeps answering REQs (with nothing) until its own
 * request is answered, and all meet in a non-blocking barrier, so no
 * message is left unmatched when the communicator is freed.
 */
#include "lib/mpi/rd_mpi_wq.h"
#include "lib/base/rd_err.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { T_REQ = 1, T_WORK, T_TOKEN, T_TERM };
enum { WHITE = 0, BLACK = 1 };

struct item {
	uint32_t len;
	uint8_t *p;
};

struct sendbuf {
	MPI_Request req;
	uint8_t *buf; /* malloc'd: stays put while the send is in flight */
};

struct rd_wq {
	MPI_Comm comm;
	int rank, size;
	struct item *it;
	size_t n, cap;
	int asked, color, have_token, token_color, token_out, term;
	struct sendbuf *sb;
	size_t nsb, sbcap;
	unsigned seed;
	struct rd_wq_stats st;
	int failed;
};

int rd_wq_push(struct rd_wq *q, const void *item, size_t len)
{
	struct item *n;

	if (len > RD_WQ_ITEM_MAX)
		return -RD_EUSAGE;
	if (q->n == q->cap) {
		n = realloc(q->it, (q->cap ? q->cap * 2 : 256) * sizeof(*n));
		if (!n)
			return -RD_ENOMEM;
		q->it = n;
		q->cap = q->cap ? q->cap * 2 : 256;
	}
	q->it[q->n].p = malloc(len ? len : 1);
	if (!q->it[q->n].p)
		return -RD_ENOMEM;
	memcpy(q->it[q->n].p, item, len);
	q->it[q->n++].len = (uint32_t)len;
	return 0;
}

/*
 * Send len bytes of buf (malloc'd, or NULL for an empty message; ours from
 * now on: freed once the send completed).
 */
static int send_raw(struct rd_wq *q, int to, int tag, uint8_t *buf, int len)
{
	struct sendbuf *n;

	if (q->nsb == q->sbcap) {
		n = realloc(q->sb, (q->sbcap ? q->sbcap * 2 : 16) * sizeof(*n));
		if (!n) {
			free(buf);
			return -RD_ENOMEM;
		}
		q->sb = n;
		q->sbcap = q->sbcap ? q->sbcap * 2 : 16;
	}
	if (!buf) {
		buf = malloc(1);
		len = 0;
		if (!buf)
			return -RD_ENOMEM;
	}
	q->sb[q->nsb].buf = buf;
	MPI_Isend(buf, len, MPI_BYTE, to, tag, q->comm, &q->sb[q->nsb].req);
	q->nsb++;
	return 0;
}

static int send_token(struct rd_wq *q, int to, int color)
{
	uint8_t *b = malloc(1);

	if (!b)
		return -RD_ENOMEM;
	b[0] = (uint8_t)color;
	return send_raw(q, to, T_TOKEN, b, 1);
}

static void sends_reap(struct rd_wq *q, int all)
{
	size_t i = 0;
	int done;

	while (i < q->nsb) {
		if (all)
			MPI_Wait(&q->sb[i].req, MPI_STATUS_IGNORE);
		else
			MPI_Test(&q->sb[i].req, &done, MPI_STATUS_IGNORE);
		if (all || done) {
			free(q->sb[i].buf);
			q->sb[i] = q->sb[--q->nsb];
			continue;
		}
		i++;
	}
}

/* Give half of our items (the oldest) to who asked, or nothing. */
static int answer(struct rd_wq *q, int to)
{
	size_t give, bytes, i, at = 0;
	uint8_t *buf;

	if (q->n < 2)
		return send_raw(q, to, T_WORK, NULL, 0);
	/* the oldest items, at most RD_WQ_GIVE_MAX bytes, at least one */
	for (give = 0, bytes = 0; give < q->n / 2 && (!give || bytes < RD_WQ_GIVE_MAX); give++)
		bytes += 4 + q->it[give].len;
	buf = malloc(bytes);
	if (!buf)
		return -RD_ENOMEM;
	for (i = 0; i < give; i++) {
		uint32_t l = q->it[i].len;

		buf[at] = (uint8_t)(l >> 24);
		buf[at + 1] = (uint8_t)(l >> 16);
		buf[at + 2] = (uint8_t)(l >> 8);
		buf[at + 3] = (uint8_t)l;
		memcpy(buf + at + 4, q->it[i].p, l);
		at += 4 + l;
		free(q->it[i].p);
	}
	memmove(q->it, q->it + give, (q->n - give) * sizeof(*q->it));
	q->n -= give;
	q->color = BLACK; /* gave work away: the token must go round again */
	q->st.given += give;
	return send_raw(q, to, T_WORK, buf, (int)bytes);
}

static int take(struct rd_wq *q, const uint8_t *buf, int len)
{
	int at = 0, ret;

	while (at + 4 <= len) {
		uint32_t l = (uint32_t)buf[at] << 24 | (uint32_t)buf[at + 1] << 16 |
			     (uint32_t)buf[at + 2] << 8 | buf[at + 3];

		if (l > RD_WQ_ITEM_MAX || (size_t)at + 4 + l > (size_t)len)
			return -RD_EPROTO;
		ret = rd_wq_push(q, buf + at + 4, l);
		if (ret)
			return ret;
		q->st.taken++;
		at += 4 + (int)l;
	}
	return 0;
}

/* Handle every message waiting. 1 if any came. */
static int service(struct rd_wq *q)
{
	MPI_Status stt;
	uint8_t *buf;
	int flag, len, got = 0, ret;

	for (;;) {
		MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, q->comm, &flag, &stt);
		if (!flag)
			break;
		got = 1;
		MPI_Get_count(&stt, MPI_BYTE, &len);
		buf = malloc(len ? (size_t)len : 1);
		if (!buf)
			return -RD_ENOMEM;
		MPI_Recv(buf, len, MPI_BYTE, stt.MPI_SOURCE, stt.MPI_TAG, q->comm,
			 MPI_STATUS_IGNORE);
		ret = 0;
		switch (stt.MPI_TAG) {
		case T_REQ:
			ret = q->term ? send_raw(q, stt.MPI_SOURCE, T_WORK, NULL, 0)
				      : answer(q, stt.MPI_SOURCE);
			break;
		case T_WORK:
			ret = take(q, buf, len);
			q->asked = 0;
			break;
		case T_TOKEN:
			q->have_token = 1;
			q->token_color = len == 1 && buf[0] == WHITE ? WHITE : BLACK;
			break;
		case T_TERM:
			q->term = 1;
			break;
		}
		free(buf);
		if (ret)
			return ret;
	}
	sends_reap(q, 0);
	return got;
}

/* Out of work: ask someone, pass the token, or (rank 0) end the queue. */
static int idle(struct rd_wq *q)
{
	int i, to, ret;

	if (q->size == 1) {
		q->term = 1;
		return 0;
	}
	if (q->asked)
		return 0;
	if (q->rank == 0 && !q->token_out) {
		q->color = WHITE;
		q->token_out = 1;
		return send_token(q, 1, WHITE);
	}
	if (q->have_token) {
		q->have_token = 0;
		if (q->rank == 0) {
			q->token_out = 0;
			if (q->token_color == WHITE && q->color == WHITE) {
				q->term = 1;
				for (i = 1; i < q->size; i++)
					if ((ret = send_raw(q, i, T_TERM, NULL, 0)))
						return ret;
				return 0;
			}
			return 0; /* another round at the next idle turn */
		}
		ret = send_token(q, (q->rank + 1) % q->size,
				 q->color == BLACK ? BLACK : q->token_color);
		q->color = WHITE;
		if (ret)
			return ret;
	}
	/* a random other rank */
	to = (int)(rand_r(&q->seed) % (unsigned)(q->size - 1));
	if (to >= q->rank)
		to++;
	q->asked = 1;
	q->st.requests++;
	return send_raw(q, to, T_REQ, NULL, 0);
}

int rd_wq_run(MPI_Comm comm, rd_wq_fn fn, void *ctx, const void *const *seeds, const size_t *lens,
	      int nseeds, struct rd_wq_stats *st)
{
	struct rd_wq q;
	MPI_Request bar;
	int i, ret = 0, r, done;
	size_t k;

	memset(&q, 0, sizeof(q));
	MPI_Comm_dup(comm, &q.comm);
	MPI_Comm_rank(q.comm, &q.rank);
	MPI_Comm_size(q.comm, &q.size);
	q.seed = (unsigned)(q.rank * 7919 + getpid());
	for (i = 0; i < nseeds && !ret; i++)
		ret = rd_wq_push(&q, seeds[i], lens[i]);
	while (!q.term) {
		r = service(&q);
		if (r < 0) {
			ret = r;
			break;
		}
		if (q.n) {
			struct item it = q.it[--q.n];

			r = q.failed ? 0 : fn(ctx, &q, it.p, it.len);
			free(it.p);
			q.st.items++;
			if (r < 0 && !ret) {
				ret = r; /* keep serving the others, do no more work */
				q.failed = 1;
			}
			continue;
		}
		r = idle(&q);
		if (r < 0) {
			ret = r;
			break;
		}
		if (!r && !q.term && !service(&q))
			usleep(200);
	}
	/* drain: our own request answered, then everyone meets */
	while (q.asked && service(&q) >= 0)
		if (q.asked)
			usleep(100);
	MPI_Ibarrier(q.comm, &bar);
	for (done = 0; !done;) {
		MPI_Test(&bar, &done, MPI_STATUS_IGNORE);
		if (!done && service(&q) <= 0)
			usleep(100);
	}
	sends_reap(&q, 1);
	for (k = 0; k < q.n; k++)
		free(q.it[k].p);
	free(q.it);
	free(q.sb);
	MPI_Comm_free(&q.comm);
	if (st)
		*st = q.st;
	return ret;
}
