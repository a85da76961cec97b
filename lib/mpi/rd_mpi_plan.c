// SPDX-License-Identifier: MIT
/*
 * The plan: who moves what. Regular files, in the order of the ranks'
 * lists, lie end to end on a line of cost (bytes + RD_MPI_FILE_COST per
 * file); rank k gets [k * total / N, (k + 1) * total / N). A file lying
 * across a boundary and at least split_min large is cut there, at a
 * chunk boundary, into ranges (rd_proto.h section 6): each rank moves its
 * range, and the rank of the last one also sends the COMMIT. Smaller files
 * go whole to the rank where they start, so a directory of small files
 * stays together (its packs). Hard link groups (-H) first meet on one rank
 * (hash of the inode): the first name of a group carries the data, the
 * others become links made after every file is in place. Directories,
 * symlinks and specials stay with the rank that found them.
 */
#include "lib/mpi/rd_mpi_priv.h"
#include "lib/base/rd_be.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/proto/rd_proto.h"
#include "lib/tree/rd_tree.h"

#define REC_HDR 80

static size_t rec_size(const struct rec *r)
{
	return REC_HDR + strlen(r->rel) + (r->target ? strlen(r->target) : 0);
}

static uint8_t *rec_put(uint8_t *p, const struct rec *r)
{
	size_t rl = strlen(r->rel), tl = r->target ? strlen(r->target) : 0;

	memset(p, 0, REC_HDR);
	p[0] = r->type;
	p[1] = r->kind;
	p[2] = r->devc;
	p[3] = (uint8_t)(r->src >> 8);
	p[4] = (uint8_t)r->src;
	rd_be_put64(p + 8, r->size);
	rd_be_put64(p + 16, r->ino);
	rd_be_put64(p + 24, r->off);
	rd_be_put64(p + 32, r->len);
	rd_be_put64(p + 40, (uint64_t)r->msec);
	rd_be_put64(p + 48, (uint64_t)r->mnsec << 32 | r->nlink);
	rd_be_put64(p + 56, (uint64_t)rl << 32 | tl);
	rd_be_put64(p + 64, (uint64_t)r->mode << 32 | r->uid);
	rd_be_put64(p + 72, r->gid);
	memcpy(p + REC_HDR, r->rel, rl);
	memcpy(p + REC_HDR + rl, r->target ? r->target : "", tl);
	return p + REC_HDR + rl + tl;
}

static int rec_get(const uint8_t **pp, const uint8_t *end, struct rec *r)
{
	const uint8_t *p = *pp;
	uint64_t lens;
	size_t rl, tl;

	if (end - p < REC_HDR)
		return -RD_EPROTO;
	memset(r, 0, sizeof(*r));
	r->type = p[0];
	r->kind = p[1];
	r->devc = p[2];
	r->src = (uint16_t)(p[3] << 8 | p[4]);
	r->size = rd_be_get64(p + 8);
	r->ino = rd_be_get64(p + 16);
	r->off = rd_be_get64(p + 24);
	r->len = rd_be_get64(p + 32);
	r->msec = (int64_t)rd_be_get64(p + 40);
	r->mnsec = (uint32_t)(rd_be_get64(p + 48) >> 32);
	r->nlink = (uint32_t)rd_be_get64(p + 48);
	lens = rd_be_get64(p + 56);
	r->mode = (uint32_t)(rd_be_get64(p + 64) >> 32);
	r->uid = (uint32_t)rd_be_get64(p + 64);
	r->gid = (uint32_t)rd_be_get64(p + 72);
	rl = (size_t)(lens >> 32);
	tl = (size_t)(uint32_t)lens;
	if (rl > RD_PATH_MAX || tl > RD_PATH_MAX || (size_t)(end - p) < REC_HDR + rl + tl)
		return -RD_EPROTO;
	r->rel = strndup((const char *)p + REC_HDR, rl);
	r->target = tl ? strndup((const char *)p + REC_HDR + rl, tl) : NULL;
	if (!r->rel || (tl && !r->target)) {
		free(r->rel);
		free(r->target);
		return -RD_ENOMEM;
	}
	*pp = p + REC_HDR + rl + tl;
	return 0;
}

/*
 * Send each record of `out` to rank dest[i] (dest < 0: keep it here,
 * into `keep`); what others send us lands in `in`. The records sent are
 * freed.
 */
static int exchange(struct job *j, struct recs *out, const int *dest, struct recs *keep,
		    struct recs *in)
{
	int *scount = calloc((size_t)j->size, sizeof(int)), *rcount = NULL, *sdisp = NULL,
	    *rdisp = NULL;
	uint8_t *sbuf = NULL, *rbuf = NULL, **at = NULL;
	const uint8_t *p, *end;
	size_t i, tot = 0, rtot = 0;
	struct rec r;
	int k, ret = 0;

	rcount = calloc((size_t)j->size, sizeof(int));
	sdisp = calloc((size_t)j->size, sizeof(int));
	rdisp = calloc((size_t)j->size, sizeof(int));
	at = calloc((size_t)j->size, sizeof(*at));
	if (!scount || !rcount || !sdisp || !rdisp || !at) {
		ret = -RD_ENOMEM;
		goto out;
	}
	for (i = 0; i < out->n; i++) {
		if (dest[i] >= 0) {
			scount[dest[i]] += (int)rec_size(&out->r[i]);
			tot += rec_size(&out->r[i]);
		}
	}
	if (tot > (size_t)INT32_MAX) {
		ret = -RD_ENOMEM;
		goto out;
	}
	MPI_Alltoall(scount, 1, MPI_INT, rcount, 1, MPI_INT, j->comm);
	for (k = 0; k < j->size; k++) {
		sdisp[k] = k ? sdisp[k - 1] + scount[k - 1] : 0;
		rdisp[k] = k ? rdisp[k - 1] + rcount[k - 1] : 0;
		rtot += (size_t)rcount[k];
	}
	sbuf = malloc(tot ? tot : 1);
	rbuf = malloc(rtot ? rtot : 1);
	if (!sbuf || !rbuf) {
		ret = -RD_ENOMEM; /* every rank still takes part below */
		memset(scount, 0, (size_t)j->size * sizeof(int));
	}
	for (k = 0; sbuf && k < j->size; k++)
		at[k] = sbuf + sdisp[k];
	for (i = 0; i < out->n; i++) {
		if (dest[i] < 0) {
			if (!ret)
				ret = rd_mpi__recs_add(keep, &out->r[i]);
			else
				free(out->r[i].rel), free(out->r[i].target);
			continue;
		}
		if (sbuf)
			at[dest[i]] = rec_put(at[dest[i]], &out->r[i]);
		free(out->r[i].rel);
		free(out->r[i].target);
	}
	out->n = 0;
	MPI_Alltoallv(sbuf ? sbuf : (uint8_t *)rcount, scount, sdisp, MPI_BYTE,
		      rbuf ? rbuf : (uint8_t *)scount, rcount, rdisp, MPI_BYTE, j->comm);
	for (p = rbuf, end = rbuf + rtot; !ret && rbuf && p < end;) {
		ret = rec_get(&p, end, &r);
		if (!ret && (ret = rd_mpi__recs_add(in, &r)))
			free(r.rel), free(r.target);
	}
out:
	free(scount);
	free(rcount);
	free(sdisp);
	free(rdisp);
	free(at);
	free(sbuf);
	free(rbuf);
	return ret;
}

static uint64_t link_key(const struct rec *r)
{
	return ((uint64_t)r->src << 48) ^ ((uint64_t)r->devc << 47) ^ r->ino;
}

static int link_cmp(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	uint64_t kx = link_key(x), ky = link_key(y);

	if (kx != ky)
		return kx < ky ? -1 : 1;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return rd_mpi__path_cmp(x->rel, y->rel);
}

/* -H: link groups meet on one rank; all but the first name become links. */
static int gather_links(struct job *j, struct recs *files)
{
	struct recs in = {0}, keep = {0};
	int *dest = calloc(files->n ? files->n : 1, sizeof(int));
	char wire[RD_PATH_MAX + 1];
	size_t i;
	int ret;

	if (!dest)
		return -RD_ENOMEM; /* (every rank runs out alike or the job ends at MPI) */
	for (i = 0; i < files->n; i++)
		dest[i] =
		    files->r[i].nlink > 1 && !files->r[i].devc
			? (int)(link_key(&files->r[i]) * 0x9e3779b97f4a7c15ull >> 33) % j->size
			: -1;
	ret = exchange(j, files, dest, &keep, &in);
	free(dest);
	*files = keep;
	if (ret)
		goto out;
	qsort(in.r, in.n, sizeof(*in.r), link_cmp);
	for (i = 0; i < in.n && !ret; i++) {
		struct rec *r = &in.r[i];

		if (i && link_key(&in.r[i - 1]) == link_key(r)) {
			/* a later name of the group: a link to the first, made last */
			r->type = RT_HLINK;
			r->kind = RD_TREE_ITEM_HLINK;
			r->target = strdup(wire);
			if (i + 1 == in.n || link_key(&in.r[i + 1]) != link_key(r))
				r->ff = RD_FF_LINK_LAST;
			ret = r->target ? rd_mpi__recs_add(&j->links, r) : -RD_ENOMEM;
		} else if (rd_mpi__wire(j, r, wire) < 0) {
			ret = -RD_EUSAGE;
		} else {
			ret = rd_mpi__recs_add(files, r); /* its first name carries the data */
			/*
			 * The links' session sends the first file again, flagged
			 * (unchanged: compared, not sent): a receiver links only to
			 * files its own session placed or found the same (issue 27).
			 */
			if (!ret && i + 1 < in.n && link_key(&in.r[i + 1]) == link_key(r)) {
				struct rec first = *r;

				first.kind = RD_TREE_ITEM_NODE;
				first.ff = RD_FF_LINKED;
				first.target = NULL;
				first.rel = strdup(r->rel);
				ret = first.rel ? rd_mpi__recs_add(&j->links, &first) : -RD_ENOMEM;
			}
		}
		if (ret)
			break;
		r->rel = NULL; /* moved */
		r->target = NULL;
	}
	for (; i < in.n; i++)
		free(in.r[i].rel), free(in.r[i].target);
	free(in.r);
	return ret;
out:
	rd_mpi__recs_free(&in);
	return ret;
}

/* Deal the regular files by cost; cut those that lie across ranks. */
static int deal(struct job *j, struct recs *files)
{
	uint64_t mine = 0, start = 0, total = 0, p, cost, b, prev;
	struct recs pieces = {0}, in = {0}, keep = {0};
	uint64_t split_min = j->o->split_min ? j->o->split_min : 2ull * j->cs;
	int *dest = NULL, t0, t1, k, ret = 0;
	size_t i, np = 0;
	struct rec r;

	for (i = 0; i < files->n; i++)
		mine += files->r[i].size + RD_MPI_FILE_COST;
	MPI_Exscan(&mine, &start, 1, MPI_UINT64_T, MPI_SUM, j->comm);
	if (j->rank == 0)
		start = 0;
	MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, j->comm);
	p = start;
	for (i = 0; i < files->n && !ret; i++) {
		struct rec *f = &files->r[i];

		cost = f->size + RD_MPI_FILE_COST;
		t0 = (int)((__uint128_t)p * (unsigned)j->size / (total ? total : 1));
		t1 = (int)((__uint128_t)(p + cost - 1) * (unsigned)j->size / (total ? total : 1));
		if (t1 >= j->size)
			t1 = j->size - 1;
		prev = 0;
		np = 0;
		for (k = t0; f->size >= split_min && k <= t1; k++) {
			/* the byte of the file where rank k + 1's share begins, on a chunk */
			b = k == t1 ? f->size
				    : (uint64_t)((__uint128_t)(k + 1) * total / (unsigned)j->size);
			b = k == t1 ? b : b > p + RD_MPI_FILE_COST ? b - p - RD_MPI_FILE_COST : 0;
			b = k == t1 ? b : b / j->cs * j->cs;
			if (b > f->size)
				b = f->size;
			if (b <= prev)
				continue;
			r = *f;
			r.kind = RD_TREE_ITEM_RANGE;
			r.off = prev;
			r.len = b - prev;
			r.rel = strdup(f->rel);
			r.target = (char *)(intptr_t)k; /* its rank, until the exchange */
			if (!r.rel || rd_mpi__recs_add(&pieces, &r)) {
				free(r.rel);
				ret = -RD_ENOMEM;
				break;
			}
			np++;
			prev = b;
		}
		if (np == 1) {
			/* one piece after all: the whole file */
			pieces.r[pieces.n - 1].kind = RD_TREE_ITEM_NODE;
		} else if (np > 1) {
			/* the last range's rank also COMMITs */
			r = pieces.r[pieces.n - 1];
			r.kind = RD_TREE_ITEM_COMMIT;
			r.off = 0;
			r.len = f->size;
			r.rel = strdup(f->rel);
			if (!r.rel || rd_mpi__recs_add(&pieces, &r)) {
				free(r.rel);
				ret = -RD_ENOMEM;
			}
		} else if (!ret) {
			r = *f;
			r.kind = RD_TREE_ITEM_NODE;
			r.rel = strdup(f->rel);
			r.target = (char *)(intptr_t)t0;
			if (!r.rel || rd_mpi__recs_add(&pieces, &r)) {
				free(r.rel);
				ret = -RD_ENOMEM;
			}
		}
		p += cost;
	}
	rd_mpi__recs_free(files);
	dest = calloc(pieces.n ? pieces.n : 1, sizeof(int));
	if (!dest)
		ret = -RD_ENOMEM;
	for (i = 0; dest && i < pieces.n; i++) {
		dest[i] = (int)(intptr_t)pieces.r[i].target;
		pieces.r[i].target = NULL;
		if (dest[i] == j->rank)
			dest[i] = -1;
	}
	if (!dest) { /* take part in the exchange all the same */
		struct recs none = {0};

		exchange(j, &none, NULL, &keep, &in);
		rd_mpi__recs_free(&pieces);
		return ret;
	}
	ret = exchange(j, &pieces, dest, &keep, &in) ?: ret;
	free(dest);
	free(pieces.r);
	for (i = 0; i < in.n && !ret; i++)
		ret = rd_mpi__recs_add(&keep, &in.r[i]);
	free(in.r);
	for (i = 0; i < keep.n && !ret; i++) {
		struct rec *x = &keep.r[i];

		if (x->kind == RD_TREE_ITEM_COMMIT)
			ret = rd_mpi__recs_add(&j->commits, x);
		else
			ret = rd_mpi__recs_add(&j->data, x);
		if (x->kind == RD_TREE_ITEM_RANGE)
			j->ranges++;
	}
	free(keep.r);
	return ret;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;
	int c = x->src != y->src ? (x->src < y->src ? -1 : 1) : rd_mpi__path_cmp(x->rel, y->rel);

	if (c)
		return c;
	return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_reg(const void *a, const void *b)
{
	const struct rec *x = *(const struct rec *const *)a, *y = *(const struct rec *const *)b;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return strcmp(x->rel, y->rel);
}

/*
 * A pull's hard links: each takes the size and mtime its target had in the
 * same listing (the group's first file, listed before its links), for the
 * check that the file here is the one this job placed (rd_sink_link_adopt).
 * A target the listing did not hold gets a size no file has: its links fail.
 */
static int link_targets(struct job *j)
{
	struct rec **regs, key, *k = &key, **hit;
	size_t i, n = 0;

	regs = calloc(j->mine.n ? j->mine.n : 1, sizeof(*regs));
	if (!regs)
		return -RD_ENOMEM;
	for (i = 0; i < j->mine.n; i++)
		if (j->mine.r[i].type == RT_REG)
			regs[n++] = &j->mine.r[i];
	qsort(regs, n, sizeof(*regs), cmp_reg);
	for (i = 0; i < j->mine.n; i++) {
		struct rec *r = &j->mine.r[i];

		if (r->type != RT_HLINK)
			continue;
		key.src = r->src;
		key.rel = r->target;
		hit = bsearch(&k, regs, n, sizeof(*regs), cmp_reg);
		r->size = hit ? (*hit)->size : UINT64_MAX;
		r->msec = hit ? (*hit)->msec : 0;
		r->mnsec = hit ? (*hit)->mnsec : 0;
	}
	free(regs);
	return 0;
}

int rd_mpi__plan(struct job *j)
{
	struct recs files = {0};
	size_t i;
	int ret = 0, all;

	if (j->pull)
		ret = link_targets(j);

	for (i = 0; i < j->mine.n && !ret; i++) {
		struct rec *r = &j->mine.r[i];

		if (r->type == RT_REG) {
			ret = rd_mpi__recs_add(&files, r);
		} else if (r->type == RT_HLINK) {
			/* a pull: the server grouped the links already */
			r->kind = RD_TREE_ITEM_HLINK;
			ret = rd_mpi__recs_add(&j->links, r);
		} else {
			r->kind = RD_TREE_ITEM_NODE;
			ret = rd_mpi__recs_add(&j->data, r);
			if (!ret && r->type == RT_DIR) {
				struct rec post = *r;

				post.kind = RD_TREE_ITEM_POST;
				post.rel = strdup(r->rel);
				ret = post.rel ? rd_mpi__recs_add(&j->posts, &post) : -RD_ENOMEM;
			}
		}
	}
	free(j->mine.r);
	memset(&j->mine, 0, sizeof(j->mine));
	MPI_Allreduce(&ret, &all, 1, MPI_INT, MPI_MIN, j->comm);
	if (all)
		return all;
	if ((j->o->flags & RD_OF_HARDLINKS) && !j->pull) {
		ret = gather_links(j, &files);
		MPI_Allreduce(&ret, &all, 1, MPI_INT, MPI_MIN, j->comm);
		if (all)
			return all;
	}
	ret = deal(j, &files);
	MPI_Allreduce(&ret, &all, 1, MPI_INT, MPI_MIN, j->comm);
	if (all)
		return all;
	qsort(j->data.r, j->data.n, sizeof(*j->data.r), cmp_rec);
	qsort(j->posts.r, j->posts.n, sizeof(*j->posts.r), cmp_rec);
	return 0;
}
