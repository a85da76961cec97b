/* SPDX-License-Identifier: MIT */
/*
 * --delete and its relatives on the receiving side (issue 29;
 * docs/DESIGN.md "Mirroring safely"): which directories of the transfer
 * are cleaned, when, and what stops it. The deleting itself is
 * rd_sink_delete.h's (fd-relative, rsync's order, max_delete, dry run).
 *
 * The caller (the engine's receiver) tells the sink, in the order of the
 * wire, about every entry (rd_sink_mirror_entry; a directory after its
 * rd_sink_mkdir), every POST as it arrives (rd_sink_mirror_post_seen) and
 * again when it is the oldest entry, every earlier one done
 * (rd_sink_mirror_post, before rd_sink_dir_post), every entry that failed
 * here (rd_sink_mirror_failed, in id order), every error the sender
 * reported (rd_sink_mirror_source_error), and the end of the run
 * (rd_sink_mirror_finish, after the last entry is done). The names of each
 * open directory's children are kept (charged to the session's budget);
 * a directory's extras are what its descriptor, opened beneath the
 * destination and checked to be the directory placed at its entry,
 * holds besides them, minus what protect() keeps and rdcp's own names.
 *
 * Orders: DURING (--delete, --delete-during): a directory's extras go
 * at rd_sink_mirror_post (every entry announced before its POST is
 * done); BEFORE: at rd_sink_mirror_post_seen, at once; AFTER
 * (--delete-delay, --delete-after), and any order with max_delete >= 0:
 * found at rd_sink_mirror_post, deleted at rd_sink_mirror_finish in
 * rsync's order (directories in pre-order, names as rsync sorts them).
 *
 * Deletion is turned off for the rest of the run (said once through
 * report with RD_DLF_OFF) by a source error (unless ignore_errors: then
 * only the directory whose listing lost an entry keeps its extras), by
 * the memory budget, and a directory
 * keeps its extras when an entry announced inside it failed here, when
 * it is a source root the sender listed as empty (unless allow_empty),
 * or when it is not the directory placed at its entry.
 */
#ifndef RDCP_SINK_RD_SINK_MIRROR_H
#define RDCP_SINK_RD_SINK_MIRROR_H

#include <stddef.h>
#include <stdint.h>

#include "lib/sink/rd_sink.h"

enum rd_mirror_order { RD_MIRROR_DURING = 0, RD_MIRROR_BEFORE = 1, RD_MIRROR_AFTER = 2 };

struct rd_mirror_opts {
	int delete; /* any --delete*; 0: only force */
	int force;  /* --force (or any --delete*): a full directory may make room */
	enum rd_mirror_order order;
	int64_t max_delete; /* -1: no limit */
	int ignore_errors;
	int allow_empty;
	int dry_run;	/* find and report, change nothing */
	/*
	 * With max_delete: a file's room behind a full directory is made at
	 * the end, in rsync's order with the extras (the file verified
	 * waits under its temporary name), so the limit falls where rsync's
	 * does. Only where nothing acts on an entry's success before the end
	 * (a sender removing its sources would): RD_MF_LATE_ROOM. A file
	 * left without room is reported FAILED | RD_DLF_UNMADE (the entry
	 * failed after its DONE).
	 */
	int late_room;
	size_t mem_max; /* 0: RD_DEL_MEM_MAX */
	/*
	 * 1: keep this entry (a receiver-side filter rule protects it).
	 * rel: its transfer path (the wire path; "" the transfer root).
	 */
	int (*protect)(void *pctx, const char *rel, size_t len, int is_dir);
	void *protect_ctx;
	/*
	 * Per-directory merge files (':' rules, rsync.1 "PER-DIRECTORY RULES
	 * AND DELETE"), or NULL: before protect() is asked about a
	 * directory's entries, the sink enters each directory of the
	 * transfer from the source's root down to it, outermost first:
	 * enter() with its descriptor (only read, never kept; opened
	 * beneath the destination, no link followed) and rel (below the
	 * destination) reads its merge files, 0 or < 0 with err set (then
	 * nothing is deleted in that directory); leave() undoes the last
	 * enter.
	 */
	int (*enter)(void *pctx, int fd, const char *rel, size_t len, struct rd_err *err);
	void (*leave)(void *pctx);
	/*
	 * What happened: flags RD_DLF_* (lib/proto/rd_proto.h): 0 or DIR:
	 * deleted (or, dry run, would be); FAILED: could not be (text);
	 * SKIPPED: max_delete left some (once, at the end; text: how many);
	 * OFF: deletion turned off (text, rel empty). rel: below the
	 * destination, as rsync names it.
	 */
	void (*report)(void *ctx, unsigned flags, const char *rel, size_t len, const char *text);
	void *ctx;
};

struct rd_mirror_stats {
	uint64_t deleted, skipped, failed;
	int off;     /* deletion was turned off (a source error, memory, an empty source) */
	int limited; /* max_delete stopped deletions (rsync's exit 25) */
	uint64_t unmade; /* files (late_room) that had no room at the end: failed entries */
};

/* Turn deletion on for this sink (before the first entry). 0 or -RD_ENOMEM. */
int rd_sink_mirror_start(struct rd_sink *s, const struct rd_mirror_opts *o);
int rd_sink_mirror_on(const struct rd_sink *s);
/*
 * An entry (not a POST) arrived: its name joins its directory's list; a
 * directory (after rd_sink_mkdir, made: its result) opens a list of its
 * own. root: as the entry calls', | RD_SINK_IMPLIED for a directory the
 * sender did not list (-R's implied ones, --files-from's parents): it
 * opens a list but nothing is deleted in it. 0, or < 0: a protocol error (a name
 * that cannot be), rd_sink_err() saying what.
 */
int rd_sink_mirror_entry(struct rd_sink *s, uint32_t id, const char *path, size_t len, int root,
			 int is_dir, int made);
/* A directory's POST arrived (in wire order): 0, or < 0: not the directory open (protocol). */
int rd_sink_mirror_post_seen(struct rd_sink *s, uint32_t id, const char *path, size_t len,
			     int root);
/* The POST is the oldest entry now: DURING deletes, AFTER finds. m: the directory's metadata. */
void rd_sink_mirror_post(struct rd_sink *s, uint32_t id, const struct rd_sink_meta *m);
/* Entry id failed here (ids in increasing order). */
void rd_sink_mirror_failed(struct rd_sink *s, uint32_t id);
/*
 * The sender reported an error (in wire order): deletion off; with
 * ignore_errors, an entry it could not list (listed 0: a NOTE) keeps the
 * extras of the innermost open directory (the one it was listing); a
 * listed entry that failed (a CHUNK_ERR) keeps its own through failed.
 */
void rd_sink_mirror_source_error(struct rd_sink *s, int listed);
/* Every entry is done: the deletions waiting for the end. */
void rd_sink_mirror_finish(struct rd_sink *s);
const struct rd_mirror_stats *rd_sink_mirror_stats(const struct rd_sink *s);
/*
 * rd_sink.c: a non-directory replaces the directory name in pfd (path:
 * the entry's wire path): with force, empty it first (rd_del_entry).
 * 0: nothing done (no force), 1: emptied and removed (or, dry run, would
 * be), < 0: it stays.
 */
int rd_sink__mirror_room(struct rd_sink *s, int pfd, const char *name, const char *path,
			 size_t len);
void rd_sink__mirror_free(struct rd_sink *s);
/* rd_sink.c: does a file's room behind a full directory wait for the end (late_room)? */
int rd_sink__mirror_late(const struct rd_sink *s);
/*
 * ... then the file path (name, verified under tmp in the same directory)
 * waits for it: 1, or 0 (its room is made now after all).
 */
int rd_sink__mirror_later(struct rd_sink *s, const char *name, const char *tmp, const char *path,
			  size_t len);
/* --force or any --delete*: a full directory may make room (at a commit) */
int rd_sink__mirror_forces(const struct rd_sink *s);

#endif
