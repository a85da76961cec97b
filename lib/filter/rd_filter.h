/* SPDX-License-Identifier: MIT */
/*
 * rsync's filter rules (rsync.1, FILTER RULES; issue 28): an ordered list
 * of include/exclude rules, first match wins, with rsync's syntax ("- *.o",
 * "+ /dir/", "H x", "P keep", "!", ": .rsync-filter", "exclude,s foo"),
 * its patterns (rd_wildmatch: '*' stops at '/', '**' crosses, '?', '[...]';
 * a leading '/' anchors at the transfer root, a trailing '/' matches
 * directories only, a '/' elsewhere or a '**' matches the path from the
 * transfer root, else the last component) and its sides: a rule without
 * 's' or 'r' is the sender's (hide/show) and the receiver's (protect/risk,
 * for deletions), or the sender's alone with --delete-excluded.
 *
 * Merge files ('.') name files on the side that parses the rules: the
 * client reads them (rd_filter_add with RD_FILTER_MERGE_OK and a reader)
 * and what goes on the wire is their rules; a server refuses them.
 * Per-directory merge files (':') are read by the walk, from each
 * directory it enters, through that directory's descriptor
 * (rd_filter_walk).
 *
 * Memory is bounded: at most RD_FILTER_RULES_MAX rules in a list, each at
 * most RD_FILTER_RULE_LEN bytes; a walk holds at most RD_FILTER_WALK_RULES
 * rules from merge files and reads at most RD_FILTER_MERGE_MAX bytes of
 * one.
 */
#ifndef RDCP_FILTER_RD_FILTER_H
#define RDCP_FILTER_RD_FILTER_H

#include <stddef.h>

#include "lib/base/rd_err.h"

#define RD_FILTER_RULES_MAX  4096	  /* the wire's RD_RULES_MAX */
#define RD_FILTER_RULE_LEN   4160	  /* the wire's RD_RULE_MAX */
#define RD_FILTER_WALK_RULES 16384	  /* rules from per-directory files at once */
#define RD_FILTER_MERGE_MAX  (256u << 10) /* bytes of one merge file */

/* How rd_filter_add reads its text */
enum rd_filter_how {
	RD_FILTER_RULE = 0,	/* --filter: a rule in rsync's syntax */
	RD_FILTER_EXCLUDE,	/* --exclude: a pattern, excluded */
	RD_FILTER_INCLUDE,	/* --include: a pattern, included */
	RD_FILTER_EXCLUDE_LINE, /* a line of --exclude-from: "- "/"+ " may lead, "!" clears */
	RD_FILTER_INCLUDE_LINE, /* a line of --include-from */
};

/* rd_filter_new flags */
#define RD_FILTER_DELETE_EXCLUDED 0x1u /* rules without a side are the sender's only */
#define RD_FILTER_MERGE_OK	  0x2u /* '.' merge rules may be read (the client) */

/* rd_filter_check sides */
#define RD_FILTER_SENDER   0x1u /* hide/show: what the sender leaves out */
#define RD_FILTER_RECEIVER 0x2u /* protect/risk: what a deletion leaves alone */

struct rd_filter;
struct rd_filter_walk;

/*
 * Read a file for a merge rule (the client's files, or stdin for "-"):
 * the file's bytes into a malloc'd *buf of *len bytes (at most
 * RD_FILTER_MERGE_MAX), or -1 with err set.
 */
typedef int (*rd_filter_read_fn)(void *ctx, const char *name, char **buf, size_t *len,
				 struct rd_err *err);

int rd_filter_new(struct rd_filter **out, unsigned flags, struct rd_err *err);
void rd_filter_free(struct rd_filter *f); /* accepts NULL */
void rd_filter_set_reader(struct rd_filter *f, rd_filter_read_fn read, void *ctx);

/*
 * Add one rule (len bytes, not NUL-terminated) read as how says; merge
 * rules are expanded in place. Empty lines and, for the _LINE kinds,
 * comments (';', '#') are skipped. 0 or -RD_EUSAGE with err naming the
 * rule (unknown rule, bad modifier, a merge rule where none may be read,
 * too many or too long).
 */
int rd_filter_add(struct rd_filter *f, const char *text, size_t len, enum rd_filter_how how,
		  struct rd_err *err);
/* Every line of a file's text (NUL-separated with from0), as rd_filter_add. */
int rd_filter_add_lines(struct rd_filter *f, const char *text, size_t len, int from0,
			enum rd_filter_how how, struct rd_err *err);

/* The rules for the wire, in order, each in rsync's syntax: n, then rule i. */
unsigned rd_filter_count(const struct rd_filter *f);
const char *rd_filter_text(const struct rd_filter *f, unsigned i, size_t *len);
/* Does the list read per-directory merge files (it needs a walk)? */
int rd_filter_has_dir_merge(const struct rd_filter *f);

/*
 * A walk over one source's tree, with the rules of f and the merge files
 * of the directories it is in. rd_filter_enter: the walk goes into a
 * directory (fd: its descriptor; path: its transfer path, "" for the
 * transfer root; the fd is only read, never kept), reading its merge
 * files; rd_filter_leave undoes the last enter. 0 or < 0 (err: a merge
 * file that cannot be read or parsed, or too many rules).
 */
int rd_filter_walk_new(struct rd_filter_walk **out, const struct rd_filter *f, struct rd_err *err);
void rd_filter_walk_free(struct rd_filter_walk *w); /* accepts NULL */
int rd_filter_enter(struct rd_filter_walk *w, int fd, const char *path, size_t len,
		    struct rd_err *err);
void rd_filter_leave(struct rd_filter_walk *w);
/*
 * Before the walk of a transfer root, when rd_filter_wants_parents(): a
 * ':' rule's file name began with '/' (rsync's "-F"), so the files in the
 * parent directories of the transfer root count too, outermost first.
 * fd: one such parent; below: the path from it down to the transfer root
 * ("src/path"). Like rd_filter_enter, undone by rd_filter_leave.
 */
int rd_filter_wants_parents(const struct rd_filter *f);
int rd_filter_enter_parent(struct rd_filter_walk *w, int fd, const char *below, size_t blen,
			   struct rd_err *err);

/*
 * All of the above for one source: top a directory (-1: "/"), rel the
 * source's path beneath it (a source's contents when contents); the
 * parents are top and every directory on rel before the source: for a
 * source named by itself, its transfer root too (rsync reads that one's
 * file as well), each opened beneath the last (never following a link). *entered counts
 * the levels entered (each undone by rd_filter_leave, also after an
 * error). Nothing unless rd_filter_wants_parents(). 0 or < 0 (err).
 */
int rd_filter_enter_parents(struct rd_filter_walk *w, int top, const char *rel, int contents,
			    unsigned *entered, struct rd_err *err);

/*
 * Is path (its transfer path: relative to the transfer root, no leading
 * '/') excluded for side? 1 excluded, 0 not (included, or no rule
 * matched). is_dir: it is a directory.
 */
int rd_filter_excluded(struct rd_filter_walk *w, const char *path, size_t len, int is_dir,
		       unsigned side);

/* rsync's wildmatch: does text match pattern? 1 or 0. */
int rd_wildmatch(const char *pattern, const char *text);

#endif
