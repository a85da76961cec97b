// SPDX-License-Identifier: MIT
/*
 * The parallel walk: directories are the work queue's items (u16 source,
 * then the path beneath the source's root); a rank lists one, records
 * every entry, and pushes its subdirectories. Directories are opened
 * beneath the source's descriptor with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS): a symlink swapped in is never followed.
 */
#include "lib/mpi/rd_mpi_priv.h"
#include "lib/mpi/rd_mpi_wq.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/proto/rd_proto.h"

int rd_mpi__recs_add(struct recs *v, const struct rec *r)
{
	struct rec *n;

	if (v->n == v->cap) {
		n = realloc(v->r, (v->cap ? v->cap * 2 : 1024) * sizeof(*n));
		if (!n)
			return -RD_ENOMEM;
		v->r = n;
		v->cap = v->cap ? v->cap * 2 : 1024;
	}
	v->r[v->n++] = *r;
	return 0;
}

void rd_mpi__recs_free(struct recs *v)
{
	size_t i;

	for (i = 0; i < v->n; i++) {
		free(v->r[i].rel);
		free(v->r[i].target);
	}
	free(v->r);
	memset(v, 0, sizeof(*v));
}

int rd_mpi__wire(const struct job *j, const struct rec *r, char *buf)
{
	const char *p = j->src[r->src].prefix;

	if (!p[0] && !r->rel[0])
		return -1;
	snprintf(buf, RD_PATH_MAX + 1, "%s%s%s", p, p[0] && r->rel[0] ? "/" : "", r->rel);
	return 0;
}

int rd_mpi__path_cmp(const char *a, const char *b)
{
	unsigned char x, y;

	for (;; a++, b++) {
		x = (unsigned char)*a == '/' ? 1 : (unsigned char)*a;
		y = (unsigned char)*b == '/' ? 1 : (unsigned char)*b;
		if (x != y || !x)
			return x < y ? -1 : x > y;
	}
}

static int open_dir(int root, const char *rel)
{
	struct open_how how;
	long r;

	if (!rel[0])
		return fcntl(root, F_DUPFD_CLOEXEC, 0);
	memset(&how, 0, sizeof(how));
	how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	r = syscall(SYS_openat2, root, rel, &how, sizeof(how));
	return (int)r;
}

static void rec_stat(struct rec *r, const struct stat *st, dev_t rootdev)
{
	r->mode = st->st_mode;
	r->uid = st->st_uid;
	r->gid = st->st_gid;
	r->nlink = (uint32_t)st->st_nlink;
	r->ino = st->st_ino;
	r->devc = st->st_dev != rootdev;
	r->msec = st->st_mtim.tv_sec;
	r->mnsec = (uint32_t)st->st_mtim.tv_nsec;
	if (S_ISREG(st->st_mode)) {
		r->type = RT_REG;
		r->size = (uint64_t)st->st_size;
	} else if (S_ISDIR(st->st_mode)) {
		r->type = RT_DIR;
	} else if (S_ISLNK(st->st_mode)) {
		r->type = RT_LNK;
	} else {
		r->type = RT_SPECIAL;
	}
}

/* Count what the walk found (this rank). */
static void count(struct job *j, const struct rec *r)
{
	if (r->type == RT_REG) {
		j->files++;
		j->bytes += r->size;
	} else if (r->type == RT_DIR) {
		j->dirs++;
	} else {
		j->others++;
	}
}

static int add(struct job *j, struct rec *r)
{
	int ret;

	count(j, r);
	ret = rd_mpi__recs_add(&j->mine, r);
	if (ret)
		free(r->rel);
	return ret;
}

/* One directory: its entries recorded, its subdirectories queued. */
static int visit(void *ctx, struct rd_wq *q, const void *item, size_t len)
{
	struct job *j = ctx;
	const uint8_t *b = item;
	char rel[RD_PATH_MAX + 1], sub[RD_PATH_MAX + 3];
	struct stat st, rootst;
	struct dirent *de;
	struct rec r;
	uint16_t s;
	size_t rl, nl;
	DIR *d;
	int fd, ret = 0;

	if (len < 2 || len - 2 > RD_PATH_MAX)
		return -RD_EPROTO;
	s = (uint16_t)(b[0] << 8 | b[1]);
	if (s >= j->nsrc)
		return -RD_EPROTO;
	rl = len - 2;
	memcpy(rel, b + 2, rl);
	rel[rl] = '\0';
	fd = open_dir(j->src[s].fd, rel);
	if (fd < 0 || fstat(fd, &st) < 0 || fstat(j->src[s].fd, &rootst) < 0) {
		snprintf(sub, sizeof(sub), "%s", rel[0] ? rel : ".");
		rd_mpi__fail(j, sub, strerror(errno));
		j->walk_failed++;
		if (fd >= 0)
			close(fd);
		return 0;
	}
	memset(&r, 0, sizeof(r));
	r.src = s;
	rec_stat(&r, &st, rootst.st_dev);
	r.rel = strdup(rel);
	if (!r.rel || add(j, &r)) {
		close(fd);
		return -RD_ENOMEM;
	}
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -RD_ENOMEM;
	}
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		nl = strlen(de->d_name);
		if (rl + 1 + nl > RD_PATH_MAX) {
			rd_mpi__fail(j, de->d_name, "name too long for the wire; skipped");
			j->walk_failed++;
			continue;
		}
		snprintf(sub, sizeof(sub), "%s%s%s", rel, rl ? "/" : "", de->d_name);
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT) { /* gone: nothing to copy */
				rd_mpi__fail(j, sub, strerror(errno));
				j->walk_failed++;
			}
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			uint8_t it[RD_PATH_MAX + 2];
			size_t sl = strlen(sub);

			it[0] = (uint8_t)(s >> 8);
			it[1] = (uint8_t)s;
			memcpy(it + 2, sub, sl);
			ret = rd_wq_push(q, it, sl + 2);
			if (ret)
				break;
			continue; /* recorded by whoever lists it */
		}
		memset(&r, 0, sizeof(r));
		r.src = s;
		rec_stat(&r, &st, rootst.st_dev);
		r.rel = strdup(sub);
		if (!r.rel || add(j, &r)) {
			ret = -RD_ENOMEM;
			break;
		}
	}
	closedir(d);
	return ret;
}

int rd_mpi__walk(struct job *j)
{
	uint8_t(*seeds)[2] = NULL;
	const void **sp = NULL;
	size_t *lens = NULL;
	struct rd_wq_stats st;
	struct stat fs;
	struct rec r;
	int i, n = 0, ret = 0;

	if (j->rank == 0) {
		seeds = calloc((size_t)j->nsrc, sizeof(*seeds));
		sp = calloc((size_t)j->nsrc, sizeof(*sp));
		lens = calloc((size_t)j->nsrc, sizeof(*lens));
		if (!seeds || !sp || !lens) {
			ret = -RD_ENOMEM;
			goto out;
		}
		for (i = 0; i < j->nsrc; i++) {
			if (j->src[i].dir) {
				seeds[n][0] = (uint8_t)(i >> 8);
				seeds[n][1] = (uint8_t)i;
				sp[n] = seeds[n];
				lens[n++] = 2;
				continue;
			}
			/* a file source: one record, beside its parent */
			if (fstatat(j->src[i].fd, j->src[i].name, &fs, AT_SYMLINK_NOFOLLOW) < 0) {
				rd_mpi__fail(j, j->src[i].name, strerror(errno));
				j->walk_failed++;
				continue;
			}
			memset(&r, 0, sizeof(r));
			r.src = (uint16_t)i;
			rec_stat(&r, &fs, fs.st_dev);
			r.rel = strdup(j->src[i].name);
			if (!r.rel || add(j, &r)) {
				ret = -RD_ENOMEM;
				goto out;
			}
		}
	}
	ret = rd_wq_run(j->comm, visit, j, sp, lens, n, &st);
	j->listed = st.items;
	j->stolen = st.taken;
out:
	free(seeds);
	free(sp);
	free(lens);
	return ret;
}
