// SPDX-License-Identifier: MIT
/*
 * Held directories and lazy opening (issue 28).
 *
 * The walk stats a regular file and moves on; the file is opened only if
 * its data is wanted (the receiver's first GET of it), by its name
 * beneath the directory it was found in, held open for it meanwhile. The
 * entries of one directory share one handle (reference-counted: the
 * walk's level holds one reference while it walks the directory, each
 * entry one until it is done), so holding costs one descriptor per
 * directory, not one per file. Opening checks it is still what the walk
 * saw, so nothing the walk did not stat is ever sent: O_NOFOLLOW (a
 * symlink swapped in is refused), and the same device, inode, size and
 * mtime (a file renamed in, or written since, is "changed while walking").
 */
#include "lib/tree/rd_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/base/rd_fsid.h"
#include "lib/tree/rd_tree_priv.h"

struct rd_tree_dir {
	int fd;
	unsigned refs;
	struct rd_tree_dirs *ds; /* NULL once the tree closed */
	struct rd_tree_dir *next, *prev;
};

struct rd_tree_dir *rd_tree__dir_new(struct rd_tree_dirs *ds, int fd)
{
	struct rd_tree_dir *d = calloc(1, sizeof(*d));

	if (!d) {
		close(fd);
		return NULL;
	}
	d->fd = fd;
	d->refs = 1;
	d->ds = ds;
	d->next = ds->head;
	if (ds->head)
		ds->head->prev = d;
	ds->head = d;
	ds->n++;
	return d;
}

struct rd_tree_dir *rd_tree__dir_get(struct rd_tree_dir *d)
{
	d->refs++;
	return d;
}

void rd_tree_dir_put(struct rd_tree_dir *d)
{
	if (!d || --d->refs)
		return;
	if (d->ds) {
		if (d->prev)
			d->prev->next = d->next;
		else
			d->ds->head = d->next;
		if (d->next)
			d->next->prev = d->prev;
		d->ds->n--;
	}
	close(d->fd);
	free(d);
}

void rd_tree__dirs_detach(struct rd_tree_dirs *ds)
{
	struct rd_tree_dir *d, *next;

	for (d = ds->head; d; d = next) {
		next = d->next;
		d->ds = NULL;
		d->next = d->prev = NULL;
	}
	ds->head = NULL;
	ds->n = 0;
}

int rd_tree_dir_fd(const struct rd_tree_dir *d)
{
	return d ? d->fd : -1;
}

int rd_tree_open_seen(const struct rd_tree_dir *d, const char *name, const struct rd_tree_seen *v,
		      int *out, struct rd_err *err)
{
	struct stat st;
	int fd, e;

	*out = -1;
	if (!d)
		return rd_err_set(err, RD_EUSAGE, 0, "not opened: its directory is not held");
	/* O_NONBLOCK: a fifo swapped in must not block the open */
	fd = rd_openat(d->fd, name, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT)
			return rd_err_set(err, RD_EVANISHED, 0, "file has vanished");
		if (e == ELOOP || e == ENOTDIR || e == ENXIO)
			return rd_err_set(err, RD_ESYS, 0, "changed while walking; skipped");
		return rd_err_set(err, RD_ESYS, e, "opening");
	}
	if (fstat(fd, &st) < 0) {
		e = errno;
		close(fd);
		return rd_err_set(err, RD_ESYS, e, "opening");
	}
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_dev != v->dev ||
	    (uint64_t)st.st_ino != v->ino || (uint64_t)st.st_size != v->size ||
	    st.st_mtim.tv_sec != v->mtime_sec || (uint32_t)st.st_mtim.tv_nsec != v->mtime_nsec) {
		close(fd);
		return rd_err_set(err, RD_ESYS, 0, "changed while walking; skipped");
	}
	/* O_NONBLOCK only guarded the open */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	*out = fd;
	return 0;
}
