/* SPDX-License-Identifier: MIT */
/*
 * Per-run results for `rdcp --json`: the counters of the run plus the
 * first max_errors failed entries, written as one JSON object.
 *
 * Memory is bounded by max_errors, never by the number of files: errors
 * past the first max_errors are only counted ("errors_omitted"), and each
 * kept path and message is a copy of bounded length.
 *
 * Output (one line, keys in this order):
 *
 *	{"files": 10, "dirs": 2, "symlinks": 1, "hardlinks": 0, "devices": 0,
 *	 "specials": 0, "entries": 13, "created": 13, "transferred": 10,
 *	 "failed": 2, "identical": 1, "deleted": 0, "bytes": 1048576,
 *	 "bytes_moved": 1048576, "bytes_resumed": 0, "bytes_sent": 1051234,
 *	 "bytes_received": 1234, "seconds": 1.234,
 *	 "rate_bytes_per_sec": 849737.4,
 *	 "checksum": "sha256",
 *	 "phases": {"connect": 0.002, "tls": 0.004, "open": 0.001, "data": 1.2,
 *		    "walk": 0.01, "fsync": null, "close": 0.001},
 *	 "exit_status": 23,
 *	 "errors": [{"path": "a/b", "status": "i/o", "message": "..."}],
 *	 "errors_omitted": 0,
 *	 "notes": [{"path": "c", "message": "..."}], "notes_omitted": 0}
 *
 * (and "memory" and "startup_seconds" before "phases" when cost is set;
 * "phases" only when phases is set: see below).
 *
 * notes are what rdcp prints as "rdcp: note: ..." without --json: an
 * entry that went on but with something to say (metadata not kept, a
 * partial started over); kept and counted like errors, max_errors of them.
 *
 * Entries are counted once each, by type, from the entries finished fine
 * (rd_report_item(): a directory once, not again after its contents):
 * files (regular files, hard links among them), dirs, symlinks,
 * hardlinks (of files), devices, specials (fifos, sockets); entries all of
 * them; created those that were not there before; transferred the regular
 * files whose data was sent (rsync's "regular files transferred"); failed
 * the entries that failed (rd_report_error() with a path). deleted: what
 * --delete removed (or, -n, would), from st->deleted. identical,
 * bytes, bytes_moved, bytes_resumed come from struct rd_engine_stats
 * (files_same, bytes_files, bytes_data, bytes_resumed: what the receiver
 * already held and kept after comparing, e.g. from a partial of an
 * interrupted copy); bytes_sent and bytes_received count everything this
 * side sent and received (rd_report.counts.sent, .received: messages and
 * data); status is rd_status_name() of the entry's RD_E* status.
 * checksum is null when not given. Numbers never are NaN or infinite and
 * always use '.' as the decimal point, whatever the locale.
 *
 * Strings and file names. Paths are raw bytes and need not be UTF-8, so:
 *  - valid UTF-8 is written as is (decoding gives back the exact bytes);
 *  - '"' and '\' are escaped, control characters (U+0000..U+001F), DEL,
 *    the C1 controls U+0080..U+009F and U+2028/U+2029 are written as
 *    \uXXXX, so the text is safe to show and to embed in JavaScript;
 *  - each byte that is not part of a valid UTF-8 sequence (also overlong
 *    forms and surrogates) becomes U+FFFD, written "\ufffd". That is not
 *    reversible, so an error whose path is not valid UTF-8 also gets
 *    "path_hex": the exact path bytes in lowercase hex.
 * The output is always valid JSON (RFC 8259) and valid UTF-8.
 *
 * Not locked: call from one thread at a time (rdcp feeds it from the
 * engine's report callback and writes it after the run).
 */
#ifndef RDCP_REPORT_RD_REPORT_H
#define RDCP_REPORT_RD_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/base/rd_err.h"
#include "lib/engine/rd_engine.h"

#define RD_REPORT_PATH_MAX	     4096 /* bytes of a kept path (the protocol's RD_PATH_MAX) */
#define RD_REPORT_MSG_MAX	     1024 /* bytes of a kept message (RD_ERR_MSG_MAX) */
#define RD_REPORT_MAX_ERRORS_DEFAULT 100

struct rd_report_entry {
	char *path; /* NULL: an error of the run, not of one file */
	size_t path_len;
	int status; /* negative RD_E* */
	char *msg;  /* NUL-terminated, may be empty */
};

/* Entries by type, as rsync's --stats counts them (reg, dir, link, dev, special). */
enum { RD_KIND_REG, RD_KIND_DIR, RD_KIND_LINK, RD_KIND_DEV, RD_KIND_SPECIAL, RD_KINDS };

struct rd_report_counts {
	uint64_t n[RD_KINDS];	    /* entries finished fine (hard links count as reg) */
	uint64_t created[RD_KINDS]; /* of them: not there before (RD_IT_NEW) */
	uint64_t hardlinks;	    /* of n[RD_KIND_REG]: made as hard links */
	uint64_t xferred;	    /* regular files whose data was sent (RD_IT_XFER) */
	uint64_t total_size;	    /* sizes of the files and symlinks (rsync's) */
	uint64_t xferred_size;	    /* sizes of the files transferred */
	uint64_t failed;	    /* entries that failed (errors with a path) */
	uint64_t vanished;	    /* of them: source files that vanished */
	int first_status;	    /* of the first failure (RD_E*, negative) */
	uint64_t sent, received;    /* bytes over the connection (the caller's) */
};

struct rd_report {
	unsigned max_errors; /* keep at most this many */
	unsigned nerrors;    /* kept in errors[] */
	unsigned cap;	     /* allocated in errors[] */
	uint64_t omitted;    /* counted, not kept */
	struct rd_report_entry *errors;
	/* notes (status 0 with a message), kept and counted the same way */
	unsigned nnotes, notes_cap;
	uint64_t notes_omitted;
	struct rd_report_entry *notes;
	struct rd_err err; /* why rd_report_error() failed */
	struct rd_report_counts counts;
	/*
	 * What the run cost (issue 14), printed as "memory" and
	 * "startup_seconds" when rss_peak is set: the most data-buffer bytes
	 * registered at once, the control buffers registered beside them,
	 * the peak resident set, and the time from process start to the
	 * session being ready to move data.
	 */
	struct rd_report_cost {
		uint64_t registered_peak, registered_ctrl, rss_peak;
		double startup_s;
	} cost;
	/*
	 * Where the time went, in seconds, printed as "phases" when set:
	 * connect (the connection up), tls (the handshake), open (the request
	 * answered, the chunk key), data (the transfer), close; walk and fsync
	 * are the parts of data spent walking the source tree and making the
	 * received files durable, known only on the side that did it (< 0:
	 * the other side: null).
	 */
	struct rd_report_phases {
		int set;
		double connect, tls, open, data, walk, fsync, close;
	} phases;
};

/* Start an empty report. Allocates nothing; cannot fail. */
void rd_report_init(struct rd_report *r, unsigned max_errors);

/*
 * Record one failed entry: path (len raw bytes, may be NULL for an error
 * of the whole run), its status (RD_E*, either sign) and message (NULL or
 * NUL-terminated). Paths longer than RD_REPORT_PATH_MAX and messages
 * longer than RD_REPORT_MSG_MAX bytes are cut. status 0 (a successful
 * entry) is ignored, so this can be called with every report of
 * rd_engine_report_fn. Past max_errors only the count grows.
 *
 * With a path it is also an entry that failed (counts.failed, .vanished
 * for RD_EVANISHED, .first_status); without one, an error of the run.
 *
 * Returns 0, or -RD_ENOMEM (r->err says so; the error is then counted as
 * omitted, so the totals stay right).
 */
int rd_report_error(struct rd_report *r, const char *path, size_t len, int status, const char *msg);

/* Count one entry finished fine (it->status 0; others are ignored), by type. */
void rd_report_item(struct rd_report *r, const struct rd_item *it);

/*
 * Record one note: an entry (path, len raw bytes) that went on with
 * something to say (msg, NUL-terminated; NULL or empty is ignored). Cut,
 * kept and counted as rd_report_error() does. Returns 0 or -RD_ENOMEM.
 */
int rd_report_note(struct rd_report *r, const char *path, size_t len, const char *msg);

/*
 * Write the JSON object described above and a newline to out. st may be
 * NULL (all counters 0, e.g. the run failed before the transfer began);
 * checksum may be NULL; seconds < 0 or not finite count as 0. Returns 0,
 * or -RD_ESYS if writing failed (errno is left as stdio set it).
 */
int rd_report_json(FILE *out, const struct rd_report *r, const struct rd_engine_stats *st,
		   double seconds, const char *checksum, int exit_status);

/*
 * Write s (len bytes) as one JSON string, quotes included, escaped as
 * described above. Returns the number of bytes that were not valid UTF-8
 * (0 means decoding the string gives back s exactly).
 */
size_t rd_report_json_string(FILE *out, const char *s, size_t len);

/*
 * The terminal line for one failed entry (what rdcp prints for a NOTE from
 * the peer or a local skip): "PATH: MESSAGE", both escaped (rd_escape), a
 * message that already starts with "PATH: " naming the path only once.
 * path is len raw bytes (any bytes: a NOTE's path comes off the wire); msg
 * is NULL (then the status name) or NUL-terminated, of which at most
 * RD_REPORT_MSG_MAX bytes are read. Never reads past either. Writes at most
 * cap bytes to out, NUL-terminated and cut with "..." if needed (cap >= 4).
 * Returns the length written.
 */
size_t rd_report_line(char *out, size_t cap, const char *path, size_t len, int status,
		      const char *msg);

/* msg without a leading "PATH: " (bounded as above); msg itself if none. */
const char *rd_report_strip_path(const char *msg, const char *path, size_t len);

/*
 * One cause, one message: when a directory fails, every entry beneath it
 * fails too, for the same reason. rd_report_fold_add() says whether a
 * failure lies under the path of the failure that started the current
 * fold (1: counted there, not printed; 2: the same path again, a
 * directory's entry after its contents: not counted either) or starts a
 * new fold (0: print it). A fold that ends (a new one starts, or rd_report_fold_end() at the
 * end of the run) is left in `ended` with its count, for the caller to
 * print "... and N more under PATH/" before anything else. Paths are raw
 * bytes (cut to RD_REPORT_PATH_MAX); no allocation.
 */
struct rd_report_fold_run {
	char path[RD_REPORT_PATH_MAX];
	size_t len;
	uint64_t n; /* failures folded into it */
};
struct rd_report_fold {
	int active;
	struct rd_report_fold_run cur, ended;
};
int rd_report_fold_add(struct rd_report_fold *f, const char *path, size_t len);
void rd_report_fold_end(struct rd_report_fold *f);

/* Free what the report holds; it can then be initialized again. Accepts NULL. */
void rd_report_free(struct rd_report *r);

#endif
