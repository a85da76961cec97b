// SPDX-License-Identifier: MIT
/*
 * Source walk for the sender.
 *
 * Every object is reached from its parent's open descriptor by one name:
 * fstatat(AT_SYMLINK_NOFOLLOW) says what it is, openat(O_NOFOLLOW) opens
 * it, fstat on the new descriptor says what was really opened (a swap
 * between the two calls shows up as "changed while walking"). A path
 * string is never resolved again, so a symlink swapped in anywhere below
 * a source cannot lead the walk out of it (issue 7, item 1).
 *
 * Each directory level is one DIR stream (fdopendir); a subdirectory
 * found in a listing pushes a new level, and the end of a listing is
 * exactly "this directory is done": emit its POST entry and pop. The
 * walk is depth-first and its state is one stream plus a few lengths per
 * level: memory is bounded by depth, not by file count.
 *
 * Open descriptors are bounded by a constant, not by depth (issue 27
 * item 2: a tree 2,000 levels deep held 2,000 directories open, which a
 * session's descriptor budget cannot count on). The source's own level
 * and the deepest RD_TREE_OPEN_DIRS - 1 stay open; a level further up is
 * closed when a deeper one opens, keeping where its listing stood
 * (telldir) and which directory it was (device, inode). When the walk
 * comes back up to it, it is opened again from the level below by ".."
 * (a directory's own entry, never a symlink), or, should that be another
 * directory now (the subtree was moved meanwhile, or with -L the level
 * below was reached through a symlink), by its names from the source's
 * level, one component at a time (O_NOFOLLOW but with -L); either way it
 * must be the same directory, and its listing resumes where it stood
 * (seekdir: the file system's directory offsets, stable across opens on
 * Linux file systems; NFS relies on the same). A directory that cannot be
 * found again is a skip ("changed while walking"), then its POST entry,
 * and the walk goes on.
 *
 * The wire path of the current directory and its display path (the local
 * path for command-line sources, the wire path otherwise) live in two
 * buffers; each level records where its part ends, so popping is a
 * truncation.
 */
#include "lib/tree/rd_tree.h"
#include "lib/base/rd_fsid.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"
#include "lib/base/rd_path.h"
#include "lib/tree/rd_tree_priv.h"

#define SHOW_MAX (PATH_MAX + RD_PATH_MAX + 2)
#define AGAIN	 1000 /* internal: nothing to return yet, loop */
#define OPEN_RD	 (O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
#define RESERVED_SKIP "an rdcp partial or temporary file (never sent); skipped"

struct level {
	DIR *d;	   /* NULL: closed, to be opened again (see the top) */
	long pos;  /* closed: where its listing stood (telldir) */
	int dead;  /* listing failed, or -x: finish this level at the next call;
		    * 2: lost (could not be opened again): say so first */
	dev_t dev; /* of the directory: -L loops, -x mount points, opened again */
	ino_t ino;
	size_t wire_len, show_len;
	uint32_t mode, uid, gid;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
};

struct src {
	char *path; /* command-line source, opened following symlinks; or NULL */
	int dirfd;  /* else: our dup of the caller's descriptor */
	char *name; /* one component beneath dirfd, or NULL: dirfd itself */
	char *wire; /* wire name (NULL: from path or name) */
	int contents; /* names a directory's contents (RD_TREE_SELECT) */
};

struct rd_tree {
	struct rd_err err;
	unsigned flags;
	struct src *src;
	int nsources, next_source;
	struct level *lv;
	size_t depth, cap;
	dev_t root_dev;		   /* -x: the file system of the current source */
	size_t nclosed;		   /* lv[1 .. nclosed] are closed (lv[0] never is) */
	struct rd_tree_meta *meta; /* xattrs, ACLs, holes, link groups */
	uint8_t eflags;		   /* RD_FF_CONTENTS: on every entry of the current source */
	char wire[RD_PATH_MAX + 1];
	char show[SHOW_MAX];
	char esc[RD_ERR_MSG_MAX / 2]; /* leaves room for the reason */
};

/* Escaped copy of a path for messages (one at a time), "..." if cut. */
static const char *esc(struct rd_tree *t, const char *p)
{
	if (rd_escape(t->esc, sizeof(t->esc), p, strlen(p)) >= sizeof(t->esc))
		memcpy(t->esc + sizeof(t->esc) - 4, "...", 4);
	return t->esc;
}

static void entry_reset(struct rd_tree_entry *e)
{
	memset(e, 0, offsetof(struct rd_tree_entry, path));
	e->path[0] = '\0';
	e->path_len = 0;
	e->target[0] = '\0';
	e->target_len = 0;
	e->fd = -1;
	e->nmeta = 0;
	e->meta = NULL;
	e->note[0] = '\0';
}

static void entry_stat(struct rd_tree_entry *e, const struct stat *st)
{
	e->mode = st->st_mode;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	e->mtime_sec = st->st_mtim.tv_sec;
	e->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
}

static void show_path(struct rd_tree_entry *e, const char *show)
{
	size_t n = strlen(show);

	if (n > RD_PATH_MAX)
		n = RD_PATH_MAX;
	memcpy(e->path, show, n);
	e->path[n] = '\0';
	e->path_len = n;
	e->fd = -1;
}

/* A skip with its status: e->path gets the display path (truncated), the message is set. */
static int skip_st(struct rd_tree *t, struct rd_tree_entry *e, const char *show, int status,
		   int errnum, const char *why)
{
	show_path(e, show);
	if (why)
		rd_err_set(&t->err, status, errnum, "%s: %s", esc(t, show), why);
	else
		rd_err_set(&t->err, status, errnum, "%s", esc(t, show));
	return RD_TREE_SKIP;
}

static int skip(struct rd_tree *t, struct rd_tree_entry *e, const char *show, int errnum,
		const char *why)
{
	return skip_st(t, e, show, RD_ESYS, errnum, why);
}

/*
 * A name the listing gave (or a source named) that is not there any more
 * when opened: rsync's "vanished" below a source, "not found" for a source.
 */
static int gone(struct rd_tree *t, struct rd_tree_entry *e, const char *show, int top, int errnum)
{
	if (errnum != ENOENT)
		return skip(t, e, show, errnum, NULL);
	if (top)
		return skip_st(t, e, show, RD_ENOENT, errnum, NULL);
	show_path(e, show);
	rd_err_set(&t->err, RD_EVANISHED, 0, "file has vanished: \"%s\"", esc(t, show));
	return RD_TREE_SKIP;
}

/* An entry of a type the flags leave out: a note, not an error. */
static int left_out(struct rd_tree_entry *e, const char *show)
{
	show_path(e, show);
	snprintf(e->note, sizeof(e->note), "%s", RD_TREE_NONREG);
	return RD_TREE_LEFT_OUT;
}

static void set_wire(struct rd_tree_entry *e, const char *p, size_t n)
{
	memcpy(e->path, p, n);
	e->path[n] = '\0';
	e->path_len = n;
}

static int push_level(struct rd_tree *t, int fd, const struct stat *st, size_t wire_len,
		      size_t show_len)
{
	struct level *l;

	if (t->depth == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 16;
		struct level *n = realloc(t->lv, cap * sizeof(*n));

		if (!n) {
			close(fd);
			return rd_err_set(&t->err, RD_ENOMEM, ENOMEM, "walk %s", esc(t, t->show));
		}
		t->lv = n;
		t->cap = cap;
	}
	l = &t->lv[t->depth];
	memset(l, 0, sizeof(*l));
	l->d = fdopendir(fd);
	if (!l->d) {
		int e = errno;

		close(fd);
		return rd_err_set(&t->err, e == ENOMEM ? RD_ENOMEM : RD_ESYS, e, "walk %s",
				  esc(t, t->show));
	}
	l->wire_len = wire_len;
	l->show_len = show_len;
	l->dev = st->st_dev;
	l->ino = st->st_ino;
	l->mode = st->st_mode;
	l->uid = st->st_uid;
	l->gid = st->st_gid;
	l->mtime_sec = st->st_mtim.tv_sec;
	l->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	t->depth++;
	/* beyond the bound: the shallowest open level but the source's closes */
	if (t->depth - t->nclosed > RD_TREE_OPEN_DIRS) {
		l = &t->lv[++t->nclosed];
		l->pos = telldir(l->d);
		closedir(l->d);
		l->d = NULL;
	}
	return 0;
}

static int same_dir(int fd, const struct level *l)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == l->dev && st.st_ino == l->ino;
}

/*
 * Open closed level i again: by ".." from level i + 1 (still open unless
 * it was lost itself), else by the names of levels 1 .. i beneath the
 * source's level (levels 1 .. i are all closed); it must be the directory
 * it was. Returns the descriptor or -1.
 */
static int reopen_fd(struct rd_tree *t, size_t i)
{
	int flags = OPEN_RD | O_DIRECTORY | O_NOFOLLOW;
	char name[NAME_MAX + 1];
	size_t k, a, b;
	int fd = -1, nfd;

	if (t->lv[i + 1].d)
		fd = rd_openat(dirfd(t->lv[i + 1].d), "..", flags, 0);
	if (fd >= 0 && same_dir(fd, &t->lv[i]))
		return fd;
	if (fd >= 0)
		close(fd);
	/* -L: the levels may have been reached through symlinks */
	if (t->flags & RD_TREE_COPY_LINKS)
		flags &= ~O_NOFOLLOW;
	fd = fcntl(dirfd(t->lv[0].d), F_DUPFD_CLOEXEC, 0);
	for (k = 1; k <= i && fd >= 0; k++) {
		/* level k's name: its part of the wire path */
		a = t->lv[k - 1].wire_len + 1;
		b = t->lv[k].wire_len;
		if (b <= a || b - a > NAME_MAX) {
			close(fd);
			return -1;
		}
		memcpy(name, t->wire + a, b - a);
		name[b - a] = '\0';
		nfd = rd_openat(fd, name, flags, 0);
		close(fd);
		fd = nfd;
		if (fd >= 0 && !same_dir(fd, &t->lv[k])) {
			close(fd);
			fd = -1;
		}
	}
	return fd;
}

/* Level i (closed, i + 1 open) open again where its listing stood, or lost. */
static void reopen_level(struct rd_tree *t, size_t i)
{
	struct level *l = &t->lv[i];
	int fd = reopen_fd(t, i);

	l->d = fd >= 0 ? fdopendir(fd) : NULL;
	if (l->d) {
		seekdir(l->d, l->pos);
	} else {
		if (fd >= 0)
			close(fd);
		/* cannot be listed further: said, then its POST entry */
		l->dead = 2;
	}
	t->nclosed--;
}

static void pop_level(struct rd_tree *t)
{
	struct level *l = &t->lv[--t->depth];

	/* its parent was closed: open it again while l still is */
	if (t->nclosed && t->depth - 1 == t->nclosed)
		reopen_level(t, t->depth - 1);
	if (l->d)
		closedir(l->d);
	l->d = NULL;
	if (t->depth) {
		l = &t->lv[t->depth - 1];
		t->wire[l->wire_len] = '\0';
		t->show[l->show_len] = '\0';
	}
}

/*
 * fd was just opened for the entry whose wire path is in e and whose
 * display path is t->show: a regular file becomes the entry, a directory
 * a new level (top = it is a source: -r applies). Takes fd.
 */
static int emit_fd(struct rd_tree *t, struct rd_tree_entry *e, int fd, int top, size_t wl,
		   size_t sl)
{
	struct stat st;
	int ret, other_fs;

	if (fstat(fd, &st) < 0) {
		int err = errno;

		close(fd);
		return skip(t, e, t->show, err, NULL);
	}
	if (S_ISREG(st.st_mode)) {
		const char *first = NULL;
		unsigned ff = 0;

		/* O_NONBLOCK only guarded the open against a fifo swapped in */
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
		entry_stat(e, &st);
		if (t->flags & RD_TREE_HARDLINKS)
			first = rd_tree_link_seen(t->meta, &st, e->path, e->path_len, &ff);
		e->flags |= (uint8_t)ff; /* RD_FF_LINKED, RD_FF_LINK_LAST */
		if (first) {
			/* A later member of a link group: its data moved already. */
			close(fd);
			e->type = RD_FT_HLINK;
			e->target_len = strlen(first);
			memcpy(e->target, first, e->target_len + 1);
			return RD_TREE_ENTRY;
		}
		e->type = RD_FT_REG;
		e->size = (uint64_t)st.st_size;
		e->fd = fd;
		ret = rd_tree_meta_read(t->meta, fd, &st, t->flags, e);
		if (ret < 0) {
			e->fd = -1;
			close(fd);
			return rd_err_set(&t->err, RD_ENOMEM, ENOMEM, "walk %s", esc(t, t->show));
		}
		return RD_TREE_ENTRY;
	}
	if (!S_ISDIR(st.st_mode)) {
		close(fd);
		return skip(t, e, t->show, 0,
			    top ? "not a regular file, directory or symlink; skipped"
				: "changed while walking; skipped");
	}
	if (top && !(t->flags & RD_TREE_RECURSIVE)) {
		close(fd);
		return skip(t, e, t->show, 0, "is a directory (use -r)");
	}
	if (top)
		t->root_dev = st.st_dev;
	/* -x: a mount point is sent empty; -xx leaves it out */
	other_fs = !top && (t->flags & RD_TREE_ONE_FS) && st.st_dev != t->root_dev;
	if (other_fs && (t->flags & RD_TREE_ONE_FS2)) {
		close(fd);
		return AGAIN;
	}
	ret = push_level(t, fd, &st, wl, sl);
	if (ret < 0)
		return ret;
	t->lv[t->depth - 1].dead = other_fs;
	e->type = RD_FT_DIR;
	entry_stat(e, &st);
	ret = rd_tree_meta_read(t->meta, dirfd(t->lv[t->depth - 1].d), &st, t->flags, e);
	if (ret < 0)
		return rd_err_set(&t->err, RD_ENOMEM, ENOMEM, "walk %s", esc(t, t->show));
	return RD_TREE_ENTRY;
}

/*
 * A fifo, socket or device the flags ask for (-D): the entry (1), never
 * opened (the receiver makes a new node); else 0.
 */
static int special(const struct rd_tree *t, struct rd_tree_entry *e, const struct stat *st)
{
	int dev = S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode);

	if (!(dev && (t->flags & RD_TREE_DEVICES)) &&
	    !((S_ISFIFO(st->st_mode) || S_ISSOCK(st->st_mode)) && (t->flags & RD_TREE_SPECIALS)))
		return 0;
	e->type = RD_FT_SPECIAL;
	entry_stat(e, st);
	if (dev)
		e->size = (uint64_t)major(st->st_rdev) << 32 | minor(st->st_rdev);
	return 1;
}

/*
 * -L: the symlink `name` beneath dirfd, sent as what it points to (opened
 * through the link, as rsync -L does): a file or directory, or with -D a
 * special file; nothing (dangling) or a directory being walked (a loop)
 * is an error of this entry.
 */
static int referent(struct rd_tree *t, struct rd_tree_entry *e, int dirfd, const char *name,
		    size_t wl, size_t sl)
{
	struct stat st;
	size_t i;
	int fd;

	if (rd_fstatat(dirfd, name, &st, 0) < 0)
		return errno == ENOENT || errno == ELOOP
			   ? skip(t, e, t->show, 0, "symlink has no referent")
			   : skip(t, e, t->show, errno, NULL);
	for (i = 0; S_ISDIR(st.st_mode) && i < t->depth; i++)
		if (t->lv[i].dev == st.st_dev && t->lv[i].ino == st.st_ino)
			return skip(t, e, t->show, 0,
				    "symlink to a directory being copied (a loop); skipped");
	if (special(t, e, &st))
		return RD_TREE_ENTRY;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return left_out(e, t->show);
	fd = rd_openat(dirfd, name, OPEN_RD | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0), 0);
	if (fd < 0)
		return gone(t, e, t->show, 0, errno);
	return emit_fd(t, e, fd, 0, wl, sl);
}

/*
 * Entry `name` beneath dirfd, never following a symlink (but with -L);
 * wire path and display path are already in e and t->show.
 */
static int emit_at(struct rd_tree *t, struct rd_tree_entry *e, int dirfd, const char *name,
		   int top, size_t wl, size_t sl)
{
	struct stat st;
	ssize_t n;
	int fd;

	if (rd_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return gone(t, e, t->show, top, errno);
	if (S_ISLNK(st.st_mode) && (t->flags & RD_TREE_COPY_LINKS))
		return referent(t, e, dirfd, name, wl, sl);
	if (S_ISLNK(st.st_mode)) {
		n = rd_readlinkat(dirfd, name, e->target, RD_PATH_MAX + 1);
		if (n <= 0 || n > RD_PATH_MAX)
			return skip(t, e, t->show, n < 0 ? errno : 0,
				    "symlink target too long or unreadable; skipped");
		e->target[n] = '\0';
		e->target_len = (size_t)n;
		e->type = RD_FT_SYMLINK;
		entry_stat(e, &st);
		return RD_TREE_ENTRY;
	}
	if (special(t, e, &st))
		return RD_TREE_ENTRY;
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return left_out(e, t->show);
	fd = rd_openat(dirfd, name, OPEN_RD | O_NOFOLLOW | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0), 0);
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			return skip(t, e, t->show, 0, "changed while walking; skipped");
		return gone(t, e, t->show, top, errno);
	}
	return emit_fd(t, e, fd, top, wl, sl);
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

/* A command-line source: symlinks named there are followed (cp -H). */
static int start_path(struct rd_tree *t, struct rd_tree_entry *e, const struct src *s)
{
	char name[NAME_MAX + 1];
	struct stat st;
	size_t n = strlen(s->path), wl;
	int ret, fd;

	while (n > 1 && s->path[n - 1] == '/')
		n--;
	if (n >= PATH_MAX)
		return skip(t, e, s->path, ENAMETOOLONG, NULL);
	if (stat(s->path, &st) < 0)
		return gone(t, e, s->path, 1, errno);
	ret = root_name(t, e, s->path, name, sizeof(name));
	if (ret != RD_TREE_ENTRY)
		return ret;
	memcpy(t->show, s->path, n);
	t->show[n] = '\0';
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return left_out(e, t->show);
	if (S_ISDIR(st.st_mode) && !(t->flags & RD_TREE_RECURSIVE))
		return skip(t, e, t->show, 0, "is a directory (use -r)");
	wl = strlen(name);
	if (rd_path_reserved(name, wl))
		return skip(t, e, t->show, 0, RESERVED_SKIP);
	memcpy(t->wire, name, wl + 1);
	set_wire(e, name, wl);
	e->flags = RD_FF_ROOT;
	if (S_ISDIR(st.st_mode) && (t->flags & RD_TREE_SELECT) && rd_path_names_contents(s->path))
		t->eflags = RD_FF_CONTENTS;
	fd = open(s->path, OPEN_RD | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
	if (fd < 0)
		return skip(t, e, t->show, errno, NULL);
	return emit_fd(t, e, fd, 1, wl, n);
}

/* A descriptor source: shown by its wire name only. */
static int start_fd(struct rd_tree *t, struct rd_tree_entry *e, const struct src *s)
{
	const char *w = s->wire ? s->wire : s->name;
	size_t wl = strlen(w);
	int fd;

	memcpy(t->wire, w, wl + 1);
	memcpy(t->show, w, wl + 1);
	set_wire(e, w, wl);
	if (s->name && rd_path_reserved(s->name, strlen(s->name)))
		return skip(t, e, t->show, 0, RESERVED_SKIP);
	e->flags = RD_FF_ROOT;
	if (s->contents && (t->flags & RD_TREE_SELECT))
		t->eflags = RD_FF_CONTENTS;
	if (s->name) {
		int ret = emit_at(t, e, s->dirfd, s->name, 1, wl, wl);

		/* contents: of a directory only (a file is itself) */
		if (ret == RD_TREE_ENTRY && e->type != RD_FT_DIR)
			t->eflags = 0;
		return ret;
	}
	fd = fcntl(s->dirfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return skip(t, e, t->show, errno, NULL);
	return emit_fd(t, e, fd, 1, wl, wl);
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

/* Advance the top level; returns an rd_tree_next() result or AGAIN. */
static int step_level(struct rd_tree *t, struct rd_tree_entry *e)
{
	struct level *l = &t->lv[t->depth - 1];
	struct dirent *de;
	size_t nl, wl, sl;
	int ret;

	if (l->dead == 2) {
		l->dead = 1;
		return skip(t, e, t->show, 0,
			    "changed while walking (moved or replaced); the rest of this "
			    "directory is skipped");
	}
	if (l->dead)
		return emit_post(t, e);
	errno = 0;
	de = readdir(l->d);
	if (!de) {
		if (!errno)
			return emit_post(t, e);
		l->dead = 1;
		return skip(t, e, t->show, errno, "reading the directory");
	}
	if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
		return AGAIN;
	nl = strlen(de->d_name);
	/* rdcp's own partials, records, temporaries: never listed, never sent */
	if (rd_path_reserved(de->d_name, nl))
		return AGAIN;
	wl = l->wire_len + 1 + nl;
	sl = l->show_len + 1 + nl;
	/* Build both paths in place; the level's lengths truncate them again. */
	t->show[l->show_len] = '/';
	memcpy(t->show + l->show_len + 1, de->d_name, nl + 1);
	if (wl > RD_PATH_MAX) {
		ret = skip(t, e, t->show, 0, "name too long for the wire; skipped");
		goto out;
	}
	t->wire[l->wire_len] = '/';
	memcpy(t->wire + l->wire_len + 1, de->d_name, nl + 1);
	set_wire(e, t->wire, wl);
	ret = emit_at(t, e, dirfd(l->d), de->d_name, 0, wl, sl);
	if (ret == RD_TREE_ENTRY && e->type == RD_FT_DIR)
		return ret; /* the buffers now belong to the new level */
out:
	t->wire[l->wire_len] = '\0';
	t->show[l->show_len] = '\0';
	return ret;
}

int rd_tree_next(struct rd_tree *t, struct rd_tree_entry *e)
{
	const struct src *s;
	int ret;

	for (;;) {
		entry_reset(e);
		if (t->depth) {
			ret = step_level(t, e);
		} else if (t->next_source < t->nsources) {
			s = &t->src[t->next_source++];
			t->eflags = 0;
			ret = s->path ? start_path(t, e, s) : start_fd(t, e, s);
		} else {
			ret = RD_TREE_END;
		}
		if (ret == RD_TREE_ENTRY)
			e->flags |= t->eflags;
		if (ret != AGAIN)
			return ret;
	}
}

static int tree_new(struct rd_tree **out, int n, unsigned flags, struct rd_err *err)
{
	struct rd_tree *t;
	int i;

	*out = NULL;
	if (n < 0)
		return rd_err_set(err, RD_EUSAGE, 0, "no sources");
	t = calloc(1, sizeof(*t));
	if (!t || rd_tree_meta_new(&t->meta)) {
		free(t);
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "walk");
	}
	t->flags = flags;
	if (n > 0) {
		t->src = calloc((size_t)n, sizeof(*t->src));
		if (!t->src) {
			rd_tree_meta_free(t->meta);
			free(t);
			return rd_err_set(err, RD_ENOMEM, ENOMEM, "walk");
		}
	}
	for (i = 0; i < n; i++)
		t->src[i].dirfd = -1;
	t->nsources = n;
	*out = t;
	return 0;
}

static int one_name(const char *n)
{
	return n && n[0] && !strchr(n, '/') && strcmp(n, ".") && strcmp(n, "..") &&
	       strlen(n) <= NAME_MAX;
}

int rd_tree_open(struct rd_tree **out, const struct rd_tree_src *sources, int nsources,
		 unsigned flags, struct rd_err *err)
{
	struct rd_tree *t;
	int i, ret;

	if (nsources > 0 && !sources)
		return rd_err_set(err, RD_EUSAGE, 0, "no sources");
	ret = tree_new(&t, nsources, flags, err);
	if (ret)
		return ret;
	for (i = 0; i < nsources; i++) {
		const struct rd_tree_src *s = &sources[i];
		struct src *d = &t->src[i];

		if ((s->name && !one_name(s->name)) || (s->wire && !one_name(s->wire)) ||
		    (!s->name && !s->wire)) {
			ret = rd_err_set(err, RD_EUSAGE, 0, "source %d: bad name", i);
			goto fail;
		}
		d->dirfd = fcntl(s->dirfd, F_DUPFD_CLOEXEC, 0);
		if (d->dirfd < 0) {
			ret = rd_err_set(err, errno == EMFILE ? RD_ENOMEM : RD_ESYS, errno,
					 "source %d", i);
			goto fail;
		}
		d->name = s->name ? strdup(s->name) : NULL;
		d->wire = s->wire ? strdup(s->wire) : NULL;
		d->contents = !!s->contents;
		if ((s->name && !d->name) || (s->wire && !d->wire)) {
			ret = rd_err_set(err, RD_ENOMEM, ENOMEM, "walk");
			goto fail;
		}
	}
	*out = t;
	return 0;
fail:
	rd_tree_close(t);
	return ret;
}

int rd_tree_open_paths(struct rd_tree **out, const char *const *paths, int npaths,
		       unsigned flags, struct rd_err *err)
{
	struct rd_tree *t;
	int i, ret;

	if (npaths > 0 && !paths)
		return rd_err_set(err, RD_EUSAGE, 0, "no sources");
	ret = tree_new(&t, npaths, flags, err);
	if (ret)
		return ret;
	for (i = 0; i < npaths; i++) {
		t->src[i].path = strdup(paths[i] ? paths[i] : "");
		if (!t->src[i].path) {
			rd_tree_close(t);
			return rd_err_set(err, RD_ENOMEM, ENOMEM, "walk");
		}
	}
	*out = t;
	return 0;
}

void rd_tree_set_flags(struct rd_tree *t, unsigned flags)
{
	t->flags = flags;
}

void rd_tree_set_link_table(struct rd_tree *t, uint64_t max_bytes)
{
	rd_tree_meta_set_links(t->meta, max_bytes);
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
		if (t->lv[--t->depth].d)
			closedir(t->lv[t->depth].d);
	free(t->lv);
	for (i = 0; i < t->nsources; i++) {
		free(t->src[i].path);
		free(t->src[i].name);
		free(t->src[i].wire);
		if (t->src[i].dirfd >= 0)
			close(t->src[i].dirfd);
	}
	free(t->src);
	rd_tree_meta_free(t->meta);
	free(t);
}
