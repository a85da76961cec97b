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
 * Lazy opening (rd_tree_set_lazy, rd_tree_dir.c): a regular file is not
 * opened while walking; its entry carries its directory's handle (one
 * per directory, shared by its entries, counted) to be opened by name
 * once its data is wanted. At most RD_TREE_HELD_DIRS handles live at once
 * (the walk's and the entries' together); when that many are held, a
 * file of another directory is opened while walking instead, as without
 * lazy opening: open descriptors stay bounded by the window plus
 * constants (RD_SESSION_FDS_SEND), however the entries spread.
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
#include "lib/filter/rd_filter.h"
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
	/*
	 * -R's implied directories (and --files-from's listed ones without
	 * -r): no listing (d is NULL); ifd is the directory, and once its one
	 * child was started (started) the level ends with its POST
	 */
	int implied, started, ifd;
	struct rd_tree_dir *hd; /* its held handle (one reference), or NULL */
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
	int contents;	/* names a directory's contents (RD_TREE_SELECT) */
	int top_fd;	/* -F parents beneath this (a module's root), or -1 */
	char *top_path; /* the source's path beneath top_fd, or NULL */
	/*
	 * -R (rd_tree_set_relative): the path from the base sent whole, its
	 * directories as implied ones; the base is path's part before "/./"
	 * (path sources), dirfd (fd sources), or the tree's base_fd (-2)
	 */
	char *rel;
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
	int keep_parents;	   /* rd_tree_keep_parents() */
	int lazy;		   /* rd_tree_set_lazy() */
	struct rd_tree_dirs held;  /* directories held for entries (rd_tree_dir.c) */
	struct rd_tree_meta *meta; /* xattrs, ACLs, holes, link groups */
	struct rd_tree_list *list; /* rd_tree_open_list: no walk */
	uint8_t eflags;		   /* RD_FF_CONTENTS: on every entry of the current source */
	/*
	 * rsync's filter rules (rd_tree_set_filter): the walk's view of them,
	 * and how much of a wire path is not part of the transfer path (a
	 * contents source's root name and its '/')
	 */
	/* -R and --files-from (rd_tree_set_relative, rd_tree_open_names) */
	int relative, dirs;
	int base_fd;	  /* the names' base (rd_tree_open_names), or -1 */
	int rel_base;	  /* the current source's base, ours to close, or -1 */
	const char *rel;  /* the current source's rel */
	size_t rel_off;	  /* of its next component */
	int rel_nofollow; /* its components opened O_NOFOLLOW (a server's) */
	struct rd_filter_walk *fw;
	const struct rd_filter *fw_rules;
	size_t tpre;
	unsigned fparents; /* parent levels entered for the current source (-F) */
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
	e->dir = NULL;
	e->lazy = 0;
	e->nmeta = 0;
	e->meta = NULL;
	e->note[0] = '\0';
}

static void seen_of(struct rd_tree_seen *v, const struct stat *st)
{
	v->dev = st->st_dev;
	v->ino = st->st_ino;
	v->size = (uint64_t)st->st_size;
	v->nlink = st->st_nlink;
	v->mode = st->st_mode;
	v->mtime_sec = st->st_mtim.tv_sec;
	v->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	v->ctime_sec = st->st_ctim.tv_sec;
	v->ctime_nsec = (uint32_t)st->st_ctim.tv_nsec;
}

/*
 * A reference to the directory dirfd (level l's, or none: a source's
 * parent): the level's shared handle, made once per directory while
 * fewer than RD_TREE_HELD_DIRS are held. Past that bound: NULL, or with
 * force a handle of the entry's own (a dup, as before handles were
 * shared; the window bounds those). NULL too if no descriptor is to be had.
 */
static struct rd_tree_dir *dir_ref(struct rd_tree *t, struct level *l, int dirfd, int force)
{
	struct rd_tree_dir *d;
	int fd;

	if (l && l->hd)
		return rd_tree__dir_get(l->hd);
	if (t->held.n >= RD_TREE_HELD_DIRS && !force)
		return NULL;
	fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return NULL;
	d = rd_tree__dir_new(&t->held, fd);
	if (d && l && t->held.n <= RD_TREE_HELD_DIRS)
		l->hd = rd_tree__dir_get(d);
	return d;
}

static void level_unhold(struct level *l)
{
	rd_tree_dir_put(l->hd);
	l->hd = NULL;
}

/*
 * --remove-source-files: a non-directory entry found as name in dirfd
 * (level l's, or NULL; st: what fstatat saw) carries its parent and name.
 * Only when the walk is asked to; a descriptor that cannot be had leaves
 * the entry without (its source then stays, said when it would be
 * removed). A lazy entry has its parent already.
 */
static void keep_parent(struct rd_tree *t, struct rd_tree_entry *e, struct level *l, int dirfd,
			const char *name, const struct stat *st)
{
	if (!t->keep_parents || e->dir || S_ISDIR(st->st_mode) || strlen(name) >= sizeof(e->pname))
		return;
	e->dir = dir_ref(t, l, dirfd, 1);
	if (!e->dir)
		return;
	snprintf(e->pname, sizeof(e->pname), "%s", name);
	seen_of(&e->seen, st);
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

/* Room for one more level: 0, or -1 (out of memory). */
static int grow_levels(struct rd_tree *t)
{
	size_t cap = t->cap ? t->cap * 2 : 16;
	struct level *n;

	if (t->depth < t->cap)
		return 0;
	n = realloc(t->lv, cap * sizeof(*n));
	if (!n)
		return -1;
	t->lv = n;
	t->cap = cap;
	return 0;
}

static void level_set(struct level *l, const struct stat *st, size_t wire_len, size_t show_len)
{
	l->wire_len = wire_len;
	l->show_len = show_len;
	l->dev = st->st_dev;
	l->ino = st->st_ino;
	l->mode = st->st_mode;
	l->uid = st->st_uid;
	l->gid = st->st_gid;
	l->mtime_sec = st->st_mtim.tv_sec;
	l->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
}

/* Level l's directory descriptor (a listing's, or an implied one's), or -1: closed. */
static int level_fd(const struct level *l)
{
	if (l->implied)
		return l->ifd;
	return l->d ? dirfd(l->d) : -1;
}

/*
 * Beyond the bound: the shallowest open level but the source's closes (a
 * listing keeps where it stood; an implied level -R made has none).
 */
static void bound_levels(struct rd_tree *t)
{
	struct level *l;

	if (t->depth - t->nclosed <= RD_TREE_OPEN_DIRS)
		return;
	l = &t->lv[++t->nclosed];
	level_unhold(l); /* its entries keep theirs; a later one makes a new one */
	if (l->implied) {
		close(l->ifd);
		l->ifd = -1;
		return;
	}
	l->pos = telldir(l->d);
	closedir(l->d);
	l->d = NULL;
}

static int push_level(struct rd_tree *t, int fd, const struct stat *st, size_t wire_len,
		      size_t show_len)
{
	struct level *l;

	if (grow_levels(t) < 0) {
		close(fd);
		return rd_err_set(&t->err, RD_ENOMEM, ENOMEM, "walk %s", esc(t, t->show));
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
	if (t->fw) {
		/* its per-directory merge files, read through its descriptor */
		size_t tl = wire_len > t->tpre ? wire_len - t->tpre : 0;

		if (rd_filter_enter(t->fw, fd, t->wire + (tl ? t->tpre : wire_len), tl, &t->err) <
		    0) {
			closedir(l->d);
			l->d = NULL;
			return 1; /* skip it: what its rules exclude is not known */
		}
	}
	level_set(l, st, wire_len, show_len);
	t->depth++;
	bound_levels(t);
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

	if (level_fd(&t->lv[i + 1]) >= 0)
		fd = rd_openat(level_fd(&t->lv[i + 1]), "..", flags, 0);
	if (fd >= 0 && same_dir(fd, &t->lv[i]))
		return fd;
	if (fd >= 0)
		close(fd);
	/* -L: the levels may have been reached through symlinks */
	if (t->flags & RD_TREE_COPY_LINKS)
		flags &= ~O_NOFOLLOW;
	fd = fcntl(level_fd(&t->lv[0]), F_DUPFD_CLOEXEC, 0);
	for (k = 1; k <= i && fd >= 0; k++) {
		/* -R's implied directories of a local path were opened as cp -H would */
		int kflags = t->lv[k].implied && !t->rel_nofollow ? flags & ~O_NOFOLLOW : flags;

		/* level k's name: its part of the wire path */
		a = t->lv[k - 1].wire_len + 1;
		b = t->lv[k].wire_len;
		if (b <= a || b - a > NAME_MAX) {
			close(fd);
			return -1;
		}
		memcpy(name, t->wire + a, b - a);
		name[b - a] = '\0';
		nfd = rd_openat(fd, name, kflags, 0);
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

	if (l->implied) {
		/* no listing to resume: lost, it says so before its POST */
		l->ifd = fd;
		if (fd < 0)
			l->dead = 2;
		t->nclosed--;
		return;
	}
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
	if (t->fw && !l->implied)
		rd_filter_leave(t->fw);
	level_unhold(l);
	if (l->implied) {
		if (l->ifd >= 0)
			close(l->ifd);
		l->ifd = -1;
	} else if (l->d)
		closedir(l->d);
	l->d = NULL;
	if (t->depth) {
		l = &t->lv[t->depth - 1];
		t->wire[l->wire_len] = '\0';
		t->show[l->show_len] = '\0';
	}
}

static int next_relative(struct rd_tree *t, struct rd_tree_entry *e, int parent);

/* A level for an implied directory (fd taken): no listing, its POST after one child. */
static int push_implied(struct rd_tree *t, int fd, const struct stat *st, size_t wl, size_t sl)
{
	struct level *l;

	if (grow_levels(t) < 0) {
		close(fd);
		return rd_err_set(&t->err, RD_ENOMEM, ENOMEM, "walk %s", esc(t, t->show));
	}
	l = &t->lv[t->depth++];
	memset(l, 0, sizeof(*l));
	l->implied = 1;
	l->ifd = fd;
	level_set(l, st, wl, sl);
	bound_levels(t);
	return 0;
}

/* Does a filter rule leave out the entry whose wire path is t->wire (wl bytes)? */
static int excluded(struct rd_tree *t, size_t wl, int is_dir)
{
	if (!t->fw || wl <= t->tpre)
		return 0;
	return rd_filter_excluded(t->fw, t->wire + t->tpre, wl - t->tpre, is_dir, RD_FILTER_SENDER);
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
	if (top && !(t->flags & RD_TREE_RECURSIVE) && t->dirs) {
		/* --files-from without -r: the directory, not what it holds */
		ret = push_implied(t, fd, &st, wl, sl);
		if (ret < 0)
			return ret;
		t->lv[t->depth - 1].started = 1;
		e->type = RD_FT_DIR;
		e->flags |= RD_FF_IMPLIED;
		entry_stat(e, &st);
		return RD_TREE_ENTRY;
	}
	if (top && !(t->flags & (RD_TREE_RECURSIVE | RD_TREE_LIST_LEVEL))) {
		close(fd);
		return skip(t, e, t->show, 0, "is a directory (use -r)");
	}
	if (!top && (t->flags & RD_TREE_LIST_LEVEL) && !(t->flags & RD_TREE_RECURSIVE)) {
		/* a listing one level deep: the directory, not its contents */
		e->type = RD_FT_DIR;
		entry_stat(e, &st);
		e->size = (uint64_t)st.st_size; /* shown by a listing */
		ret = rd_tree_meta_read(t->meta, fd, &st, t->flags, e);
		close(fd);
		if (ret < 0)
			return rd_err_set(&t->err, RD_ENOMEM, ENOMEM, "walk %s", esc(t, t->show));
		return RD_TREE_ENTRY;
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
	if (ret > 0) {
		/* its merge file could not be read: neither it nor what is below goes */
		char why[RD_ERR_MSG_MAX];

		snprintf(why, sizeof(why), "%s; skipped", t->err.msg);
		return skip(t, e, t->show, 0, why);
	}
	t->lv[t->depth - 1].dead = other_fs;
	e->type = RD_FT_DIR;
	entry_stat(e, &st);
	e->size = (uint64_t)st.st_size; /* shown by a listing; sent only to one */
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
 * Lazy opening: the regular file `name` beneath dirfd (level l's, or
 * NULL), as fstatat saw it (st), becomes an entry without being opened,
 * if a handle on its directory can be held. 1 = done (RD_TREE_ENTRY), 0 =
 * open it now.
 */
static int emit_lazy(struct rd_tree *t, struct rd_tree_entry *e, struct level *l, int dirfd,
		     const char *name, const struct stat *st)
{
	const char *first = NULL;
	unsigned ff = 0;

	if (!t->lazy || (t->flags & (RD_TREE_XATTRS | RD_TREE_ACLS | RD_TREE_SPARSE)) ||
	    strlen(name) >= sizeof(e->pname))
		return 0;
	e->dir = dir_ref(t, l, dirfd, 0);
	if (!e->dir)
		return 0;
	snprintf(e->pname, sizeof(e->pname), "%s", name);
	seen_of(&e->seen, st);
	entry_stat(e, st);
	if (t->flags & RD_TREE_HARDLINKS)
		first = rd_tree_link_seen(t->meta, st, e->path, e->path_len, &ff);
	e->flags |= (uint8_t)ff; /* RD_FF_LINKED, RD_FF_LINK_LAST */
	if (first) {
		/* A later member of a link group: its data moved already. */
		e->type = RD_FT_HLINK;
		e->target_len = strlen(first);
		memcpy(e->target, first, e->target_len + 1);
		if (!t->keep_parents) {
			rd_tree_dir_put(e->dir);
			e->dir = NULL;
		}
		return 1;
	}
	e->type = RD_FT_REG;
	e->size = (uint64_t)st->st_size;
	e->lazy = 1;
	return 1;
}

/*
 * Entry `name` beneath dirfd (level l's, or NULL), never following a
 * symlink (but with -L); wire path and display path are already in e and
 * t->show.
 */
static int emit_at(struct rd_tree *t, struct rd_tree_entry *e, struct level *l, int dirfd,
		   const char *name, int top, size_t wl, size_t sl)
{
	struct stat st;
	ssize_t n;
	int fd, ret;

	if (rd_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return gone(t, e, t->show, top, errno);
	if (!top && excluded(t, wl, S_ISDIR(st.st_mode)))
		return AGAIN; /* left out by a filter rule: not a word about it */
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
		keep_parent(t, e, l, dirfd, name, &st);
		return RD_TREE_ENTRY;
	}
	if (special(t, e, &st)) {
		keep_parent(t, e, l, dirfd, name, &st);
		return RD_TREE_ENTRY;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return left_out(e, t->show);
	if (S_ISREG(st.st_mode) && emit_lazy(t, e, l, dirfd, name, &st))
		return RD_TREE_ENTRY;
	fd = rd_openat(dirfd, name, OPEN_RD | O_NOFOLLOW | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0), 0);
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			return skip(t, e, t->show, 0, "changed while walking; skipped");
		return gone(t, e, t->show, top, errno);
	}
	ret = emit_fd(t, e, fd, top, wl, sl);
	if (ret == RD_TREE_ENTRY && e->type != RD_FT_DIR)
		keep_parent(t, e, l, dirfd, name, &st);
	return ret;
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

static void leave_parents(struct rd_tree *t)
{
	for (; t->fparents; t->fparents--)
		rd_filter_leave(t->fw);
}

/* rsync's "-F": the merge files of the transfer root's parents (lib/filter). */
static int enter_parents(struct rd_tree *t, int top, const char *rel, int contents)
{
	if (!t->fw)
		return 0;
	return rd_filter_enter_parents(t->fw, top, rel, contents, &t->fparents, &t->err);
}

/*
 * A source's start under filter rules: the -F parents' merge files, and
 * the source itself when it is an item of the transfer (not contents): a
 * rule may leave it out (AGAIN). RD_TREE_ENTRY to go on, or a skip.
 */
static int start_filter(struct rd_tree *t, struct rd_tree_entry *e, int top, const char *rel,
			int is_dir, size_t wl)
{
	char *real = NULL;
	int ret;

	if (!t->fw)
		return RD_TREE_ENTRY;
	if (rel && top < 0) {
		/* a local path: its parents as the file system has them */
		real = realpath(rel, NULL);
		if (!real && rd_filter_wants_parents(t->fw_rules))
			return skip(t, e, t->show, errno, NULL);
		rel = real;
	}
	ret = rel ? enter_parents(t, top, rel, !!t->eflags) : 0;
	free(real);
	if (ret < 0) {
		char why[RD_ERR_MSG_MAX];

		leave_parents(t);
		snprintf(why, sizeof(why), "%s; skipped", t->err.msg);
		return skip(t, e, t->show, 0, why);
	}
	if (!t->eflags && rd_filter_excluded(t->fw, t->wire, wl, is_dir, RD_FILTER_SENDER))
		return AGAIN;
	return RD_TREE_ENTRY;
}

/*
 * -R: the next component of the current source's rel, beneath parent:
 * an implied directory (a DIR entry and a level of its own, sent however
 * the filter rules say, as rsync does), or the item itself, sent as a
 * top-level source would be under its whole path.
 */
static int next_relative(struct rd_tree *t, struct rd_tree_entry *e, int parent)
{
	const char *c = t->rel + t->rel_off, *slash = strchr(c, '/');
	char comp[NAME_MAX + 1];
	size_t n = slash ? (size_t)(slash - c) : strlen(c), wl = t->rel_off + n;
	struct stat st;
	int fd;

	if (n > NAME_MAX || wl > RD_PATH_MAX)
		return skip(t, e, t->rel, ENAMETOOLONG, NULL);
	memcpy(comp, c, n);
	comp[n] = '\0';
	memcpy(t->wire, t->rel, wl);
	t->wire[wl] = '\0';
	memcpy(t->show, t->rel, wl + 1);
	set_wire(e, t->wire, wl);
	e->flags = t->rel_off ? 0 : RD_FF_ROOT;
	if (!slash) {
		/* the item: its whole path is its transfer path, the rules see it */
		if (t->fw) {
			int is_dir = !rd_fstatat(parent, comp, &st, AT_SYMLINK_NOFOLLOW) &&
				     S_ISDIR(st.st_mode);

			if (rd_filter_excluded(t->fw, t->wire, wl, is_dir, RD_FILTER_SENDER))
				return AGAIN;
		}
		return emit_at(t, e, NULL, parent, comp, 1, wl, wl);
	}
	fd = rd_openat(parent, comp, OPEN_RD | O_DIRECTORY | (t->rel_nofollow ? O_NOFOLLOW : 0), 0);
	if (fd < 0)
		return skip(t, e, t->show, errno, NULL);
	if (fstat(fd, &st) < 0) {
		close(fd);
		return skip(t, e, t->show, errno, NULL);
	}
	t->rel_off = wl + 1;
	if (push_implied(t, fd, &st, wl, wl) < 0)
		return -RD_ENOMEM;
	e->type = RD_FT_DIR;
	e->flags |= RD_FF_IMPLIED; /* not listed: --delete deletes nothing in it */
	entry_stat(e, &st);
	return RD_TREE_ENTRY;
}

/*
 * A -R source: its base opened (path sources: the part before "/./", or
 * "." / "/"), then its first component. rel has no empty, "." or ".."
 * component (rd_tree_open_paths refused those).
 */
static int start_relative(struct rd_tree *t, struct rd_tree_entry *e, const struct src *s)
{
	int base;

	t->rel = s->rel;
	t->rel_off = 0;
	t->rel_nofollow = !s->path;
	if (s->path) {
		base = open(s->path, OPEN_RD | O_DIRECTORY);
		if (base < 0)
			return skip(t, e, s->path, errno, NULL);
		t->rel_base = base;
	} else {
		base = s->dirfd == -2 ? t->base_fd : s->dirfd;
	}
	return next_relative(t, e, base);
}

/*
 * The parent of a command-line source that is not a directory (path: n
 * bytes), when its last name there is the file itself (st: what stat(2)
 * gave for it); one named through a symlink gets none: the link is not
 * what was sent, so nothing is removed.
 */
static void path_parent(struct rd_tree *t, struct rd_tree_entry *e, const char *path, size_t n,
			const struct stat *st)
{
	char dir[PATH_MAX];
	const char *slash = memrchr(path, '/', n);
	struct stat lst;
	int fd;

	if (slash)
		snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	else
		snprintf(dir, sizeof(dir), ".");
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	snprintf(e->pname, sizeof(e->pname), "%.*s", (int)(path + n - (slash ? slash + 1 : path)),
		 slash ? slash + 1 : path);
	if (fstatat(fd, e->pname, &lst, AT_SYMLINK_NOFOLLOW) || lst.st_dev != st->st_dev ||
	    lst.st_ino != st->st_ino) {
		close(fd);
		e->pname[0] = '\0';
		return;
	}
	e->dir = rd_tree__dir_new(&t->held, fd);
	if (!e->dir)
		e->pname[0] = '\0';
	seen_of(&e->seen, &lst);
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
	if (S_ISDIR(st.st_mode) && !(t->flags & (RD_TREE_RECURSIVE | RD_TREE_LIST_LEVEL)))
		return skip(t, e, t->show, 0, "is a directory (use -r)");
	wl = strlen(name);
	if (rd_path_reserved(name, wl))
		return skip(t, e, t->show, 0, RESERVED_SKIP);
	memcpy(t->wire, name, wl + 1);
	set_wire(e, name, wl);
	e->flags = RD_FF_ROOT;
	if (S_ISDIR(st.st_mode) && (t->flags & RD_TREE_SELECT) && rd_path_names_contents(s->path))
		t->eflags = RD_FF_CONTENTS;
	t->tpre = t->eflags ? wl + 1 : 0;
	ret = start_filter(t, e, -1, s->path, S_ISDIR(st.st_mode), wl);
	if (ret != RD_TREE_ENTRY)
		return ret;
	fd = open(s->path, OPEN_RD | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
	if (fd < 0)
		return skip(t, e, t->show, errno, NULL);
	ret = emit_fd(t, e, fd, 1, wl, n);
	if (ret == RD_TREE_ENTRY && e->type != RD_FT_DIR && t->keep_parents)
		path_parent(t, e, s->path, n, &st);
	return ret;
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
	t->tpre = t->eflags ? wl + 1 : 0;
	if (t->fw) {
		struct stat st;
		int is_dir =
		    !s->name || (rd_fstatat(s->dirfd, s->name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
				 S_ISDIR(st.st_mode));
		int ret = start_filter(t, e, s->top_fd, s->top_path, is_dir, wl);

		if (ret != RD_TREE_ENTRY)
			return ret;
	}
	if (s->name) {
		int ret = emit_at(t, e, NULL, s->dirfd, s->name, 1, wl, wl);

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
	if (l->dead || (l->implied && l->started))
		return emit_post(t, e);
	if (l->implied) {
		/* -R: the next implied directory, or the item itself */
		l->started = 1;
		return next_relative(t, e, l->ifd);
	}
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
	ret = emit_at(t, e, l, dirfd(l->d), de->d_name, 0, wl, sl);
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
		if (t->list)
			return rd_tree__list_next(t->list, t->flags, &t->err, e);
		if (t->depth) {
			ret = step_level(t, e);
		} else if (t->next_source < t->nsources) {
			s = &t->src[t->next_source++];
			t->eflags = 0;
			t->tpre = 0;
			if (t->fw)
				leave_parents(t);
			if (t->rel_base >= 0)
				close(t->rel_base);
			t->rel_base = -1;
			ret = s->rel	? start_relative(t, e, s)
			      : s->path ? start_path(t, e, s)
					: start_fd(t, e, s);
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
		t->src[i].dirfd = t->src[i].top_fd = -1;
	t->nsources = n;
	t->base_fd = t->rel_base = -1;
	*out = t;
	return 0;
}

static int one_name(const char *n)
{
	return n && n[0] && !strchr(n, '/') && strcmp(n, ".") && strcmp(n, "..") &&
	       strlen(n) <= NAME_MAX;
}

/*
 * -R's path from its base: empty and "." components dropped; ".." or
 * nothing left refused. *out malloc'd.
 */
static int rel_clean(const char *in, char **out, struct rd_err *err)
{
	const char *p = in, *e;
	char *o = malloc(strlen(in) + 1);
	size_t n, k = 0;

	*out = NULL;
	if (!o)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "walk");
	for (; *p; p = *e ? e + 1 : e) {
		e = strchrnul(p, '/');
		n = (size_t)(e - p);
		if (!n || (n == 1 && *p == '.'))
			continue;
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			free(o);
			return rd_err_set(err, RD_EUSAGE, 0,
					  "%s: '..' in a -R path; name it from a base with /./",
					  in);
		}
		if (k)
			o[k++] = '/';
		memcpy(o + k, p, n);
		k += n;
	}
	o[k] = '\0';
	if (!k) {
		free(o);
		return rd_err_set(err, RD_EUSAGE, 0, "%s: no name to send under -R", in);
	}
	*out = o;
	return 0;
}

/* A -R command-line source: its base (before "/./", else "." or "/") and its rel. */
static int rel_split(struct src *d, const char *path, struct rd_err *err)
{
	const char *dot = strstr(path, "/./");
	int ret;

	if (dot) {
		d->path = dot == path ? strdup("/") : strndup(path, (size_t)(dot - path));
		ret = rel_clean(dot + 3, &d->rel, err);
	} else {
		d->path = strdup(path[0] == '/' ? "/" : ".");
		ret = rel_clean(path, &d->rel, err);
	}
	if (!ret && !d->path)
		ret = rd_err_set(err, RD_ENOMEM, ENOMEM, "walk");
	return ret;
}

int rd_tree_open_names(struct rd_tree **out, int base_fd, const char *const *names, int n,
		       unsigned flags, struct rd_err *err)
{
	struct rd_tree *t;
	int i, ret;

	ret = tree_new(&t, n, flags, err);
	if (ret)
		return ret;
	t->relative = 1;
	t->dirs = !!(flags & RD_TREE_DIRS);
	t->base_fd = fcntl(base_fd, F_DUPFD_CLOEXEC, 0);
	if (t->base_fd < 0) {
		ret = rd_err_set(err, RD_ESYS, errno, "walk");
		goto fail;
	}
	for (i = 0; i < n; i++) {
		t->src[i].dirfd = -2; /* the tree's base_fd */
		ret = rel_clean(names[i], &t->src[i].rel, err);
		if (ret)
			goto fail;
	}
	*out = t;
	return 0;
fail:
	rd_tree_close(t);
	return ret;
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
		    (!s->name && !s->wire && !s->rel)) {
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
		if (s->rel) {
			ret = rel_clean(s->rel, &d->rel, err);
			if (ret)
				goto fail;
			t->relative = 1;
		}
		if (s->top_path && s->top_fd >= 0) {
			d->top_fd = fcntl(s->top_fd, F_DUPFD_CLOEXEC, 0);
			d->top_path = strdup(s->top_path);
			if (d->top_fd < 0 || !d->top_path) {
				ret = rd_err_set(err, RD_ENOMEM, errno, "walk");
				goto fail;
			}
		}
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
	t->relative = !!(flags & RD_TREE_RELATIVE);
	t->dirs = !!(flags & RD_TREE_DIRS);
	for (i = 0; i < npaths; i++) {
		if (t->relative) {
			ret = rel_split(&t->src[i], paths[i] ? paths[i] : "", err);
			if (ret) {
				rd_tree_close(t);
				return ret;
			}
			continue;
		}
		t->src[i].path = strdup(paths[i] ? paths[i] : "");
		if (!t->src[i].path) {
			rd_tree_close(t);
			return rd_err_set(err, RD_ENOMEM, ENOMEM, "walk");
		}
	}
	*out = t;
	return 0;
}

int rd_tree_open_list(struct rd_tree **out, rd_tree_list_fn next, void *ctx, unsigned flags,
		      struct rd_err *err)
{
	int ret = tree_new(out, 0, flags, err);

	if (ret)
		return ret;
	if (rd_tree__list_new(&(*out)->list, next, ctx)) {
		rd_tree_close(*out);
		*out = NULL;
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "list of entries");
	}
	return 0;
}

void rd_tree_set_flags(struct rd_tree *t, unsigned flags)
{
	t->flags = flags & RD_TREE_FLAGS;
}

int rd_tree_set_filter(struct rd_tree *t, const struct rd_filter *f, struct rd_err *err)
{
	if (t->fw || !f || !rd_filter_count(f))
		return 0;
	t->fw_rules = f;
	return rd_filter_walk_new(&t->fw, f, err);
}

void rd_tree_set_link_table(struct rd_tree *t, uint64_t max_bytes)
{
	rd_tree_meta_set_links(t->meta, max_bytes);
}

void rd_tree_keep_parents(struct rd_tree *t, int on)
{
	t->keep_parents = on;
}

void rd_tree_set_lazy(struct rd_tree *t, int on)
{
	t->lazy = on;
}

int rd_tree_remove_source(int pfd, const char *name, const struct rd_tree_seen *v,
			  struct rd_err *err)
{
	struct stat st;

	if (pfd < 0)
		return rd_err_set(err, RD_EUSAGE, 0,
				  "not removed: named through a symlink (or its directory could "
				  "not be held)");
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return rd_err_set(err, RD_ESYS, errno, "not removed");
	if ((uint64_t)st.st_dev != v->dev || (uint64_t)st.st_ino != v->ino ||
	    (st.st_mode & S_IFMT) != (v->mode & S_IFMT) || S_ISDIR(st.st_mode))
		return rd_err_set(err, RD_ESYS, 0, "not removed: another file has its name now");
	if ((uint64_t)st.st_size != v->size || st.st_mtim.tv_sec != v->mtime_sec ||
	    (uint32_t)st.st_mtim.tv_nsec != v->mtime_nsec ||
	    (v->nlink == 1 &&
	     (st.st_ctim.tv_sec != v->ctime_sec || (uint32_t)st.st_ctim.tv_nsec != v->ctime_nsec)))
		return rd_err_set(
		    err, RD_ESYS, 0,
		    "not removed: it changed since it was sent (size, time or status)");
	if (unlinkat(pfd, name, 0))
		return rd_err_set(err, RD_ESYS, errno, "not removed");
	return 0;
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
	while (t->depth) {
		struct level *l = &t->lv[--t->depth];

		level_unhold(l);
		if (l->implied && l->ifd >= 0)
			close(l->ifd);
		else if (!l->implied && l->d)
			closedir(l->d);
	}
	rd_tree__dirs_detach(&t->held);
	free(t->lv);
	if (t->fw)
		leave_parents(t);
	rd_filter_walk_free(t->fw);
	if (t->rel_base >= 0)
		close(t->rel_base);
	if (t->base_fd >= 0)
		close(t->base_fd);
	for (i = 0; i < t->nsources; i++) {
		free(t->src[i].rel);
		free(t->src[i].path);
		free(t->src[i].name);
		free(t->src[i].wire);
		free(t->src[i].top_path);
		if (t->src[i].dirfd >= 0)
			close(t->src[i].dirfd);
		if (t->src[i].top_fd >= 0)
			close(t->src[i].top_fd);
	}
	free(t->src);
	rd_tree__list_free(t->list);
	rd_tree_meta_free(t->meta);
	free(t);
}
