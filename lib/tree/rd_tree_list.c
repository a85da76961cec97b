// SPDX-License-Identifier: MIT
/*
 * A list of entries instead of a walk (rdcp-mpi, issue 32): each item
 * names one object beneath a directory descriptor by a relative path.
 * Its parent is opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
 * and the object itself, from there, by one name with O_NOFOLLOW, as the
 * walk does: nothing is reached through a symlink, nothing outside dirfd.
 * A directory is one entry (never descended into); its POST is an item of
 * its own. A RANGE or COMMIT item (rd_proto.h section 6) is a regular
 * file that must still have the size and mtime the job saw.
 */
#include "lib/base/rd_fsid.h"
#include "lib/tree/rd_tree.h"
#include "lib/tree/rd_tree_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"

#define OPEN_RD (O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)

struct rd_tree_list {
	rd_tree_list_fn next;
	void *ctx;
	struct rd_tree_meta *meta;
	struct rd_msg_meta items[RD_TREE_META_MAX + 1]; /* RANGE, then the walk's */
	char esc[RD_ERR_MSG_MAX / 2];
};

int rd_tree__list_new(struct rd_tree_list **out, rd_tree_list_fn next, void *ctx)
{
	struct rd_tree_list *l = calloc(1, sizeof(*l));

	*out = NULL;
	if (!l || rd_tree_meta_new(&l->meta)) {
		free(l);
		return -RD_ENOMEM;
	}
	l->next = next;
	l->ctx = ctx;
	*out = l;
	return 0;
}

void rd_tree__list_free(struct rd_tree_list *l)
{
	if (!l)
		return;
	rd_tree_meta_free(l->meta);
	free(l);
}

static int lskip(struct rd_tree_list *l, struct rd_err *err, struct rd_tree_entry *e,
		 const char *wire, int errnum, const char *why)
{
	size_t n = strlen(wire);

	if (n > RD_PATH_MAX)
		n = RD_PATH_MAX;
	memcpy(e->path, wire, n);
	e->path[n] = '\0';
	e->path_len = n;
	if (e->fd >= 0)
		close(e->fd);
	e->fd = -1;
	rd_escape(l->esc, sizeof(l->esc), wire, n);
	if (why)
		rd_err_set(err, RD_ESYS, errnum, "%s: %s", l->esc, why);
	else
		rd_err_set(err, RD_ESYS, errnum, "%s", l->esc);
	return RD_TREE_SKIP;
}

static void lstat_into(struct rd_tree_entry *e, const struct stat *st)
{
	e->mode = st->st_mode;
	e->uid = st->st_uid;
	e->gid = st->st_gid;
	e->mtime_sec = st->st_mtim.tv_sec;
	e->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
}

/* The parent of rel beneath dirfd (its last component in *name): fd or -errno. */
static int open_parent(int dirfd, const char *rel, const char **name)
{
	struct open_how how;
	const char *slash = strrchr(rel, '/');
	char *dir;
	long r;

	int fd;

	*name = slash ? slash + 1 : rel;
	if (!slash) {
		fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
		return fd < 0 ? -errno : fd;
	}
	dir = strndup(rel, (size_t)(slash - rel));
	if (!dir)
		return -ENOMEM;
	memset(&how, 0, sizeof(how));
	how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	r = rd_openat2(dirfd, dir, &how, sizeof(how));
	free(dir);
	return r < 0 ? -errno : (int)r;
}

/* The object of the item into e (wire path set); RD_TREE_ENTRY or RD_TREE_SKIP. */
static int emit_item(struct rd_tree_list *l, unsigned flags, struct rd_err *err,
		     const struct rd_tree_item *it, struct rd_tree_entry *e)
{
	const char *name;
	struct stat st;
	ssize_t n;
	int pfd, fd = -1, ret = RD_TREE_SKIP;

	if (!it->rel[0]) {
		pfd = -1;
		fd = fcntl(it->dirfd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0 || fstat(fd, &st) < 0)
			return lskip(l, err, e, it->wire, errno, NULL);
		goto opened;
	}
	pfd = open_parent(it->dirfd, it->rel, &name);
	if (pfd < 0)
		return lskip(l, err, e, it->wire, -pfd,
			     pfd == -ELOOP || pfd == -EXDEV ? "a parent is a symlink; skipped"
							    : NULL);
	if (rd_fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		ret = lskip(l, err, e, it->wire, errno, NULL);
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		n = rd_readlinkat(pfd, name, e->target, RD_PATH_MAX + 1);
		if (n <= 0 || n > RD_PATH_MAX) {
			ret = lskip(l, err, e, it->wire, n < 0 ? errno : 0,
				    "symlink target too long or unreadable; skipped");
			goto out;
		}
		e->target[n] = '\0';
		e->target_len = (size_t)n;
		e->type = RD_FT_SYMLINK;
		lstat_into(e, &st);
		ret = RD_TREE_ENTRY;
		goto out;
	}
	if (((S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) && (flags & RD_TREE_SPECIALS)) ||
	    ((S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) && (flags & RD_TREE_DEVICES))) {
		e->type = RD_FT_SPECIAL;
		lstat_into(e, &st);
		if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
			e->size = (uint64_t)major(st.st_rdev) << 32 | minor(st.st_rdev);
		ret = RD_TREE_ENTRY;
		goto out;
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
		ret = lskip(l, err, e, it->wire, 0,
			    "not a regular file, directory or symlink; skipped");
		goto out;
	}
	fd =
	    rd_openat(pfd, name, OPEN_RD | O_NOFOLLOW | (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0), 0);
	if (fd < 0 || fstat(fd, &st) < 0) {
		ret = lskip(l, err, e, it->wire, errno, NULL);
		goto out;
	}
opened:
	if (S_ISDIR(st.st_mode)) {
		e->type = RD_FT_DIR;
		lstat_into(e, &st);
		if (it->kind == RD_TREE_ITEM_POST)
			e->flags |= RD_FF_POST;
		else if (rd_tree_meta_read(l->meta, fd, &st, flags, e) < 0)
			ret = -RD_ENOMEM;
		if (ret != -RD_ENOMEM)
			ret = RD_TREE_ENTRY;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = lskip(l, err, e, it->wire, 0, "changed while copying; skipped");
		goto out;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	e->type = RD_FT_REG;
	e->size = (uint64_t)st.st_size;
	lstat_into(e, &st);
	e->fd = fd;
	fd = -1;
	ret = rd_tree_meta_read(l->meta, e->fd, &st, flags, e) < 0 ? -RD_ENOMEM : RD_TREE_ENTRY;
out:
	if (fd >= 0)
		close(fd);
	if (pfd >= 0)
		close(pfd);
	return ret;
}

/* RANGE and COMMIT: a regular file as the job saw it, its RANGE item first. */
static int as_range(struct rd_tree_list *l, struct rd_err *err, const struct rd_tree_item *it,
		    struct rd_tree_entry *e)
{
	struct rd_msg_meta *r = &l->items[0];
	unsigned i, n = 0;

	if (e->type != RD_FT_REG || e->size != it->size || e->mtime_sec != it->mtime_sec ||
	    e->mtime_nsec != it->mtime_nsec)
		return lskip(l, err, e, it->wire, 0,
			     "changed since the job listed it (size or modification time); "
			     "not copied");
	memset(r, 0, sizeof(*r));
	r->kind = RD_META_RANGE;
	r->job = it->job;
	r->off = it->kind == RD_TREE_ITEM_COMMIT ? 0 : it->off;
	r->len = it->kind == RD_TREE_ITEM_COMMIT ? it->size : it->len;
	/* a range carries its data only; the COMMIT the file's metadata */
	for (i = 0; it->kind == RD_TREE_ITEM_COMMIT && i < e->nmeta && n < RD_TREE_META_MAX; i++)
		if (e->meta[i].kind != RD_META_SPARSE)
			l->items[1 + n++] = e->meta[i];
	e->meta = l->items;
	e->nmeta = 1 + n;
	e->flags |= it->kind == RD_TREE_ITEM_COMMIT ? RD_FF_COMMIT : RD_FF_RANGE;
	return RD_TREE_ENTRY;
}

int rd_tree__list_next(struct rd_tree_list *l, unsigned flags, struct rd_err *err,
		       struct rd_tree_entry *e)
{
	struct rd_tree_item it;
	size_t wl;
	int ret;

	memset(&it, 0, sizeof(it));
	ret = l->next(l->ctx, &it);
	if (ret <= 0)
		return ret < 0 ? rd_err_set(err, -ret, 0, "the list of entries failed")
			       : RD_TREE_END;
	wl = strlen(it.wire);
	if (!wl || wl > RD_PATH_MAX || !it.rel || it.rel[0] == '/')
		return lskip(l, err, e, it.wire, 0, "bad list entry; skipped");
	/* rdcp's own files are never sent (rd_path_reserved), listed or walked */
	if (rd_path_reserved(it.rel, strlen(it.rel)))
		return lskip(l, err, e, it.wire, 0, "a name rdcp keeps for itself; not sent");
	memcpy(e->path, it.wire, wl + 1);
	e->path_len = wl;
	if (it.kind == RD_TREE_ITEM_HLINK) {
		/* a later member of a link group whose first member is in place */
		size_t tl = it.target ? strlen(it.target) : 0;

		if (!tl || tl > RD_PATH_MAX)
			return lskip(l, err, e, it.wire, 0, "bad hard link entry; skipped");
		e->type = RD_FT_HLINK;
		memcpy(e->target, it.target, tl + 1);
		e->target_len = tl;
		e->flags |= (uint8_t)(it.ff & RD_FF_LINK_LAST);
		return RD_TREE_ENTRY;
	}
	/* a range carries data only: none of the metadata is read for it */
	ret = emit_item(l,
			it.kind == RD_TREE_ITEM_RANGE
			    ? flags & ~(RD_TREE_SPARSE | RD_TREE_XATTRS | RD_TREE_ACLS)
			    : flags,
			err, &it, e);
	if (ret != RD_TREE_ENTRY)
		return ret;
	if (it.regular && it.kind == RD_TREE_ITEM_NODE &&
	    (e->type != RD_FT_REG || e->size != it.size || e->mtime_sec != it.mtime_sec ||
	     e->mtime_nsec != it.mtime_nsec))
		return lskip(l, err, e, it.wire, 0,
			     "not the regular file the job listed (changed since); not sent");
	if (it.kind == RD_TREE_ITEM_NODE && e->type == RD_FT_REG)
		e->flags |= (uint8_t)(it.ff & RD_FF_LINKED);
	if (it.kind == RD_TREE_ITEM_POST && e->type != RD_FT_DIR)
		return lskip(l, err, e, it.wire, 0, "no longer a directory; skipped");
	if (it.kind == RD_TREE_ITEM_POST)
		e->nmeta = 0;
	if (it.kind == RD_TREE_ITEM_RANGE || it.kind == RD_TREE_ITEM_COMMIT) {
		e->note[0] = '\0';
		return as_range(l, err, &it, e);
	}
	return RD_TREE_ENTRY;
}
