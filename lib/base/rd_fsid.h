/* SPDX-License-Identifier: MIT */
/*
 * File-system calls under another identity, for one session.
 *
 * A module with uid/gid has its files opened, created, renamed and
 * chowned as that user, while the daemon stays root for everything else.
 * Linux keeps credentials per thread, but a thread whose credentials ever
 * changed may no longer use the RDMA devices' file descriptors: the kernel
 * refuses write() on /dev/infiniband/uverbs* and rdma_cm from a thread
 * whose credentials differ from the opener's (ib_safe_file_access(), the
 * "changed security contexts" check), and Soft-RoCE posts work requests
 * through such writes. So the identity lives on a separate executor thread
 * (setfsuid, setfsgid and its own supplementary groups, by raw system
 * calls so no other thread changes) and the session thread hands it each
 * path-based call through the wrappers below, and every call on an fd
 * that the kernel checks against the caller's identity (fchmod, fchown,
 * futimens, fsetxattr: owner or writer only). Reads and writes on fds
 * already open (checked when they were opened) stay on the caller, so a
 * root daemon's writes may still use blocks reserved for root and pass
 * the owner's quota (CAP_SYS_RESOURCE), though the file is the identity's.
 *
 * A thread with no executor bound (the default, and every client) calls
 * the system directly: the wrappers cost one branch.
 */
#ifndef RDCP_BASE_RD_FSID_H
#define RDCP_BASE_RD_FSID_H

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include "lib/base/rd_err.h"

struct rd_fsid;

/*
 * Start an executor acting as uid/gid ((uid_t)-1 or (gid_t)-1: keep the
 * daemon's). With gid set, the supplementary groups become that one group.
 * Needs root (CAP_SETUID/CAP_SETGID): -RD_EPERM with a message otherwise.
 */
int rd_fsid_start(struct rd_fsid **out, uid_t uid, gid_t gid, struct rd_err *err);
/* The same with these supplementary groups (ngroups 0: keep the daemon's). */
int rd_fsid_start_groups(struct rd_fsid **out, uid_t uid, gid_t gid, const gid_t *groups,
			 int ngroups, struct rd_err *err);
/* Stop and free it (NULL: nothing). Unbind it from threads first. */
void rd_fsid_stop(struct rd_fsid *x);
/* Route this thread's wrapped calls through x (NULL: direct again). */
void rd_fsid_bind(struct rd_fsid *x);

/* The wrapped calls: the same arguments, results and errno as libc's. */
int rd_openat(int dirfd, const char *path, int flags, mode_t mode);
int rd_openat2(int dirfd, const char *path, const struct open_how *how, size_t size);
int rd_fstatat(int dirfd, const char *path, struct stat *st, int flags);
ssize_t rd_readlinkat(int dirfd, const char *path, char *buf, size_t len);
int rd_mkdirat(int dirfd, const char *path, mode_t mode);
int rd_mknodat(int dirfd, const char *path, mode_t mode, dev_t dev);
int rd_symlinkat(const char *target, int dirfd, const char *path);
int rd_linkat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath, int flags);
int rd_renameat(int olddirfd, const char *oldpath, int newdirfd, const char *newpath);
int rd_unlinkat(int dirfd, const char *path, int flags);
int rd_fchownat(int dirfd, const char *path, uid_t uid, gid_t gid, int flags);
int rd_utimensat(int dirfd, const char *path, const struct timespec ts[2], int flags);
int rd_fchown(int fd, uid_t uid, gid_t gid);
int rd_fchmod(int fd, mode_t mode);
int rd_futimens(int fd, const struct timespec ts[2]);
/* chmod by name (a node opened O_PATH is changed through /proc/self/fd/N). */
int rd_fchmodat(int dirfd, const char *path, mode_t mode, int flags);
/* xattrs and ACLs (system.posix_acl_*): the owner's or a writer's to set. */
int rd_fsetxattr(int fd, const char *name, const void *value, size_t size, int flags);

/*
 * Does the directory name in dirfd (NULL: dirfd itself) hold any entry?
 * 1, 0 (empty), or -errno (not a directory we can read; name is opened
 * O_NOFOLLOW). Through the wrapped open.
 */
int rd_dir_holds(int dirfd, const char *name);

#endif
