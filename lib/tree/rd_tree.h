/* SPDX-License-Identifier: MIT */
/*
 * Sender side: walk the sources (libarchive's disk reader) and produce
 * manifest entries one at a time, in wire form, with bounded memory
 * (depth of the tree, never its size or file count).
 *
 * Wire paths start with the source's base name: source "/a/b/dir" gives
 * "dir" (flag RD_FF_ROOT), "dir/x", "dir/sub", "dir/sub/y", and, after a
 * directory's contents, the directory again with RD_FF_POST so the
 * receiver can apply its metadata last.
 *
 * The walk never resolves a path string twice: every source is an open
 * file descriptor (or a single name beneath one), and everything below it
 * is opened relative to its parent's descriptor, one component at a time,
 * with O_NOFOLLOW (openat/fdopendir). What is sent therefore always lies
 * beneath the source, whatever is renamed or swapped on disk meanwhile: a
 * symlink swapped in for a file is seen as a symlink (or skipped), never
 * followed. Symlinks inside a tree are sent as links.
 *
 * rd_tree_open_paths() is the command-line flavour: symlinks named on the
 * command line are followed (like cp -H / scp), each source is opened only
 * when its turn comes.
 */
#ifndef RDCP_TREE_RD_TREE_H
#define RDCP_TREE_RD_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/rd_err.h"
#include "lib/proto/rd_proto.h"

#define RD_TREE_RECURSIVE 0x1u

/* rd_tree_next() results (>= 0) */
enum { RD_TREE_END = 0, RD_TREE_ENTRY = 1, RD_TREE_SKIP = 2 };

struct rd_tree_entry {
	uint8_t type;  /* enum rd_ftype */
	uint8_t flags; /* RD_FF_ROOT, RD_FF_POST */
	uint32_t mode; /* st_mode */
	uint32_t uid, gid;
	uint64_t size; /* regular files: from fstat of fd */
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	char path[RD_PATH_MAX + 1]; /* wire path, NUL-terminated */
	size_t path_len;
	char target[RD_PATH_MAX + 1]; /* symlink target */
	size_t target_len;
	int fd; /* RD_FT_REG: open O_RDONLY, owned by the caller; else -1 */
};

struct rd_tree;

/*
 * One source. dirfd is a directory (or, with name NULL, the source itself:
 * a directory or a regular file opened O_RDONLY). name: one component
 * beneath dirfd, opened with O_NOFOLLOW (a symlink there is sent as a
 * link). wire: the top-level name on the wire (one component; NULL = name).
 * The tree dups dirfd; the caller keeps its own.
 * Skip messages and skip paths name entries by their wire path (nothing
 * about where the source lives leaks to the peer).
 */
struct rd_tree_src {
	int dirfd;
	const char *name;
	const char *wire;
};

int rd_tree_open(struct rd_tree **out, const struct rd_tree_src *sources, int nsources,
		 unsigned flags, struct rd_err *err);

/*
 * Local paths as given on a command line: symlinks named there are
 * followed; the wire name is the path's base name (realpath's for ".",
 * ".." and "/"-ended forms); skip messages name the local path.
 */
int rd_tree_open_paths(struct rd_tree **out, const char *const *paths, int npaths,
		       unsigned flags, struct rd_err *err);

/*
 * Next entry. Returns RD_TREE_ENTRY with *e filled; RD_TREE_SKIP when one
 * source or file could not be used (missing, unreadable, a directory
 * without RD_TREE_RECURSIVE, a name longer than RD_PATH_MAX, an unsupported
 * type such as a socket): e->path holds the path that failed (see above) and
 * rd_tree_err(t)->msg the reason; the walk continues with the next call.
 * RD_TREE_END when done; a negative RD_E* status on a fatal error.
 */
int rd_tree_next(struct rd_tree *t, struct rd_tree_entry *e);
const struct rd_err *rd_tree_err(const struct rd_tree *t);

void rd_tree_close(struct rd_tree *t); /* accepts NULL */

#endif
