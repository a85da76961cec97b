// SPDX-License-Identifier: MIT
/*
 * Receiver side placement, confined beneath the destination.
 *
 * Every wire path is re-checked here (defense in depth: a decoder bug must
 * not become a write outside the tree). A path's parent directory is
 * opened with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) relative to
 * the destination, or, where the kernel has no openat2, by a walk of
 * openat(O_NOFOLLOW | O_DIRECTORY) one checked component at a time. The
 * last parent opened is cached, so a directory of many files is resolved
 * once. Final names are only ever touched with *at() calls on that parent
 * fd and never followed.
 *
 * Mode of directories we create: 0700 while they fill, the real mode at
 * dir_post. The directories we created and whose dir_post has not come yet
 * are remembered by inode (a directory's dir_post may be deferred while
 * siblings are created), so an existing directory keeps its mode unless
 * the mode is preserved. That set is bounded by depth plus the engine's
 * window; past CREATED_MAX a directory simply keeps its 0700 | umask mode.
 */
#include "lib/sink/rd_sink.h"
#include "lib/base/rd_fsid.h"
#include "lib/sink/rd_sink_int.h"
#include "lib/sink/rd_sink_backup.h"
#include "lib/sink/rd_sink_priv.h"
#include "lib/sink/rd_sink_mirror.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/base/rd_escape.h"
#include "lib/proto/rd_proto.h"
#include "lib/sink/rd_sink_partial.h"

static int readonly(struct rd_sink *s, const char *path, size_t len)
{
	return rd_err_set(&s->err, RD_EPERM, 0, "%s: read-only", sink_esc(s, path, len));
}

static int want_owner(const struct rd_sink *s)
{
	return (s->flags & RD_SINK_PRESERVE_OWNER) && s->root;
}

static int want_group(const struct rd_sink *s)
{
	return (s->flags & RD_SINK_PRESERVE_GROUP) && s->root;
}

/*
 * setuid/setgid only together with the owner (issue 7 items 2 and 4): a
 * file must never become setuid to an owner that was not chosen.
 */
static mode_t final_mode(const struct rd_sink *s, const struct rd_sink_meta *m)
{
	if (s->flags & RD_SINK_PRESERVE_MODE)
		return (mode_t)(m->mode & (want_owner(s) ? 07777u : 01777u));
	return (mode_t)(m->mode & 0777u) & ~s->umask;
}

/* chown to what was asked for: uid with OWNER, gid with GROUP (-1: keep) */
static int chown_meta(const struct rd_sink *s, int fd, const char *name,
		      const struct rd_sink_meta *m)
{
	uid_t uid = want_owner(s) ? (uid_t)m->uid : (uid_t)-1;
	gid_t gid = want_group(s) ? (gid_t)m->gid : (gid_t)-1;

	if (uid == (uid_t)-1 && gid == (gid_t)-1)
		return 0;
	if (name)
		return rd_fchownat(fd, name, uid, gid, AT_SYMLINK_NOFOLLOW);
	return rd_fchown(fd, uid, gid);
}

static void meta_times(const struct rd_sink_meta *m, struct timespec ts[2])
{
	ts[0].tv_sec = (time_t)m->mtime_sec;
	ts[0].tv_nsec = m->mtime_nsec < 1000000000u ? (long)m->mtime_nsec : 0;
	ts[1] = ts[0];
}

/* Unique temp name ".rdcp.<name>.<random>" (the name cut to fit NAME_MAX). */
static void tmp_name(char *out, const char *name)
{
	uint64_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)out;
	snprintf(out, NAME_MAX + 1, ".rdcp.%.*s.%016llx", TMP_NAME_KEEP, name,
		 (unsigned long long)r);
}

/* Remember a directory we created (by inode) until its dir_post. */
void sink_dir_note(struct rd_sink *s, int pfd, const char *name)
{
	struct stat st;

	if (s->ncreated >= CREATED_MAX || rd_fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return;
	s->created[s->ncreated].dev = st.st_dev;
	s->created[s->ncreated].ino = st.st_ino;
	s->ncreated++;
}

/* Did we create the directory st? Forgets it (dir_post is once). */
static int dir_created(struct rd_sink *s, const struct stat *st)
{
	unsigned i;

	for (i = s->ncreated; i-- > 0;) {
		if (s->created[i].dev == st->st_dev && s->created[i].ino == st->st_ino) {
			s->created[i] = s->created[--s->ncreated];
			return 1;
		}
	}
	return 0;
}

/*
 * rsync's --existing and --ignore-existing for what is not a regular
 * file (a directory, its POST, a symlink, a special, a hard link; files
 * have rd_sink_file_check): 1 when the entry is left as it is (items:
 * RD_IT_SKIPPED), else 0 (an error is the entry call's to say).
 * --existing: nothing missing is made, nor anything beneath a directory
 * it did not make; --ignore-existing: whatever is there stays, but a
 * directory over a directory goes ahead (its attributes), as rsync's
 * generator does.
 */
static int sel_leave(struct rd_sink *s, const char *path, size_t len, unsigned how)
{
	struct place pl;
	struct stat st;
	int ret;

	if (!s->sel_on || !(s->sel.existing || s->sel.ignore_existing))
		return 0;
	ret = sink_resolve(s, path, len, how, &pl);
	if (ret < 0) {
		if (ret != -RD_ENOENT || !s->sel.existing)
			return 0;
	} else if (rd_fstatat(pl.pfd, pl.name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!s->sel.ignore_existing || ((how & HOW_DIR) && S_ISDIR(st.st_mode)))
			return 0;
	} else if (errno != ENOENT || !s->sel.existing) {
		return 0;
	}
	rd_err_clear(&s->err);
	s->items = RD_IT_SKIPPED;
	return 1;
}

static int dry(const struct rd_sink *s)
{
	return s->sel_on && s->sel.dry_run;
}

/* A dry run's entry beneath a directory that would be made: new. Else ret. */
static int dry_new(struct rd_sink *s, int ret)
{
	if (ret >= 0 || !s->absent)
		return ret;
	rd_err_clear(&s->err);
	s->items = RD_IT_NEW | RD_IT_LOCAL;
	return 0;
}

/*
 * A dry run's not_a_dir: an empty directory would go; a full one too with
 * --force (or any --delete*), its contents listed as they would be
 * deleted, unless something inside would stay; else the entry fails as
 * it would (rsync: "could not make way").
 */
static int dry_way(struct rd_sink *s, const struct place *pl, const char *path, size_t len)
{
	int r = rd_dir_holds(pl->pfd, pl->name);

	if (r < 0)
		return sink_fail(s, -r, path, len, "read the directory in the way of");
	if (!r)
		return 0;
	if (rd_sink__mirror_forces(s) && rd_sink__mirror_room(s, pl->pfd, pl->name, path, len) > 0)
		return 0;
	return rd_err_set(&s->err, RD_ESYS, 0,
			  "%s: cannot delete the non-empty directory in its way",
			  sink_esc(s, path, len));
}

/*
 * A non-directory goes where a directory is: rsync's rules remove an
 * empty one (what replaces it is new) and leave a full one ("cannot
 * delete non-empty directory": that entry fails); without them it is
 * refused. With --force (or any --delete*) a full one is emptied, but only
 * where room may be made now (room: the replacement is complete, or needs
 * no data); a file just begun leaves it for its commit (returns 0).
 */
static int not_a_dir(struct rd_sink *s, const struct place *pl, const char *path, size_t len,
		     int room)
{
	struct stat st;
	int e;

	if (rd_fstatat(pl->pfd, pl->name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
		return 0;
	if (!(s->flags & RD_SINK_RSYNC))
		return rd_err_set(&s->err, RD_ESYS, EISDIR, "%s", sink_esc(s, path, len));
	if (dry(s))
		return dry_way(s, pl, path, len);
	if (s->cache_fd >= 0 && s->cache_fd != pl->pfd)
		sink_cache_drop(s); /* it may be the directory going */
	if (rd_unlinkat(pl->pfd, pl->name, AT_REMOVEDIR) == 0)
		return 0;
	e = errno;
	/* --force (or any --delete*): emptied first, its contents reported as deleted */
	if ((e == ENOTEMPTY || e == EEXIST) && !room && rd_sink__mirror_forces(s))
		return 0; /* at the file's commit, once it is verified */
	/* a verified file (room 2) may wait for it until the end (--max-delete, rsync's order) */
	if ((e == ENOTEMPTY || e == EEXIST) && room == 2 && rd_sink__mirror_late(s))
		return 1;
	if ((e == ENOTEMPTY || e == EEXIST) && room &&
	    rd_sink__mirror_room(s, pl->pfd, pl->name, path, len) > 0 &&
	    rd_fstatat(pl->pfd, pl->name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
		return 0;
	if (e == ENOTEMPTY || e == EEXIST)
		return rd_err_set(&s->err, RD_ESYS, 0,
				  "%s: cannot delete the non-empty directory in its way",
				  sink_esc(s, path, len));
	errno = e;
	return sink_fail(s, errno, path, len, "remove the directory in the way of");
}

/*
 * A directory goes where a non-directory is (rsync's rules: never
 * followed, a symlink too is replaced): 0 when it went.
 */
static int not_a_nondir(struct rd_sink *s, const struct place *pl, const struct stat *st,
			const char *path, size_t len)
{
	if (!(s->flags & RD_SINK_RSYNC) || !strcmp(pl->name, ".") || (!s->into && pl->depth == 1)) {
		if (S_ISLNK(st->st_mode))
			return rd_err_set(&s->err, RD_EPERM, 0,
					  "%s: is a symlink; refusing to follow",
					  sink_esc(s, path, len));
		return rd_err_set(&s->err, RD_ESYS, 0, "%s: exists and is not a directory",
				  sink_esc(s, path, len));
	}
	if (dry(s))
		return 0;
	if (rd_sink__backups_on(s)) {
		int r = rd_sink__backup(s, pl->pfd, pl->name, s->eff, RD_BACKUP_MOVE);

		if (r < 0)
			return r;
	}
	if (rd_unlinkat(pl->pfd, pl->name, 0) < 0 && errno != ENOENT)
		return sink_fail(s, errno, path, len, "remove what is in the way of");
	return 0;
}

int rd_sink_mkdir(struct rd_sink *s, const char *path, size_t len, int root,
		  const struct rd_sink_meta *m)
{
	struct place pl;
	struct stat st;
	int ret;

	s->items = 0;
	if (s->flags & RD_SINK_READONLY)
		return readonly(s, path, len);
	if (sel_leave(s, path, len, (unsigned)root | HOW_DIR))
		return 0;
	ret = sink_resolve(s, path, len, (unsigned)root | HOW_DIR, &pl);
	if (ret < 0)
		return dry_new(s, ret);
	if (dry(s)) {
		/* what mkdir would find */
		if (rd_fstatat(pl.pfd, pl.name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT)
				return sink_fail(s, errno, path, len, "stat");
			s->items = rd_sink__alt_dir_items(s, m, RD_IT_NEW | RD_IT_LOCAL);
			return 0;
		}
		if (S_ISDIR(st.st_mode)) {
			s->items = rd_sink__attr_items(s, &st, m);
			return 0;
		}
		ret = not_a_nondir(s, &pl, &st, path, len);
		s->items = ret < 0 ? 0 : RD_IT_NEW | RD_IT_LOCAL;
		return ret;
	}
	if (rd_mkdirat(pl.pfd, pl.name, 0700) == 0)
		goto made;
	if (errno != EEXIST)
		return sink_fail(s, errno, path, len, "mkdir");
	if (rd_fstatat(pl.pfd, pl.name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return sink_fail(s, errno, path, len, "mkdir");
	if (S_ISDIR(st.st_mode)) {
		/*
		 * as rsync: what the directory's own metadata will change,
		 * judged now; a contents root whose destination this run made
		 * (decide) is new, rsync's "cd+++++++++ ./"
		 */
		if ((root & RD_SINK_ROOT) && (root & RD_SINK_CONTENTS) && s->dest_made)
			s->items = rd_sink__alt_dir_items(s, m, RD_IT_NEW | RD_IT_LOCAL);
		else
			s->items = rd_sink__attr_items(s, &st, m);
		return 0;
	}
	ret = not_a_nondir(s, &pl, &st, path, len);
	if (ret < 0)
		return ret;
	if (rd_mkdirat(pl.pfd, pl.name, 0700) < 0)
		return sink_fail(s, errno, path, len, "mkdir");
made:
	sink_dir_note(s, pl.pfd, pl.name);
	s->items = rd_sink__alt_dir_items(s, m, RD_IT_NEW | RD_IT_LOCAL);
	return 0;
}

/*
 * A directory's POST (or its metadata): the root's comes without
 * RD_FF_ROOT in rename mode (only its name is checked); a directory.
 */
static unsigned post_how(const struct rd_sink *s, int root)
{
	unsigned how = ((unsigned)root & RD_SINK_CONTENTS) | HOW_DIR;

	if ((root & (int)RD_SINK_ROOT) && !s->have_root)
		how |= RD_SINK_ROOT;
	return how;
}

int rd_sink_dir_post(struct rd_sink *s, const char *path, size_t len, int root,
		     const struct rd_sink_meta *m)
{
	struct timespec ts[2];
	struct place pl;
	struct stat st;
	unsigned diff;
	int ret = 0, fd, created;

	s->items = 0; /* a directory's changes were judged at its mkdir */
	if (s->flags & RD_SINK_READONLY)
		return readonly(s, path, len);
	if (sel_leave(s, path, len, post_how(s, root)))
		return 0;
	ret = sink_resolve(s, path, len, post_how(s, root), &pl);
	if (ret < 0) {
		ret = dry_new(s, ret);
		s->items = 0; /* a directory that would be made was new at its mkdir */
		return ret;
	}
	fd = sink_open_dir(s, pl.pfd, pl.name, 0);
	if (fd < 0 && dry(s) && (errno == ENOENT || errno == ENOTDIR || errno == ELOOP))
		return 0; /* it would be made (or replace what is there): new already */
	if (fd < 0)
		return sink_fail(s, errno, path, len, "open directory");
	/* what differs only (a rerun of an unchanged tree changes nothing) */
	if (fstat(fd, &st) < 0) {
		ret = sink_fail(s, errno, path, len, "stat directory");
		goto out;
	}
	/*
	 * Compared after its entries were written, with the window: rsync's
	 * touch_up_dirs (a directory this copy wrote into is newer now)
	 */
	created = dir_created(s, &st);
	diff = rd_sink__attr_diff(s, &st, m, created || (s->flags & RD_SINK_PRESERVE_MODE));
	if (dry(s))
		goto out;
	if ((diff & (RD_IT_OWNER | RD_IT_GROUP)) && chown_meta(s, fd, NULL, m) < 0) {
		ret = sink_fail(s, errno, path, len, "chown");
		goto out;
	}
	if ((diff & RD_IT_PERMS) && rd_fchmod(fd, final_mode(s, m)) < 0) {
		ret = sink_fail(s, errno, path, len, "chmod");
		goto out;
	}
	/* -b without --backup-dir implies rsync's --omit-dir-times */
	if ((diff & RD_IT_TIME) && !rd_sink__omit_dir_times(s)) {
		meta_times(m, ts);
		if (rd_futimens(fd, ts) < 0) {
			ret = sink_fail(s, errno, path, len, "set times of");
			goto out;
		}
	}
out:
	close(fd);
	return ret;
}

/*
 * rsync's rules: a symlink with the same target is kept (its owner and
 * times brought in line): 0. 1: make it (the items say why), or < 0.
 * Without them (an older peer) it is always made again.
 */
static int same_link(struct rd_sink *s, const struct place *pl, const char *tgt, size_t tlen,
		     const struct rd_sink_meta *m, const char *path, size_t len)
{
	unsigned items = rd_sink__link_items(s, pl->pfd, pl->name, tgt, tlen, m);

	s->items = items;
	if (!s->sel_on || (items & (RD_IT_NEW | RD_IT_CHANGE)))
		return 1;
	return rd_sink__fix_attrs(s, pl->pfd, pl->name, items, m, path, len);
}

int rd_sink_symlink(struct rd_sink *s, const char *path, size_t len, int root, const char *target,
		    size_t tlen, const struct rd_sink_meta *m)
{
	char tmp[NAME_MAX + 1];
	struct timespec ts[2];
	struct place pl;
	char *tgt = NULL;
	unsigned items;
	int ret, tries = 0;

	s->items = 0;
	if (s->flags & RD_SINK_READONLY)
		return readonly(s, path, len);
	if (sel_leave(s, path, len, (unsigned)root))
		return 0;
	if (!target || tlen == 0 || tlen > SINK_PATH_MAX || memchr(target, '\0', tlen))
		return rd_err_set(&s->err, RD_EPROTO, 0, "%s: bad symlink target",
				  sink_esc(s, path, len));
	ret = sink_resolve(s, path, len, (unsigned)root, &pl);
	if (ret < 0)
		return dry_new(s, ret);
	ret = not_a_dir(s, &pl, path, len, 1);
	if (ret < 0)
		return ret;
	tgt = strndup(target, tlen);
	if (!tgt)
		return sink_fail(s, ENOMEM, path, len, "symlink");
	ret = same_link(s, &pl, tgt, tlen, m, path, len);
	items = s->items;
	s->items = 0; /* set once it is done */
	if (ret == 1 && (items & RD_IT_NEW)) {
		/* --link-dest, --compare-dest, --copy-dest */
		int alt = rd_sink__alt_node(s, pl.pfd, pl.name, tgt, tlen, 0, m, path, len);

		if (alt < 0 || alt == 1) {
			ret = alt < 0 ? alt : 0;
			goto out;
		}
		if (alt == 2)
			items = 0;
	}
	if (ret == 1 && dry(s))
		ret = 0; /* it would be made */
	if (ret != 1) {
		/* the same link is there already or would be made (0), or an error */
		s->items = ret ? 0 : items;
		goto out;
	}
	do {
		tmp_name(tmp, pl.name);
		ret = rd_symlinkat(tgt, pl.pfd, tmp);
	} while (ret < 0 && errno == EEXIST && ++tries < 8);
	if (ret < 0) {
		ret = sink_fail(s, errno, path, len, "symlink");
		goto out;
	}
	if (chown_meta(s, pl.pfd, tmp, m) < 0) {
		ret = sink_fail(s, errno, path, len, "chown");
		goto unlink;
	}
	if (s->flags & RD_SINK_PRESERVE_TIMES) {
		meta_times(m, ts);
		if (rd_utimensat(pl.pfd, tmp, ts, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = sink_fail(s, errno, path, len, "set times of");
			goto unlink;
		}
	}
	ret = rd_sink__backup(s, pl.pfd, pl.name, s->eff, RD_BACKUP_LINK);
	if (ret < 0)
		goto unlink;
	if (rd_renameat(pl.pfd, tmp, pl.pfd, pl.name) < 0) {
		ret = sink_fail(s, errno, path, len, "rename into place");
		goto unlink;
	}
	ret = 0;
	s->items = items;
	goto out;
unlink:
	rd_unlinkat(pl.pfd, tmp, 0);
out:
	free(tgt);
	return ret;
}

static void file_free(struct rd_sink_file *f)
{
	if (!f)
		return;
	if (f->tmpfd >= 0)
		close(f->tmpfd);
	if (f->exfd >= 0)
		close(f->exfd);
	if (f->ppfd >= 0)
		close(f->ppfd);
	rd_sink__part_release(f); /* a partial dir we made goes when left empty */
	if (f->pfd >= 0)
		close(f->pfd);
	free(f->eff);
	free(f);
}

int rd_sink__ffail(struct rd_sink_file *f, int errnum, const char *what)
{
	return sink_fail(f->s, errnum, f->path, f->path_len, what);
}

/* Temporary: O_TMPFILE in the parent, else a named O_EXCL file. */
static int tmp_open(struct rd_sink_file *f)
{
	int tries = 0;

	if (!(f->s->flags & RD_SINK_TEST_NO_TMPFILE)) {
		f->tmpfd = rd_openat(f->pfd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (f->tmpfd >= 0)
			return 0;
		if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
			return rd_sink__ffail(f, errno, "create temporary for");
	}
	do {
		tmp_name(f->tmpname, f->name);
		f->tmpfd = rd_openat(f->pfd, f->tmpname,
				  O_CREAT | O_EXCL | O_NOFOLLOW | O_RDWR | O_CLOEXEC, 0600);
	} while (f->tmpfd < 0 && errno == EEXIST && ++tries < 8);
	if (f->tmpfd < 0)
		return rd_sink__ffail(f, errno, "create temporary for");
	f->named = 1;
	return 0;
}

/*
 * A handle for path, no temporary yet: *st and *ex say what is under the
 * final name now (one look serves every check). 0 or < 0 (nothing to free).
 */
static int file_new(struct rd_sink *s, const char *path, size_t len, int root,
		    const struct rd_sink_meta *m, struct rd_sink_file **out, struct stat *st,
		    int *ex)
{
	struct rd_sink_file *f;
	struct place pl;
	unsigned items;
	int ret;

	*out = NULL;
	if (s->flags & RD_SINK_READONLY)
		return readonly(s, path, len);
	if (dry(s))
		return rd_err_set(&s->err, RD_EUSAGE, 0, "%s: a dry run writes no file",
				  sink_esc(s, path, len));
	ret = sink_resolve(s, path, len, (unsigned)root, &pl);
	if (ret < 0)
		return ret;
	*ex = rd_fstatat(pl.pfd, pl.name, st, AT_SYMLINK_NOFOLLOW) == 0 ? 0 : errno;
	if (!*ex && S_ISDIR(st->st_mode)) {
		ret = not_a_dir(s, &pl, path, len, 0);
		if (ret < 0)
			return ret;
		*ex = ENOENT; /* an empty directory went (a full one goes at the commit) */
	}
	items = *ex || !S_ISREG(st->st_mode) ? RD_IT_NEW : rd_sink__attr_items(s, st, m);
	if (m->size > (uint64_t)INT64_MAX)
		return rd_err_set(&s->err, RD_EPROTO, 0, "%s: bad size", sink_esc(s, path, len));
	f = calloc(1, sizeof(*f));
	if (!f)
		return sink_fail(s, ENOMEM, path, len, "open");
	f->s = s;
	f->tmpfd = f->exfd = f->ppfd = -1;
	f->m = *m;
	f->items = items;
	memcpy(f->path, path, len);
	f->path[len] = '\0';
	f->path_len = len;
	strcpy(f->name, pl.name);
	if (rd_sink__backups_on(s) && !(f->eff = strdup(s->eff))) {
		file_free(f);
		return sink_fail(s, ENOMEM, path, len, "open");
	}
	f->pfd = fcntl(pl.pfd, F_DUPFD_CLOEXEC, 0);
	if (f->pfd < 0) {
		ret = rd_sink__ffail(f, errno, "open");
		file_free(f);
		return ret;
	}
	*out = f;
	return 0;
}

int rd_sink_file_begin(struct rd_sink *s, const char *path, size_t len, int root,
		       const struct rd_sink_meta *m, struct rd_sink_file **out)
{
	struct rd_sink_file *f = NULL;
	struct stat st;
	int ret, ex;

	*out = NULL;
	ret = file_new(s, path, len, root, m, &f, &st, &ex);
	if (ret < 0)
		return ret;
	ret = rd_sink__part_open(f);
	if (ret == 0)
		ret = tmp_open(f);
	if (ret < 0)
		goto out;
	ret = 0;
	/*
	 * An existing regular file under the final name is worth comparing
	 * against: all of it when it has the same size (then it may be kept
	 * as it is), else its chunks that it holds whole ("existing prefix":
	 * appended logs, grown images; only with chunking set). A resumed
	 * partial is newer than it.
	 */
	if (!f->resumed && ex)
		f->absent = ex == ENOENT; /* commit may link it straight there */
	if (!ex && S_ISREG(st.st_mode))
		f->ex_mode = st.st_mode;
	if (f->resumed || ex) {
		/* a resumed partial is newer than any existing file; or there is none */
	} else if (!(s->flags & RD_SINK_FRESH) && S_ISREG(st.st_mode) &&
		   ((uint64_t)st.st_size == m->size || (s->part_chunk && st.st_size > 0))) {
		/* (RD_SINK_FRESH, a write-only module: nothing there is compared) */
		f->exfd = rd_openat(f->pfd, f->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0);
		if (f->exfd >= 0 && (fstat(f->exfd, &st) < 0 || !S_ISREG(st.st_mode))) {
			close(f->exfd);
			f->exfd = -1;
		}
		if (f->exfd >= 0)
			f->ex_size = (uint64_t)st.st_size;
	}
	/* a partial has its size from the start (its record says so); commit sizes the others */
	if (f->part && ftruncate(f->tmpfd, (off_t)m->size) < 0) {
		ret = rd_sink__ffail(f, errno, "size");
		goto out;
	}
out:
	if (ret < 0)
		rd_sink_file_abort(f);
	else
		*out = f;
	return ret;
}

int rd_sink_file_compare(struct rd_sink *s, const char *path, size_t len, int root,
			 const struct rd_sink_meta *m, struct rd_sink_file **out)
{
	struct rd_sink_file *f = NULL;
	struct place pl;
	struct stat st;
	int ret, fd = -1;

	*out = NULL;
	if (!dry(s))
		return rd_err_set(&s->err, RD_EUSAGE, 0, "%s: a comparison only in a dry run",
				  sink_esc(s, path, len));
	if (s->flags & (RD_SINK_READONLY | RD_SINK_FRESH))
		return 1; /* refused or nothing compared there, as rd_sink_file_begin */
	ret = sink_resolve(s, path, len, (unsigned)root, &pl);
	if (ret < 0 && s->absent) {
		rd_err_clear(&s->err); /* a parent would be made: nothing there */
		return 1;
	}
	if (ret < 0)
		return ret;
	/*
	 * What rd_sink_file_begin compares: a regular file of the same size,
	 * opened read only and never followed (nothing else is opened).
	 */
	if (rd_fstatat(pl.pfd, pl.name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 1 : sink_fail(s, errno, path, len, "stat");
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != m->size)
		return 1;
	fd = rd_openat(pl.pfd, pl.name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
		       0);
	if (fd < 0 && (errno == ENOENT || errno == ELOOP))
		return 1; /* gone, or a symlink now */
	if (fd < 0)
		return sink_fail(s, errno, path, len, "open");
	if (fstat(fd, &st) < 0) {
		ret = sink_fail(s, errno, path, len, "stat");
		goto out;
	}
	ret = 1; /* replaced meanwhile */
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != m->size)
		goto out;
	f = calloc(1, sizeof(*f));
	if (!f) {
		ret = sink_fail(s, ENOMEM, path, len, "open");
		goto out;
	}
	f->s = s;
	f->tmpfd = f->ppfd = f->pfd = -1;
	f->exfd = fd;
	f->ex_size = (uint64_t)st.st_size;
	f->compare = 1;
	f->m = *m;
	f->items = rd_sink__attr_items(s, &st, m);
	memcpy(f->path, path, len);
	f->path[len] = '\0';
	f->path_len = len;
	*out = f;
	fd = -1;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	return ret;
}

/* A compare-only handle (rd_sink_file_compare) writes nothing: what tried to is refused. */
static int compare_only(struct rd_sink_file *f)
{
	return rd_err_set(&f->s->err, RD_EUSAGE, 0, "%s: a dry run writes no file",
			  sink_esc(f->s, f->path, f->path_len));
}

unsigned rd_sink_file_items(const struct rd_sink_file *f)
{
	return f ? f->items : 0;
}

int rd_sink_file_has_existing(const struct rd_sink_file *f)
{
	return f && f->exfd >= 0 && f->ex_size == f->m.size;
}

int rd_sink_file_chunk_src(const struct rd_sink_file *f, uint64_t chunk)
{
	uint32_t cs = f->s->part_chunk;
	uint64_t off, end;

	if (f->rng)
		return rd_sink__range_src(f->rng, chunk);
	if (f->part && f->resumed && rd_partial_has(f->part, chunk))
		return f->trusted ? RD_SINK_CHUNK_TRUSTED : RD_SINK_CHUNK_PARTIAL;
	if (f->exfd < 0 || !cs)
		return RD_SINK_CHUNK_NONE;
	off = chunk * cs;
	end = off + cs < f->m.size ? off + cs : f->m.size;
	return off < end && end <= f->ex_size ? RD_SINK_CHUNK_EXISTING : RD_SINK_CHUNK_NONE;
}

int rd_sink_file_resumed(const struct rd_sink_file *f)
{
	return f && f->resumed;
}

const char *rd_sink_file_note(const struct rd_sink_file *f)
{
	return f && f->note[0] ? f->note : NULL;
}

void rd_sink_file_chunk_done(struct rd_sink_file *f, uint64_t chunk, int ok)
{
	if (f->rng)
		rd_sink__range_done(f->rng, chunk, ok);
	if (!f->part)
		return;
	rd_partial_mark(f->part, chunk, ok);
	/* Best effort: a record that cannot be written leaves the old one. */
	if (ok)
		rd_partial_flush(f->part, f->tmpfd, 0);
}

/* Is [off, off + len) outside the file's announced size? */
static int past_end(const struct rd_sink_file *f, size_t len, uint64_t off)
{
	return off > f->m.size || len > f->m.size - off;
}

static int range_ok(struct rd_sink_file *f, size_t len, uint64_t off)
{
	if (past_end(f, len, off))
		return rd_err_set(&f->s->err, RD_EPROTO, 0, "%s: range past the end of the file",
				  sink_esc(f->s, f->path, f->path_len));
	return 0;
}

/*
 * Read len bytes at off of the existing file (existing = 1) or of the
 * partial: touches only the file's descriptors, so a worker may call it;
 * 0 or -errno: -ERANGE past the end, -EBADF no existing file, -ENODATA it
 * shrank under us. rd_sink_file_read_error() makes the message.
 */
int rd_sink_file_pread(const struct rd_sink_file *f, int existing, void *buf, size_t len,
		       uint64_t off)
{
	int fd = existing ? f->exfd : f->tmpfd;
	char *p = buf;
	ssize_t r;

	if (existing && fd < 0)
		return -EBADF;
	if (past_end(f, len, off))
		return -ERANGE;
	if (existing && off + len > f->ex_size)
		return -ENODATA;
	while (len) {
		r = pread(fd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ENODATA;
		p += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

int rd_sink_file_read_error(struct rd_sink_file *f, int existing, int errnum)
{
	const char *which = existing ? "existing" : "partial";

	switch (errnum) {
	case 0:
		return 0;
	case EBADF:
		return rd_err_set(&f->s->err, RD_EUSAGE, 0, "%s: no existing file",
				  sink_esc(f->s, f->path, f->path_len));
	case ERANGE:
		return rd_err_set(&f->s->err, RD_EPROTO, 0, "%s: range past the end of the file",
				  sink_esc(f->s, f->path, f->path_len));
	case ENODATA:
		return rd_err_set(&f->s->err, RD_ESYS, 0, "%s: %s file shrank",
				  sink_esc(f->s, f->path, f->path_len), which);
	default:
		return rd_sink__ffail(f, errnum, existing ? "read existing" : "read partial of");
	}
}

int rd_sink_file_read_existing(struct rd_sink_file *f, void *buf, size_t len, uint64_t off)
{
	return rd_sink_file_read_error(f, 1, -rd_sink_file_pread(f, 1, buf, len, off));
}

int rd_sink_file_read_partial(struct rd_sink_file *f, void *buf, size_t len, uint64_t off)
{
	return rd_sink_file_read_error(f, 0, -rd_sink_file_pread(f, 0, buf, len, off));
}

int rd_sink_file_write(struct rd_sink_file *f, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	ssize_t r;

	if (f->compare)
		return compare_only(f);
	if (range_ok(f, len, off) < 0)
		return -RD_EPROTO;
	while (len) {
		r = pwrite(f->tmpfd, p, len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return rd_sink__ffail(f, errno, "write");
		p += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

int rd_sink_file_pwrite(struct rd_sink_file *f, const void *buf, size_t len, uint64_t off)
{
	const char *p = buf;
	uint64_t at = off;
	size_t left = len;
	ssize_t r;

	if (f->compare)
		return -EBADF; /* a dry run's comparison writes nothing */
	if (past_end(f, len, off))
		return -ERANGE;
	while (left) {
		r = pwrite(f->tmpfd, p, left, (off_t)at);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		p += r;
		left -= (size_t)r;
		at += (uint64_t)r;
	}
	/* best effort: a file system without it just writes back later */
	if (len)
		sync_file_range(f->tmpfd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
	return 0;
}

int rd_sink_file_write_error(struct rd_sink_file *f, int errnum)
{
	if (errnum == ERANGE)
		return rd_err_set(&f->s->err, RD_EPROTO, 0, "%s: range past the end of the file",
				  sink_esc(f->s, f->path, f->path_len));
	return rd_sink__ffail(f, errnum, "write");
}

int rd_sink_file_copy_existing(struct rd_sink_file *f, uint64_t off, size_t len)
{
	char buf[16384];
	loff_t in = (loff_t)off, o = (loff_t)off;
	ssize_t r;
	int ret;

	if (f->compare)
		return compare_only(f);
	if (f->exfd < 0)
		return rd_err_set(&f->s->err, RD_EUSAGE, 0, "%s: no existing file",
				  sink_esc(f->s, f->path, f->path_len));
	if (range_ok(f, len, off) < 0)
		return -RD_EPROTO;
	while (len) {
		r = copy_file_range(f->exfd, &in, f->tmpfd, &o, len, 0);
		if (r > 0) {
			len -= (size_t)r;
			continue;
		}
		if (r == 0)
			return rd_err_set(&f->s->err, RD_ESYS, 0, "%s: existing file shrank",
					  sink_esc(f->s, f->path, f->path_len));
		if (errno == EINTR)
			continue;
		if (errno == ENOSPC || errno == EDQUOT || errno == EIO)
			return rd_sink__ffail(f, errno, "copy existing");
		/* EXDEV, EINVAL, ENOSYS, EOPNOTSUPP...: copy through a buffer */
		r = (ssize_t)(len < sizeof(buf) ? len : sizeof(buf));
		ret = rd_sink_file_read_existing(f, buf, (size_t)r, (uint64_t)in);
		if (ret < 0)
			return ret;
		ret = rd_sink_file_write(f, buf, (size_t)r, (uint64_t)o);
		if (ret < 0)
			return ret;
		in += r;
		o += r;
		len -= (size_t)r;
	}
	return 0;
}

/* Owner, mode, times on fd: chown first, it would clear setuid bits. */
static int apply_meta(struct rd_sink_file *f, int fd)
{
	struct timespec ts[2];

	mode_t mode = final_mode(f->s, &f->m);

	/* rsync's rules without -p: a file that was there keeps its permissions */
	if (f->ex_mode && f->s->sel_on && !(f->s->flags & RD_SINK_PRESERVE_MODE))
		mode = f->ex_mode & 07777;
	if (chown_meta(f->s, fd, NULL, &f->m) < 0)
		return rd_sink__ffail(f, errno, "chown");
	if (rd_fchmod(fd, mode) < 0)
		return rd_sink__ffail(f, errno, "chmod");
	if (f->s->flags & RD_SINK_PRESERVE_TIMES) {
		meta_times(&f->m, ts);
		if (rd_futimens(fd, ts) < 0)
			return rd_sink__ffail(f, errno, "set times of");
	}
	return 0;
}

/* Link the O_TMPFILE inode as name in the parent (-errno: EEXIST if taken). */
static int link_tmp(struct rd_sink_file *f, const char *name)
{
	char proc[64];
	int r;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", f->tmpfd);
	r = rd_linkat(AT_FDCWD, proc, f->pfd, name, AT_SYMLINK_FOLLOW);
	if (r < 0 && errno == ENOENT)
		r = rd_linkat(f->tmpfd, "", f->pfd, name, AT_EMPTY_PATH);
	return r < 0 ? -errno : 0;
}

/* Give the O_TMPFILE inode a temporary name (linkat cannot replace). */
static int tmp_link(struct rd_sink_file *f)
{
	int tries = 0, r;

	do {
		tmp_name(f->tmpname, f->name);
		r = link_tmp(f, f->tmpname);
	} while (r == -EEXIST && ++tries < 8);
	if (r < 0)
		return rd_sink__ffail(f, -r, "link temporary of");
	f->named = 1;
	return 0;
}

/* Everything but the name: size, the data to disk (fsync_now: alone), metadata. */
static int seal(struct rd_sink_file *f, int fsync_now)
{
	int ret;

	if (f->compare)
		return compare_only(f);
	/* a range is sealed by rd_sink_file_commit (its record), never sized or named */
	if (f->sealed || (f->rng && !rd_sink__range_is_commit(f->rng)))
		return 0;
	if (ftruncate(f->tmpfd, (off_t)f->m.size) < 0)
		return rd_sink__ffail(f, errno, "size");
	if (fsync_now && fsync(f->tmpfd) < 0)
		return rd_sink__ffail(f, errno, "fsync");
	ret = apply_meta(f, f->tmpfd);
	if (ret < 0)
		return ret;
	f->sealed = 1;
	return 0;
}

int rd_sink_file_seal(struct rd_sink_file *f)
{
	return seal(f, 0);
}

int rd_sink_sync(struct rd_sink *s)
{
	if (syncfs(s->dest_fd) < 0)
		return rd_err_set(&s->err, sink_status(errno), errno, "%s: syncfs", s->dest_esc);
	return 0;
}

int rd_sink_wants_sync(const struct rd_sink *s)
{
	return !!(s->flags & RD_SINK_FSYNC);
}

int rd_sink_file_commit(struct rd_sink_file *f, int keep_existing)
{
	struct rd_sink *s = f->s;
	int batched = f->sealed, ret;

	if (f->compare) {
		ret = compare_only(f); /* nor is the existing file's metadata changed */
		goto out;
	}
	if (f->rng && !rd_sink__range_is_commit(f->rng)) {
		ret = rd_sink__range_seal(f->rng, f->tmpfd);
		if (ret)
			ret = rd_sink__ffail(f, ret == -EINVAL ? EIO : -ret, "seal the range of");
		goto out;
	}
	if (keep_existing) {
		if (f->exfd < 0) {
			ret = rd_err_set(&s->err, RD_EUSAGE, 0, "%s: no existing file to keep",
					 sink_esc(s, f->path, f->path_len));
			goto out;
		}
		ret = apply_meta(f, f->exfd);
		if (!ret)
			rd_sink__link_record(f, f->exfd);
		if (!ret && f->part) {
			rd_partial_remove(f->part, 1); /* identical: the partial is litter */
			rd_partial_free(f->part);
			f->part = NULL;
			f->named = 0;
		}
		goto out;
	}
	ret = seal(f, !!(s->flags & RD_SINK_FSYNC));
	if (ret < 0)
		goto out;
	if (!f->named && f->absent) {
		/* nothing was there: the complete file takes its name at once */
		ret = link_tmp(f, f->name);
		if (!ret)
			goto placed;
		if (ret != -EEXIST) {
			ret = rd_sink__ffail(f, -ret, "link into place");
			goto out;
		}
	}
	if (!f->named) {
		ret = tmp_link(f);
		if (ret < 0)
			goto out;
	}
	/*
	 * Room 2: a plain file (its temporary name beside the final one, no
	 * backup, not the first of a link group whose links name it) may
	 * wait for its room until the end.
	 */
	ret = not_a_dir(s, &(struct place){.pfd = f->pfd, .name = f->name}, f->path, f->path_len,
			f->eff || f->part || f->rng || f->link_first ? 1 : 2);
	if (ret == 1 && rd_sink__mirror_later(s, f->name, f->tmpname, f->path, f->path_len)) {
		/* it waits, verified, under its temporary name; the mirror renames it or removes it */
		f->named = 0;
		ret = 0;
		goto out;
	}
	if (ret == 1)
		ret = not_a_dir(s, &(struct place){.pfd = f->pfd, .name = f->name}, f->path,
				f->path_len, 1);
	if (ret < 0)
		goto out;
	/* -b: the old entry keeps a second name before the new one takes this */
	ret = f->eff ? rd_sink__backup(s, f->pfd, f->name, f->eff, RD_BACKUP_LINK) : 0;
	if (ret < 0)
		goto out;
	if (rd_renameat((f->part || f->rng) && f->ppfd >= 0 ? f->ppfd : f->pfd, f->tmpname, f->pfd,
			f->name) < 0) {
		ret = rd_sink__ffail(f, errno, "rename into place");
		goto out;
	}
	f->named = 0; /* the temporary name is gone */
placed:
	ret = 0;
	rd_sink__link_record(f, f->tmpfd);
	if (f->rng)
		rd_sink__range_cleanup(f->rng); /* its data is the final file now */
	if (f->part) {
		rd_partial_remove(f->part, 0); /* its data is the final file now */
		rd_partial_free(f->part);
		f->part = NULL;
	}
	/* sealed for a batch: the caller syncs the filesystem once for all */
	if (!batched && (s->flags & RD_SINK_FSYNC) && fsync(f->pfd) < 0)
		ret = rd_sink__ffail(f, errno, "fsync directory of");
out:
	rd_sink_file_abort(f);
	return ret;
}

void rd_sink_file_abort(struct rd_sink_file *f)
{
	if (!f)
		return;
	if (f->rng) {
		/* shared with other sessions: keep the data, write our record */
		rd_sink__range_abort(f->rng);
		rd_sink__range_free(f->rng);
	} else if (f->part) {
		/* Keep what was verified, and the record that says so. */
		if (f->named && rd_partial_empty(f->part))
			rd_partial_remove(f->part, 1); /* nothing verified: no litter */
		else if (f->named) {
			rd_partial_trim(f->part, f->tmpfd);
			rd_partial_flush(f->part, f->tmpfd, 1);
		}
		rd_partial_free(f->part);
	} else if (f->named && f->pfd >= 0) {
		rd_unlinkat(f->pfd, f->tmpname, 0);
	}
	file_free(f);
}

/* Errors of a handle live on its sink: commit and abort free the handle. */
const struct rd_err *rd_sink_file_err(const struct rd_sink_file *f)
{
	return f ? &f->s->err : NULL;
}

/*
 * Doors for rd_sink_meta.c (declared in rd_sink_priv.h): the confinement
 * and naming rules stay in this file, the metadata code in its own.
 */
struct rd_err *rd_sink__err(struct rd_sink *s)
{
	return &s->err;
}

unsigned rd_sink__flags(const struct rd_sink *s)
{
	return s->flags;
}

void rd_sink_set_select(struct rd_sink *s, const struct rd_sink_select *sel)
{
	s->sel = *sel;
	s->sel_on = 1;
}

const struct rd_sink_select *rd_sink__select(const struct rd_sink *s)
{
	return s->sel_on ? &s->sel : NULL;
}

unsigned rd_sink_items(const struct rd_sink *s)
{
	return s->items;
}

unsigned rd_sink__set_items(struct rd_sink *s, unsigned items)
{
	s->items = items;
	return items;
}

int rd_sink__want_owner(const struct rd_sink *s)
{
	return want_owner(s);
}

int rd_sink__want_group(const struct rd_sink *s)
{
	return want_group(s);
}

mode_t rd_sink__final_mode(const struct rd_sink *s, const struct rd_sink_meta *m)
{
	return final_mode(s, m);
}

int rd_sink__sel_leave(struct rd_sink *s, const char *path, size_t len, int root)
{
	return sel_leave(s, path, len, (unsigned)root);
}

int rd_sink__dry(const struct rd_sink *s)
{
	return dry(s);
}

int rd_sink__dry_new(struct rd_sink *s, int ret)
{
	return dry_new(s, ret);
}

int rd_sink__resolve(struct rd_sink *s, const char *path, size_t len, int root, int *pfd,
		     const char **name)
{
	struct place pl;
	int ret = sink_resolve(s, path, len, (unsigned)root, &pl);

	if (ret < 0)
		return ret;
	*pfd = pl.pfd;
	*name = pl.name;
	return 0;
}

const char *rd_sink__esc(struct rd_sink *s, const char *p, size_t len)
{
	return sink_esc(s, p, len);
}

int rd_sink__fail(struct rd_sink *s, int errnum, const char *p, size_t len, const char *what)
{
	return sink_fail(s, errnum, p, len, what);
}

void rd_sink__tmp_name(char *out, const char *name)
{
	tmp_name(out, name);
}

/* Open the directory path (made by rd_sink_mkdir): fd, or a negative status. */
int rd_sink__open_dir(struct rd_sink *s, const char *path, size_t len, int root)
{
	struct place pl;
	int ret, fd;

	ret = sink_resolve(s, path, len, post_how(s, root), &pl);
	if (ret < 0)
		return ret;
	fd = sink_open_dir(s, pl.pfd, pl.name, 0);
	if (fd < 0)
		return sink_fail(s, errno, path, len, "open directory");
	return fd;
}

/*
 * Where path lands: *pfd gets a dup of its parent (the caller closes it),
 * name its last component. A directory under that name is refused.
 */
int rd_sink__not_a_dir(struct rd_sink *s, int pfd, const char *name, const char *path, size_t len)
{
	return not_a_dir(s, &(struct place){.pfd = pfd, .name = name}, path, len, 1);
}

int rd_sink__place(struct rd_sink *s, const char *path, size_t len, int root, int *pfd,
		   char name[NAME_MAX + 1])
{
	struct place pl;
	int ret;

	*pfd = -1;
	if (s->flags & RD_SINK_READONLY)
		return readonly(s, path, len);
	ret = sink_resolve(s, path, len, (unsigned)root, &pl);
	if (ret < 0)
		return ret;
	ret = not_a_dir(s, &pl, path, len, 1);
	if (ret < 0)
		return ret;
	*pfd = fcntl(pl.pfd, F_DUPFD_CLOEXEC, 0);
	if (*pfd < 0)
		return sink_fail(s, errno, path, len, "open parent of");
	snprintf(name, NAME_MAX + 1, "%s", pl.name);
	return 0;
}

/* Owner, then mode (through an O_PATH descriptor: never a followed name), then times. */
int rd_sink__node_meta(struct rd_sink *s, int pfd, const char *name, const struct rd_sink_meta *m,
		       const char *path, size_t len)
{
	struct timespec ts[2];
	char proc[64];
	int fd, ret = 0;

	if (chown_meta(s, pfd, name, m) < 0)
		return sink_fail(s, errno, path, len, "chown");
	fd = rd_openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0)
		return sink_fail(s, errno, path, len, "open");
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (rd_fchmodat(AT_FDCWD, proc, final_mode(s, m), 0) < 0) {
		ret = sink_fail(s, errno, path, len, "chmod");
		goto out;
	}
	if (s->flags & RD_SINK_PRESERVE_TIMES) {
		meta_times(m, ts);
		if (rd_utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
			ret = sink_fail(s, errno, path, len, "set times of");
	}
out:
	close(fd);
	return ret;
}

int rd_sink__file_fd(const struct rd_sink_file *f)
{
	return f->tmpfd;
}

struct rd_sink *rd_sink__file_sink(struct rd_sink_file *f)
{
	return f->s;
}

const char *rd_sink__file_path(const struct rd_sink_file *f, size_t *len)
{
	*len = f->path_len;
	return f->path;
}

/* Doors for rd_sink_range.c (rd_sink_priv.h). */
int rd_sink__file_new(struct rd_sink *s, const char *path, size_t len, int root,
		      const struct rd_sink_meta *m, struct rd_sink_file **out)
{
	struct stat st;
	int ret, ex;

	ret = file_new(s, path, len, root, m, out, &st, &ex);
	if (ret < 0 || !s->part_dir[0])
		return ret;
	ret = rd_sink__part_dir_open(*out);
	if (ret < 0) {
		file_free(*out);
		*out = NULL;
	}
	return ret;
}

void rd_sink__chunking(const struct rd_sink *s, uint32_t *cs, int *sum, const char **digest)
{
	*cs = s->part_chunk;
	*sum = s->part_sum;
	*digest = s->part_digest;
}

int rd_sink_rewrites(const struct rd_sink *s)
{
	return s->sel_on && s->sel.compare != RD_SINK_CMP_CHECKSUM;
}

int rd_sink_checksums(const struct rd_sink *s)
{
	return s->sel_on && s->sel.compare == RD_SINK_CMP_CHECKSUM;
}
