// SPDX-License-Identifier: MIT
/*
 * The identity executor (rd_fsid.h): one thread per session that took a
 * module's uid/gid, running the session thread's path-based calls one at a
 * time. A call is a small record the caller fills, hands over under the
 * mutex and waits on; the executor runs it and wakes the caller.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lib/base/rd_fsid.h"

enum fs_op {
	OP_OPENAT,
	OP_OPENAT2,
	OP_FSTATAT,
	OP_READLINKAT,
	OP_MKDIRAT,
	OP_MKNODAT,
	OP_SYMLINKAT,
	OP_LINKAT,
	OP_RENAMEAT,
	OP_UNLINKAT,
	OP_FCHOWNAT,
	OP_UTIMENSAT,
	OP_FCHOWN,
	OP_FCHMOD,
	OP_FUTIMENS,
	OP_FCHMODAT,
	OP_FSETXATTR,
};

struct fs_call {
	enum fs_op op;
	int fd1, fd2, flags;
	const char *p1, *p2;
	mode_t mode;
	uid_t uid;
	gid_t gid;
	dev_t dev;
	void *buf;
	const void *cbuf;
	size_t len;
	long ret;
	int err;
	int done;
};

struct rd_fsid {
	pthread_t thr;
	pthread_mutex_t mu;
	pthread_cond_t cv;    /* a call was handed over, or stop */
	pthread_cond_t cv_done; /* the call is done, or the executor is ready */
	struct fs_call *call;
	int stop, ready, status, errnum;
	uid_t uid;
	gid_t gid;
	gid_t *groups; /* the supplementary groups (ngroups of them) */
	int ngroups;
};

static __thread struct rd_fsid *bound;

static long run(struct fs_call *c)
{
	switch (c->op) {
	case OP_OPENAT:
		return openat(c->fd1, c->p1, c->flags, c->mode);
	case OP_OPENAT2:
		return syscall(SYS_openat2, c->fd1, c->p1, c->cbuf, c->len);
	case OP_FSTATAT:
		return fstatat(c->fd1, c->p1, c->buf, c->flags);
	case OP_READLINKAT:
		return readlinkat(c->fd1, c->p1, c->buf, c->len);
	case OP_MKDIRAT:
		return mkdirat(c->fd1, c->p1, c->mode);
	case OP_MKNODAT:
		return mknodat(c->fd1, c->p1, c->mode, c->dev);
	case OP_SYMLINKAT:
		return symlinkat(c->p1, c->fd1, c->p2);
	case OP_LINKAT:
		return linkat(c->fd1, c->p1, c->fd2, c->p2, c->flags);
	case OP_RENAMEAT:
		return renameat(c->fd1, c->p1, c->fd2, c->p2);
	case OP_UNLINKAT:
		return unlinkat(c->fd1, c->p1, c->flags);
	case OP_FCHOWNAT:
		return fchownat(c->fd1, c->p1, c->uid, c->gid, c->flags);
	case OP_UTIMENSAT:
		return utimensat(c->fd1, c->p1, c->cbuf, c->flags);
	case OP_FCHOWN:
		return fchown(c->fd1, c->uid, c->gid);
	case OP_FCHMOD:
		return fchmod(c->fd1, c->mode);
	case OP_FUTIMENS:
		return futimens(c->fd1, c->cbuf);
	case OP_FCHMODAT:
		return fchmodat(c->fd1, c->p1, c->mode, c->flags);
	case OP_FSETXATTR:
		return fsetxattr(c->fd1, c->p1, c->cbuf, c->len, c->flags);
	}
	errno = ENOSYS;
	return -1;
}

/* Take the identity on this thread only: raw setgroups (glibc's changes
 * every thread), setfsgid, setfsuid; each checked by reading it back. */
static int take_identity(struct rd_fsid *x)
{
	if (x->ngroups > 0 && syscall(SYS_setgroups, (size_t)x->ngroups, x->groups))
		return errno ? errno : EPERM;
	if (x->gid != (gid_t)-1) {
		setfsgid(x->gid);
		if ((gid_t)setfsgid((gid_t)-1) != x->gid)
			return EPERM;
	}
	if (x->uid != (uid_t)-1) {
		setfsuid(x->uid);
		if ((uid_t)setfsuid((uid_t)-1) != x->uid)
			return EPERM;
	}
	return 0;
}

static void *executor(void *arg)
{
	struct rd_fsid *x = arg;
	struct fs_call *c;
	int e = take_identity(x);

	pthread_mutex_lock(&x->mu);
	x->status = e ? -1 : 0;
	x->errnum = e;
	x->ready = 1;
	pthread_cond_broadcast(&x->cv_done);
	while (!e) {
		while (!x->stop && !x->call)
			pthread_cond_wait(&x->cv, &x->mu);
		if (!x->call)
			break;
		c = x->call;
		x->call = NULL;
		pthread_mutex_unlock(&x->mu);
		errno = 0;
		c->ret = run(c);
		c->err = errno;
		pthread_mutex_lock(&x->mu);
		c->done = 1;
		pthread_cond_broadcast(&x->cv_done);
	}
	pthread_mutex_unlock(&x->mu);
	return NULL;
}

int rd_fsid_start(struct rd_fsid **out, uid_t uid, gid_t gid, struct rd_err *err)
{
	return rd_fsid_start_groups(out, uid, gid, &gid, gid == (gid_t)-1 ? 0 : 1, err);
}

int rd_fsid_start_groups(struct rd_fsid **out, uid_t uid, gid_t gid, const gid_t *groups,
			 int ngroups, struct rd_err *err)
{
	struct rd_fsid *x = calloc(1, sizeof(*x));
	int ret = 0, e;

	*out = NULL;
	if (!x)
		return rd_err_set(err, RD_ENOMEM, ENOMEM, "identity thread");
	x->uid = uid;
	x->gid = gid;
	if (ngroups > 0) {
		x->groups = malloc((size_t)ngroups * sizeof(*x->groups));
		if (!x->groups) {
			free(x);
			return rd_err_set(err, RD_ENOMEM, ENOMEM, "identity thread");
		}
		memcpy(x->groups, groups, (size_t)ngroups * sizeof(*x->groups));
		x->ngroups = ngroups;
	}
	pthread_mutex_init(&x->mu, NULL);
	pthread_cond_init(&x->cv, NULL);
	pthread_cond_init(&x->cv_done, NULL);
	e = pthread_create(&x->thr, NULL, executor, x);
	if (e) {
		ret = rd_err_set(err, RD_ENOMEM, e, "identity thread");
		goto fail;
	}
	pthread_mutex_lock(&x->mu);
	while (!x->ready)
		pthread_cond_wait(&x->cv_done, &x->mu);
	e = x->errnum;
	pthread_mutex_unlock(&x->mu);
	if (x->status) {
		pthread_join(x->thr, NULL);
		ret = rd_err_set(err, RD_EPERM, e,
				 "cannot act as uid %d, gid %d (per-module uid/gid need rdcpd to run "
				 "as root)",
				 uid == (uid_t)-1 ? -1 : (int)uid, gid == (gid_t)-1 ? -1 : (int)gid);
		goto fail;
	}
	*out = x;
	return 0;
fail:
	pthread_cond_destroy(&x->cv_done);
	pthread_cond_destroy(&x->cv);
	pthread_mutex_destroy(&x->mu);
	free(x->groups);
	free(x);
	return ret;
}

void rd_fsid_stop(struct rd_fsid *x)
{
	if (!x)
		return;
	pthread_mutex_lock(&x->mu);
	x->stop = 1;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
	pthread_join(x->thr, NULL);
	pthread_cond_destroy(&x->cv_done);
	pthread_cond_destroy(&x->cv);
	pthread_mutex_destroy(&x->mu);
	free(x->groups);
	free(x);
}

void rd_fsid_bind(struct rd_fsid *x)
{
	bound = x;
}

/* Hand c to the bound executor and wait; the result as libc returns it. */
static long call(struct fs_call *c)
{
	struct rd_fsid *x = bound;

	pthread_mutex_lock(&x->mu);
	x->call = c;
	pthread_cond_broadcast(&x->cv);
	while (!c->done)
		pthread_cond_wait(&x->cv_done, &x->mu);
	pthread_mutex_unlock(&x->mu);
	errno = c->err;
	return c->ret;
}

int rd_openat(int dirfd, const char *path, int flags, mode_t mode)
{
	struct fs_call c = {.op = OP_OPENAT, .fd1 = dirfd, .p1 = path, .flags = flags, .mode = mode};

	return bound ? (int)call(&c) : openat(dirfd, path, flags, mode);
}

int rd_openat2(int dirfd, const char *path, const struct open_how *how, size_t size)
{
	struct fs_call c = {.op = OP_OPENAT2, .fd1 = dirfd, .p1 = path, .cbuf = how, .len = size};

	return bound ? (int)call(&c) : (int)syscall(SYS_openat2, dirfd, path, how, size);
}

int rd_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	struct fs_call c = {.op = OP_FSTATAT, .fd1 = dirfd, .p1 = path, .buf = st, .flags = flags};

	return bound ? (int)call(&c) : fstatat(dirfd, path, st, flags);
}

ssize_t rd_readlinkat(int dirfd, const char *path, char *buf, size_t len)
{
	struct fs_call c = {.op = OP_READLINKAT, .fd1 = dirfd, .p1 = path, .buf = buf, .len = len};

	return bound ? (ssize_t)call(&c) : readlinkat(dirfd, path, buf, len);
}

int rd_mkdirat(int dirfd, const char *path, mode_t mode)
{
	struct fs_call c = {.op = OP_MKDIRAT, .fd1 = dirfd, .p1 = path, .mode = mode};

	return bound ? (int)call(&c) : mkdirat(dirfd, path, mode);
}

int rd_mknodat(int dirfd, const char *path, mode_t mode, dev_t dev)
{
	struct fs_call c = {.op = OP_MKNODAT, .fd1 = dirfd, .p1 = path, .mode = mode, .dev = dev};

	return bound ? (int)call(&c) : mknodat(dirfd, path, mode, dev);
}

int rd_symlinkat(const char *target, int dirfd, const char *path)
{
	struct fs_call c = {.op = OP_SYMLINKAT, .p1 = target, .fd1 = dirfd, .p2 = path};

	return bound ? (int)call(&c) : symlinkat(target, dirfd, path);
}

int rd_linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags)
{
	struct fs_call c = {.op = OP_LINKAT,
			    .fd1 = olddirfd,
			    .p1 = oldpath,
			    .fd2 = newdirfd,
			    .p2 = newpath,
			    .flags = flags};

	return bound ? (int)call(&c) : linkat(olddirfd, oldpath, newdirfd, newpath, flags);
}

int rd_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath)
{
	struct fs_call c = {
	    .op = OP_RENAMEAT, .fd1 = olddirfd, .p1 = oldpath, .fd2 = newdirfd, .p2 = newpath};

	return bound ? (int)call(&c) : renameat(olddirfd, oldpath, newdirfd, newpath);
}

int rd_unlinkat(int dirfd, const char *path, int flags)
{
	struct fs_call c = {.op = OP_UNLINKAT, .fd1 = dirfd, .p1 = path, .flags = flags};

	return bound ? (int)call(&c) : unlinkat(dirfd, path, flags);
}

int rd_fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags)
{
	struct fs_call c = {
	    .op = OP_FCHOWNAT, .fd1 = dirfd, .p1 = path, .uid = uid, .gid = gid, .flags = flags};

	return bound ? (int)call(&c) : fchownat(dirfd, path, uid, gid, flags);
}

int rd_utimensat(int dirfd, const char *path, const struct timespec ts[2], int flags)
{
	struct fs_call c = {.op = OP_UTIMENSAT, .fd1 = dirfd, .p1 = path, .cbuf = ts, .flags = flags};

	return bound ? (int)call(&c) : utimensat(dirfd, path, ts, flags);
}

int rd_fchown(int fd, uid_t uid, gid_t gid)
{
	struct fs_call c = {.op = OP_FCHOWN, .fd1 = fd, .uid = uid, .gid = gid};

	return bound ? (int)call(&c) : fchown(fd, uid, gid);
}

int rd_fchmod(int fd, mode_t mode)
{
	struct fs_call c = {.op = OP_FCHMOD, .fd1 = fd, .mode = mode};

	return bound ? (int)call(&c) : fchmod(fd, mode);
}

int rd_futimens(int fd, const struct timespec ts[2])
{
	struct fs_call c = {.op = OP_FUTIMENS, .fd1 = fd, .cbuf = ts};

	return bound ? (int)call(&c) : futimens(fd, ts);
}

int rd_fchmodat(int dirfd, const char *path, mode_t mode, int flags)
{
	struct fs_call c = {
	    .op = OP_FCHMODAT, .fd1 = dirfd, .p1 = path, .mode = mode, .flags = flags};

	return bound ? (int)call(&c) : fchmodat(dirfd, path, mode, flags);
}

int rd_fsetxattr(int fd, const char *name, const void *value, size_t size, int flags)
{
	struct fs_call c = {
	    .op = OP_FSETXATTR, .fd1 = fd, .p1 = name, .cbuf = value, .len = size, .flags = flags};

	return bound ? (int)call(&c) : fsetxattr(fd, name, value, size, flags);
}

int rd_dir_holds(int dirfd, const char *name)
{
	struct dirent *de;
	DIR *d;
	int fd, holds = 0;

	fd = name ? rd_openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
		  : rd_openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		holds = -errno;
		close(fd);
		return holds;
	}
	while (!holds && (de = readdir(d)))
		holds = strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	return holds;
}
