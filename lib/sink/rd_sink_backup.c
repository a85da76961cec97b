// SPDX-License-Identifier: MIT
/* Backups on the receiving side; see rd_sink_backup.h. */
#include "lib/sink/rd_sink_backup.h"
#include "lib/sink/rd_sink.h"
#include "lib/base/rd_fsid.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

struct rd_backup {
	int dest_fd; /* the destination: modes of the directories backups mirror */
	int dir_fd;  /* the backup directory, or -1: beside each entry */
	char suffix[RD_BACKUP_SUFFIX_MAX + 1];
	char inside[PATH_MAX]; /* the backup directory below the destination, or "" */
};

const char *rd_backup_check(const char *dir, const char *suffix)
{
	if (suffix && strchr(suffix, '/'))
		return "--suffix cannot contain slashes";
	if (suffix && strlen(suffix) > RD_BACKUP_SUFFIX_MAX)
		return "--suffix is longer than 255 bytes";
	if (suffix && !suffix[0] && !dir)
		return "--suffix cannot be empty without a --backup-dir";
	if (dir && !dir[0])
		return "--backup-dir cannot be empty";
	return NULL;
}

/*
 * Open (making what is missing) the directories of path below fd, one
 * component at a time; nofollow: never through a symlink. Returns an fd
 * (fd itself duplicated for ""), or -errno. mode_of (may be -1): a
 * directory whose same path gives a new directory's mode.
 */
static int walk_make(int fd, const char *path, int nofollow, int mode_of)
{
	char comp[NAME_MAX + 1], sofar[PATH_MAX];
	const char *p = path, *e;
	size_t n, so = 0;
	struct stat st;
	int cur, next, err;

	cur = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (cur < 0)
		return -errno;
	sofar[0] = '\0';
	while (*p) {
		while (*p == '/')
			p++;
		if (!*p)
			break;
		e = strchrnul(p, '/');
		n = (size_t)(e - p);
		if (n > NAME_MAX || so + n + 2 > sizeof(sofar)) {
			close(cur);
			return -ENAMETOOLONG;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		if (so)
			sofar[so++] = '/';
		memcpy(sofar + so, p, n);
		so += n;
		sofar[so] = '\0';
		next = rd_openat(
		    cur, comp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0), 0);
		if (next < 0 && errno == ENOENT) {
			if (rd_mkdirat(cur, comp, 0777) && errno != EEXIST) {
				err = -errno;
				close(cur);
				return err;
			}
			next = rd_openat(
			    cur, comp,
			    O_RDONLY | O_DIRECTORY | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0), 0);
			/* as rsync makes them: the mode of the destination's directory there */
			if (next >= 0 && mode_of >= 0 &&
			    !rd_fstatat(mode_of, sofar, &st, AT_SYMLINK_NOFOLLOW) &&
			    S_ISDIR(st.st_mode)) {
				if (rd_fchmod(next, st.st_mode & 07777)) {
					/* best effort, as rsync: the backup itself matters */
				}
				if (!geteuid() && rd_fchown(next, st.st_uid, st.st_gid)) {
					/* best effort */
				}
			}
		}
		if (next < 0) {
			err = -errno;
			close(cur);
			return err == -ELOOP ? -ENOTDIR : err;
		}
		close(cur);
		cur = next;
		p = e;
	}
	return cur;
}

int rd_backup_open(struct rd_backup **out, int dest_fd, int root_fd, const char *dest_rel,
		   const char *dir, const char *suffix, struct rd_err *err)
{
	struct rd_backup *b;
	char path[PATH_MAX];
	const char *why = rd_backup_check(dir, suffix);
	int ret = 0, r;

	*out = NULL;
	if (why)
		return rd_err_set(err, RD_EUSAGE, 0, "%s", why);
	b = calloc(1, sizeof(*b));
	if (!b)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "backups");
	b->dir_fd = -1;
	snprintf(b->suffix, sizeof(b->suffix), "%s", suffix ? suffix : dir ? "" : "~");
	b->dest_fd = fcntl(dest_fd, F_DUPFD_CLOEXEC, 0);
	if (b->dest_fd < 0) {
		ret = rd_err_set(err, RD_ESYS, errno, "backups");
		goto out;
	}
	if (!dir)
		goto out;
	if (root_fd >= 0) {
		/* a module: relative to the destination, never out of the module */
		r = rd_sink_confined_path(dest_rel ? dest_rel : "", dir, path, sizeof(path));
		if (r) {
			ret = rd_err_set(err, RD_EPERM, 0, "--backup-dir %s %s", dir,
					 r == -1 ? "leaves the module" : "is too long");
			goto out;
		}
		r = walk_make(root_fd, path, 1, -1);
		/* the part below the destination, for --delete to leave alone */
		if (dest_rel && dest_rel[0]) {
			size_t dl = strlen(dest_rel);

			if (!strncmp(path, dest_rel, dl) && path[dl] == '/')
				snprintf(b->inside, sizeof(b->inside), "%s", path + dl + 1);
		} else {
			snprintf(b->inside, sizeof(b->inside), "%s", path);
		}
	} else {
		r = dir[0] == '/' ? walk_make(AT_FDCWD, dir, 0, -1)
				  : walk_make(dest_fd, dir, 0, -1);
		if (dir[0] != '/' && !rd_sink_confined_path("", dir, path, sizeof(path)))
			snprintf(b->inside, sizeof(b->inside), "%s", path);
	}
	if (r < 0) {
		ret = rd_err_set(err, r == -EACCES || r == -EPERM ? RD_EPERM : RD_ESYS, -r,
				 "--backup-dir %s", dir);
		goto out;
	}
	b->dir_fd = r;
out:
	if (ret)
		rd_backup_close(b);
	else
		*out = b;
	return ret;
}

void rd_backup_close(struct rd_backup *b)
{
	if (!b)
		return;
	if (b->dir_fd >= 0)
		close(b->dir_fd);
	if (b->dest_fd >= 0)
		close(b->dest_fd);
	free(b);
}

int rd_backup_protects(const struct rd_backup *b, const char *rel, size_t len, int is_dir)
{
	size_t sl, il;

	(void)is_dir;
	if (!b)
		return 0;
	if (b->dir_fd < 0) {
		/* rsync adds "P *SUFFIX" */
		sl = strlen(b->suffix);
		return sl && len >= sl && !memcmp(rel + len - sl, b->suffix, sl);
	}
	il = strlen(b->inside);
	return il && len >= il && !memcmp(rel, b->inside, il) && (len == il || rel[il] == '/');
}

int rd_backup_keep(struct rd_backup *b, int dirfd, const char *name, const char *rel, int how,
		   struct rd_err *err)
{
	char bname[NAME_MAX + 1], parent[PATH_MAX], tmp[64];
	const char *base = strrchr(rel, '/');
	struct stat st;
	uint32_t rnd;
	int tfd = dirfd, own = 0, ret = 0, tries;

	if (rd_fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW))
		return errno == ENOENT ? 0 : rd_err_set(err, RD_ESYS, errno, "backup of %s", rel);
	if (S_ISDIR(st.st_mode))
		return 0; /* directories are not backed up; their entries are */
	base = base ? base + 1 : rel;
	if (strlen(base) + strlen(b->suffix) > NAME_MAX)
		return rd_err_set(err, RD_EUSAGE, 0,
				  "backup of %s: the name with suffix %s is too long", rel,
				  b->suffix);
	snprintf(bname, sizeof(bname), "%s%s", base, b->suffix);
	if (b->dir_fd >= 0) {
		snprintf(parent, sizeof(parent), "%.*s", base > rel ? (int)(base - rel - 1) : 0,
			 rel);
		tfd = walk_make(b->dir_fd, parent, 1, b->dest_fd);
		if (tfd < 0)
			return rd_err_set(err, RD_ESYS, -tfd, "backup of %s: making its directory",
					  rel);
		own = 1;
	} else if (!b->suffix[0]) {
		return 0; /* the same name: nothing to keep apart (refused by rd_backup_check) */
	}
	if (!rd_fstatat(tfd, bname, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode)) {
		ret = rd_err_set(err, RD_ESYS, 0, "backup of %s: a directory is in the way (%s)",
				 rel, bname);
		goto out;
	}
	if (how == RD_BACKUP_LINK) {
		/* a second name first: the final name keeps the old entry meanwhile */
		int lerr = EEXIST;

		for (tries = 0; tries < 8 && lerr == EEXIST; tries++) {
			if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
				rnd = (uint32_t)getpid() + (uint32_t)tries;
			snprintf(tmp, sizeof(tmp), ".rdcp-bak.%08x", rnd);
			lerr = rd_linkat(dirfd, name, tfd, tmp, 0) ? errno : 0;
		}
		if (!lerr) {
			if (!rd_renameat(tfd, tmp, tfd, bname))
				goto out;
			ret = rd_err_set(err, RD_ESYS, errno, "backup of %s", rel);
			rd_unlinkat(tfd, tmp, 0);
			goto out;
		}
		if (lerr == EXDEV) {
			ret = rd_err_set(err, RD_ESYS, 0,
					 "backup of %s: the backup directory is on another file "
					 "system",
					 rel);
			goto out;
		}
		/* no second name here (links refused): move it, the caller fills the name */
	}
	if (!rd_renameat(dirfd, name, tfd, bname))
		goto out;
	if (errno == EXDEV)
		ret =
		    rd_err_set(err, RD_ESYS, 0,
			       "backup of %s: the backup directory is on another file system", rel);
	else
		ret = rd_err_set(err, RD_ESYS, errno, "backup of %s", rel);
out:
	if (own)
		close(tfd);
	return ret;
}
