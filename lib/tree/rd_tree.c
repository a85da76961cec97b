// SPDX-License-Identifier: MIT
/*
 * Source walk for the sender.
 *
 * libarchive's disk reader lists a whole directory before it descends
 * into any of its subdirectories, and it never reports leaving one. That
 * order cannot place a directory's POST entry right after its contents
 * without remembering every pending subdirectory. So each directory level
 * gets its own reader that lists just that directory (descend once, on
 * its first header); a subdirectory found in the listing pushes a new
 * level, and a level's EOF is exactly "this directory is done": emit its
 * POST and pop. The walk is depth-first and the state is one reader plus
 * a few lengths per level: memory is bounded by depth, not by file count.
 *
 * The wire path of the current directory and its local path live in two
 * buffers; each level records where its part ends, so popping is a
 * truncation.
 */
#include "lib/tree/rd_tree.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"

#define LOCAL_MAX (PATH_MAX + RD_PATH_MAX + 2)
#define AGAIN	  1000 /* internal: nothing to return yet, loop */

#define DISK_BEHAVIOR                                                                       \
	(ARCHIVE_READDISK_NO_XATTR | ARCHIVE_READDISK_NO_ACL | ARCHIVE_READDISK_NO_FFLAGS | \
	 ARCHIVE_READDISK_NO_SPARSE)

struct level {
	struct archive *a;
	int started; /* first header (the directory itself) consumed */
	int dead;    /* reader failed: finish this level at the next call */
	size_t wire_len, local_len;
	uint32_t mode, uid, gid;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
};

struct rd_tree {
	struct rd_err err;
	unsigned flags;
	char **sources; /* copies: the caller's array may go away */
	char **names;	/* wire names of the sources, NULL = their base names */
	int nsources, next_source;
	struct archive_entry *ae;
	struct level *lv;
	size_t depth, cap;
	char wire[RD_PATH_MAX + 1];
	char local[LOCAL_MAX];
	char esc[RD_ERR_MSG_MAX / 2]; /* leaves room for the reason */
};

/* Escaped copy of a local path for messages (one at a time), "..." if cut. */
static const char *esc(struct rd_tree *t, const char *p)
{
	if (rd_escape(t->esc, sizeof(t->esc), p, strlen(p)) >= sizeof(t->esc))
		memcpy(t->esc + sizeof(t->esc) - 4, "...", 4);
	return t->esc;
}

/* libarchive reports -1 for "no errno" */
static int ar_errno(struct archive *a)
{
	int e = archive_errno(a);

	return e > 0 ? e : 0;
}

static void entry_reset(struct rd_tree_entry *e)
{
	e->type = 0;
	e->flags = 0;
	e->mode = 0;
	e->uid = 0;
	e->gid = 0;
	e->size = 0;
	e->mtime_sec = 0;
	e->mtime_nsec = 0;
	e->path[0] = '\0';
	e->path_len = 0;
	e->target[0] = '\0';
	e->target_len = 0;
	e->fd = -1;
}

static void entry_stat(struct rd_tree_entry *e, const struct stat *st)
{
	e->mode = st->st_mode;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	e->mtime_sec = st->st_mtim.tv_sec;
	e->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
}

/* A skip: e->path gets the local path (truncated), the message is set. */
static int skip(struct rd_tree *t, struct rd_tree_entry *e, const char *local, int errnum,
		const char *why)
{
	size_t n = strlen(local);

	if (n > RD_PATH_MAX)
		n = RD_PATH_MAX;
	memcpy(e->path, local, n);
	e->path[n] = '\0';
	e->path_len = n;
	if (why)
		rd_err_set(&t->err, RD_ESYS, errnum, "%s: %s", esc(t, local), why);
	else
		rd_err_set(&t->err, RD_ESYS, errnum, "%s", esc(t, local));
	return RD_TREE_SKIP;
}

static void set_wire(struct rd_tree_entry *e, const char *p, size_t n)
{
	memcpy(e->path, p, n);
	e->path[n] = '\0';
	e->path_len = n;
}

/* Open a regular file now; size and times come from the same fd. */
static int emit_file(struct rd_tree *t, struct rd_tree_entry *e, const char *local, int follow)
{
	struct stat st;
	int fd;

	fd = open(local, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (fd < 0)
		return skip(t, e, local, errno, NULL);
	if (fstat(fd, &st) < 0) {
		int err = errno;

		close(fd);
		return skip(t, e, local, err, NULL);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return skip(t, e, local, 0, "changed while walking; skipped");
	}
	/* O_NONBLOCK only guarded the open against a fifo swapped in */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	e->type = RD_FT_REG;
	entry_stat(e, &st);
	e->size = (uint64_t)st.st_size;
	e->fd = fd;
	return RD_TREE_ENTRY;
}

static int push_level(struct rd_tree *t, const char *local, int follow, const struct stat *st,
		      size_t wire_len, size_t local_len)
{
	struct level *l;
	int ret = 0;

	if (t->depth == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct level *n = realloc(t->lv, cap * sizeof(*n));

		if (!n)
			return rd_err_set(&t->err, RD_ENOMEM, ENOMEM, "walk %s", esc(t, local));
		t->lv = n;
		t->cap = cap;
	}
	l = &t->lv[t->depth];
	memset(l, 0, sizeof(*l));
	l->a = archive_read_disk_new();
	if (!l->a)
		return rd_err_set(&t->err, RD_ENOMEM, ENOMEM, "walk %s", esc(t, local));
	if (follow)
		archive_read_disk_set_symlink_hybrid(l->a);
	else
		archive_read_disk_set_symlink_physical(l->a);
	archive_read_disk_set_behavior(l->a, DISK_BEHAVIOR);
	if (archive_read_disk_open(l->a, local) != ARCHIVE_OK) {
		ret = rd_err_set(&t->err, RD_ESYS, ar_errno(l->a), "walk %s: %s", esc(t, local),
				 archive_error_string(l->a));
		archive_read_free(l->a);
		l->a = NULL;
		return ret;
	}
	l->wire_len = wire_len;
	l->local_len = local_len;
	l->mode = st->st_mode;
	l->uid = st->st_uid;
	l->gid = st->st_gid;
	l->mtime_sec = st->st_mtim.tv_sec;
	l->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	t->depth++;
	return 0;
}

/* Check a directory can be opened before announcing it. */
static int probe_dir(const char *local, int follow, struct stat *st)
{
	int fd, err = 0;

	fd = open(local, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
	if (fd < 0)
		return errno;
	if (fstat(fd, st) < 0)
		err = errno;
	close(fd);
	return err;
}

/* Wire name of a command-line source: its base name, or realpath's. */
static int root_name(struct rd_tree *t, struct rd_tree_entry *e, const char *src, char *name,
		     size_t cap)
{
	char *real = NULL;
	const char *b;
	size_t n = strlen(src), bl;
	int ret = RD_TREE_ENTRY;

	while (n > 1 && src[n - 1] == '/')
		n--;
	b = memrchr(src, '/', n);
	b = b ? b + 1 : src;
	bl = (size_t)(src + n - b);
	if (bl == 0 || (bl == 1 && b[0] == '.') || (bl == 2 && b[0] == '.' && b[1] == '.')) {
		real = realpath(src, NULL);
		if (!real)
			return skip(t, e, src, errno, NULL);
		b = strrchr(real, '/');
		b = b ? b + 1 : real;
		bl = strlen(b);
		if (bl == 0) {
			ret = skip(t, e, src, 0, "refusing to copy the root directory \"/\"");
			goto out;
		}
	}
	if (bl > cap - 1 || bl > RD_PATH_MAX) {
		ret = skip(t, e, src, ENAMETOOLONG, NULL);
		goto out;
	}
	memcpy(name, b, bl);
	name[bl] = '\0';
out:
	free(real);
	return ret;
}

static int start_source(struct rd_tree *t, struct rd_tree_entry *e, const char *src)
{
	char name[NAME_MAX + 1];
	struct stat st;
	size_t n = strlen(src), wl;
	int ret, err;

	if (stat(src, &st) < 0)
		return skip(t, e, src, errno, NULL);
	if (t->names && t->names[t->next_source - 1]) {
		snprintf(name, sizeof(name), "%s", t->names[t->next_source - 1]);
	} else {
		ret = root_name(t, e, src, name, sizeof(name));
		if (ret != RD_TREE_ENTRY)
			return ret;
	}
	while (n > 1 && src[n - 1] == '/')
		n--;
	if (n >= sizeof(t->local))
		return skip(t, e, src, ENAMETOOLONG, NULL);
	memcpy(t->local, src, n);
	t->local[n] = '\0';
	wl = strlen(name);
	set_wire(e, name, wl);
	e->flags = RD_FF_ROOT;

	if (S_ISREG(st.st_mode))
		return emit_file(t, e, t->local, 1);
	if (!S_ISDIR(st.st_mode))
		return skip(t, e, src, 0, "not a regular file, directory or symlink; skipped");
	if (!(t->flags & RD_TREE_RECURSIVE))
		return skip(t, e, src, 0, "is a directory (use -r)");
	err = probe_dir(t->local, 1, &st);
	if (err)
		return skip(t, e, src, err, NULL);
	memcpy(t->wire, name, wl + 1);
	ret = push_level(t, t->local, 1, &st, wl, n);
	if (ret < 0)
		return ret;
	e->type = RD_FT_DIR;
	entry_stat(e, &st);
	return RD_TREE_ENTRY;
}

static void pop_level(struct rd_tree *t)
{
	struct level *l = &t->lv[--t->depth];

	archive_read_free(l->a);
	l->a = NULL;
	if (t->depth) {
		l = &t->lv[t->depth - 1];
		t->wire[l->wire_len] = '\0';
		t->local[l->local_len] = '\0';
	}
}

/* The directory of the top level is done: its POST entry. */
static int emit_post(struct rd_tree *t, struct rd_tree_entry *e)
{
	struct level *l = &t->lv[t->depth - 1];

	e->type = RD_FT_DIR;
	e->flags = RD_FF_POST;
	e->mode = l->mode;
	e->uid = l->uid;
	e->gid = l->gid;
	e->mtime_sec = l->mtime_sec;
	e->mtime_nsec = l->mtime_nsec;
	set_wire(e, t->wire, l->wire_len);
	pop_level(t);
	return RD_TREE_ENTRY;
}

/* One child of the top level's directory, named by its last component. */
static int emit_child(struct rd_tree *t, struct rd_tree_entry *e)
{
	struct level *l = &t->lv[t->depth - 1];
	const char *p = archive_entry_pathname(t->ae), *name, *tgt;
	size_t nl, wl, ll, tl;
	struct stat st;
	int ret, err;

	if (!p)
		return rd_err_set(&t->err, RD_ESYS, 0, "walk %s: entry without a name",
				  esc(t, t->local));
	name = strrchr(p, '/');
	name = name ? name + 1 : p;
	nl = strlen(name);
	wl = l->wire_len + 1 + nl;
	ll = l->local_len + 1 + nl;
	if (ll >= sizeof(t->local))
		return skip(t, e, p, ENAMETOOLONG, NULL);
	/* Build the local path in place; pop_level() truncates it again. */
	t->local[l->local_len] = '/';
	memcpy(t->local + l->local_len + 1, name, nl + 1);
	if (wl > RD_PATH_MAX) {
		ret = skip(t, e, t->local, 0, "name too long for the wire; skipped");
		goto out;
	}
	t->wire[l->wire_len] = '/';
	memcpy(t->wire + l->wire_len + 1, name, nl + 1);
	set_wire(e, t->wire, wl);

	switch (archive_entry_filetype(t->ae)) {
	case AE_IFREG:
		ret = emit_file(t, e, t->local, 0);
		break;
	case AE_IFLNK:
		tgt = archive_entry_symlink(t->ae);
		tl = tgt ? strlen(tgt) : 0;
		if (!tgt || tl > RD_PATH_MAX) {
			ret = skip(t, e, t->local, 0,
				   "symlink target too long or unreadable; skipped");
			break;
		}
		e->type = RD_FT_SYMLINK;
		entry_stat(e, archive_entry_stat(t->ae));
		memcpy(e->target, tgt, tl + 1);
		e->target_len = tl;
		ret = RD_TREE_ENTRY;
		break;
	case AE_IFDIR:
		err = probe_dir(t->local, 0, &st);
		if (err) {
			ret = skip(t, e, t->local, err, NULL);
			break;
		}
		ret = push_level(t, t->local, 0, &st, wl, ll);
		if (ret < 0)
			break;
		e->type = RD_FT_DIR;
		entry_stat(e, &st);
		return RD_TREE_ENTRY; /* buffers now belong to the new level */
	default:
		ret = skip(t, e, t->local, 0, "not a regular file, directory or symlink; skipped");
		break;
	}
out:
	t->wire[l->wire_len] = '\0';
	t->local[l->local_len] = '\0';
	return ret;
}

/* Advance the top level; returns an rd_tree_next() result or AGAIN. */
static int step_level(struct rd_tree *t, struct rd_tree_entry *e)
{
	struct level *l = &t->lv[t->depth - 1];
	int r;

	if (l->dead)
		return emit_post(t, e);
	r = archive_read_next_header2(l->a, t->ae);
	if (r == ARCHIVE_EOF)
		return emit_post(t, e);
	if (r == ARCHIVE_RETRY)
		return AGAIN;
	if (r == ARCHIVE_FATAL || (r == ARCHIVE_FAILED && !l->started)) {
		l->dead = 1;
		return skip(t, e, t->local, ar_errno(l->a), archive_error_string(l->a));
	}
	if (r == ARCHIVE_FAILED) {
		const char *p = archive_entry_pathname(t->ae);

		return skip(t, e, p ? p : t->local, ar_errno(l->a), archive_error_string(l->a));
	}
	if (!l->started) {
		/* The directory itself, already announced by its parent. */
		l->started = 1;
		if (archive_entry_filetype(t->ae) != AE_IFDIR ||
		    archive_read_disk_descend(l->a) != ARCHIVE_OK) {
			l->dead = 1;
			return skip(t, e, t->local, 0, "changed while walking; skipped");
		}
		return AGAIN;
	}
	return emit_child(t, e);
}

int rd_tree_next(struct rd_tree *t, struct rd_tree_entry *e)
{
	int ret;

	for (;;) {
		entry_reset(e);
		if (t->depth) {
			ret = step_level(t, e);
		} else if (t->next_source < t->nsources) {
			ret = start_source(t, e, t->sources[t->next_source++]);
		} else {
			ret = RD_TREE_END;
		}
		if (ret != AGAIN)
			return ret;
	}
}

int rd_tree_open(struct rd_tree **out, const char *const *sources, int nsources, unsigned flags,
		 struct rd_err *err)
{
	struct rd_tree *t;
	int i;

	*out = NULL;
	if (nsources < 0 || (nsources > 0 && !sources))
		return rd_err_set(err, RD_EUSAGE, 0, "no sources");
	t = calloc(1, sizeof(*t));
	if (!t)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "walk");
	t->ae = archive_entry_new();
	if (!t->ae) {
		free(t);
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "walk");
	}
	t->flags = flags;
	if (nsources > 0) {
		t->sources = calloc((size_t)nsources, sizeof(*t->sources));
		if (!t->sources)
			goto nomem;
	}
	for (i = 0; i < nsources; i++) {
		t->sources[i] = strdup(sources[i] ? sources[i] : "");
		if (!t->sources[i])
			goto nomem;
		t->nsources = i + 1;
	}
	*out = t;
	return 0;
nomem:
	rd_tree_close(t);
	return rd_err_set(err, RD_ENOMEM, ENOMEM, "walk");
}

const struct rd_err *rd_tree_err(const struct rd_tree *t)
{
	return &t->err;
}

void rd_tree_close(struct rd_tree *t)
{
	int i;

	if (!t)
		return;
	while (t->depth)
		pop_level(t);
	free(t->lv);
	for (i = 0; i < t->nsources; i++) {
		free(t->sources[i]);
		if (t->names)
			free(t->names[i]);
	}
	free(t->sources);
	free(t->names);
	archive_entry_free(t->ae);
	free(t);
}

int rd_tree_set_root_name(struct rd_tree *t, int i, const char *name)
{
	size_t n = strlen(name);

	if (i < 0 || i >= t->nsources || !n || n > NAME_MAX || strchr(name, '/') ||
	    !strcmp(name, ".") || !strcmp(name, ".."))
		return rd_err_set(&t->err, RD_EUSAGE, 0, "bad top-level name");
	if (!t->names) {
		t->names = calloc((size_t)t->nsources, sizeof(*t->names));
		if (!t->names)
			return rd_err_set(&t->err, RD_ENOMEM, ENOMEM, "names");
	}
	free(t->names[i]);
	t->names[i] = strdup(name);
	return t->names[i] ? 0 : rd_err_set(&t->err, RD_ENOMEM, ENOMEM, "names");
}
