/* SPDX-License-Identifier: MIT */
/*
 * rsync's selection options as rdcp and rdcp-mpi both take them (rsync.1
 * is the specification): the quick check and transfer rules (-c, -I,
 * --size-only, --modify-window, -u, -n, --ignore-existing, --existing,
 * --max-size, --min-size), which become OPEN's SELECT block, and the
 * filter options (--filter/-f, -F, --exclude, --include, --exclude-from,
 * --include-from, --from0), kept in command-line order and built into
 * rules (lib/filter) once the line is read. The programs parse the line
 * their own way and hand each of these options here by id.
 *
 * No printing, no exit: a bad value is -RD_EUSAGE with err naming the
 * option as it was written.
 */
#ifndef RDCP_SESSION_RD_SELOPT_H
#define RDCP_SESSION_RD_SELOPT_H

#include <stddef.h>
#include <stdint.h>

#include "lib/base/rd_err.h"
#include "lib/filter/rd_filter.h"
#include "lib/proto/rd_proto.h"

enum rd_selopt_id {
	RD_SO_CHECKSUM = 1, /* -c: compare contents */
	RD_SO_IGNORE_TIMES, /* -I */
	RD_SO_SIZE_ONLY,
	RD_SO_MODIFY_WINDOW, /* value: whole seconds; negative: to the ns */
	RD_SO_UPDATE,	     /* -u */
	RD_SO_DRY_RUN,	     /* -n */
	RD_SO_IGNORE_EXISTING,
	RD_SO_EXISTING,
	RD_SO_MAX_SIZE, /* value: rsync's size (bytes unless suffixed) */
	RD_SO_MIN_SIZE,
	RD_SO_FILTER, /* value: a rule */
	RD_SO_F,      /* -F: once the .rsync-filter merge, twice also hide them */
	RD_SO_EXCLUDE,
	RD_SO_INCLUDE,
	RD_SO_EXCLUDE_FROM, /* value: a file ("-": stdin) */
	RD_SO_INCLUDE_FROM,
	RD_SO_FROM0, /* -0: the -from files are NUL-separated */
};

/* how a filter option's text is read (rd_selopt.fargs) */
enum {
	RD_SO_F_FILTER,
	RD_SO_F_EXCLUDE,
	RD_SO_F_INCLUDE,
	RD_SO_F_EXCLUDE_FROM,
	RD_SO_F_INCLUDE_FROM
};

struct rd_selopt {
	int compare;		     /* RD_CMP_*: the quick check unless -c, -I, --size-only */
	int checksum;		     /* -c given (and not undone) */
	unsigned rules;		     /* RD_SEL_UPDATE, _DRY_RUN, _IGNORE_EXISTING, _EXISTING */
	int32_t modify_window;	     /* RD_WINDOW_NS unless --modify-window */
	uint64_t min_size, max_size; /* RD_SIZE_NONE: no maximum */
	struct rd_selopt_farg {
		int how; /* RD_SO_F_* */
		const char *arg;
	} * fargs; /* in command-line order (malloc'd: rd_selopt_free) */
	int nfargs;
	int nF;		     /* -F given this many times */
	int from0;	     /* --from0 */
	int delete_excluded; /* rdcp's --delete-excluded: rules without a side are the sender's */
};

/* rsync's defaults: the quick check to the nanosecond, no size limits, no rules. */
void rd_selopt_init(struct rd_selopt *s);
void rd_selopt_free(struct rd_selopt *s);

/*
 * One option: id, on (0: its --no- form, where rsync has one), its value
 * (NULL when it takes none) and the option as written (for messages).
 * 0, -RD_EUSAGE (err names as and the value), or -RD_ENOMEM.
 */
int rd_selopt_apply(struct rd_selopt *s, enum rd_selopt_id id, int on, const char *v,
		    const char *as, struct rd_err *err);

/* Does the receiver need the SELECT block (anything but the quick check's defaults)? */
int rd_selopt_any(const struct rd_selopt *s);

/* The SELECT block's compare, window and sizes; the rules given are or'd into sel->rules. */
void rd_selopt_select(const struct rd_selopt *s, struct rd_select *sel);

/*
 * The filter options, in their order, as rules: merge files and the -from
 * files are read here (the client's files; "-": stdin), at most 4 MiB
 * each, RD_RULES_BYTES_MAX of rules in all. NULL *out when there are
 * none. 0, or < 0 with err naming the rule or file.
 */
int rd_selopt_filter(const struct rd_selopt *s, struct rd_filter **out, struct rd_err *err);

/*
 * A client's file of rules or names (a merge rule, --exclude-from,
 * --files-from; "-": stdin), whole, at most 4 MiB: a malloc'd *buf of
 * *len bytes. ctx unused (an rd_filter_read_fn). 0 or -RD_EUSAGE.
 */
int rd_selopt_read_file(void *ctx, const char *name, char **buf, size_t *len, struct rd_err *err);

#endif
