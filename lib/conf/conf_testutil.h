/* SPDX-License-Identifier: MIT */
/*
 * Test helper: record every problem lib/conf reports as one line,
 * "FILE:LINE: message" ("W " in front for warnings, "-" for no file), so
 * tests can assert exact messages.
 */
#ifndef RDCP_CONF_CONF_TESTUTIL_H
#define RDCP_CONF_CONF_TESTUTIL_H

#include <stdio.h>
#include <string.h>

#include "lib/conf/rd_conf.h"

#define REC_MAX 256

struct rec {
	int n;
	char line[REC_MAX][RD_CONF_MSG_MAX + PATH_MAX + 32];
};

static inline void rec_fn(void *ctx, const char *file, unsigned line, int sev, const char *msg)
{
	struct rec *r = ctx;

	if (r->n >= REC_MAX)
		return;
	snprintf(r->line[r->n++], sizeof(r->line[0]), "%s%s:%u: %s",
		 sev == RD_CONF_WARNING ? "W " : "", file ? file : "-", line, msg);
}

/* 1 if exactly this line was reported. */
static inline int rec_has(const struct rec *r, const char *want)
{
	int i;

	for (i = 0; i < r->n; i++) {
		if (!strcmp(r->line[i], want))
			return 1;
	}
	return 0;
}

/* 1 if some line contains this text. */
static inline int rec_grep(const struct rec *r, const char *part)
{
	int i;

	for (i = 0; i < r->n; i++) {
		if (strstr(r->line[i], part))
			return 1;
	}
	return 0;
}

static inline void rec_dump(const struct rec *r)
{
	int i;

	for (i = 0; i < r->n; i++)
		fprintf(stderr, "  reported: %s\n", r->line[i]);
}

#define assert_reported(r, want)                            \
	do {                                                \
		if (!rec_has(r, want)) {                    \
			rec_dump(r);                        \
			fail_msg("not reported: %s", want); \
		}                                           \
	} while (0)

#endif
