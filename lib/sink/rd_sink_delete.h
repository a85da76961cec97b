/* SPDX-License-Identifier: MIT */
/*
 * Deleting in the destination (issue 29: --delete and its relatives,
 * --force; docs/DESIGN.md "Mirroring safely"). The receiver decides and
 * nothing here trusts a name from the wire: what is deleted is what this
 * side found itself, by reading a directory it holds a descriptor of,
 * minus the names the sender listed there (struct rd_del_names) and
 * minus what the caller protects (filters, partials, backups).
 *
 * Everything is relative to a held directory descriptor: fstatat with
 * AT_SYMLINK_NOFOLLOW, unlinkat, openat(O_DIRECTORY | O_NOFOLLOW). A
 * symlink is removed as a link, never followed; a directory on another
 * file system (a mount point) is never entered; a directory deeper than
 * RD_DEL_DEPTH_MAX below the one being cleaned is left (an error).
 *
 * Order is rsync's, so that --max-delete stops at the same entries: in a
 * directory, non-directories sorted bytewise, then directories sorted
 * bytewise with a '/' after the name; deleted in reverse of that order; a
 * directory's contents before the directory itself; each entry removed
 * counts one against max_delete.
 *
 * Memory is bounded by mem_max for everything a session holds here (the
 * names listed per open directory, the extras found, the deletions
 * waiting for the end of the run); past it a call fails with -RD_ENOMEM
 * and deletes nothing more.
 */
#ifndef RDCP_SINK_RD_SINK_DELETE_H
#define RDCP_SINK_RD_SINK_DELETE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/base/rd_err.h"

#define RD_DEL_DEPTH_MAX 128	      /* levels below a directory being cleaned */
#define RD_DEL_MEM_MAX	 (256u << 20) /* names one session may hold for deletion */

/* Names in one directory, as the sender listed them (or as found here). */
struct rd_del_names {
	char *buf; /* NUL-terminated names, one after the other */
	size_t used, cap;
	uint32_t *off;	 /* each name's offset in buf */
	uint32_t *flags; /* each name's RD_DEL_N_* */
	size_t n, ncap;
	int sorted;
};
#define RD_DEL_N_DIR 0x1u /* the name is a directory (rsync's order) */

struct rd_del;

struct rd_del_ops {
	/*
	 * 1: keep this entry (a filter protects it, it is one of rdcp's
	 * partials, a backup...). rel: its path below the destination.
	 */
	int (*protect)(void *ctx, const char *rel, size_t len, int is_dir);
	/* An entry removed, or with RD_DEL_DRY_RUN one that would be. */
	void (*deleted)(void *ctx, const char *rel, size_t len, int is_dir);
	/*
	 * Something that could not be deleted and why (status < 0), or, with
	 * status 0, what rsync says without failing ("cannot delete
	 * non-empty directory" when a protected entry or the limit keeps it).
	 */
	void (*problem)(void *ctx, const char *rel, size_t len, int status, const char *msg);
	/*
	 * --backup: keep the entry instead of removing it (a non-directory;
	 * directories are emptied and removed as usual). 0: kept as a backup
	 * (counts as deleted), < 0: failed (problem is told by the caller).
	 * NULL: no backups.
	 */
	int (*backup)(void *ctx, int dirfd, const char *name, const char *rel, size_t len);
	/*
	 * A directory about to be emptied (fd, only read): read its
	 * per-directory merge files before protect is asked about what it
	 * holds (rsync reads them there too); 0, or < 0 with msg set (then
	 * it is not emptied). leave undoes it once the directory is done.
	 * NULL: none.
	 */
	int (*enter)(void *ctx, int fd, const char *rel, size_t len, char *msg, size_t msize);
	void (*leave)(void *ctx);
};

#define RD_DEL_DRY_RUN 0x1u /* find and report, change nothing */

struct rd_del_opts {
	unsigned flags;
	int64_t max_delete; /* entries that may be removed in all; -1: no limit */
	size_t mem_max;	    /* 0: RD_DEL_MEM_MAX */
	struct rd_del_ops ops;
	void *ctx;
};

struct rd_del_stats {
	uint64_t deleted; /* removed (or, dry run, would be) */
	uint64_t skipped; /* left because max_delete was reached */
	uint64_t failed;  /* could not be removed (problem told) */
	uint64_t kept;	  /* protected */
};

int rd_del_new(struct rd_del **out, const struct rd_del_opts *o);
void rd_del_free(struct rd_del *d); /* accepts NULL */
const struct rd_del_stats *rd_del_stats(const struct rd_del *d);
/* max_delete reached: some deletion was skipped (rsync's exit 25). */
int rd_del_limited(const struct rd_del *d);

/* --- name sets (memory charged to d) --- */
void rd_del_names_init(struct rd_del_names *n);
/* Add one name (1..255 bytes, no '/' or NUL): 0, -RD_EPROTO, or -RD_ENOMEM past mem_max. */
int rd_del_names_add(struct rd_del *d, struct rd_del_names *n, const char *name, size_t len,
		     unsigned flags);
void rd_del_names_sort(struct rd_del_names *n);
/* Is name in n (sorted first)? 1 or 0. */
int rd_del_names_has(const struct rd_del_names *n, const char *name, size_t len);
void rd_del_names_free(struct rd_del *d, struct rd_del_names *n);

/*
 * The extras of one directory: read dirfd (the directory at rel below
 * the destination, "" for its root) and collect, in rsync's order, every
 * name that keep (sorted) does not hold and the caller does not protect.
 * 0 or a negative status (-RD_ENOMEM: over the budget; others: the
 * directory could not be read), with err set.
 */
int rd_del_find(struct rd_del *d, int dirfd, const char *rel, const struct rd_del_names *keep,
		struct rd_del_names *extras, struct rd_err *err);

/*
 * Delete the extras found in dirfd, last first (rsync's order), each
 * checked again when its turn comes (fstatat: a name that is gone is
 * skipped). Counts against max_delete; with RD_DEL_DRY_RUN only reports.
 * Returns 0, or the first failure (each one told to ops.problem and
 * counted; the others are still attempted).
 */
int rd_del_run(struct rd_del *d, int dirfd, const char *rel, const struct rd_del_names *extras);

/*
 * Make room for a replacement of another type: remove name (at rel) in
 * dirfd whatever it is, a directory with everything in it (--force, or
 * any --delete*). Reports what is inside like rd_del_run; as in rsync
 * 3.5.0 the entry itself is neither counted against max_delete nor
 * reported (deleted), what is inside it is ("could not make way" once the
 * limit is reached).
 * 0 or the failure; a protected entry, or the limit, inside keeps the
 * directory (said, status 0): the caller checks whether the name is free.
 */
int rd_del_entry(struct rd_del *d, int dirfd, const char *name, const char *rel);

#endif
