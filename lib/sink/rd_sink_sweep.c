// SPDX-License-Identifier: MIT
/*
 * The partials sweep (rd_sink_sweep.h): a depth-first walk on directory
 * descriptors. Each candidate is opened O_NOFOLLOW, checked through its
 * descriptor, locked like a session would, and its names are checked
 * again against the descriptors just before they are unlinked, so what is
 * removed is exactly what was checked.
 */
#include "lib/sink/rd_sink_sweep.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/sink/rd_sink_partial.h"

struct walk {
	dev_t dev;
	time_t cutoff;
	volatile int *stop;
	rd_sweep_fn fn;
	void *ctx;
	struct rd_sweep_stats *st;
	char path[PATH_MAX];
};

static int same_file(int dfd, const char *name, const struct stat *b)
{
	struct stat a;

	return !fstatat(dfd, name, &a, AT_SYMLINK_NOFOLLOW) && a.st_dev == b->st_dev &&
	       a.st_ino == b->st_ino;
}

static time_t newer(const struct stat *a, const struct stat *b)
{
	return a->st_mtime > b->st_mtime ? a->st_mtime : b->st_mtime;
}

/* rec is ".rdcp-partial.X.rec" in dfd: remove it and its data if they are rdcp's and old. */
static void one(struct walk *w, int dfd, const char *rec, size_t plen)
{
	char data[NAME_MAX + 1];
	size_t n = strlen(rec) - strlen(PARTIAL_REC_SUFX);
	struct stat rs, ds;
	int rfd, dfile = -1;
	time_t t;

	memcpy(data, rec, n);
	data[n] = '\0';
	rfd = openat(dfd, rec, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (rfd < 0 || fstat(rfd, &rs) || !S_ISREG(rs.st_mode) || !rd_partial_record_valid(rfd)) {
		w->st->foreign++;
		goto out;
	}
	dfile = openat(dfd, data, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (dfile >= 0 && (fstat(dfile, &ds) || !S_ISREG(ds.st_mode))) {
		w->st->foreign++;
		goto out;
	}
	if (dfile < 0 && errno != ENOENT) {
		w->st->foreign++;
		goto out;
	}
	t = dfile >= 0 ? newer(&rs, &ds) : rs.st_mtime;
	if (t >= w->cutoff) {
		w->st->young++;
		goto out;
	}
	/* a session receiving into it holds this lock from open to close */
	if (dfile >= 0 && flock(dfile, LOCK_EX | LOCK_NB)) {
		w->st->busy++;
		goto out;
	}
	/* still the files just checked: nothing was swapped in under the names */
	if (!same_file(dfd, rec, &rs) || (dfile >= 0 && !same_file(dfd, data, &ds))) {
		w->st->foreign++;
		goto out;
	}
	if (dfile >= 0 && unlinkat(dfd, data, 0))
		goto out;
	unlinkat(dfd, rec, 0);
	w->st->removed++;
	w->st->bytes += dfile >= 0 ? (uint64_t)ds.st_size : 0;
	if (w->fn) {
		snprintf(w->path + plen, sizeof(w->path) - plen, "%s%s", plen ? "/" : "", data);
		w->fn(w->ctx, w->path, strnlen(w->path, sizeof(w->path)),
		      dfile >= 0 ? (uint64_t)ds.st_size : 0,
		      (uint64_t)(time(NULL) > t ? time(NULL) - t : 0));
		w->path[plen] = '\0';
	}
out:
	if (dfile >= 0)
		close(dfile); /* drops the lock */
	if (rfd >= 0)
		close(rfd);
}

static int is_record(const char *name)
{
	size_t n = strlen(name), p = strlen(PARTIAL_PREFIX), s = strlen(PARTIAL_REC_SUFX);

	return n > p + s && !strncmp(name, PARTIAL_PREFIX, p) &&
	       !strcmp(name + n - s, PARTIAL_REC_SUFX);
}

/* Walk the directory fd (owned: closed here) whose path below the start is w->path[0..plen). */
static void walk_dir(struct walk *w, int fd, size_t plen, unsigned depth)
{
	struct dirent *de;
	struct stat st;
	DIR *d;
	int sub;
	size_t n;

	d = fdopendir(fd);
	if (!d) {
		close(fd);
		w->st->unreadable++;
		return;
	}
	w->st->dirs++;
	while (!(w->stop && *w->stop) && (errno = 0, de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (de->d_type == DT_REG || de->d_type == DT_UNKNOWN) {
			if (is_record(de->d_name)) {
				one(w, dirfd(d), de->d_name, plen);
				continue;
			}
			if (de->d_type == DT_REG)
				continue;
		}
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode) || st.st_dev != w->dev)
			continue;
		if (depth + 1 >= RD_SWEEP_DEPTH_MAX) {
			w->st->too_deep++;
			continue;
		}
		n = strlen(de->d_name);
		if (plen + 1 + n >= sizeof(w->path))
			continue;
		sub = openat(dirfd(d), de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (sub < 0) {
			w->st->unreadable++;
			continue;
		}
		/* the directory opened is the one examined, on the same file system */
		if (fstat(sub, &st) || st.st_dev != w->dev) {
			close(sub);
			continue;
		}
		snprintf(w->path + plen, sizeof(w->path) - plen, "%s%s", plen ? "/" : "",
			 de->d_name);
		walk_dir(w, sub, plen + (plen ? 1 : 0) + n, depth + 1);
		w->path[plen] = '\0';
	}
	closedir(d);
}

int rd_sink_sweep(int root_fd, time_t cutoff, volatile int *stop, rd_sweep_fn fn, void *ctx,
		  struct rd_sweep_stats *st, struct rd_err *err)
{
	struct walk w;
	struct stat rs;
	int fd;

	memset(st, 0, sizeof(*st));
	memset(&w, 0, sizeof(w));
	fd = openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &rs)) {
		if (fd >= 0)
			close(fd);
		return rd_err_set(err, RD_ESYS, errno, "partials sweep: cannot open the directory");
	}
	w.dev = rs.st_dev;
	w.cutoff = cutoff;
	w.stop = stop;
	w.fn = fn;
	w.ctx = ctx;
	w.st = st;
	walk_dir(&w, fd, 0, 0);
	return 0;
}
