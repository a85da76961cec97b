/* SPDX-License-Identifier: MIT */
/*
 * The sink tests' fixture (sink_test.c, sink_hostile_test.c,
 * sink_rules_test.c): per test a fresh directory "top" holding "dest" and
 * "outside", opened as x->top_fd; teardown checks no descriptor leaked and
 * removes it. Helpers place entries and check what landed.
 */
#ifndef RDCP_SINK_SINK_TESTUTIL_H
#define RDCP_SINK_SINK_TESTUTIL_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/sink/rd_sink.h"

struct fx {
	unsigned extra; /* RD_SINK_TEST_* for the fallback runs */
	char top[PATH_MAX];
	int top_fd;
	int fds;
};

/* x->top/rel (one of four rotating buffers). */
const char *tp(const struct fx *x, const char *rel);
int count_fds(void);
/* Sorted, '|'-joined listing of a directory ("" if empty). */
void listing(const char *dir, char *out, size_t cap);
void expect_listing(const char *dir, const char *want);
void put(const char *p, const char *content);
void expect_content(const char *p, const char *want);
/* cmocka setup/teardown: *state may hold a const unsigned (extra) before */
int setup(void **state);
int teardown(void **state);
/* A sink on x->top/dest with flags | x->extra and the process umask. */
struct rd_sink *sopen(struct fx *x, const char *dest, unsigned flags);
/* A stat for the wire: mode, size, mtime 1234567890.123456789. */
struct rd_sink_meta meta(uint32_t mode, uint64_t size);
/* A regular file with content, a directory 0750, a directory's POST. */
int put_file(struct rd_sink *s, const char *path, int root, const char *content, uint32_t mode);
/* -H: a regular file 0644 that starts a link group (rd_sink_file_link_first) */
int put_group_file(struct rd_sink *s, const char *path, int root, const char *content);
int mk(struct rd_sink *s, const char *path, int root);
int post(struct rd_sink *s, const char *path, int root);

#endif
