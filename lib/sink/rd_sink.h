/* SPDX-License-Identifier: MIT */
/*
 * Receiver side: place entries that arrive off the wire under a
 * destination, confined to it. Every wire path is relative (checked with
 * rd_path_check before it gets here, and again here); every directory
 * below the destination is opened with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS) (or an O_NOFOLLOW walk where openat2 is missing),
 * so no entry can be created through "..", an absolute path, or a symlink
 * that points out of the tree.
 *
 * Regular files are written into a temporary file in the destination
 * directory and get their final name only at commit, after the caller
 * verified every chunk; an existing file under the final name is never
 * touched until the rename. Once the caller said how chunks are cut
 * (rd_sink_set_chunking), the temporary is the file's partial
 * ".rdcp-partial.<name>" with a record of its verified chunks beside it
 * (rd_sink_partial.h): abort keeps both, and the next copy of the same
 * source reuses them. With RD_SINK_NO_PARTIAL (or without chunking) it is
 * an O_TMPFILE where the filesystem has it, else a named ".rdcp.*" file
 * created O_EXCL, and abort removes it.
 *
 * Placement (scp/rsync habit): if the destination is an existing
 * directory, entries go inside it ("dir/x" -> DEST/dir/x). Otherwise the
 * single top-level entry is renamed to the destination's name
 * ("dir/x" -> DEST/x); a second top-level entry is then an error.
 */
#ifndef RDCP_SINK_RD_SINK_H
#define RDCP_SINK_RD_SINK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/base/rd_err.h"

#define RD_SINK_PRESERVE_MODE  0x1u  /* exact permission bits */
#define RD_SINK_PRESERVE_TIMES 0x2u  /* mtime (atime = mtime) */
#define RD_SINK_PRESERVE_OWNER 0x4u  /* uid, only as root; keeps setuid/setgid */
#define RD_SINK_PRESERVE_GROUP 0x20u /* gid, only as root */
#define RD_SINK_FSYNC	       0x8u  /* data on disk before its name (see rd_sink_file_seal) */
#define RD_SINK_READONLY       0x10u /* refuse every write (read-only module) */
#define RD_SINK_NO_PARTIAL     0x40u /* --no-partial: temporaries go away on abort */
#define RD_SINK_TRUST_PARTIAL  0x80u /* --trust-partial: keep chunks unverified (none) */
#define RD_SINK_XATTRS	       0x100u /* -X: apply user.* xattrs */
#define RD_SINK_ACLS	       0x200u /* -A: apply POSIX ACLs */
#define RD_SINK_DEVICES	       0x400u /* -D: make char/block devices (root only) */
#define RD_SINK_SPECIALS       0x800u /* -D: make fifos and sockets */
/*
 * A write-only module (issue 27 item 14): nothing already there is ever
 * compared with what arrives, so no answer tells the peer whether it held
 * the same bytes: no existing file or prefix is read, no partial is kept
 * or resumed. Everything is received whole, then renamed over what was
 * there.
 */
#define RD_SINK_FRESH 0x1000u
/*
 * rsync's placement (RD_OF_SELECT, issue 28), instead of the scp-like one
 * above: an existing directory is entered; otherwise the destination is a
 * directory, made if missing (its last component; with RD_SINK_MKPATH its
 * missing parents too), when RD_SINK_DEST_DIR says so (a trailing '/',
 * several sources) or the first top-level entry is a directory; only a
 * single non-directory takes the destination's name. An entry flagged
 * RD_SINK_CONTENTS (a source "dir/") lands without its first component:
 * that source's root directory is the destination itself.
 */
#define RD_SINK_RSYNC	 0x2000u
#define RD_SINK_DEST_DIR 0x4000u
#define RD_SINK_MKPATH	 0x8000u
/*
 * Files up to this size keep no partial (rd_sink_partial.h): sending one
 * again costs less than its record, and each would cost several calls.
 */
#define RD_SINK_SMALL_FILE (64u << 10)
/*
 * The bitmaps of the partials open at once (a bit per chunk of each
 * file, sized by the sizes the sender announces) cost at most this per
 * sink; a file whose bitmap would not fit gets no partial.
 */
#define RD_SINK_PARTIAL_MEM (64u << 20)
/* Testing only: take the fallback paths even where the kernel has more. */
#define RD_SINK_TEST_NO_OPENAT2 0x10000u /* openat(O_NOFOLLOW) walk */
#define RD_SINK_TEST_NO_TMPFILE 0x20000u /* named ".rdcp.*" temporaries */

struct rd_sink_meta {
	uint32_t mode; /* st_mode from the sender */
	uint32_t uid, gid;
	uint64_t size;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
};

struct rd_sink;
struct rd_sink_file;

/*
 * root_fd: directory everything must stay beneath (a module's directory,
 * or the parent of a local destination). dest: path of the destination
 * relative to root_fd ("" or "." = root_fd itself); it may not contain
 * ".." and is resolved with RESOLVE_BENEATH. Errors name dest.
 */
int rd_sink_open(struct rd_sink **out, int root_fd, const char *dest, unsigned flags,
		 mode_t umask, struct rd_err *err);

/*
 * The process umask, read once at program start before any thread runs
 * (reading it means setting it: umask(2) has no query). rd_sink_open takes
 * the value, so sessions never touch the process umask (issue 7 item 9).
 */
mode_t rd_sink_process_umask(void);
void rd_sink_close(struct rd_sink *s); /* accepts NULL */

/*
 * Pulls: only accept the top-level entries that were asked for. names[i]
 * is the last component of the i-th requested path, or "" for a request
 * that names no component ("." or "~/" over ssh: any one name, allowed
 * only when the destination does not exist, so that the entry is renamed
 * to it, or, RD_SINK_RSYNC, when it asked for contents). contents (NULL:
 * none; RD_SINK_RSYNC only): contents[i] says the i-th request named a
 * directory's contents; its entries are placed so whatever flag they
 * carry, and RD_FF_CONTENTS on another's is refused. Once called, every RD_FF_ROOT entry must match an unused name,
 * and every other entry must lie under a top-level entry accepted before;
 * anything else fails with -RD_EPROTO. Returns 0 or -RD_EUSAGE (too many
 * names, or a "" where the destination is an existing directory).
 */
int rd_sink_expect_roots(struct rd_sink *s, const char *const *names, const unsigned char *contents,
			 unsigned n);
const struct rd_err *rd_sink_err(const struct rd_sink *s);
/*
 * A failure that ends the whole transfer rather than one entry (the
 * destination cannot be what the entries need: RD_SINK_RSYNC's decision):
 * its negative status, rd_sink_err() saying why; else 0. Every entry call
 * after it fails the same way.
 */
int rd_sink_fatal(const struct rd_sink *s);
/* How error messages name the destination (default: dest as given). */
void rd_sink_set_label(struct rd_sink *s, const char *label);
/*
 * The name the single top-level entry takes when the destination is not
 * a directory (rename mode: "cp a b"), or NULL when entries land inside it
 * (a daemon's transfer log names files by where they land).
 */
const char *rd_sink_renames_to(const struct rd_sink *s);

/*
 * What the last entry call (rd_sink_mkdir, _symlink, _special, _hardlink,
 * _file_check, the xattr and ACL calls) changed, as rsync itemizes it
 * (RD_IT_* of lib/proto/rd_proto.h): made anew (NEW with LOCAL, or HLINK;
 * also what replaced an entry of another type), or what differed in the
 * entry already there (a symlink's target or a device's number: CHANGE;
 * SIZE, TIME by the select window, PERMS with RD_SINK_PRESERVE_MODE,
 * OWNER and GROUP where they are kept, ACL, XATTR). Compared with what
 * was there before the call; a directory's own attributes are judged at
 * its rd_sink_mkdir (as rsync does), its POST reports nothing. SKIPPED: a
 * transfer rule left it. In a dry run: what the call would have changed.
 * 0 after a failure.
 */
unsigned rd_sink_items(const struct rd_sink *s);

/*
 * The root argument of the entry calls below: RD_SINK_ROOT (the entry has
 * RD_FF_ROOT: a top-level source) | RD_SINK_CONTENTS (RD_FF_CONTENTS). The
 * values are the wire flags', so root = flags & (RD_FF_ROOT | RD_FF_CONTENTS).
 */
#define RD_SINK_ROOT	 0x1u
#define RD_SINK_CONTENTS 0x20u
/* rd_sink_mirror_entry only: a DIR the sender did not list (RD_FF_IMPLIED) */
#define RD_SINK_IMPLIED 0x8u

/* All return 0 or -RD_E*. */
int rd_sink_mkdir(struct rd_sink *s, const char *path, size_t len, int root,
		  const struct rd_sink_meta *m);
int rd_sink_dir_post(struct rd_sink *s, const char *path, size_t len, int root,
		     const struct rd_sink_meta *m);
int rd_sink_symlink(struct rd_sink *s, const char *path, size_t len, int root, const char *target,
		    size_t tlen, const struct rd_sink_meta *m);

/*
 * rsync's quick check and transfer rules (RD_OF_SELECT, issue 28), set
 * before the first entry; without them every regular file is begun and
 * compared as before. Times compare as rsync's --modify-window says:
 * modify_window seconds (0: whole seconds), or RD_SINK_WINDOW_NS: to the
 * nanosecond where both sides have nanoseconds (one side's 0 ns: seconds).
 */
/* ALL (-I): every file sent, compared chunk by chunk and written anew (rd_sink_rewrites) */
enum { RD_SINK_CMP_QUICK = 0, RD_SINK_CMP_CHECKSUM = 1, RD_SINK_CMP_SIZE = 2, RD_SINK_CMP_ALL = 3 };
#define RD_SINK_WINDOW_NS (-1)
struct rd_sink_select {
	int compare;	       /* RD_SINK_CMP_*: QUICK size and mtime, SIZE size alone */
	int update;	       /* -u: a file newer here stays */
	int ignore_existing;   /* --ignore-existing: whatever exists stays */
	int existing;	       /* --existing: nothing new is made */
	int32_t modify_window; /* seconds, or RD_SINK_WINDOW_NS */
	uint64_t min_size;     /* smaller files are not transferred (0: none) */
	uint64_t max_size;     /* larger ones neither (UINT64_MAX: none) */
	/*
	 * -n: nothing changes here (no directory, partial, link, node or
	 * attribute); each entry call says what it would do (items),
	 * an entry beneath a directory that would be made is new.
	 * rd_sink_file_check's SEND then means "would be sent":
	 * rd_sink_file_begin refuses.
	 */
	int dry_run;
};
void rd_sink_set_select(struct rd_sink *s, const struct rd_sink_select *sel);
/*
 * A file begun after the quick check (or -I) let it through is written
 * anew even when its contents turn out equal, as rsync writes every file
 * it sends (a new inode: hard links of the old one stay with it); with -c
 * (RD_SINK_CMP_CHECKSUM) an equal file is kept as it is.
 */
int rd_sink_rewrites(const struct rd_sink *s);
/* -c (RD_SINK_CMP_CHECKSUM): contents decide; a file that differed is rsync's 'c' */
int rd_sink_checksums(const struct rd_sink *s);

/*
 * Snapshots and backups (issue 29; rd_sink_dests.c, docs/DESIGN.md
 * "Snapshots" and "Backups"), set before the first entry.
 *
 * Alternate destinations (rsync's --link-dest, --compare-dest,
 * --copy-dest; one kind per copy, up to RD_SINK_ALT_MAX directories tried
 * in order): a relative DIR is relative to the destination directory. A
 * regular file, symlink or special missing here (a regular file also when
 * present) that one of them holds under the same path, of the same type,
 * matching by the quick check (size and mtime; a symlink's target, a
 * device's number) and the attributes kept (-p, -o, -g) is: LINK hard-
 * linked from there, COMPARE left out (not made here), COPY copied from
 * there (no data moves). A regular file matching by the quick check but not
 * the attributes is copied from there by all three. Every DIR is opened
 * once, at the first entry; what is beneath it is reached through that
 * descriptor (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), never through
 * a symlink: a symlink in a file's place is a symlink, not a match. A DIR
 * that does not exist is skipped (rsync warns).
 *
 * root_fd >= 0 (a daemon's module, where the destination is dest_rel
 * beneath it): every DIR and the backup directory are resolved beneath
 * root_fd, ".." may not leave it, a symlink on the way is refused; -1 (the
 * user's own files): opened as named. -RD_EUSAGE / -RD_EPERM with the
 * sink's error naming the option and the directory.
 */
#define RD_SINK_ALT_MAX 20
enum { RD_SINK_ALT_LINK = 1, RD_SINK_ALT_COMPARE = 2, RD_SINK_ALT_COPY = 3 };
struct rd_sink_dests {
	int kind;	/* RD_SINK_ALT_*, or 0: none */
	unsigned n;	/* directories, 0..RD_SINK_ALT_MAX (0 iff kind 0) */
	const char *dirs[RD_SINK_ALT_MAX];
	int backup;		/* -b: keep what is replaced (rd_sink_backup.h) */
	const char *backup_dir; /* --backup-dir, or NULL */
	const char *suffix;	/* --suffix, or NULL: the default */
};
int rd_sink_set_dests(struct rd_sink *s, const struct rd_sink_dests *d, int root_fd,
		      const char *dest_rel);
/* The option's name of an RD_SINK_ALT_* ("--link-dest"...). */
const char *rd_sink_alt_option(int kind);
/*
 * dir as a path beneath a module whose destination is dest_rel (relative
 * to it unless absolute; an absolute one from the module's top): 0 and
 * out, or -1 when ".." leaves the module, -2 too long. Lexical only: the
 * sink still opens it beneath the module without following symlinks.
 */
int rd_sink_confined_path(const char *dest_rel, const char *dir, char *out, size_t cap);
/*
 * The backups of this copy (opened at the first need, made beneath the
 * destination or the module as set above), for the deletion side to keep
 * a deleted entry: rd_backup_keep(b, dirfd, name, rel, RD_BACKUP_MOVE).
 * 0 with *out NULL when no backups are made, or a negative status.
 */
struct rd_backup;
int rd_sink_backups(struct rd_sink *s, struct rd_backup **out);
/*
 * The same for lib/sink/rd_sink_delete.h's ops, with the sink as ctx:
 * backups_on says whether to set them; backup_deleted keeps the entry
 * name of dirfd (rel below the destination) as its backup instead of
 * removing it (0, or < 0 with rd_sink_err() saying why); backup_protects
 * is 1 for what the backups own (rsync's "P *SUFFIX", or the backup
 * directory inside the destination), which --delete leaves alone.
 */
int rd_sink_backups_on(const struct rd_sink *s);
int rd_sink_backup_deleted(struct rd_sink *s, int dirfd, const char *name, const char *rel);
int rd_sink_backup_protects(struct rd_sink *s, const char *rel, size_t len, int is_dir);

/*
 * A regular file about to be announced (rd_sink_set_select() given): look
 * at what is under its name, by stat alone. RD_SINK_SEND: begin it
 * (rd_sink_file_begin); RD_SINK_SAME: the quick check says it is there
 * already, its owner, mode and times were brought in line (no data was
 * read); RD_SINK_LEAVE: a transfer rule (-u, --ignore-existing,
 * --existing, --max-size, --min-size) leaves it as it is. Or < 0.
 */
enum { RD_SINK_SEND = 0, RD_SINK_SAME = 1, RD_SINK_LEAVE = 2 };
int rd_sink_file_check(struct rd_sink *s, const char *path, size_t len, int root,
		       const struct rd_sink_meta *m);

/*
 * Start a regular file. On success *out is a handle with a temporary file
 * of m->size bytes. If a regular file of the same size already exists
 * under the final name, rd_sink_file_has_existing() is 1 and its chunks
 * can be read for comparison (with chunking set: also a file of another
 * size, see rd_sink_file_chunk_src).
 */
int rd_sink_file_begin(struct rd_sink *s, const char *path, size_t len, int root,
		       const struct rd_sink_meta *m, struct rd_sink_file **out);
int rd_sink_file_has_existing(const struct rd_sink_file *f);
/*
 * A dry run with -c (issue 28): a handle on the regular file of m->size
 * bytes under the final name, to compare its chunks with the sender's
 * (rd_sink_file_pread, existing = 1), and nothing else: no temporary, no
 * partial, no directory; it writes, copies and commits nothing (those
 * calls fail) and rd_sink_file_abort() only closes it. 0 (*out set),
 * 1 when there is no such file to compare (it would be sent whole:
 * nothing there, another type or size, a parent that would be made, a
 * write-only module), or < 0. Only in a dry run.
 */
int rd_sink_file_compare(struct rd_sink *s, const char *path, size_t len, int root,
			 const struct rd_sink_meta *m, struct rd_sink_file **out);
/*
 * What committing f changes, judged at begin against what was under the
 * final name (RD_IT_* as rd_sink_items(): NEW when no regular file was
 * there, else SIZE, TIME, PERMS, OWNER, GROUP); the caller adds XFER.
 */
unsigned rd_sink_file_items(const struct rd_sink_file *f);
int rd_sink_file_read_existing(struct rd_sink_file *f, void *buf, size_t len, uint64_t off);

/*
 * Partials and existing prefixes (issue 11). rd_sink_set_chunking: chunk
 * size and checksum name of the session (has_sum: the checksum can compare
 * chunks, i.e. it is not "none"); before the first file_begin. Then, per
 * chunk of a begun file, where a copy of it may already be:
 *   NONE	 nowhere: ask for the data
 *   PARTIAL	 in the resumed partial: compare, keep it if equal
 *   EXISTING	 in the existing final file (any size that holds the chunk
 *		 whole): compare, copy it over if equal
 *   TRUSTED	 in the partial, kept unverified (--trust-partial, none)
 * rd_sink_file_chunk_done: the chunk is verified and written (ok = 1) or
 * its partial copy was wrong (ok = 0); the record follows, at most every
 * 10 ms and always on abort. rd_sink_file_note: a line for the user
 * (the source changed since the partial was kept...), or NULL.
 */
enum { RD_SINK_CHUNK_NONE = 0, RD_SINK_CHUNK_PARTIAL, RD_SINK_CHUNK_EXISTING, RD_SINK_CHUNK_TRUSTED };
void rd_sink_set_chunking(struct rd_sink *s, uint32_t chunk_size, const char *digest, int has_sum);
/*
 * --partial-dir: partials and their records go into the directory `name`
 * (one relative name: no '/', not "." or "..") inside each file's
 * destination directory, created (0700) when first needed, never through
 * a symlink, and removed when it is left empty if rdcp made it (this sink,
 * or the copy that began a partial it resumed from there, as its record
 * says; a directory of that name that was there before is never removed).
 * Before the first file_begin. -RD_EUSAGE for a name that is not one.
 */
int rd_sink_set_partial_dir(struct rd_sink *s, const char *name);
int rd_sink_partial_dir_valid(const char *name);
int rd_sink_file_chunk_src(const struct rd_sink_file *f, uint64_t chunk);
int rd_sink_file_resumed(const struct rd_sink_file *f);
/*
 * Use nothing f's destination held (-S, whose chunks carry only data
 * pieces and so cannot be compared): a resumed partial is emptied back to
 * all holes and its record dropped, an existing file is not read. Before
 * the first chunk is asked for. 0 or a negative status.
 */
int rd_sink_file_restart(struct rd_sink_file *f);
int rd_sink_file_read_partial(struct rd_sink_file *f, void *buf, size_t len, uint64_t off);
/*
 * The same two reads from a worker thread (the resume comparison, GET
 * SUM): existing = 1 the existing file, 0 the partial; touches only the
 * file's descriptors and sets no message: 0 or -errno. Then, on the
 * sink's thread, rd_sink_file_read_error(f, existing, -ret) gives the
 * status and message the reads above would have.
 */
int rd_sink_file_pread(const struct rd_sink_file *f, int existing, void *buf, size_t len,
		       uint64_t off);
int rd_sink_file_read_error(struct rd_sink_file *f, int existing, int errnum);
void rd_sink_file_chunk_done(struct rd_sink_file *f, uint64_t chunk, int ok);
const char *rd_sink_file_note(const struct rd_sink_file *f);
/* Copy [off, off+len) of the existing file into the temporary. */
int rd_sink_file_copy_existing(struct rd_sink_file *f, uint64_t off, size_t len);
/* Write all of buf at off (ENOSPC -> -RD_ENOSPC, naming the file). */
int rd_sink_file_write(struct rd_sink_file *f, const void *buf, size_t len, uint64_t off);
/*
 * The same from a worker thread (the engine's pool, issue 12): touches
 * only the file's descriptor and nothing shared, sets no message; 0 or
 * -errno (-ERANGE: past the end). It also starts write-back of the range
 * (sync_file_range WRITE, not waiting), so that the data is mostly on its
 * way to the disk when the file is committed and an fsync does not stall.
 * Several threads may write distinct ranges of one file at once; the
 * file must not be committed or aborted meanwhile. Then, on the sink's
 * thread, rd_sink_file_write_error(f, -ret) turns a failure into the
 * message and status rd_sink_file_write() would have given.
 */
int rd_sink_file_pwrite(struct rd_sink_file *f, const void *buf, size_t len, uint64_t off);
int rd_sink_file_write_error(struct rd_sink_file *f, int errnum);
/*
 * keep_existing = 1: the existing file is identical; drop the temporary,
 * apply metadata to the existing file. Else: size, optional fsync,
 * metadata, rename into place. Frees f either way.
 */
int rd_sink_file_commit(struct rd_sink_file *f, int keep_existing);
/*
 * Durability without one fsync per file (RD_SINK_FSYNC, issue 13): seal
 * each complete file (size and metadata; no fsync), rd_sink_sync() once
 * (syncfs: every sealed file's data reach the disk), commit each (the
 * rename; no fsync), rd_sink_sync() again (the names reach the disk), and
 * only then report them done. No final name ever holds a partial file:
 * a name is given only to data already on disk. rd_sink_wants_sync: the
 * sink has RD_SINK_FSYNC. Without it commit alone is the whole story.
 */
int rd_sink_file_seal(struct rd_sink_file *f);
int rd_sink_sync(struct rd_sink *s);
int rd_sink_wants_sync(const struct rd_sink *s);
void rd_sink_file_abort(struct rd_sink_file *f); /* accepts NULL; frees f */
const struct rd_err *rd_sink_file_err(const struct rd_sink_file *f);

/*
 * Ranges (rdcp-mpi, issue 32; rd_sink_range.c, lib/proto/rd_proto.h
 * section 6): several sessions, maybe on several servers sharing a file
 * system, write one file, each its own byte range, into a shared partial
 * beside it, with a record each of the chunks they verified.
 *
 * rd_sink_range_begin: a handle for [off, off + len) of the file m
 * describes (chunking must be set; off a multiple of the chunk size, len
 * too unless the range ends the file). Its chunks are numbered as in the
 * whole file; rd_sink_file_chunk_src says which of them a record of an
 * earlier session holds (compare them), chunk_done records them, commit
 * seals the range (it never renames) and abort keeps the record.
 * RD_SINK_RANGE_SAME, *out NULL: a regular file of m's size and mtime is
 * under the final name already (rsync's quick check): nothing to write.
 *
 * rd_sink_range_commit: the sealed records of job must cover every byte
 * (else -RD_EPARTIAL, everything kept); the handle then holds the shared
 * partial and rd_sink_file_commit gives it its metadata and final name and
 * removes the records. RD_SINK_RANGE_SAME, *out set: the final file is
 * there already; rd_sink_file_commit(f, 1) applies the metadata to it.
 */
#define RD_SINK_RANGE_SAME 2
/*
 * Both, with rsync's rules set (rd_sink_set_select): the quick check as
 * they say (--size-only, --modify-window; -c and -I send), and
 * RD_SINK_RANGE_LEAVE, *out NULL: a transfer rule (-u, --existing,
 * --ignore-existing, --max-size, --min-size) leaves the file as it is;
 * nothing is written, the COMMIT changes nothing either.
 */
#define RD_SINK_RANGE_LEAVE 3
int rd_sink_range_begin(struct rd_sink *s, const char *path, size_t len, int root,
			const struct rd_sink_meta *m, uint64_t job, uint64_t off, uint64_t rlen,
			struct rd_sink_file **out);
int rd_sink_range_commit(struct rd_sink *s, const char *path, size_t len, int root,
			 const struct rd_sink_meta *m, uint64_t job, struct rd_sink_file **out);
/* The range partial's name for final name `name` of that source (out: NAME_MAX + 1). */
void rd_sink_range_name(char *out, const char *name, uint64_t size, int64_t msec, uint32_t mnsec);

/*
 * Metadata beyond stat (issue 13, rd_sink_meta.c). Everything is applied
 * through descriptors or *at() calls on the confined parent, like the
 * rest of the sink. These return 0, a negative status (the entry failed),
 * or RD_SINK_NOTE: done, but something could not be applied here (xattrs
 * on a filesystem without them, a device as non-root, a flag this sink
 * does not keep); rd_sink_err() says what. A note never fails a copy.
 */
#define RD_SINK_NOTE 1

/* ACL entries as on the wire: tag 1 USER_OBJ, 2 USER, 3 GROUP_OBJ, 4 GROUP, 5 MASK, 6 OTHER. */
struct rd_sink_acl {
	uint8_t tag, perm; /* perm: r 4, w 2, x 1 */
	uint32_t id;
};
#define RD_SINK_ACL_ACCESS  1
#define RD_SINK_ACL_DEFAULT 2

/* On the temporary of a regular file in progress (kept by the commit). */
int rd_sink_file_xattr(struct rd_sink_file *f, const char *name, size_t nlen, const void *val,
		       size_t vlen);
int rd_sink_file_acl(struct rd_sink_file *f, int type, const struct rd_sink_acl *a, unsigned n);
/* On a directory made by rd_sink_mkdir (root as given there). */
int rd_sink_dir_xattr(struct rd_sink *s, const char *path, size_t len, int root, const char *name,
		      size_t nlen, const void *val, size_t vlen);
int rd_sink_dir_acl(struct rd_sink *s, const char *path, size_t len, int root, int type,
		    const struct rd_sink_acl *a, unsigned n);
/*
 * On a regular file rd_sink_file_check() left SAME: its existing file.
 * Every one of these sets an xattr or ACL only when it differs from what
 * is there (items: XATTR / ACL).
 */
int rd_sink_node_xattr(struct rd_sink *s, const char *path, size_t len, int root, const char *name,
		       size_t nlen, const void *val, size_t vlen);
int rd_sink_node_acl(struct rd_sink *s, const char *path, size_t len, int root, int type,
		     const struct rd_sink_acl *a, unsigned n);
/*
 * A fifo, socket or device (m->mode's type bits; rdev = major << 32 |
 * minor), made under a temporary name, given owner/mode/times, renamed.
 */
int rd_sink_special(struct rd_sink *s, const char *path, size_t len, int root,
		    const struct rd_sink_meta *m, uint64_t rdev);
/*
 * Hard links (-H; rd_sink_links.c). rd_sink_file_link_first: f starts a
 * link group (RD_FF_LINKED, or every regular file from a peer older than
 * protocol 10); its inode is remembered when it is committed, in a table of
 * at most max_bytes (rd_sink_set_link_table; 0: 32 MiB, the default).
 * rd_sink_hardlink: path becomes a hard link to target, an earlier wire
 * path of this session that must name a regular file this sink placed and
 * remembered (checked by inode; both confined as all paths are); last: the
 * group's last link (RD_FF_LINK_LAST), which forgets it.
 * rd_sink_link_kept: a group's first file that rsync's rules left as it
 * is (rd_sink_file_check: RD_SINK_SAME, or RD_SINK_LEAVE where it exists)
 * is this copy's result for that entry too: the regular file under its
 * name now is remembered, as a commit would (rsync links to it as well).
 * Nothing when there is none, or in a dry run.
 */
void rd_sink_set_link_table(struct rd_sink *s, uint64_t max_bytes);
void rd_sink_file_link_first(struct rd_sink_file *f);
void rd_sink_link_kept(struct rd_sink *s, const char *path, size_t len, int root);
int rd_sink_hardlink(struct rd_sink *s, const char *path, size_t len, int root, const char *target,
		     size_t tlen, int last);
/*
 * rdcp-mpi's pulls: path, the first file of a link group that another
 * session of the same job placed (each rank pulls its share with sessions
 * of its own; the links come after), is remembered as if this sink had
 * placed it, only if it is a regular file of m's size and mtime (what the
 * job's listing said of it, and what the job gave it). 0 or < 0.
 */
int rd_sink_link_adopt(struct rd_sink *s, const char *path, size_t len,
		       const struct rd_sink_meta *m);

#endif
