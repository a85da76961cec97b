// SPDX-License-Identifier: MIT
/*
 * Snapshots and backups at the receiver (issue 29; rd_sink.h
 * rd_sink_set_dests, docs/DESIGN.md "Snapshots"): rsync's --link-dest,
 * --compare-dest and --copy-dest as its generator's try_dests_reg() and
 * try_dests_non() decide, and the hooks that keep backups
 * (rd_sink_backup.h) before an entry is replaced.
 *
 * Every alternate directory is opened once (beneath the module when there
 * is one) and held; a file in it is reached through that descriptor with
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS and never followed: what is linked
 * or copied is checked to be the regular file (device, inode) that matched.
 */
#include "lib/sink/rd_sink_int.h"
#include "lib/sink/rd_sink_backup.h"
#include "lib/sink/rd_sink_mirror.h"
#include "lib/base/rd_escape.h"
#include "lib/base/rd_fsid.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/proto/rd_proto.h"

struct rd_sink_alt {
	int kind, ready;
	unsigned n;
	int root_fd; /* the module (confined), or -1 */
	char *dest;  /* the destination beneath root_fd */
	char *dirs[RD_SINK_ALT_MAX];
	int fds[RD_SINK_ALT_MAX]; /* -1: missing */
	/* one parent held per directory: the last file's */
	int cfd[RD_SINK_ALT_MAX];
	char *cpath[RD_SINK_ALT_MAX];
	int backup, backup_tried;
	char *backup_dir, *suffix;
	struct rd_backup *b;
};

const char *rd_sink_alt_option(int kind)
{
	return kind == RD_SINK_ALT_LINK	     ? "--link-dest"
	       : kind == RD_SINK_ALT_COMPARE ? "--compare-dest"
	       : kind == RD_SINK_ALT_COPY    ? "--copy-dest"
					     : "?";
}

int rd_sink_confined_path(const char *dest_rel, const char *dir, char *out, size_t cap)
{
	const char *parts[2] = {dir[0] == '/' ? "" : dest_rel, dir}, *p, *e;
	size_t o = 0, n;
	int k;

	if (!cap)
		return -2;
	out[0] = '\0';
	for (k = 0; k < 2; k++) {
		for (p = parts[k]; p && *p; p = e) {
			while (*p == '/')
				p++;
			if (!*p)
				break;
			e = strchrnul(p, '/');
			n = (size_t)(e - p);
			if (n == 1 && p[0] == '.')
				continue;
			if (n == 2 && p[0] == '.' && p[1] == '.') {
				if (!o)
					return -1;
				while (o && out[o - 1] != '/')
					o--;
				if (o)
					o--;
				out[o] = '\0';
				continue;
			}
			if (o + n + 2 > cap)
				return -2;
			if (o)
				out[o++] = '/';
			memcpy(out + o, p, n);
			o += n;
			out[o] = '\0';
		}
	}
	return 0;
}

void rd_sink__alt_free(struct rd_sink *s)
{
	struct rd_sink_alt *a = s->alt;
	unsigned i;

	if (!a)
		return;
	for (i = 0; i < a->n; i++) {
		if (a->fds[i] >= 0)
			close(a->fds[i]);
		if (a->cfd[i] >= 0)
			close(a->cfd[i]);
		free(a->cpath[i]);
		free(a->dirs[i]);
	}
	if (a->root_fd >= 0)
		close(a->root_fd);
	rd_backup_close(a->b);
	free(a->dest);
	free(a->backup_dir);
	free(a->suffix);
	free(a);
	s->alt = NULL;
}

static int alt_refuse(struct rd_sink *s, const char *opt, const char *dir, int r)
{
	char esc[256];

	rd_escape(esc, sizeof(esc), dir, strlen(dir));
	return rd_err_set(&s->err, r == -1 ? RD_EPERM : RD_EUSAGE, 0, "%s %s: %s", opt, esc,
			  r == -1 ? "leaves the module" : "is too long");
}

int rd_sink_set_dests(struct rd_sink *s, const struct rd_sink_dests *d, int root_fd,
		      const char *dest_rel)
{
	char path[SINK_PATH_MAX + 1];
	struct rd_sink_alt *a;
	const char *why;
	unsigned i;
	int r;

	if (!d || (!d->n && !d->backup))
		return 0;
	if (d->n > RD_SINK_ALT_MAX ||
	    (d->n && (d->kind < RD_SINK_ALT_LINK || d->kind > RD_SINK_ALT_COPY)))
		return rd_err_set(&s->err, RD_EUSAGE, 0, "bad alternate destinations");
	why = d->backup ? rd_backup_check(d->backup_dir, d->suffix) : NULL;
	if (why)
		return rd_err_set(&s->err, RD_EUSAGE, 0, "%s", why);
	for (i = 0; root_fd >= 0 && i < d->n; i++) {
		r = rd_sink_confined_path(dest_rel ? dest_rel : "", d->dirs[i], path, sizeof(path));
		if (r)
			return alt_refuse(s, rd_sink_alt_option(d->kind), d->dirs[i], r);
	}
	if (root_fd >= 0 && d->backup && d->backup_dir) {
		r = rd_sink_confined_path(dest_rel ? dest_rel : "", d->backup_dir, path,
					  sizeof(path));
		if (r)
			return alt_refuse(s, "--backup-dir", d->backup_dir, r);
	}
	rd_sink__alt_free(s);
	a = calloc(1, sizeof(*a));
	if (!a)
		return rd_err_set(&s->err, RD_ENOMEM, ENOMEM, "alternate destinations");
	s->alt = a;
	a->root_fd = -1;
	a->kind = d->n ? d->kind : 0;
	a->n = d->n;
	for (i = 0; i < RD_SINK_ALT_MAX; i++)
		a->fds[i] = a->cfd[i] = -1;
	a->dest = strdup(dest_rel ? dest_rel : "");
	if (!a->dest)
		goto nomem;
	for (i = 0; i < d->n; i++) {
		a->dirs[i] = strdup(d->dirs[i]);
		if (!a->dirs[i])
			goto nomem;
	}
	a->backup = d->backup;
	if ((d->backup_dir && !(a->backup_dir = strdup(d->backup_dir))) ||
	    (d->suffix && !(a->suffix = strdup(d->suffix))))
		goto nomem;
	if (root_fd >= 0) {
		a->root_fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0);
		if (a->root_fd < 0)
			return rd_err_set(&s->err, RD_ESYS, errno, "alternate destinations");
	}
	return 0;
nomem:
	return rd_err_set(&s->err, RD_ENOMEM, ENOMEM, "alternate destinations");
}

/* The destination directory beneath the module (into: dest itself; else its parent). */
static void dest_dir_rel(const struct rd_sink *s, char *out, size_t cap)
{
	const char *d = s->alt->dest, *slash = strrchr(d, '/');

	if (s->into)
		snprintf(out, cap, "%s", d);
	else
		snprintf(out, cap, "%.*s", slash ? (int)(slash - d) : 0, d);
}

/* At the first entry (the destination is decided): open every directory. */
static void alt_ready(struct rd_sink *s)
{
	struct rd_sink_alt *a = s->alt;
	char base[SINK_PATH_MAX + 1], path[SINK_PATH_MAX + 1];
	unsigned i;

	if (a->ready || s->dest_fd < 0 || s->pending)
		return;
	a->ready = 1;
	dest_dir_rel(s, base, sizeof(base));
	for (i = 0; i < a->n; i++) {
		if (a->root_fd >= 0) {
			if (rd_sink_confined_path(base, a->dirs[i], path, sizeof(path)))
				continue; /* checked at rd_sink_set_dests: never here */
			a->fds[i] = sink_open_dir(s, a->root_fd, path[0] ? path : ".", 0);
		} else {
			a->fds[i] = rd_openat(a->dirs[i][0] == '/' ? AT_FDCWD : s->dest_fd,
					      a->dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
		}
	}
}

/* The parent of rel (below the destination) in alternate directory i, held; or -1. */
static int alt_parent(struct rd_sink *s, unsigned i, const char *rel, const char **name)
{
	struct rd_sink_alt *a = s->alt;
	const char *slash = strrchr(rel, '/');
	size_t plen = slash ? (size_t)(slash - rel) : 0;
	char *p;

	*name = slash ? slash + 1 : rel;
	if (a->fds[i] < 0)
		return -1;
	if (!plen)
		return a->fds[i];
	if (a->cpath[i] && strlen(a->cpath[i]) == plen && !memcmp(a->cpath[i], rel, plen))
		return a->cfd[i];
	if (a->cfd[i] >= 0)
		close(a->cfd[i]);
	free(a->cpath[i]);
	a->cpath[i] = NULL;
	a->cfd[i] = -1;
	p = strndup(rel, plen);
	if (!p)
		return -1;
	a->cfd[i] = sink_open_dir(s, a->fds[i], p, 0);
	a->cpath[i] = p;
	return a->cfd[i];
}

/*
 * Made here from a basis: rsync's 'c' with the attributes that differ from
 * the basis's, and nothing at all when none do (a local change alone is
 * not worth a line of -i).
 */
static unsigned local_items(unsigned attrs)
{
	return attrs ? RD_IT_LOCAL | attrs : 0;
}

/* rsync's quick_check_ok() for a basis of the same type */
static int quick_ok(struct rd_sink *s, int dfd, const char *name, const struct stat *st,
		    const struct rd_sink_meta *m, const char *tgt, size_t tlen, uint64_t rdev)
{
	const struct rd_sink_select *sel = rd_sink__select(s);
	char old[SINK_PATH_MAX + 1];
	ssize_t n;

	switch (st->st_mode & S_IFMT) {
	case S_IFREG:
		if ((uint64_t)st->st_size != m->size)
			return 0;
		if (sel && sel->compare == RD_SINK_CMP_SIZE)
			return 1;
		/* -c and -I compare contents: no basis is taken on a date */
		if (sel &&
		    (sel->compare == RD_SINK_CMP_CHECKSUM || sel->compare == RD_SINK_CMP_ALL))
			return 0;
		return rd_sink__same_time(s, st, m);
	case S_IFLNK:
		n = rd_readlinkat(dfd, name, old, sizeof(old));
		return n >= 0 && (size_t)n == tlen && !memcmp(old, tgt, tlen);
	case S_IFCHR:
	case S_IFBLK:
		return st->st_rdev == makedev((unsigned)(rdev >> 32), (unsigned)rdev);
	default:
		return 1;
	}
}

/* rsync's unchanged_attrs(): times (-t), perms (-p, not of a symlink), owner, group */
static int attrs_ok(const struct rd_sink *s, const struct stat *st, const struct rd_sink_meta *m)
{
	return !rd_sink__attr_diff(s, st, m, !!(rd_sink__flags(s) & RD_SINK_PRESERVE_MODE));
}

/*
 * Link what matched (dfd/name, stat st) to name in pfd: a temporary name
 * first, checked to be that inode (never anything raced in its place),
 * then renamed over. 0, or -errno.
 */
static int link_in(int dfd, const char *name, const struct stat *st, int pfd, const char *dname)
{
	char tmp[NAME_MAX + 1];
	struct stat lt;
	int tries = 0, r;

	do {
		rd_sink__tmp_name(tmp, dname);
		r = rd_linkat(dfd, name, pfd, tmp, 0);
	} while (r < 0 && errno == EEXIST && ++tries < 8);
	if (r < 0)
		return -errno;
	if (rd_fstatat(pfd, tmp, &lt, AT_SYMLINK_NOFOLLOW) < 0 || lt.st_dev != st->st_dev ||
	    lt.st_ino != st->st_ino || (lt.st_mode & S_IFMT) != (st->st_mode & S_IFMT)) {
		rd_unlinkat(pfd, tmp, 0);
		return -ESTALE;
	}
	if (rd_renameat(pfd, tmp, pfd, dname) < 0) {
		r = -errno;
		rd_unlinkat(pfd, tmp, 0);
		return r;
	}
	return 0;
}

/* --copy-dest (or a basis matching by the quick check only): copy it here, m's attributes. */
static int copy_in(struct rd_sink *s, int dfd, const char *name, const struct stat *st, int pfd,
		   const char *dname, const struct rd_sink_meta *m, const char *path, size_t len)
{
	char tmp[NAME_MAX + 1];
	struct stat ist;
	uint64_t left = (uint64_t)st->st_size;
	int in, out = -1, tries = 0, ret = 0;
	ssize_t n;

	in = rd_openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
	if (in < 0)
		return -1; /* gone: send it */
	if (fstat(in, &ist) < 0 || ist.st_dev != st->st_dev || ist.st_ino != st->st_ino ||
	    !S_ISREG(ist.st_mode)) {
		ret = -1;
		goto out;
	}
	do {
		rd_sink__tmp_name(tmp, dname);
		out = rd_openat(pfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	} while (out < 0 && errno == EEXIST && ++tries < 8);
	if (out < 0) {
		ret = sink_fail(s, errno, path, len, "create");
		goto out;
	}
	while (left) {
		n = copy_file_range(in, NULL, out, NULL, left > (1u << 30) ? (1u << 30) : left, 0);
		if (n <= 0) {
			ret = n < 0 ? sink_fail(s, errno, path, len, "copy (--copy-dest) into")
				    : -1; /* it shrank: send it */
			goto unlink;
		}
		left -= (uint64_t)n;
	}
	if ((s->flags & RD_SINK_FSYNC) && fsync(out) < 0) {
		ret = sink_fail(s, errno, path, len, "fsync");
		goto unlink;
	}
	ret = rd_sink__fix_attrs(s, pfd, tmp, RD_IT_OWNER | RD_IT_GROUP | RD_IT_PERMS | RD_IT_TIME,
				 m, path, len);
	if (ret < 0)
		goto unlink;
	if (rd_renameat(pfd, tmp, pfd, dname) < 0) {
		ret = sink_fail(s, errno, path, len, "rename into place");
		goto unlink;
	}
	goto out;
unlink:
	rd_unlinkat(pfd, tmp, 0);
out:
	if (out >= 0)
		close(out);
	close(in);
	return ret;
}

/*
 * The best match of rel among the directories (rsync's order: the first
 * that matches all, else the first by the quick check, else the first of
 * the type): its level (3 all, 2 quick check, 1 type, 0 none), *dfd, *dname
 * and *bst.
 */
static int best_match(struct rd_sink *s, const char *rel, mode_t type, const struct rd_sink_meta *m,
		      const char *tgt, size_t tlen, uint64_t rdev, int *dfd, const char **dname,
		      struct stat *bst)
{
	struct rd_sink_alt *a = s->alt;
	int level = 0, l, fd;
	const char *nm;
	struct stat st;
	unsigned i;

	for (i = 0; i < a->n && level < 3; i++) {
		fd = alt_parent(s, i, rel, &nm);
		if (fd < 0 || rd_fstatat(fd, nm, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    (st.st_mode & S_IFMT) != type)
			continue;
		l = 1;
		if (quick_ok(s, fd, nm, &st, m, tgt, tlen, rdev))
			l = attrs_ok(s, &st, m) ? 3 : 2;
		if (l > level) {
			level = l;
			*dfd = fd;
			*dname = nm;
			*bst = st;
		}
	}
	return level;
}

int rd_sink__alt_file(struct rd_sink *s, int pfd, const char *name, const struct stat *st,
		      const struct rd_sink_meta *m, const char *path, size_t len)
{
	struct rd_sink_alt *a = s->alt;
	char rel[EFF_MAX];
	const char *dname = NULL;
	struct stat bst, bst_way;
	int level, dfd = -1, r, other = st && !S_ISREG(st->st_mode);

	if (!a || !a->n)
		return -1;
	alt_ready(s);
	snprintf(rel, sizeof(rel), "%s", s->eff);
	level = best_match(s, rel, S_IFREG, m, NULL, 0, 0, &dfd, &dname, &bst);
	if (other && S_ISDIR(st->st_mode)) {
		/*
		 * an empty directory in the way goes first (as without them);
		 * a full one too with --delete or --force (rsync deletes it
		 * before it looks at the directories: the match is in hand,
		 * and what the directory holds the source does not have);
		 * else as before
		 */
		if (level < 2)
			return -1;
		if (s->cache_fd >= 0 && s->cache_fd != pfd)
			sink_cache_drop(s); /* it may be the directory going */
		if (!rd_sink__dry(s) && rd_unlinkat(pfd, name, AT_REMOVEDIR) < 0 &&
		    ((errno != ENOTEMPTY && errno != EEXIST) || !rd_sink__mirror_forces(s) ||
		     rd_sink__mirror_room(s, pfd, name, path, len) <= 0 ||
		     rd_fstatat(pfd, name, &bst_way, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT))
			return -1;
		other = 0;
		st = NULL;
	}
	if (other)
		st = NULL; /* rsync deletes another type first: as if nothing were there */
	if (level == 3 && a->kind != RD_SINK_ALT_COPY) {
		/* rsync's find_exact_for_existing: an existing file gives way */
		if (st && a->kind == RD_SINK_ALT_LINK && st->st_dev == bst.st_dev &&
		    st->st_ino == bst.st_ino)
			return -1;
		rd_sink__set_items(s, 0);
		if (rd_sink__dry(s))
			return RD_SINK_SAME;
		if (a->kind == RD_SINK_ALT_COMPARE) {
			if ((st || other) && rd_unlinkat(pfd, name, 0) < 0 && errno != ENOENT)
				return sink_fail(s, errno, path, len, "remove (--compare-dest)");
			return RD_SINK_SAME;
		}
		r = link_in(dfd, dname, &bst, pfd, name);
		if (!r)
			return RD_SINK_SAME;
		/* not linkable here (another file system, too many links): a copy */
	}
	if (st || level < 2) {
		if (!st && level == 1) /* rsync itemizes against the basis */
			rd_sink__set_items(s, rd_sink__attr_items(s, &bst, m));
		return -1;
	}
	rd_sink__set_items(s, local_items(rd_sink__attr_items(s, &bst, m)));
	if (rd_sink__dry(s))
		return RD_SINK_SAME;
	r = copy_in(s, dfd, dname, &bst, pfd, name, m, path, len);
	if (r == -1) {
		rd_sink__set_items(s, RD_IT_NEW);
		return -1;
	}
	return r < 0 ? r : RD_SINK_SAME;
}

int rd_sink__alt_node(struct rd_sink *s, int pfd, const char *name, const char *tgt, size_t tlen,
		      uint64_t rdev, const struct rd_sink_meta *m, const char *path, size_t len)
{
	struct rd_sink_alt *a = s->alt;
	char rel[EFF_MAX];
	const char *dname = NULL;
	struct stat st, bst;
	int dfd = -1;

	(void)path;
	(void)len;
	if (!a || !a->n)
		return 0;
	if (rd_fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT)
		return 0; /* rsync tries them only where nothing is */
	alt_ready(s);
	snprintf(rel, sizeof(rel), "%s", s->eff);
	if (best_match(s, rel, (mode_t)m->mode & S_IFMT, m, tgt, tlen, rdev, &dfd, &dname, &bst) <
	    3)
		return 0;
	if (a->kind == RD_SINK_ALT_COPY)
		return 2;
	if (a->kind == RD_SINK_ALT_COMPARE || rd_sink__dry(s))
		return 1;
	/* --link-dest: a hard link (a symlink too, as rsync on Linux), else made anew */
	return link_in(dfd, dname, &bst, pfd, name) ? 0 : 1;
}

unsigned rd_sink__alt_dir_items(struct rd_sink *s, const struct rd_sink_meta *m, unsigned items)
{
	char rel[EFF_MAX];
	const char *dname = NULL;
	struct stat bst;
	int dfd = -1, level;

	if (!s->alt || !s->alt->n)
		return items;
	alt_ready(s);
	snprintf(rel, sizeof(rel), "%s", s->eff);
	level = best_match(s, rel, S_IFDIR, m, NULL, 0, 0, &dfd, &dname, &bst);
	/* rsync itemizes a directory found there as changed from it; not one that matched */
	if (level == 3)
		return 0;
	return level ? local_items(rd_sink__attr_items(s, &bst, m)) : items;
}

/* --- backups --- */

int rd_sink__backups_on(const struct rd_sink *s)
{
	return s->alt && s->alt->backup;
}

int rd_sink__omit_dir_times(const struct rd_sink *s)
{
	return s->alt && s->alt->backup && !s->alt->backup_dir;
}

int rd_sink_backups(struct rd_sink *s, struct rd_backup **out)
{
	struct rd_sink_alt *a = s->alt;
	char base[SINK_PATH_MAX + 1];
	int ret;

	*out = NULL;
	if (!a || !a->backup)
		return 0;
	if (a->b || a->backup_tried) {
		*out = a->b;
		return a->b ? 0 : -RD_ESYS;
	}
	if (s->dest_fd < 0 || s->pending)
		return 0; /* nothing is there yet to keep */
	a->backup_tried = 1;
	dest_dir_rel(s, base, sizeof(base));
	ret =
	    rd_backup_open(&a->b, s->dest_fd, a->root_fd, base, a->backup_dir, a->suffix, &s->err);
	*out = a->b;
	return ret;
}

int rd_sink_backups_on(const struct rd_sink *s)
{
	return rd_sink__backups_on(s);
}

int rd_sink_backup_deleted(struct rd_sink *s, int dirfd, const char *name, const char *rel)
{
	struct rd_backup *b;
	int ret = rd_sink_backups(s, &b);

	if (ret < 0)
		return ret;
	if (!b)
		return rd_err_set(&s->err, RD_EUSAGE, 0, "no backups are made");
	return rd_backup_keep(b, dirfd, name, rel, RD_BACKUP_MOVE, &s->err);
}

int rd_sink_backup_protects(struct rd_sink *s, const char *rel, size_t len, int is_dir)
{
	struct rd_backup *b;

	const char *sfx;
	size_t sl;

	if (!rd_sink__backups_on(s))
		return 0;
	if (rd_sink_backups(s, &b) == 0 && b)
		return rd_backup_protects(b, rel, len, is_dir);
	/* not opened (yet, or it failed): without a backup dir, the suffix still protects */
	if (s->alt->backup_dir)
		return 0;
	sfx = s->alt->suffix ? s->alt->suffix : RD_BACKUP_SUFFIX_DEFAULT;
	sl = strlen(sfx);
	return sl && len >= sl && !memcmp(rel + len - sl, sfx, sl);
}

int rd_sink__backup(struct rd_sink *s, int pfd, const char *name, const char *rel, int how)
{
	struct rd_backup *b;
	int ret;

	if (!rd_sink__backups_on(s) || rd_sink__dry(s))
		return 0;
	ret = rd_sink_backups(s, &b);
	if (ret < 0 || !b)
		return ret;
	return rd_backup_keep(b, pfd, name, rel, how, &s->err);
}

const char *rd_sink__eff(const struct rd_sink *s)
{
	return s->eff;
}
