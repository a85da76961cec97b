/* SPDX-License-Identifier: MIT */
/*
 * Private to lib/sink: the sink's state, and what rd_sink_meta.c,
 * _check.c, _items.c, _part.c and _links.c may use of rd_sink.c.
 */
#ifndef RDCP_SINK_RD_SINK_PRIV_H
#define RDCP_SINK_RD_SINK_PRIV_H

#include <limits.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "lib/sink/rd_sink.h"

struct rd_partial;
struct rd_sink_mir;
struct rd_sink_links;
struct rd_sink_alt;

#define SINK_PATH_MAX  4096 /* RD_PATH_MAX of lib/proto/rd_proto.h */
#define EFF_MAX	       (SINK_PATH_MAX + NAME_MAX + 2)
#define MAX_DEPTH      (SINK_PATH_MAX / 2 + 2)
#define CREATED_MAX    (MAX_DEPTH + 256)
#define TMP_NAME_KEEP  200 /* bytes of the final name kept in temp names */
#define SINK_ROOTS_MAX 64  /* RD_OPEN_PATHS_MAX */
/* --partial-dir directories made and remembered at once (more: left behind) */
#define SINK_PDIRS_MAX 256

struct rd_sink {
	struct rd_err err;
	unsigned flags;
	mode_t umask;
	int root;    /* geteuid() == 0, asked once (not per file: issue 28) */
	int dest_fd; /* into: the destination dir; rename: its parent */
	int into;
	int have_root;
	/*
	 * RD_SINK_RSYNC: into or rename is decided at the first top-level
	 * entry (decide()); until then dest_fd is the parent (-1: missing,
	 * made under root_fd by --mkpath) and dest_there says a non-directory
	 * is under the destination's name.
	 */
	int pending, dest_there, root_fd;
	int fatal; /* decide() failed: every entry fails so (rd_sink_fatal) */
	struct rd_err fatal_err;
	char *dest_rel; /* the destination beneath root_fd */
	/* rd_sink_set_select(): rsync's quick check and transfer rules */
	int sel_on;
	struct rd_sink_select sel;
	/*
	 * Dry run (sel.dry_run): dry_void: the destination would be made
	 * (nothing beneath it exists); absent: the last resolution failed
	 * because a parent would be made (or replaced) first.
	 */
	int dry_void, absent;
	int dest_made; /* decide() made the destination directory (rsync's "cd+++" ./) */
	/* RD_SINK_RSYNC pushes: top-level names of contents sources (hard links) */
	unsigned ncroots;
	char croots[SINK_ROOTS_MAX][NAME_MAX + 1];
	int no_openat2;
	char dest_base[NAME_MAX + 1]; /* rename mode: the root's new name */
	char root_name[NAME_MAX + 1]; /* rename mode: the root's wire name */
	char dest_esc[256];
	char label[256]; /* how messages name the destination */
	/* single-entry parent cache, keyed by the effective parent path */
	int cache_fd;
	size_t cache_len;
	char cache_path[EFF_MAX];
	/* directories we created, awaiting dir_post (see top comment) */
	struct {
		dev_t dev;
		ino_t ino;
	} created[CREATED_MAX];
	unsigned ncreated;
	/* rd_sink_expect_roots(): top-level names asked for, and accepted */
	int expect_on;
	unsigned nexpect, nseen;
	char expect[SINK_ROOTS_MAX][NAME_MAX + 1];
	unsigned char expect_used[SINK_ROOTS_MAX];
	unsigned char expect_contents[SINK_ROOTS_MAX];
	char seen[SINK_ROOTS_MAX][NAME_MAX + 1];
	unsigned char seen_contents[SINK_ROOTS_MAX];
	/* rd_sink_set_chunking(): partial files (rd_sink_partial.h) */
	uint32_t part_chunk;
	int part_sum;
	char part_digest[33];
	char part_dir[NAME_MAX + 1]; /* --partial-dir; "" = beside the file */
	uint64_t part_mem;	     /* bitmap bytes of the partials open now (rd_sink_part.c) */
	/* --partial-dir directories this sink made (rd_sink_part.c) */
	struct rd_sink_pdir {
		dev_t dev;
		ino_t ino;
		unsigned refs; /* files whose partial is in it now */
		int used;
	} pdirs[SINK_PDIRS_MAX];
	struct rd_sink_links *links; /* rd_sink_links.c: files that start link groups */
	struct rd_sink_alt *alt;     /* rd_sink_dests.c: --link-dest..., backups (or NULL) */
	unsigned items;		     /* rd_sink_items(): what the last entry call changed */
	struct rd_sink_mir *mir;	     /* --delete, --force (rd_sink_mirror.c), or NULL */
	/* scratch for one resolution */
	char eff[EFF_MAX];
	char esc[RD_ERR_MSG_MAX / 2];
};

struct rd_range;

/* A file being received (rd_sink.c; rd_sink_range.c reads it too). */
struct rd_sink_file {
	struct rd_sink *s;
	int pfd, tmpfd, exfd;
	int ppfd;	/* --partial-dir inside pfd, holding the partial; else -1 */
	int named;	/* tmpfd has the name tmpname in pfd (a partial: in ppfd) */
	int absent;	/* nothing was under the final name at begin */
	mode_t ex_mode; /* an existing regular file's mode: kept without -p (rsync) */
	int sealed;	/* rd_sink_file_seal(): only the rename is left */
	struct rd_sink_meta m;
	char name[NAME_MAX + 1];
	char tmpname[NAME_MAX + 1];
	char path[SINK_PATH_MAX + 1]; /* wire path, for messages */
	size_t path_len;
	uint64_t ex_size;	 /* of exfd */
	struct rd_partial *part; /* tmpfd is a kept partial (tmpname) */
	int resumed, trusted;	 /* its chunks are worth checking / trusted */
	char note[160];		 /* for the user: what happened to a partial */
	size_t part_mem;	 /* its bitmap's share of s->part_mem */
	int pdir;		 /* 1 + its partial dir in s->pdirs (one we made), or 0 */
	int link_first;		 /* starts a link group: remembered at commit */
	unsigned items;		 /* rd_sink_file_items() */
	char *eff;		 /* with backups: its path below the destination */
	struct rd_range *rng;	 /* a range, or a COMMIT (rd_sink_range.c) */
	int compare;		 /* rd_sink_file_compare(): exfd alone, nothing written */
};

int rd_sink__ffail(struct rd_sink_file *f, int errnum, const char *what);
/*
 * rd_sink_part.c: the file's partial (1 = in use, 0 = not for this file,
 * < 0 error, on f's sink), and what file_free gives back of it.
 */
int rd_sink__part_open(struct rd_sink_file *f);
/* f's --partial-dir opened as f->ppfd (made if missing, held as rdcp's when made): 0 or < 0 */
int rd_sink__part_dir_open(struct rd_sink_file *f);
void rd_sink__part_release(struct rd_sink_file *f);
/* rd_sink_links.c: remember f's placed inode (fd) if it starts a link group. */
void rd_sink__link_record(struct rd_sink_file *f, int fd);
void rd_sink__links_free(struct rd_sink *s);
/*
 * rd_sink_dests.c. alt_file: a regular file (st: what is under its name,
 * or NULL when nothing) tried in the alternate destinations: RD_SINK_SAME
 * (linked, left out or copied here: items set), -1 (nothing there: go on;
 * an absent file's items may say what the basis differs in), or < 0.
 * alt_node: a symlink (tgt) or special (rdev) missing here: 1 done (linked,
 * or left out), 2 make it but itemize nothing (--copy-dest), 0 make it, < 0.
 * backup: keep what is under name (its path below the destination rel)
 * before something else takes the name (RD_BACKUP_LINK) or it goes
 * (RD_BACKUP_MOVE); 0 when there are no backups.
 */
int rd_sink__alt_file(struct rd_sink *s, int pfd, const char *name, const struct stat *st,
		      const struct rd_sink_meta *m, const char *path, size_t len);
int rd_sink__alt_node(struct rd_sink *s, int pfd, const char *name, const char *tgt, size_t tlen,
		      uint64_t rdev, const struct rd_sink_meta *m, const char *path, size_t len);
/* a new directory's items: as rsync's against a match in the alternate dirs, else items */
unsigned rd_sink__alt_dir_items(struct rd_sink *s, const struct rd_sink_meta *m, unsigned items);
int rd_sink__backup(struct rd_sink *s, int pfd, const char *name, const char *rel, int how);
int rd_sink__backups_on(const struct rd_sink *s);
/* rsync: --backup without --backup-dir implies --omit-dir-times */
int rd_sink__omit_dir_times(const struct rd_sink *s);
/* the effective path of the last resolution (below the destination) */
const char *rd_sink__eff(const struct rd_sink *s);
void rd_sink__alt_free(struct rd_sink *s);

/* rd_sink__place's root for a hard link's target (an earlier entry) */
#define RD_SINK__TARGET 0x200u

struct rd_err *rd_sink__err(struct rd_sink *s);
/* rsync's rules (rd_sink_check.c): the select settings, or NULL when none were set */
const struct rd_sink_select *rd_sink__select(const struct rd_sink *s);
/* a dry run (rd_sink_select.dry_run): nothing may change */
int rd_sink__dry(const struct rd_sink *s);
/* a dry run's entry beneath a directory that would be made: new (0); else ret */
int rd_sink__dry_new(struct rd_sink *s, int ret);
/* --existing, --ignore-existing for a non-directory that is not a regular file: 1: left */
int rd_sink__sel_leave(struct rd_sink *s, const char *path, size_t len, int root);
/* Where path lands, borrowed: *pfd its parent (valid until the next entry), *name in it. */
int rd_sink__resolve(struct rd_sink *s, const char *path, size_t len, int root, int *pfd,
		     const char **name);
/*
 * Bring pfd/name (never followed) in line for the items of diff (OWNER,
 * GROUP, PERMS, TIME): owner and group, then the mode (through an O_PATH
 * descriptor), then the times. Nothing in a dry run.
 */
int rd_sink__fix_attrs(struct rd_sink *s, int pfd, const char *name, unsigned diff,
		       const struct rd_sink_meta *m, const char *path, size_t len);
unsigned rd_sink__flags(const struct rd_sink *s);
const char *rd_sink__esc(struct rd_sink *s, const char *p, size_t len);
int rd_sink__fail(struct rd_sink *s, int errnum, const char *p, size_t len, const char *what);
void rd_sink__tmp_name(char *out, const char *name);
int rd_sink__open_dir(struct rd_sink *s, const char *path, size_t len, int root);
int rd_sink__place(struct rd_sink *s, const char *path, size_t len, int root, int *pfd,
		   char name[NAME_MAX + 1]);
/*
 * A non-directory (path) is to take name in pfd, where a directory may
 * be: rsync's rules (an empty one goes; a full one with --force or any
 * --delete*; a dry run says what would happen). 0, or < 0: it stays.
 */
int rd_sink__not_a_dir(struct rd_sink *s, int pfd, const char *name, const char *path, size_t len);
int rd_sink__node_meta(struct rd_sink *s, int pfd, const char *name, const struct rd_sink_meta *m,
		       const char *path, size_t len);
int rd_sink__file_fd(const struct rd_sink_file *f);
/* rd_sink_items(): set it (returned); what making an entry of S_IFMT type where st was changes */
unsigned rd_sink__set_items(struct rd_sink *s, unsigned items);
unsigned rd_sink__made_items(const struct rd_sink *s, int ret, const struct stat *st, mode_t type,
			     const struct rd_sink_meta *m);
/*
 * rd_sink_items.c: what m changes on st (same type): SIZE (a regular
 * file), TIME (by the select window, rd_sink__same_time), PERMS (with
 * RD_SINK_PRESERVE_MODE, or perms: a directory this sink made), OWNER,
 * GROUP (asked for and allowed). attr_items is attr_diff with the sink's
 * own perms rule: what rsync itemizes.
 */
unsigned rd_sink__attr_items(const struct rd_sink *s, const struct stat *st,
			     const struct rd_sink_meta *m);
unsigned rd_sink__attr_diff(const struct rd_sink *s, const struct stat *st,
			    const struct rd_sink_meta *m, int perms);
/* rsync's same_time() by the select window (rd_sink_check.c) */
int rd_sink__same_time(const struct rd_sink *s, const struct stat *st,
		       const struct rd_sink_meta *m);
/* a symlink to be made as name in pfd: NEW|LOCAL, LOCAL|CHANGE (another target), or attributes */
unsigned rd_sink__link_items(struct rd_sink *s, int pfd, const char *name, const char *tgt,
			     size_t tlen, const struct rd_sink_meta *m);
/* The sink's policies the items judge by (rd_sink.c) */
mode_t rd_sink__final_mode(const struct rd_sink *s, const struct rd_sink_meta *m);
int rd_sink__want_owner(const struct rd_sink *s);
int rd_sink__want_group(const struct rd_sink *s);
struct rd_sink *rd_sink__file_sink(struct rd_sink_file *f);
const char *rd_sink__file_path(const struct rd_sink_file *f, size_t *len);

/* Ranges (rd_sink_range.c): what it may use of rd_sink.c, and what rd_sink.c calls. */
int rd_sink__file_new(struct rd_sink *s, const char *path, size_t len, int root,
		      const struct rd_sink_meta *m, struct rd_sink_file **out);
/* The chunking rd_sink_set_chunking() set. */
void rd_sink__chunking(const struct rd_sink *s, uint32_t *cs, int *sum, const char **digest);
int rd_sink__range_is_commit(const struct rd_range *g);
const char *rd_sink__range_data(const struct rd_range *g);
int rd_sink__range_src(const struct rd_range *g, uint64_t chunk);
void rd_sink__range_done(struct rd_range *g, uint64_t chunk, int ok);
int rd_sink__range_seal(struct rd_range *g, int fd); /* 0 or -errno */
void rd_sink__range_abort(struct rd_range *g);
void rd_sink__range_cleanup(struct rd_range *g); /* after the rename: no records */
void rd_sink__range_free(struct rd_range *g);

#endif
