/* SPDX-License-Identifier: MIT */
/* Private to lib/filter: one parsed rule, the list, the matcher. */
#ifndef RDCP_FILTER_RD_FILTER_PRIV_H
#define RDCP_FILTER_RD_FILTER_PRIV_H

#include "lib/filter/rd_filter.h"

/* What a rule is and how it matches (rsync's FILTRULE_*). */
#define R_INCLUDE   0x1u    /* +, S, R */
#define R_DIRONLY   0x2u    /* the pattern ended in '/' */
#define R_NEGATE    0x4u    /* '!' modifier: takes effect when it does not match */
#define R_SENDER    0x8u    /* 's', H, S */
#define R_RECEIVER  0x10u   /* 'r', P, R */
#define R_PERISH    0x20u   /* 'p' */
#define R_WILD	    0x40u   /* '*', '?' or '[' in the pattern */
#define R_WILD2	    0x80u   /* "**" */
#define R_WILD2_PRE 0x100u  /* it starts with "**" */
#define R_WILD3_SUF 0x200u  /* it ends with "***" */
#define R_DIR_MERGE 0x400u  /* ':' per-directory merge file */
#define R_MERGE	    0x800u  /* '.' merge file (expanded when added) */
#define R_CLEAR	    0x1000u /* '!' */
/* merge modifiers: how the file's lines are read */
#define R_M_EXCLUDES  0x2000u  /* '-': every line an exclude pattern */
#define R_M_INCLUDES  0x4000u  /* '+': every line an include pattern */
#define R_M_NOINHERIT 0x8000u  /* 'n' */
#define R_M_SELF      0x10000u /* 'e': exclude the merge file itself */
#define R_M_WORDS     0x20000u /* 'w': split on whitespace */
#define R_M_PARENTS   0x40000u /* a leading '/' on a dir-merge name: parents too */
#define R_ABS	      0x80000u /* '/': matched against the absolute path */

struct rd_rule {
	unsigned flags;
	unsigned slash_cnt; /* slashes in the pattern (its leading one counts) */
	char *pattern;	    /* as matched: no trailing '/'; the merge file's name */
	char *text;	    /* the rule in rsync's syntax, for the wire */
	size_t text_len;
};

struct rd_filter {
	unsigned flags; /* RD_FILTER_DELETE_EXCLUDED, RD_FILTER_MERGE_OK */
	struct rd_rule *rules;
	unsigned n, cap;
	rd_filter_read_fn read;
	void *read_ctx;
	unsigned depth; /* merge files being read inside each other */
};

/*
 * Parse one rule of rsync's syntax (or, with dflt set, a line of a file
 * whose merge rule said '-'/'+': a bare pattern with dflt's flags; or an
 * old-style line, old = 1) into *r. 0, 1 for a line that is no rule (a
 * comment, nothing), or -RD_EUSAGE with err set.
 */
int rd_rule_parse(struct rd_rule *r, const char *s, size_t len, unsigned dflt, int old,
		  struct rd_err *err);
void rd_rule_free(struct rd_rule *r);

/*
 * Does the rule match path (len bytes: the path it is matched against,
 * from the transfer root or, anchored in a merge file, from its
 * directory)? 1 or 0, negation applied.
 */
int rd_rule_matches(const struct rd_rule *r, const char *path, size_t len, int is_dir);
/* Does the rule apply to side, under the list's flags? */
int rd_rule_on_side(const struct rd_rule *r, unsigned flags, unsigned side);

/* rsync's wildmatch_array: where 0 from the start, > 0 the last `where` components, < 0 after any '/'. */
int rd_wildmatch_where(const char *pattern, const char *text, int where);

#endif
