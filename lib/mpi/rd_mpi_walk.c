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

#include "lib/filter/rd_filter.h"
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

/* --- rsync's filter rules in the parallel walk --- */

/* The transfer path (what the rules see) of rel beneath source s. */
static size_t tpath(const struct job *j, uint16_t s, const char *rel, char *out)
{
	const char *t = j->src[s].tname;
	int n = snprintf(out, RD_PATH_MAX + 1, "%s%s%s", t, t[0] && rel[0] ? "/" : "", rel);

	return n < 0 ? 0 : n > RD_PATH_MAX ? RD_PATH_MAX : (size_t)n;
}

static void fw_leave_all(struct job *j)
{
	unsigned n = j->fw_parents + (unsigned)j->fw_root, c;
	const char *p;

	if (j->fw_root)
		for (p = j->fw_rel; *p; p++)
			n += *p == '/' || p == j->fw_rel;
	for (c = 0; c < n; c++)
		rd_filter_leave(j->fw);
	j->fw_src = -1;
	j->fw_root = 0;
	j->fw_parents = 0;
	j->fw_rel[0] = '\0';
}

/* Source s's parents (-F) entered, and nothing below them. 0 or < 0 (j->err). */
static int fw_source(struct job *j, uint16_t s)
{
	const struct src *sr = &j->src[s];
	unsigned n = 0;
	int ret;

	if (j->fw_src == s && !j->fw_root)
		return 0;
	fw_leave_all(j);
	ret = rd_filter_enter_parents(j->fw, -1, sr->real, sr->contents, &n, &j->err);
	j->fw_parents = n;
	j->fw_src = s;
	if (ret < 0)
		fw_leave_all(j);
	return ret;
}

/*
 * The rules in force in directory rel of source s (fd: its descriptor):
 * the merge files of its parents (-F), of the source's root and of every
 * directory down to rel, each read through its own descriptor. Moves from
 * the levels entered for the last directory: left up to the common
 * ancestor, entered down from there. 0 or < 0 (j->err: the directory is
 * skipped, what its rules exclude is not known).
 */
static int fw_goto(struct job *j, uint16_t s, const char *rel, int fd)
{
	char tp[RD_PATH_MAX + 1], part[RD_PATH_MAX + 1];
	size_t common = 0, i, n;
	const char *p, *q;
	int dfd, ret;

	if (j->fw_src != s && fw_source(j, s) < 0)
		return -1;
	if (j->fw_root) {
		/* the common ancestor of fw_rel and rel, by whole names */
		for (i = 0;; i++) {
			if ((!j->fw_rel[i] || j->fw_rel[i] == '/') && (!rel[i] || rel[i] == '/'))
				common = i;
			if (!j->fw_rel[i] || !rel[i] || j->fw_rel[i] != rel[i])
				break;
		}
		for (p = j->fw_rel + common; *p; p++)
			if (*p == '/' || (p == j->fw_rel && common == 0))
				rd_filter_leave(j->fw);
		j->fw_rel[common] = '\0';
	} else {
		n = tpath(j, s, "", tp);
		dfd = rel[0] ? open_dir(j->src[s].fd, "") : fcntl(fd, F_DUPFD_CLOEXEC, 0);
		ret = dfd < 0 ? rd_err_set(&j->err, RD_ESYS, errno, "%s", tp)
			      : rd_filter_enter(j->fw, dfd, tp, n, &j->err);
		if (dfd >= 0)
			close(dfd);
		if (ret < 0)
			return ret;
		j->fw_root = 1;
		j->fw_rel[0] = '\0';
		common = 0;
	}
	/* down from the common ancestor: each name below it */
	for (q = rel + common; *q;) {
		if (*q == '/')
			q++;
		p = strchr(q, '/');
		q = p ? p : q + strlen(q);
		n = (size_t)(q - rel);
		memcpy(part, rel, n);
		part[n] = '\0';
		dfd = *q ? open_dir(j->src[s].fd, part) : fcntl(fd, F_DUPFD_CLOEXEC, 0);
		i = tpath(j, s, part, tp);
		ret = dfd < 0 ? rd_err_set(&j->err, RD_ESYS, errno, "%s", tp)
			      : rd_filter_enter(j->fw, dfd, tp, i, &j->err);
		if (dfd >= 0)
			close(dfd);
		if (ret < 0) {
			fw_leave_all(j); /* what is entered no longer matches a path */
			return ret;
		}
		memcpy(j->fw_rel, part, n + 1);
	}
	return 0;
}

/* Does a rule leave out rel (beneath source s)? The levels above it are entered. */
static int fw_excluded(struct job *j, uint16_t s, const char *rel, int is_dir)
{
	char tp[RD_PATH_MAX + 1];
	size_t n;

	if (!j->fw)
		return 0;
	n = tpath(j, s, rel, tp);
	return n && rd_filter_excluded(j->fw, tp, n, is_dir, RD_FILTER_SENDER);
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
	if (j->fw) {
		/* a source named itself: the rules may leave it out (parents' -F files first) */
		if (!rel[0] && j->src[s].tname[0] &&
		    (fw_source(j, s) < 0 || fw_excluded(j, s, "", 1))) {
			if (j->err.msg[0])
				rd_mpi__fail(j, j->src[s].tname, j->err.msg);
			rd_err_clear(&j->err);
			close(fd);
			return 0;
		}
		/* its merge files and those above it, read through descriptors */
		if (fw_goto(j, s, rel, fd) < 0) {
			snprintf(sub, sizeof(sub), "%s", rel[0] ? rel : ".");
			rd_mpi__fail(j, sub, j->err.msg);
			rd_err_clear(&j->err);
			j->walk_failed++;
			close(fd);
			return 0;
		}
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
		if (fw_excluded(j, s, sub, S_ISDIR(st.st_mode)))
			continue; /* rsync's filter rules: left out, a directory with its tree */
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

	j->fw_src = -1;
	if (j->o->filter && rd_filter_count(j->o->filter)) {
		ret = rd_filter_walk_new(&j->fw, j->o->filter, &j->err);
		if (ret)
			return ret;
	}
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
			/* a file source: one record, beside its parent (unless a rule leaves it out) */
			if (j->fw && (fw_source(j, (uint16_t)i) < 0 ||
				      fw_excluded(j, (uint16_t)i, j->src[i].name, 0))) {
				if (j->err.msg[0])
					rd_mpi__fail(j, j->src[i].name, j->err.msg);
				rd_err_clear(&j->err);
				continue;
			}
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
	rd_filter_walk_free(j->fw);
	j->fw = NULL;
	free(seeds);
	free(sp);
	free(lens);
	return ret;
}
