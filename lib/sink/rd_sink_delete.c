// SPDX-License-Identifier: MIT
/*
 * Deleting in the destination, fd-relative and in rsync's order; see
 * rd_sink_delete.h and docs/DESIGN.md ("Mirroring safely").
 */
#include "lib/sink/rd_sink_delete.h"
#include "lib/base/rd_fsid.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REL_MAX 4096 /* a path below the destination, as reported */

struct rd_del {
	struct rd_del_opts o;
	struct rd_del_stats st;
	size_t mem;   /* charged by every name set */
	int64_t left; /* deletions max_delete still allows (-1: any) */
};

int rd_del_new(struct rd_del **out, const struct rd_del_opts *o)
{
	struct rd_del *d = calloc(1, sizeof(*d));

	*out = NULL;
	if (!d)
		return -RD_ENOMEM;
	d->o = *o;
	if (!d->o.mem_max)
		d->o.mem_max = RD_DEL_MEM_MAX;
	d->left = o->max_delete < 0 ? -1 : o->max_delete;
	*out = d;
	return 0;
}

void rd_del_free(struct rd_del *d)
{
	free(d);
}

const struct rd_del_stats *rd_del_stats(const struct rd_del *d)
{
	return &d->st;
}

int rd_del_limited(const struct rd_del *d)
{
	return d->st.skipped > 0;
}

/* --- name sets --- */

void rd_del_names_init(struct rd_del_names *n)
{
	memset(n, 0, sizeof(*n));
	n->sorted = 1;
}

static int charge(struct rd_del *d, size_t bytes)
{
	if (d->mem + bytes > d->o.mem_max)
		return -RD_ENOMEM;
	d->mem += bytes;
	return 0;
}

int rd_del_names_add(struct rd_del *d, struct rd_del_names *n, const char *name, size_t len,
		     unsigned flags)
{
	size_t need, cap;
	void *p;

	if (!len || len > 255 || memchr(name, '/', len) || memchr(name, '\0', len))
		return -RD_EPROTO;
	need = n->used + len + 1;
	if (need > n->cap) {
		cap = n->cap ? n->cap * 2 : 256;
		while (cap < need)
			cap *= 2;
		if (charge(d, cap - n->cap))
			return -RD_ENOMEM;
		p = realloc(n->buf, cap);
		if (!p) {
			d->mem -= cap - n->cap;
			return -RD_ENOMEM;
		}
		n->buf = p;
		n->cap = cap;
	}
	if (n->n == n->ncap) {
		cap = n->ncap ? n->ncap * 2 : 32;
		if (charge(d, (cap - n->ncap) * (sizeof(*n->off) + sizeof(*n->flags))))
			return -RD_ENOMEM;
		p = realloc(n->off, cap * sizeof(*n->off));
		if (p)
			n->off = p;
		p = p ? realloc(n->flags, cap * sizeof(*n->flags)) : NULL;
		if (!p) {
			d->mem -= (cap - n->ncap) * (sizeof(*n->off) + sizeof(*n->flags));
			return -RD_ENOMEM;
		}
		n->flags = p;
		n->ncap = cap;
	}
	memcpy(n->buf + n->used, name, len);
	n->buf[n->used + len] = '\0';
	n->off[n->n] = (uint32_t)n->used;
	n->flags[n->n] = flags;
	n->used += len + 1;
	n->n++;
	n->sorted = n->n < 2;
	return 0;
}

void rd_del_names_free(struct rd_del *d, struct rd_del_names *n)
{
	size_t bytes = n->cap + n->ncap * (sizeof(*n->off) + sizeof(*n->flags));

	if (d)
		d->mem = d->mem > bytes ? d->mem - bytes : 0;
	free(n->buf);
	free(n->off);
	free(n->flags);
	rd_del_names_init(n);
}

/*
 * rsync's order within a directory: non-directories first, bytewise, then
 * directories, bytewise as "name/" (so "a.d/" comes before "a/").
 */
static int order_cmp(const char *a, int adir, const char *b, int bdir)
{
	const unsigned char *x = (const unsigned char *)a, *y = (const unsigned char *)b;

	if (adir != bdir)
		return adir ? 1 : -1;
	while (*x && *x == *y) {
		x++;
		y++;
	}
	if (adir) {
		unsigned cx = *x ? *x : '/', cy = *y ? *y : '/';

		if (cx != cy)
			return cx < cy ? -1 : 1;
		if (!*x && !*y)
			return 0;
		return !*x ? -1 : 1; /* "a/" against "a/..." cannot happen: names */
	}
	return *x == *y ? 0 : *x < *y ? -1 : 1;
}

/* One name of a set, for qsort_r/bsearch (ctx: the set's buf). */
struct ent {
	uint32_t off, flags;
};

static int ent_cmp(const void *pa, const void *pb, void *ctx)
{
	const struct ent *a = pa, *b = pb;
	const char *buf = ctx;

	return order_cmp(buf + a->off, !!(a->flags & RD_DEL_N_DIR), buf + b->off,
			 !!(b->flags & RD_DEL_N_DIR));
}

void rd_del_names_sort(struct rd_del_names *n)
{
	struct ent *e;
	size_t i;

	if (n->sorted || n->n < 2) {
		n->sorted = 1;
		return;
	}
	/* off[] and flags[] are sorted together through one array of pairs */
	e = malloc(n->n * sizeof(*e));
	if (e) {
		for (i = 0; i < n->n; i++) {
			e[i].off = n->off[i];
			e[i].flags = n->flags[i];
		}
		qsort_r(e, n->n, sizeof(*e), ent_cmp, n->buf);
		for (i = 0; i < n->n; i++) {
			n->off[i] = e[i].off;
			n->flags[i] = e[i].flags;
		}
		free(e);
	} else {
		/* no memory to sort with: an insertion sort in place, slow but sure */
		size_t j;

		for (i = 1; i < n->n; i++) {
			for (j = i;
			     j > 0 &&
			     order_cmp(n->buf + n->off[j - 1], !!(n->flags[j - 1] & RD_DEL_N_DIR),
				       n->buf + n->off[j], !!(n->flags[j] & RD_DEL_N_DIR)) > 0;
			     j--) {
				uint32_t t = n->off[j];

				n->off[j] = n->off[j - 1];
				n->off[j - 1] = t;
				t = n->flags[j];
				n->flags[j] = n->flags[j - 1];
				n->flags[j - 1] = t;
			}
		}
	}
	n->sorted = 1;
}

/* Binary search for name as a directory (dir 1) or not (0) in a sorted set. */
static int find(const struct rd_del_names *n, const char *name, int dir)
{
	size_t lo = 0, hi = n->n, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = order_cmp(name, dir, n->buf + n->off[mid], !!(n->flags[mid] & RD_DEL_N_DIR));
		if (!c)
			return 1;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return 0;
}

int rd_del_names_has(const struct rd_del_names *n, const char *name, size_t len)
{
	char one[256];

	if (!len || len >= sizeof(one) || !n->n)
		return 0;
	memcpy(one, name, len);
	one[len] = '\0';
	/* listed as a file or as a directory: a name of either type is the sender's */
	return find(n, one, 0) || find(n, one, 1);
}

/* --- finding and deleting --- */

/* "rel/name" (or "name" at the destination's root) into out; -1 if too long. */
static int join(char *out, size_t cap, const char *rel, const char *name)
{
	int n = snprintf(out, cap, "%s%s%s", rel, rel[0] ? "/" : "", name);

	return n < 0 || (size_t)n >= cap ? -1 : n;
}

static void problem(struct rd_del *d, const char *rel, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void problem(struct rd_del *d, const char *rel, int status, const char *fmt, ...)
{
	char msg[RD_ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	d->st.failed++;
	if (d->o.ops.problem)
		d->o.ops.problem(d->o.ctx, rel, strlen(rel), status, msg);
}

static int protected(struct rd_del *d, const char *rel, int is_dir)
{
	if (d->o.ops.protect && d->o.ops.protect(d->o.ctx, rel, strlen(rel), is_dir)) {
		d->st.kept++;
		return 1;
	}
	return 0;
}

int rd_del_find(struct rd_del *d, int dirfd, const char *rel, const struct rd_del_names *keep,
		struct rd_del_names *extras, struct rd_err *err)
{
	char path[REL_MAX];
	struct dirent *de;
	struct stat st;
	DIR *dir = NULL;
	size_t len;
	int fd, ret = 0, is_dir;

	fd = rd_openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0 || !(dir = fdopendir(fd))) {
		ret = rd_err_set(err, RD_ESYS, errno, "cannot read %s to delete in it",
				 rel[0] ? rel : ".");
		if (fd >= 0)
			close(fd);
		return ret;
	}
	errno = 0;
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		len = strlen(de->d_name);
		if (keep && rd_del_names_has(keep, de->d_name, len))
			continue;
		if (rd_fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW))
			continue; /* gone meanwhile: nothing to delete */
		is_dir = S_ISDIR(st.st_mode);
		if (join(path, sizeof(path), rel, de->d_name) < 0) {
			problem(d, rel, -RD_EUSAGE, "%s/%s: the path is too long to delete", rel,
				de->d_name);
			continue;
		}
		if (protected(d, path, is_dir))
			continue;
		ret = rd_del_names_add(d, extras, de->d_name, len, is_dir ? RD_DEL_N_DIR : 0);
		if (ret) {
			rd_err_set(
			    err, -ret, 0,
			    "%s: too many names to keep track of for deleting (over %zu MiB)",
			    rel[0] ? rel : ".", d->o.mem_max >> 20);
			break;
		}
		errno = 0;
	}
	if (!ret && errno)
		ret = rd_err_set(err, RD_ESYS, errno, "cannot read %s to delete in it",
				 rel[0] ? rel : ".");
	closedir(dir);
	if (!ret)
		rd_del_names_sort(extras);
	return ret;
}

/* One more deletion allowed by max_delete? Else count it skipped. */
static int allowed(struct rd_del *d, int room)
{
	if (room)
		return 1; /* the entry in a replacement's way itself: rsync does not count it */
	if (d->left == 0) {
		d->st.skipped++;
		return 0;
	}
	if (d->left > 0)
		d->left--;
	return 1;
}

/* Not deleted after all: the allowance is not spent. */
static void unspend(struct rd_del *d, int room)
{
	if (!room && d->left >= 0)
		d->left++;
}

static void deleted(struct rd_del *d, const char *rel, int is_dir)
{
	d->st.deleted++;
	if (d->o.ops.deleted)
		d->o.ops.deleted(d->o.ctx, rel, strlen(rel), is_dir);
}

static int remove_one(struct rd_del *d, int dirfd, const char *name, const char *rel, int depth,
		      dev_t dev, int room);

/*
 * Empty the directory name (in dirfd, at rel) and remove it: its
 * contents in rsync's order, last first, then itself. depth: levels
 * below the directory being cleaned. What stays inside (protected, or
 * max_delete reached) keeps the directory: said, as rsync says it.
 */
static int remove_dir(struct rd_del *d, int dirfd, const char *name, const char *rel, int depth,
		      dev_t dev, int room)
{
	struct rd_del_names inside;
	struct rd_err err;
	struct stat st;
	char path[REL_MAX];
	uint64_t kept = d->st.kept, skipped = d->st.skipped;
	size_t i;
	int fd, ret, first = 0, r;

	if (depth >= RD_DEL_DEPTH_MAX) {
		problem(d, rel, -RD_EUSAGE, "%s: more than %d levels deep; not deleted", rel,
			RD_DEL_DEPTH_MAX);
		return -RD_EUSAGE;
	}
	fd = rd_openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0) {
		r = errno;
		problem(d, rel, -RD_ESYS, "cannot open %s to delete it: %s", rel, strerror(r));
		return -RD_ESYS;
	}
	if (fstat(fd, &st) || st.st_dev != dev) {
		close(fd);
		problem(d, rel, -RD_EPERM,
			"%s is on another file system (a mount point): not deleted", rel);
		return -RD_EPERM;
	}
	rd_del_names_init(&inside);
	rd_err_clear(&err);
	if (d->o.ops.enter &&
	    (ret = d->o.ops.enter(d->o.ctx, fd, rel, strlen(rel), err.msg, sizeof(err.msg)))) {
		problem(d, rel, ret, "%s", err.msg);
		close(fd);
		return ret;
	}
	ret = rd_del_find(d, fd, rel, NULL, &inside, &err);
	if (ret) {
		problem(d, rel, ret, "%s", err.msg);
		rd_del_names_free(d, &inside);
		if (d->o.ops.enter)
			d->o.ops.leave(d->o.ctx);
		close(fd);
		return ret;
	}
	for (i = inside.n; i-- > 0;) {
		const char *n = inside.buf + inside.off[i];

		if (join(path, sizeof(path), rel, n) < 0)
			continue;
		/* what is inside counts, even when making room (rsync 3.5.0) */
		r = remove_one(d, fd, n, path, depth + 1, dev, 0);
		if (r && !first)
			first = r;
	}
	rd_del_names_free(d, &inside);
	if (d->o.ops.enter)
		d->o.ops.leave(d->o.ctx);
	close(fd);
	if (first)
		return first;
	if (d->st.kept != kept || d->st.skipped != skipped) {
		/* rsync's words; not a failure of its own (a protect, the limit) */
		if (d->o.ops.problem)
			d->o.ops.problem(d->o.ctx, rel, strlen(rel), 0,
					 "cannot delete non-empty directory");
		return 0;
	}
	if (!allowed(d, room))
		return 0;
	if (!(d->o.flags & RD_DEL_DRY_RUN) && rd_unlinkat(dirfd, name, AT_REMOVEDIR)) {
		r = errno;
		unspend(d, room);
		if (r == ENOTEMPTY || r == EEXIST) {
			problem(d, rel, -RD_ESYS, "cannot delete non-empty directory: %s", rel);
			return -RD_ESYS;
		}
		problem(d, rel, -RD_ESYS, "cannot delete %s: %s", rel, strerror(r));
		return -RD_ESYS;
	}
	/* the entry in a replacement's way itself: rsync neither counts nor lists it */
	if (!room)
		deleted(d, rel, 1);
	return 0;
}

/* Remove one entry found in dirfd (checked again now), a directory with its contents. */
static int remove_one(struct rd_del *d, int dirfd, const char *name, const char *rel, int depth,
		      dev_t dev, int room)
{
	struct stat st;
	int r;

	if (rd_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		if (errno == ENOENT)
			return 0;
		r = errno;
		problem(d, rel, -RD_ESYS, "cannot delete %s: %s", rel, strerror(r));
		return -RD_ESYS;
	}
	if (S_ISDIR(st.st_mode))
		return remove_dir(d, dirfd, name, rel, depth, dev, room);
	if (!allowed(d, room))
		return 0;
	if (d->o.flags & RD_DEL_DRY_RUN) {
		if (!room)
			deleted(d, rel, 0);
		return 0;
	}
	if (d->o.ops.backup) {
		r = d->o.ops.backup(d->o.ctx, dirfd, name, rel, strlen(rel));
		if (r < 0) {
			unspend(d, room);
			d->st.failed++;
			return r;
		}
	} else if (rd_unlinkat(dirfd, name, 0)) {
		r = errno;
		unspend(d, room);
		if (r == ENOENT)
			return 0;
		problem(d, rel, -RD_ESYS, "cannot delete %s: %s", rel, strerror(r));
		return -RD_ESYS;
	}
	if (!room)
		deleted(d, rel, 0);
	return 0;
}

int rd_del_run(struct rd_del *d, int dirfd, const char *rel, const struct rd_del_names *extras)
{
	char path[REL_MAX];
	struct stat st;
	size_t i;
	int r, first = 0;

	if (fstat(dirfd, &st)) {
		problem(d, rel, -RD_ESYS, "cannot delete in %s: %s", rel[0] ? rel : ".",
			strerror(errno));
		return -RD_ESYS;
	}
	for (i = extras->n; i-- > 0;) {
		const char *n = extras->buf + extras->off[i];

		if (join(path, sizeof(path), rel, n) < 0)
			continue;
		r = remove_one(d, dirfd, n, path, 0, st.st_dev, 0);
		if (r && !first)
			first = r;
	}
	return first;
}

int rd_del_entry(struct rd_del *d, int dirfd, const char *name, const char *rel)
{
	struct stat st;

	if (fstat(dirfd, &st)) {
		problem(d, rel, -RD_ESYS, "cannot delete %s: %s", rel, strerror(errno));
		return -RD_ESYS;
	}
	return remove_one(d, dirfd, name, rel, 0, st.st_dev, 1);
}
