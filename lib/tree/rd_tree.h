/* SPDX-License-Identifier: MIT */
/*
 * Sender side: walk the sources (libarchive's disk reader) and produce
 * manifest entries one at a time, in wire form, with bounded memory
 * (depth of the tree, never its size or file count) and at most
 * RD_TREE_OPEN_DIRS directories open.
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

/*
 * Walk flags: the RD_OF_* bits of the OPEN that say what to read (pass
 * honoured OPEN flags & RD_TREE_FLAGS). RD_TREE_RECURSIVE is RD_OF_RECURSIVE.
 */
#define RD_TREE_RECURSIVE RD_OF_RECURSIVE
#define RD_TREE_HARDLINKS RD_OF_HARDLINKS /* HLINK entries for link groups */
#define RD_TREE_XATTRS	  RD_OF_XATTRS	  /* user.* xattrs of files and dirs */
#define RD_TREE_ACLS	  RD_OF_ACLS	  /* POSIX ACLs of files and dirs */
#define RD_TREE_SPARSE	  RD_OF_SPARSE	  /* data extents of files with holes */
#define RD_TREE_DEVICES	  RD_OF_DEVICES	  /* char/block devices as SPECIAL */
#define RD_TREE_SPECIALS  RD_OF_SPECIALS  /* fifos, sockets as SPECIAL */
/*
 * rsync's -x: a directory on another file system than its source is sent
 * empty (its contents are not walked); with ONE_FS2 (-xx) it is left out.
 */
#define RD_TREE_ONE_FS	RD_OF_ONE_FS
#define RD_TREE_ONE_FS2 RD_OF_ONE_FS2
/*
 * rsync's -L: a symlink below a source is sent as what it points to (read
 * through the link, so beneath the source no longer holds for it); one
 * that points nowhere, or into a directory being walked (a loop), is
 * skipped as an error.
 */
#define RD_TREE_COPY_LINKS RD_OF_COPY_LINKS
/*
 * rsync's rules (RD_OF_SELECT): a source that names a directory's contents
 * ("dir/", "dir/.", ".") flags every entry of it RD_FF_CONTENTS.
 */
#define RD_TREE_SELECT RD_OF_SELECT
#define RD_TREE_FLAGS                                                                             \
	(RD_TREE_RECURSIVE | RD_TREE_HARDLINKS | RD_TREE_XATTRS | RD_TREE_ACLS | RD_TREE_SPARSE | \
	 RD_TREE_DEVICES | RD_TREE_SPECIALS | RD_TREE_ONE_FS | RD_TREE_ONE_FS2 |                  \
	 RD_TREE_COPY_LINKS | RD_TREE_SELECT)
/* The walk flags that concern the walking side alone: a push sends them nowhere. */
/*
 * A listing's walk (RD_OF_LIST without RD_OF_RECURSIVE; never on the wire
 * as a tree flag): a directory source is entered, the directories in it
 * are sent without their contents (rsync's --dirs).
 */
#define RD_TREE_LIST_LEVEL 0x10000000u
#define RD_TREE_WALK_ONLY (RD_TREE_ONE_FS | RD_TREE_ONE_FS2 | RD_TREE_COPY_LINKS)
#define RD_TREE_META_MAX 256 /* META items per entry; more xattrs: a note */
/*
 * Directories the walk holds open at most, however deep the tree (the
 * source's and the deepest ones; the others are opened again on the way
 * back up: rd_tree.c). The entry it returns (e->fd) is not counted here.
 */
#define RD_TREE_OPEN_DIRS 16
/*
 * Opening flags of this walk alone (never on the wire): -R (every source
 * sent under its whole path from its base, its directories as implied
 * ones: rsync's --relative, "/./" ends the base), and --files-from's
 * directories without -r (sent, their contents not).
 */
#define RD_TREE_RELATIVE 0x40000000u
#define RD_TREE_DIRS	 0x20000000u

/* rd_tree_next() results (>= 0) */
enum { RD_TREE_END = 0, RD_TREE_ENTRY = 1, RD_TREE_SKIP = 2, RD_TREE_LEFT_OUT = 3 };
/* e->note of RD_TREE_LEFT_OUT for a type the flags leave out (rsync's words) */
#define RD_TREE_NONREG "skipping non-regular file"

/*
 * A directory the walk found entries in, held for them after the walk
 * moved on (reference-counted; rd_tree_dir_put drops the entry's
 * reference). A lazy entry is opened through it (rd_tree_open_seen) and
 * --remove-source-files removes through it (rd_tree_remove_source).
 * The walk shares one handle among the entries of a directory (one
 * descriptor, dup'ed once per directory) and holds at most
 * RD_TREE_HELD_DIRS of them at once: beyond that a regular file is opened
 * while walking, as without lazy opening (rd_tree.c, "Lazy opening").
 */
struct rd_tree_dir;
#define RD_TREE_HELD_DIRS 16

/* What the walk saw of a non-directory (rd_tree_keep_parents, lazy entries). */
struct rd_tree_seen {
	uint64_t dev, ino, size, nlink;
	uint32_t mode;
	int64_t mtime_sec, ctime_sec;
	uint32_t mtime_nsec, ctime_nsec;
};

struct rd_tree_entry {
	/*
	 * With rd_tree_keep_parents(), a non-directory entry also carries
	 * the directory it was found in (dir: a reference the caller owns
	 * and drops with rd_tree_dir_put; NULL when there is none, e.g. a
	 * source named through a symlink), its name there, and what the walk
	 * saw of it: what rd_tree_remove_source() needs
	 * (--remove-source-files). A lazy entry (rd_tree_set_lazy: a regular
	 * file not opened yet, fd -1) carries the same, for rd_tree_open_seen.
	 */
	struct rd_tree_dir *dir;
	int lazy;
	char pname[256];
	struct rd_tree_seen seen;
	uint8_t type;  /* enum rd_ftype */
	uint8_t flags; /* RD_FF_ROOT, RD_FF_POST, RD_FF_IMPLIED; -H: RD_FF_LINKED, _LINK_LAST */
	uint32_t mode; /* st_mode */
	uint32_t uid, gid;
	uint64_t size; /* regular files: from fstat of fd; SPECIAL: the device number */
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	char path[RD_PATH_MAX + 1]; /* wire path, NUL-terminated */
	size_t path_len;
	char target[RD_PATH_MAX + 1]; /* symlink target; HLINK: first path of the group */
	size_t target_len;
	int fd; /* RD_FT_REG: open O_RDONLY, owned by the caller (-1 if lazy); else -1 */
	/*
	 * What the flags asked for beyond stat (REG and DIR): META items to
	 * send after the FILE (id 0, flags 0: the caller sets them). They
	 * point into the walk's buffers: valid until the next rd_tree_next().
	 * A SPARSE item, if any, is the file's data map (its extents say what
	 * to read). note: what could not be read or sent ("" if nothing).
	 */
	unsigned nmeta;
	const struct rd_msg_meta *meta;
	char note[RD_MSG_TEXT_MAX];
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
	int contents; /* a directory's contents (rsync's "dir/"): see RD_TREE_SELECT */
	/*
	 * For rsync's "-F" (parent merge files): the directory the source
	 * lies beneath (a module's root; dup'ed) and its path there; -1 and
	 * NULL: none. Zero-initialised sources have top_fd 0: set it.
	 */
	int top_fd;
	const char *top_path;
	/*
	 * -R: the path from dirfd (the base) sent whole, its directories
	 * as implied ones (name and wire unused); NULL: not relative.
	 */
	const char *rel;
};

/*
 * --files-from: every name a -R source beneath base_fd (dup'ed; opened
 * O_NOFOLLOW one component at a time). flags as rd_tree_open's, with
 * RD_TREE_DIRS for directories without -r.
 */
int rd_tree_open_names(struct rd_tree **out, int base_fd, const char *const *names, int n,
		       unsigned flags, struct rd_err *err);

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
 * without RD_TREE_RECURSIVE, a name longer than RD_PATH_MAX): e->path holds
 * the path that failed (see above) and rd_tree_err(t) the reason, with
 * status RD_ENOENT for a source that does not exist, RD_EVANISHED for a
 * file that was listed and then was gone (rsync's "vanished"), RD_ESYS
 * otherwise; RD_TREE_LEFT_OUT for an entry not sent by choice, not an
 * error: a fifo, socket or device without RD_TREE_SPECIALS/DEVICES (as
 * rsync's "skipping non-regular file"), e->path and e->note say which
 * and why. The walk continues with the next call. RD_TREE_END when done;
 * a negative RD_E* status on a fatal error.
 */
int rd_tree_next(struct rd_tree *t, struct rd_tree_entry *e);
const struct rd_err *rd_tree_err(const struct rd_tree *t);
/* Change the walk flags (RD_TREE_*), e.g. to what the peer honoured. */
void rd_tree_set_flags(struct rd_tree *t, unsigned flags);
/*
 * -H: the most memory the table of open link groups may take (bytes, the
 * groups' paths included; 0: 32 MiB). A group that does not fit is not
 * remembered: its later links are sent as copies. An entry that starts a
 * remembered group carries RD_FF_LINKED, a group's last HLINK
 * RD_FF_LINK_LAST (the caller drops them for peers before protocol 10).
 */
void rd_tree_set_link_table(struct rd_tree *t, uint64_t max_bytes);

/*
 * rsync's filter rules (issue 28), before the first rd_tree_next: what
 * they exclude for the sender is left out of the walk without a word (an
 * excluded directory is not entered); per-directory merge files are read
 * from the directories walked. f must outlive the tree. 0 or < 0.
 */
struct rd_filter;
int rd_tree_set_filter(struct rd_tree *t, const struct rd_filter *f, struct rd_err *err);

/*
 * --remove-source-files (issue 29): give non-directory entries their
 * parent directory (rd_tree_entry.dir) from now on.
 */
void rd_tree_keep_parents(struct rd_tree *t, int on);

/*
 * Lazy opening (issue 28: a rerun of an unchanged tree is stat-only): a
 * regular file found in a directory is not opened by the walk; its entry
 * has fd -1, lazy set, and dir/pname/seen to open it with
 * rd_tree_open_seen when its data is first wanted. Not for the files of
 * a walk that reads more than stat of them (xattrs, ACLs, -S's map), nor
 * a command-line source or -L's referents: those are opened as before.
 */
void rd_tree_set_lazy(struct rd_tree *t, int on);

/*
 * Open a lazy entry: name beneath d, O_NOFOLLOW, and only if it is still
 * the regular file the walk saw (device, inode, size, mtime to the ns).
 * 0 with *fd (O_RDONLY, the caller's), or a negative status with err's
 * message saying why: RD_EVANISHED "file has vanished" (gone), RD_ESYS
 * "changed while walking" (another file, a symlink or special file, or a
 * different size or mtime), else RD_ESYS with the error.
 */
int rd_tree_open_seen(const struct rd_tree_dir *d, const char *name,
		      const struct rd_tree_seen *seen, int *fd, struct rd_err *err);

/* d's descriptor (valid while a reference is held), or -1 for NULL. */
int rd_tree_dir_fd(const struct rd_tree_dir *d);
/* Drop one reference (the last closes it); accepts NULL. */
void rd_tree_dir_put(struct rd_tree_dir *d);

/*
 * Remove a source the receiver confirmed (verified, in place): name in
 * pfd, only if it still is what the walk saw: the same device and inode,
 * size, mtime to the ns, and ctime to the ns when it had one link (a hard
 * link's ctime moves when another of its names goes). Never a directory,
 * never through a symlink (unlinkat on the held descriptor). 0 removed,
 * or a negative status with err saying why it stays.
 */
int rd_tree_remove_source(int pfd, const char *name, const struct rd_tree_seen *seen,
			  struct rd_err *err);

void rd_tree_close(struct rd_tree *t); /* accepts NULL */

/*
 * A list instead of a walk (rdcp-mpi, issue 32; rd_tree_list.c): next()
 * fills one item (1), says the list ended (0) or failed (a negative
 * RD_E*). Each item names an object beneath dirfd (the caller's; rel ""
 * is dirfd itself) reached as the walk reaches things: the parent by
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), the object by one name,
 * never followed. It goes on the wire as `wire`. Kinds:
 *   NODE	whatever is there: a directory is one DIR entry (never
 *		descended into), a file one REG entry, a symlink, a special
 *   POST	a directory's POST (its metadata, after its contents)
 *   RANGE	[off, off + len) of a regular file (RD_FF_RANGE, META RANGE
 *		first); size and mtime: what the job saw (else skipped)
 *   COMMIT	the file's COMMIT (RD_FF_COMMIT) with its metadata; size, mtime
 *   HLINK	a hard link to target (a wire path already in place)
 * Strings need only live until the next call.
 */
enum {
	RD_TREE_ITEM_NODE = 0,
	RD_TREE_ITEM_POST,
	RD_TREE_ITEM_RANGE,
	RD_TREE_ITEM_COMMIT,
	RD_TREE_ITEM_HLINK
};

struct rd_tree_item {
	int dirfd;
	const char *rel;
	const char *wire;
	int kind;
	uint64_t job, off, len;
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	const char *target;
	int regular; /* NODE: must be a regular file of size and mtime (else skipped) */
	unsigned ff; /* -H: RD_FF_LINKED on a regular NODE, RD_FF_LINK_LAST on an HLINK */
};

typedef int (*rd_tree_list_fn)(void *ctx, struct rd_tree_item *it);

int rd_tree_open_list(struct rd_tree **out, rd_tree_list_fn next, void *ctx, unsigned flags,
		      struct rd_err *err);

#endif
