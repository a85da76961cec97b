// SPDX-License-Identifier: MIT
/*
 * A module's directory, from configuration to session (issue 27 item 7).
 *
 * The daemon pins each module when it loads its configuration
 * (rd_module_pin): the configured path is resolved once (the
 * administrator's own symlinks, such as /data -> /mnt/vol/data, are
 * followed then and only then), and the real path with the directory's
 * device and inode is kept. Every session opens that real path again
 * from "/" with openat2(RESOLVE_NO_SYMLINKS): a symlink that appeared in
 * any component since is refused, and so is a directory that is not the
 * one loaded (same device and inode), so a module path that a local user
 * swapped for a symlink or another directory after start leads nowhere.
 * Holding an O_PATH descriptor from load instead would keep a removed or
 * unmounted directory served until the next reload, and would keep its
 * file system busy.
 *
 * The resolution of the configured path is the daemon's (the path is the
 * administrator's, checked as above); entering the directory is the
 * session's: "." is opened beneath the pinned descriptor through
 * rd_openat, so it runs as the module's uid/gid (lib/base/rd_fsid.h) and
 * needs that identity's search and read permission on the directory.
 */
#include "lib/session/rd_session.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/base/rd_fsid.h"

/* openat2 from "/" without following any symlink, as the daemon itself. */
static int open_nofollow(const char *path, int flags)
{
	struct open_how how;
	long r;

	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_CLOEXEC);
	how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	r = syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	return r < 0 ? -errno : (int)r;
}

int rd_module_pin(struct rd_module *m, struct rd_err *err)
{
	char *real = realpath(m->path, NULL);
	struct stat st;
	int fd = -1, ret = 0;

	m->pinned = 0;
	if (!real)
		return rd_err_set(err, RD_ESYS, errno, "module %s: path %s", m->name, m->path);
	if (strlen(real) >= sizeof(m->path)) {
		ret =
		    rd_err_set(err, RD_EUSAGE, 0, "module %s: path %s is too long", m->name, real);
		goto out;
	}
	fd = open_nofollow(real, O_PATH | O_DIRECTORY);
	if (fd < 0) {
		ret = rd_err_set(err, RD_ESYS, -fd, "module %s: path %s", m->name, real);
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		ret = rd_err_set(err, RD_ESYS, errno, "module %s: path %s", m->name, real);
		goto out;
	}
	snprintf(m->path, sizeof(m->path), "%s", real);
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->pinned = 1;
out:
	if (fd >= 0)
		close(fd);
	free(real);
	return ret;
}

int rd_module_open(const struct rd_module *m, int *out, struct rd_err *err)
{
	struct stat st;
	int pfd, fd, ret = 0;

	*out = -1;
	pfd = open_nofollow(m->path, O_PATH | O_DIRECTORY);
	if (pfd < 0)
		return rd_err_set(err, RD_ESYS, 0,
				  "module %s: %s %s; refusing its sessions until it is restored or "
				  "the configuration is reloaded (SIGHUP)",
				  m->name, m->path,
				  pfd == -ELOOP	   ? "now has a symlink on its path"
				  : pfd == -ENOENT ? "is gone"
						   : strerror(-pfd));
	if (fstat(pfd, &st) < 0) {
		ret = rd_err_set(err, RD_ESYS, errno, "module %s: %s", m->name, m->path);
		goto out;
	}
	if (m->pinned && (st.st_dev != m->dev || st.st_ino != m->ino)) {
		ret =
		    rd_err_set(err, RD_ESYS, 0,
			       "module %s: %s is no longer the directory loaded (device %u:%u "
			       "inode %llu, loaded as %u:%u inode %llu): it was replaced; refusing "
			       "its sessions until it is restored or the configuration is "
			       "reloaded (SIGHUP)",
			       m->name, m->path, major(st.st_dev), minor(st.st_dev),
			       (unsigned long long)st.st_ino, major(m->dev), minor(m->dev),
			       (unsigned long long)m->ino);
		goto out;
	}
	/* Entering it is the session's identity's to do (see the top). */
	fd = rd_openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0) {
		ret = rd_err_set(err, RD_ESYS, errno, "module %s: %s", m->name, m->path);
		goto out;
	}
	*out = fd;
out:
	close(pfd);
	return ret;
}
